// The op list. Adding an op: implement the pair in its family file, add a line
// here, and add its cases to tests/kernels/op_cases.cpp.
#include "kernels/ops.h"

#include <array>

namespace mare {

namespace {
constexpr std::array kOps = {
    OpInfo{"matmul", "linalg", "op(a)·op(b) with transpose flags"},
    OpInfo{"batched_matmul", "linalg", "per-batch op(a)·op(b)"},
    OpInfo{"bias_add", "elementwise", "x + bias over the last axis"},
    OpInfo{"add", "elementwise", "a + b"},
    OpInfo{"mul", "elementwise", "a ⊙ b"},
    OpInfo{"scale", "elementwise", "s · x"},
    OpInfo{"div", "elementwise", "a / b"},
    OpInfo{"select_rows", "elementwise", "rows of a where keep ≠ 0, else of b (halting)"},
    OpInfo{"scale_rows", "elementwise", "x[r, ..] · s[r] (masks, halting weights)"},
    OpInfo{"relu", "elementwise", "max(0, x)"},
    OpInfo{"relu6", "elementwise", "min(max(0, x), 6)"},
    OpInfo{"sigmoid", "elementwise", "1 / (1 + e^-x)"},
    OpInfo{"tanh", "elementwise", "tanh(x)"},
    OpInfo{"oneplus", "elementwise", "1 + softplus(x)"},
    OpInfo{"hard_sigmoid", "elementwise", "clip(0.2x + 0.5, 0, 1)"},
    OpInfo{"dropout", "elementwise", "inverted dropout with a Philox mask"},
    OpInfo{"softmax", "softmax", "masked softmax over the last axis"},
    OpInfo{"log_softmax", "softmax", "masked log-softmax over the last axis"},
    OpInfo{"logsumexp_sets", "softmax", "logsumexp over index sets of rows"},
    OpInfo{"layer_norm", "norm", "layer normalisation over the last axis"},
    OpInfo{"batch_norm", "norm", "batch normalisation (train / eval, running statistics)"},
    OpInfo{"conv1d", "conv", "conv1d over the sequence, same padding, [B, I, C]"},
    OpInfo{"depthwise_conv1d", "conv", "depthwise conv1d over the sequence, same padding"},
    OpInfo{"max", "indexing", "max over an axis"},
    OpInfo{"embedding", "indexing", "row gather with scatter-add backward"},
    OpInfo{"concat", "indexing", "concatenate along an axis"},
    OpInfo{"split", "indexing", "split along an axis"},
    OpInfo{"cross_entropy", "loss", "class-weighted softmax cross-entropy"},
    OpInfo{"mse", "loss", "mean squared error"},
    OpInfo{"attention", "attention", "multi-head scaled dot-product attention, key mask"},
    OpInfo{"halting", "halting", "ACT halting weights, step counts and ponder cost (SPEC §4.4)"},
    // recurrent cells (SPEC §4.6)
    OpInfo{"grpu_cell", "grpu", "GRPU step: GRU controller + ALU (read, sum, prod, cond)"},
    OpInfo{"gru_cell", "recurrent", "GRU step (the GRPU cell without machine fields)"},
    OpInfo{"lstm_cell", "recurrent", "LSTM step"},
    // memory access (SPEC §3)
    OpInfo{"interface_split", "memory", "DNC interface vector -> parts in their domains"},
    OpInfo{"content_weighting", "memory", "softmax_n(β · cosine(key, M[n]))"},
    OpInfo{"retention", "memory", "ψ = Π_r (1 − f_r w^r_r)"},
    OpInfo{"usage", "memory", "u = (u' + w' − u'⊙w') ⊙ ψ, no gradient into w'"},
    OpInfo{"allocation", "memory",
           "DNC allocation: sorted|parallel|parallel-eps|rank|parallel-block|network"},
    OpInfo{"write_weighting", "memory", "w^w = g^w (g^a a + (1 − g^a) c^w)"},
    OpInfo{"memory_update", "memory", "M ⊙ (1 − w eᵀ) + w vᵀ"},
    OpInfo{"link_update", "memory", "temporal link matrix L"},
    OpInfo{"precedence_update", "memory", "p = (1 − Σw) p' + w"},
    OpInfo{"link_weights", "memory", "forward/backward weights L·w^r, Lᵀ·w^r"},
    OpInfo{"read_weights", "memory", "w^r = π₁ b + π₂ c^r + π₃ f"},
    OpInfo{"read_vectors", "memory", "r = Mᵀ w^r"},
};
}  // namespace

std::span<const OpInfo> op_registry() {
  return kOps;
}

}  // namespace mare
