// The GRPU cell (Gated Recurrent Programmer Unit, dissertation ch. 4, appendix A)
// as one fused op: one time step of a GRU controller of size H beside a
// virtual-machine state with one field per ALU operation (SPEC §4.6).
//
//   a      = [x_c, h^c_{t−1}]                                   (input first, as TF's _linear)
//   [r, u] = σ(a · W_g + b_g)         r, u ∈ R^{H+K}             (eqs. 4.5, 4.6)
//   h̃^c    = tanh([x_c, r^c ⊙ h^c_{t−1}] · W_c + b_c)           (eq. 4.7)
//   p      = h^vm_{t−1} with p[read] = x_vm[0]                  (read runs first)
//   h̃^vm   = clip(ALU(p, r^vm), −clip, clip)                    (eq. 4.8, appendix A)
//            read: x_vm[0]
//            sum:  Σ_k p_k · r_k                                 (neutral 0, eq. 4.13)
//            prod: Π_k n1(p_k, r_k)                              (neutral 1)
//                  code: n1 = 1 − r + 2·p·r − p·r²  (appendix A, the published runs)
//                  text: n1 = 1 − r + p·r²          (eq. 4.16)
//            cond: 1 − |x_vm[1] − 1| / (|x_vm[1] − 1| + ε)       ("equal to 1", §4.2.6)
//   u_op   ← u_op · (1 + u_cond · (h̃_cond − 1)) for every machine field but cond (eq. 4.18/4.19)
//   h_t    = (1 − u) ⊙ h_{t−1} + u ⊙ h̃                         (eq. 4.9)
// Machine fields, in this order: read, sum, [prod], [cond]; K = their count.
// With `machine = false` (K = 0) the op is exactly a GRU cell (TF's GRUCell with
// u and 1 − u exchanged), which is what `gru_cell` (kernels/ops/recurrent.h) uses.
//
// x_vm is data (the machine's input): it receives no gradient. A row whose
// `mask` entry is 0 keeps its state (h_t = h_{t−1}) and passes its gradient
// straight through: that is how sequences of different lengths share a batch.
//
// Rule of the kernel layer: forward returns new tensors; backward ACCUMULATES
// (+=) into every defined gradient tensor and skips undefined ones.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/tensor.h"

namespace mare {

enum class NeutralOne { code, text };
NeutralOne parse_neutral_one(const std::string& name);  // "code" | "text"
const char* to_string(NeutralOne form);

struct GrpuConfig {
  bool machine = true;  // false: no machine fields (a plain GRU cell)
  bool prod = false;    // a `prod` field after `sum`
  bool cond = false;    // a `cond` field last
  NeutralOne neutral_one = NeutralOne::code;
  float clip = 500.0f;     // machine candidate clipped to [−clip, clip]
  float cond_eps = 1e-6f;  // ε of the comparator
  int64_t fields() const { return machine ? 2 + (prod ? 1 : 0) + (cond ? 1 : 0) : 0; }
  int64_t sum_field() const { return 1; }
  int64_t prod_field() const { return prod ? 2 : -1; }
  int64_t cond_field() const { return cond ? fields() - 1 : -1; }
  int64_t machine_inputs() const { return machine ? (cond ? 2 : 1) : 0; }
};

// Scalar code both backends compile: the CPU op and the CUDA kernels
// (kernels/cuda/recurrent.cu) read the ALU's formulas from here.
#ifdef __CUDACC__
#define MARE_GRPU_SCALAR __host__ __device__ __forceinline__
#else
#define MARE_GRPU_SCALAR inline
#endif

// The most machine fields a cell has (read, sum, prod, cond).
constexpr int kGrpuMaxFields = 4;

// The neutral-element transforms and the conditional gate, scalar (also used
// by the tests at binary values). `code`: NeutralOne::code's form, else text's.
MARE_GRPU_SCALAR float grpu_neutral_zero(float i, float r) {
  return i * r;
}
MARE_GRPU_SCALAR float grpu_neutral_one(float i, float r, bool code) {
  return code ? 1.0f - r + 2.0f * i * r - i * r * r : 1.0f - r + i * r * r;
}
inline float grpu_neutral_one(float i, float r, NeutralOne form) {
  return grpu_neutral_one(i, r, form == NeutralOne::code);
}

// Backward of the prod field Π_k n1(p_k, r_k) over the K ≤ kGrpuMaxFields
// arguments: d_p[k] and d_r[k] += dprod · Π_{j≠k} n1(p_j, r_j) · ∂n1/∂(p_k, r_k),
// the other factors as prefix (ascending) and suffix (descending) products.
MARE_GRPU_SCALAR void grpu_prod_backward(float dprod, const float* p, const float* r, int K,
                                         bool code, float* d_p, float* d_r) {
  float q[kGrpuMaxFields], prefix[kGrpuMaxFields + 1], suffix[kGrpuMaxFields + 1];
  for (int k = 0; k < K; ++k) q[k] = grpu_neutral_one(p[k], r[k], code);
  prefix[0] = 1.0f;
  for (int k = 0; k < K; ++k) prefix[k + 1] = prefix[k] * q[k];
  suffix[K] = 1.0f;
  for (int k = K - 1; k >= 0; --k) suffix[k] = suffix[k + 1] * q[k];
  for (int k = 0; k < K; ++k) {
    const float dq = dprod * prefix[k] * suffix[k + 1];
    const float pk = p[k], rk = r[k];
    if (code) {
      d_p[k] += dq * (2.0f * rk - rk * rk);
      d_r[k] += dq * (-1.0f + 2.0f * pk - 2.0f * pk * rk);
    } else {
      d_p[k] += dq * rk * rk;
      d_r[k] += dq * (-1.0f + 2.0f * pk * rk);
    }
  }
}
MARE_GRPU_SCALAR float grpu_cond_gate(float u_op, float u_cond, float h_cond) {
  return u_op * (1.0f + u_cond * (h_cond - 1.0f));
}

// What forward keeps for backward (shapes with B rows, S = H + K).
struct GrpuCellResult {
  Tensor h;        // [B, S] the new state
  Tensor gates;    // [B, 2S] σ outputs: r then u (u before the conditional gate)
  Tensor cand;     // [B, S] h̃ (controller part after tanh, machine part after clip)
  Tensor machine;  // [B, K] the machine's pre-clip ALU outputs
  Tensor args;     // [B, K] p: the machine arguments (read field replaced by x_vm[0])
  Tensor u;        // [B, S] the final update gate (after the conditional)
};

// x_c: [B, Ic] (Ic may be 0), x_vm: [B, machine_inputs] (undefined when K = 0),
// h_prev: [B, H + K], w_gates: [Ic + H, 2(H + K)], b_gates: [2(H + K)],
// w_cand: [Ic + H, H], b_cand: [H], mask: [B] (undefined: every row active).
GrpuCellResult grpu_cell_forward(const Tensor& x_c, const Tensor& x_vm, const Tensor& h_prev,
                                 const Tensor& w_gates, const Tensor& b_gates, const Tensor& w_cand,
                                 const Tensor& b_cand, const Tensor& mask, const GrpuConfig& cfg);
// d_h: [B, H + K]. Gradients (same shapes as their inputs) are accumulated.
void grpu_cell_backward(Tensor& d_x_c, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                        Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x_c,
                        const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                        const Tensor& mask, const GrpuCellResult& fwd, const GrpuConfig& cfg);

}  // namespace mare
