// Internal helpers shared by the CPU op implementations (not a public header).
#pragma once

#include <Eigen/Core>
#include <initializer_list>
#include <string>

#include "kernels/ops/axis.h"
#include "kernels/tensor.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/ops_cuda.h"
#endif

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

// Device dispatch. True when the op's (defined) tensors are all on the GPU,
// false when all are on the host; mixed devices throw, naming the op.
inline bool on_cuda(const char* op, std::initializer_list<const Tensor*> ts) {
  bool any_cuda = false, any_cpu = false;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    (t->device() == Device::cuda ? any_cuda : any_cpu) = true;
  }
  if (any_cuda && any_cpu)
    throw std::invalid_argument(std::string(op) +
                                ": tensors on different devices (cpu and cuda); move them with "
                                "Tensor::to() first");
  return any_cuda;
}

}  // namespace mare::detail

// In an op's CPU entry point, after its argument checks:
//   MARE_CUDA_DISPATCH("relu_forward", relu_forward(x), &x);
// returns mare::cuda::relu_forward(x) when the listed tensors are on the GPU.
// Without the CUDA backend no GPU tensor can exist and it expands to nothing.
#ifdef MARE_WITH_CUDA
#define MARE_CUDA_DISPATCH(op, call, ...)                                      \
  do {                                                                         \
    if (::mare::detail::on_cuda(op, {__VA_ARGS__})) return ::mare::cuda::call; \
  } while (0)
#else
#define MARE_CUDA_DISPATCH(op, call, ...) \
  do {                                    \
  } while (0)
#endif

namespace mare::detail {

// rows x cols view of a tensor whose last axis is the feature axis.
inline int64_t last_dim(const Tensor& t) {
  return t.dim(-1);
}
inline int64_t leading_rows(const Tensor& t) {
  return t.dim(-1) == 0 ? 0 : t.numel() / t.dim(-1);
}

}  // namespace mare::detail
