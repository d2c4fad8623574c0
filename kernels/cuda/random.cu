// Device Philox fills: element j of a tensor receives the draw at global index
// offset + j, exactly as kernels/random.cpp computes it on the host. The affine
// maps use explicitly rounded operations (__fmul_rn, __fadd_rn) so that nvcc
// does not fuse them into an FMA the host does not do: the host is built in ISO
// mode, where GCC does not contract floating-point expressions.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/philox.cuh"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
namespace {

__global__ void fill_uniform_kernel(float* __restrict__ p, int64_t n, uint64_t seed,
                                    uint32_t stream, float lo, float hi, uint64_t offset) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x)
    p[j] = __fadd_rn(lo, __fmul_rn(hi - lo, philox_uniform(seed, stream, offset + j)));
}

__global__ void fill_normal_kernel(float* __restrict__ p, int64_t n, uint64_t seed, uint32_t stream,
                                   float mean, float stddev, uint64_t offset) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x)
    p[j] = __fadd_rn(mean, __fmul_rn(stddev, philox_normal(seed, stream, offset + j)));
}

__global__ void fill_bernoulli_kernel(float* __restrict__ p, int64_t n, uint64_t seed,
                                      uint32_t stream, float prob, uint64_t offset) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x)
    p[j] = philox_uniform(seed, stream, offset + j) < prob ? 1.0f : 0.0f;
}

}  // namespace

// ------------------------------------------------------------------ launchers
void fill_uniform(Tensor& t, uint64_t seed, uint32_t stream, float lo, float hi, uint64_t offset) {
  require_cuda({&t}, "fill_uniform");
  int64_t n = t.numel();
  if (n == 0) return;
  launch("fill_uniform_kernel", n, fill_uniform_kernel, t.f32(), n, seed, stream, lo, hi, offset);
}

void fill_normal(Tensor& t, uint64_t seed, uint32_t stream, float mean, float stddev,
                 uint64_t offset) {
  require_cuda({&t}, "fill_normal");
  int64_t n = t.numel();
  if (n == 0) return;
  launch("fill_normal_kernel", n, fill_normal_kernel, t.f32(), n, seed, stream, mean, stddev,
         offset);
}

void fill_bernoulli(Tensor& t, uint64_t seed, uint32_t stream, float p, uint64_t offset) {
  require_cuda({&t}, "fill_bernoulli");
  int64_t n = t.numel();
  if (n == 0) return;
  launch("fill_bernoulli_kernel", n, fill_bernoulli_kernel, t.f32(), n, seed, stream, p, offset);
}

}  // namespace mare::cuda
