// Internal helpers shared by the CPU op implementations (not a public header).
#pragma once

#include <Eigen/Core>
#include <string>

#include "kernels/tensor.h"

namespace mare::detail {

using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapRM = Eigen::Map<MatRM>;
using CMapRM = Eigen::Map<const MatRM>;
using StridedMap = Eigen::Map<MatRM, 0, Eigen::OuterStride<>>;
using CStridedMap = Eigen::Map<const MatRM, 0, Eigen::OuterStride<>>;

inline MapRM as_matrix(Tensor& t, int64_t rows, int64_t cols) {
  return MapRM(t.f32(), rows, cols);
}
inline CMapRM as_matrix(const Tensor& t, int64_t rows, int64_t cols) {
  return CMapRM(t.f32(), rows, cols);
}

// The CPU implementation is the reference; a CUDA tensor reaching it means the
// CUDA backend is absent from this build.
inline void require_cpu(const Tensor& t, const char* op) {
  if (t.defined() && t.device() != Device::cpu)
    throw std::invalid_argument(std::string(op) +
                                ": tensor is on cuda but this build has no CUDA backend");
}

// rows x cols view of a tensor whose last axis is the feature axis.
inline int64_t last_dim(const Tensor& t) {
  return t.dim(-1);
}
inline int64_t leading_rows(const Tensor& t) {
  return t.numel() / t.dim(-1);
}

// For an axis of a tensor: outer (product before), size, inner (product after).
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit split_at_axis(const Shape& s, int axis, const char* op);
int normalize_axis(int axis, int rank, const char* op);

}  // namespace mare::detail
