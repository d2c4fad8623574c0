// Softmax family over the last axis: softmax and log-softmax with an optional
// mask, and logsumexp over sets of rows (BRAN's mention-pair pooling).
//
// Masks: a tensor of x's shape holding 1 (position takes part) or 0
// (excluded). Excluded positions output 0 and receive no gradient; a row whose
// positions are all excluded outputs all zeros (never NaN).
#pragma once

#include "kernels/tensor.h"

namespace mare {

// x: [.., C], mask: undefined or x's shape -> out: x's shape
Tensor softmax_forward(const Tensor& x, const Tensor& mask = {});
void softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor log_softmax_forward(const Tensor& x, const Tensor& mask = {});
// `out` is the log-softmax output; mask as in forward.
void log_softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out,
                          const Tensor& mask = {});

// Log-sum-exp over index sets of rows, per column:
//   out[s, c] = log Σ_{r ∈ set s} exp(x[r, c])
// x: [R, C]; sets in CSR form: offsets: i32 [S + 1] (offsets[0] = 0, non-
// decreasing), rows: i32 [offsets[S]] with values in [0, R). Every set must be
// non-empty. -> out: [S, C]
Tensor logsumexp_sets_forward(const Tensor& x, const Tensor& offsets, const Tensor& rows);
void logsumexp_sets_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x, const Tensor& out,
                             const Tensor& offsets, const Tensor& rows);

// The checks of both ops above on index sets for R = num_rows rows, in their order
// and with their messages (std::invalid_argument for the offsets, std::out_of_range
// for a row index; op names the caller), made by the host without reading the
// device. It can when host_can_check_index_sets: the host holds the offsets' bytes
// (a CPU tensor, or a GPU tensor uploaded from host memory: Tensor::host_has_bytes)
// and the rows' bytes, or knows the rows' range to lie in [0, R)
// (Tensor::known_index_range: a large upload).
bool host_can_check_index_sets(const Tensor& offsets, const Tensor& rows, int64_t num_rows);
void check_index_sets(const Tensor& offsets, const Tensor& rows, int64_t num_rows, const char* op);

}  // namespace mare
