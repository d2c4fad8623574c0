// Fused recurrent cells for the GRPU's baselines (SPEC §4.6): one time step
// each, forward and backward, with a per-row mask for sequences of different
// lengths in one batch (a row whose mask is 0 keeps its state and passes its
// gradient straight through).
//
// gru_cell (dissertation eqs. 2.13–2.16, TF's GRUCell with u and 1 − u exchanged):
//   [r, u] = σ([x, h_{t−1}] · W_g + b_g),  h̃ = tanh([x, r ⊙ h_{t−1}] · W_c + b_c),
//   h_t = (1 − u) ⊙ h_{t−1} + u ⊙ h̃.
// It is the GRPU cell with no machine fields (kernels/ops/grpu.h) and shares its code.
//
// lstm_cell (dissertation eqs. 2.8–2.12):
//   [i, f, g, o] = [σ, σ, tanh, σ]([x, h_{t−1}] · W + b),
//   c_t = f ⊙ c_{t−1} + i ⊙ g,  h_t = o ⊙ tanh(c_t).
//
// Backward ACCUMULATES (+=) into defined gradient tensors and skips undefined ones.
#pragma once

#include "kernels/ops/grpu.h"
#include "kernels/tensor.h"

namespace mare {

// x: [B, I], h_prev: [B, H], w_gates: [I + H, 2H], b_gates: [2H], w_cand: [I + H, H],
// b_cand: [H], mask: [B] or undefined.
GrpuCellResult gru_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& w_gates,
                                const Tensor& b_gates, const Tensor& w_cand, const Tensor& b_cand,
                                const Tensor& mask);
void gru_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                       Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x,
                       const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                       const Tensor& mask, const GrpuCellResult& fwd);

struct LstmCellResult {
  Tensor h;       // [B, H]
  Tensor c;       // [B, H]
  Tensor gates;   // [B, 4H] i, f, g, o after their activations
  Tensor tanh_c;  // [B, H]
};

// x: [B, I], h_prev, c_prev: [B, H], w: [I + H, 4H], b: [4H], mask: [B] or undefined.
LstmCellResult lstm_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& c_prev,
                                 const Tensor& w, const Tensor& b, const Tensor& mask);
// d_h, d_c: [B, H] (d_c may be undefined: no gradient arrives at c_t from outside).
void lstm_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_c_prev, Tensor& d_w, Tensor& d_b,
                        const Tensor& d_h, const Tensor& d_c, const Tensor& x, const Tensor& h_prev,
                        const Tensor& c_prev, const Tensor& w, const Tensor& mask,
                        const LstmCellResult& fwd);

}  // namespace mare
