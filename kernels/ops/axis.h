// Axis bookkeeping shared by the CPU ops and the CUDA kernels (no Eigen here,
// so .cu files include it too). Defined in kernels/ops/indexing.cpp.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace mare::detail {

// For an axis of a tensor: outer (product before), size, inner (product after).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
// Both throw std::invalid_argument naming `op` when the axis is out of range.
AxisSplit split_at_axis(const Shape& s, int axis, const char* op);
int normalize_axis(int axis, int rank, const char* op);

// The shape without `axis`, and the shape with `axis` set to `extent` (axis in range).
Shape without_axis(const Shape& s, int axis);
Shape with_extent(const Shape& s, int axis, int64_t extent);

}  // namespace mare::detail
