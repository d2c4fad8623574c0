// Differentiable functions: one per kernel op (plus reshape and column), each
// running the op's forward and recording its backward on the tape
// (models/autograd.h); an op with several outputs is one node (record_multi),
// so its backward runs once with every output's gradient. Shapes are those of
// the kernel functions in kernels/ops/*.h. This is the one header of the
// wrappers; the implementations are one file per family:
//   functions.cpp             linalg, elementwise, softmax, norm, conv, indexing, loss, attention
//   functions_recurrent.cpp   the GRPU, GRU and LSTM cells
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops/grpu.h"
#include "kernels/tensor.h"
#include "models/autograd.h"

namespace mare::ag {

Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
Var batched_matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
Var bias_add(const Var& x, const Var& bias);
Var add(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var scale(const Var& x, float s);
// Rows of a where keep ≠ 0, else of b (keep [R]: a mask, no gradient; kernels/ops/elementwise.h).
Var select_rows(const Tensor& keep, const Var& a, const Var& b);
// x[r, ..] · s[r] (s [R]; kernels/ops/elementwise.h).
Var scale_rows(const Var& x, const Var& s);
Var relu(const Var& x);
Var relu6(const Var& x);
Var sigmoid(const Var& x);
Var tanh(const Var& x);
Var oneplus(const Var& x);
Var hard_sigmoid(const Var& x);
// Identity when !training or p == 0.
Var dropout(const Var& x, float p, bool training, uint64_t seed, uint32_t stream,
            uint64_t offset = 0);
Var softmax(const Var& x, const Tensor& mask = {});
Var log_softmax(const Var& x, const Tensor& mask = {});
Var logsumexp_sets(const Var& x, const Tensor& offsets, const Tensor& rows);
Var layer_norm(const Var& x, const Var& gamma, const Var& beta, float eps = 1e-5f);
// running_mean / running_var are updated in place when training.
Var batch_norm(const Var& x, const Var& gamma, const Var& beta, Tensor& running_mean,
               Tensor& running_var, bool training, float momentum = 0.1f, float eps = 1e-5f);
Var conv1d(const Var& x, const Var& w, const Var& bias = nullptr);
Var depthwise_conv1d(const Var& x, const Var& w, const Var& bias = nullptr);
Var max(const Var& x, int axis);
Var embedding(const Var& table, const Tensor& ids);
Var concat(const std::vector<Var>& xs, int axis);
// One node with a part per size: one split_backward per backward, with zeros
// for the parts that received no gradient.
std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis);
Var cross_entropy(const Var& logits, const Tensor& targets, const Tensor& weights = {});
Var mse(const Var& pred, const Var& target);
Var attention(const Var& q, const Var& k, const Var& v, int heads, const Tensor& key_mask = {});
// Same elements, new shape (shares storage; the gradient is reshaped back).
Var reshape(const Var& x, const Shape& shape);
// Column j of a [B, S] value, as [B, 1] (CPU).
Var column(const Var& x, int64_t j);

// ------------------------------------------------ recurrent cells (SPEC §4.6)
// One GRPU step (kernels/ops/grpu.h): the new state [B, H + K]. x_vm and mask
// are data (mask undefined: every row active).
Var grpu_cell(const Var& x_c, const Tensor& x_vm, const Var& h_prev, const Var& w_gates,
              const Var& b_gates, const Var& w_cand, const Var& b_cand, const Tensor& mask,
              const GrpuConfig& cfg);
// One GRU step (kernels/ops/recurrent.h): the new state [B, H].
Var gru_cell(const Var& x, const Var& h_prev, const Var& w_gates, const Var& b_gates,
             const Var& w_cand, const Var& b_cand, const Tensor& mask = {});
// One LSTM step: h_t and c_t, two outputs of one node (one lstm_cell_backward
// per step, whichever of them the loss reaches).
struct LstmState {
  Var h;  // [B, H]
  Var c;  // [B, H]
};
LstmState lstm_cell(const Var& x, const Var& h_prev, const Var& c_prev, const Var& w, const Var& b,
                    const Tensor& mask = {});

}  // namespace mare::ag
