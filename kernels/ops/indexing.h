// Reductions and data movement: max over an axis, embedding gather with
// scatter-add backward, concat and split along an axis.
#pragma once

#include <vector>

#include "kernels/tensor.h"

namespace mare {

// out = max over `axis` (the axis is removed); argmax: i32, out's shape, the
// first index reaching the maximum. Backward routes d_out to the argmax.
struct MaxResult {
  Tensor out;
  Tensor argmax;
};
MaxResult max_forward(const Tensor& x, int axis);
void max_backward(Tensor& d_x, const Tensor& d_out, const Tensor& argmax, int axis);

// out[.., :] = table[ids[..], :]        table: [V, D], ids: i32 any shape (rank ≤ 3)
// -> out: ids.shape + [D]. Backward: d_table[ids[n]] += d_out[n] (scatter-add,
// in index order, so repeated ids accumulate deterministically; the GPU sums
// each run of equal ids in fixed pieces of 64, then the pieces in order: the
// same bytes on every run, rounded otherwise than the CPU's one sequence).
Tensor embedding_forward(const Tensor& table, const Tensor& ids);
void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& ids);

// The index grid of a broadcast by gather: ids [rows, cols], i32, with
// ids[r, c] = r (by_row: a table row repeated over the columns) or c (a table
// row per column), made on `device` with no host memory (on the GPU one kernel
// that vouches for the range: Tensor::known_index_range). Not differentiable.
Tensor grid_ids(int64_t rows, int64_t cols, bool by_row, Device device);

// Concatenate along `axis`; all other extents must agree.
Tensor concat_forward(const std::vector<Tensor>& xs, int axis);
// d_xs[i] += the slice of d_out that came from xs[i]. Every d_xs[i] must be
// defined (an undefined one throws): its extent along the axis is what places
// the later pieces. A piece that needs no gradient takes a zero scratch tensor
// of its shape (as models/functions.cpp does).
void concat_backward(std::vector<Tensor>& d_xs, const Tensor& d_out, int axis);

// Split along `axis` into pieces of the given sizes (they must sum to the extent).
std::vector<Tensor> split_forward(const Tensor& x, const std::vector<int64_t>& sizes, int axis);
// d_x += the concatenation of d_outs (undefined d_x: skipped). Every piece must
// be defined, fit d_x outside the axis, and the pieces must cover the axis.
void split_backward(Tensor& d_x, const std::vector<Tensor>& d_outs, int axis);

}  // namespace mare
