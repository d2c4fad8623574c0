// The DNC interface's scalar functions on the GPU, branch for branch as the CPU's
// (kernels/memory/interface.cpp, fused_step.cpp), for the memory family's files
// (memory.cu, memory_step.cu): sigmoid, oneplus = 1 + softplus, softmax over three.
#pragma once

#include <cmath>

namespace mare::cuda {
namespace {  // each file that includes this gets its own copies

__device__ __forceinline__ float sigmoid_f(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}
__device__ __forceinline__ float oneplus_f(float x) {
  return 1.0f + fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}
__device__ __forceinline__ void softmax3(const float* x, float* y) {
  const float mx = fmaxf(fmaxf(x[0], x[1]), x[2]);
  const float e0 = expf(x[0] - mx), e1 = expf(x[1] - mx), e2 = expf(x[2] - mx), sum = e0 + e1 + e2;
  y[0] = e0 / sum;
  y[1] = e1 / sum;
  y[2] = e2 / sum;
}

}  // namespace
}  // namespace mare::cuda
