// Optimiser kernels on the GPU: L2 gradient, in-place scale, sum of squares
// and the Adam update (kernels/ops/optim.cpp is the reference; equations,
// rounding and reduction order in kernels/ops/optim.h).
//
// Design: the updates are one thread per element in grid-stride loops, each
// float operation spelled with an explicitly rounded intrinsic so that nvcc
// fuses nothing the host does not (the host compiles in ISO mode): the GPU
// gives the CPU's bits. Adam's double part (m̂, v̂, the step) uses the IEEE
// double operations, also rounded one by one; its bias corrections c₁, c₂ come
// from the host (adam_bias_correction, the CPU's pow()).
// sum_squares follows the CPU's tree exactly: level 0 has one thread per chunk
// of kSumSquaresChunk elements summing its squares in order (no atomics);
// each later level has one thread per chunk of the previous level's sums, until
// one value per tensor remains in a slot of a device array. The slots come back
// to the host in one copy (the one synchronisation) and are added in list order
// there, as the CPU does.
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

// ------------------------------------------------------------------ kernels
// g[i] ← g[i] + k·w[i]   (k = 2λ from the host)
__global__ void l2_grad_add_kernel(float* __restrict__ g, const float* __restrict__ w, int64_t n,
                                   float k) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    g[i] = __fadd_rn(g[i], __fmul_rn(k, w[i]));
}

__global__ void scale_inplace_kernel(float* __restrict__ x, int64_t n, float s) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = __fmul_rn(x[i], s);
}

// Level 0: out[k] = Σ_{i in chunk k} x[i]² in double, i in order.
__global__ void chunk_squares_kernel(const float* __restrict__ x, int64_t n, int64_t chunks,
                                     double* __restrict__ out) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < chunks;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t begin = k * kSumSquaresChunk;
    const int64_t end = min(n, begin + kSumSquaresChunk);
    double s = 0.0;
    for (int64_t i = begin; i < end; ++i) {
      const double d = x[i];
      s = __dadd_rn(s, __dmul_rn(d, d));
    }
    out[k] = s;
  }
}

// Later levels: out[k] = Σ_{i in chunk k} in[i], i in order.
__global__ void chunk_sums_kernel(const double* __restrict__ in, int64_t n, int64_t chunks,
                                  double* __restrict__ out) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < chunks;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t begin = k * kSumSquaresChunk;
    const int64_t end = min(n, begin + kSumSquaresChunk);
    double s = 0.0;
    for (int64_t i = begin; i < end; ++i) s = __dadd_rn(s, in[i]);
    out[k] = s;
  }
}

// The CPU loop of adam_update, operation by operation.
__global__ void adam_update_kernel(float* __restrict__ w, const float* __restrict__ g,
                                   float* __restrict__ m, float* __restrict__ v, int64_t n,
                                   float lr, float beta1, float beta2, float omb1, float omb2,
                                   float eps, double c1, double c2) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(omb1, gi));
    const float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(__fmul_rn(omb2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const double mhat = __ddiv_rn(static_cast<double>(mi), c1);
    const double vhat = __ddiv_rn(static_cast<double>(vi), c2);
    const double step = __ddiv_rn(__dmul_rn(static_cast<double>(lr), mhat),
                                  __dadd_rn(__dsqrt_rn(vhat), static_cast<double>(eps)));
    w[i] = __fsub_rn(w[i], __double2float_rn(step));
  }
}

int64_t chunks_of(int64_t n) {
  return (n + kSumSquaresChunk - 1) / kSumSquaresChunk;
}

}  // namespace

// ------------------------------------------------------------------ launchers
void l2_grad_add(Tensor& grad, const Tensor& w, float lambda) {
  require_cuda({&grad, &w}, "l2_grad_add");
  const int64_t n = w.numel();
  if (n == 0) return;
  l2_grad_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(grad.f32(), w.f32(), n,
                                                               2.0f * lambda);
  MARE_LAUNCH_CHECK("l2_grad_add_kernel");
}

void scale_inplace(Tensor& x, float s) {
  require_cuda({&x}, "scale_inplace");
  const int64_t n = x.numel();
  if (n == 0) return;
  scale_inplace_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(x.f32(), n, s);
  MARE_LAUNCH_CHECK("scale_inplace_kernel");
}

double sum_squares(std::span<const Tensor> xs) {
  for (const Tensor& t : xs) require_cuda({&t}, "sum_squares");
  if (xs.empty()) return 0.0;
  // One slot per tensor; an empty or undefined tensor's slot stays 0.
  Workspace slots(xs.size() * sizeof(double));
  MARE_CUDA_CHECK(cudaMemsetAsync(slots.get(), 0, slots.bytes(), stream()));
  for (size_t t = 0; t < xs.size(); ++t) {
    const Tensor& x = xs[t];
    if (!x.defined() || x.numel() == 0) continue;
    double* slot = slots.as<double>() + t;
    const int64_t c0 = chunks_of(x.numel());
    // Ping-pong buffers: level 0 needs c0 sums, level 1 ⌈c0 / chunk⌉, later ones fewer.
    Workspace a(c0 > 1 ? static_cast<size_t>(c0) * sizeof(double) : 0);
    Workspace b(c0 > 1 ? static_cast<size_t>(chunks_of(c0)) * sizeof(double) : 0);
    double* out = c0 == 1 ? slot : a.as<double>();
    chunk_squares_kernel<<<blocks_for(c0), kThreads, 0, stream()>>>(x.f32(), x.numel(), c0, out);
    MARE_LAUNCH_CHECK("chunk_squares_kernel");
    const double* in = out;
    bool in_a = true;
    for (int64_t count = c0; count > 1;) {
      const int64_t next = chunks_of(count);
      double* dst = next == 1 ? slot : (in_a ? b.as<double>() : a.as<double>());
      chunk_sums_kernel<<<blocks_for(next), kThreads, 0, stream()>>>(in, count, next, dst);
      MARE_LAUNCH_CHECK("chunk_sums_kernel");
      in = dst;
      in_a = !in_a;
      count = next;
    }
  }
  std::vector<double> host(xs.size());
  copy_bytes(host.data(), Device::cpu, slots.get(), Device::cuda, slots.bytes());
  double total = 0.0;
  for (double s : host) total += s;
  return total;
}

void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1,
                 float beta2, float eps, int64_t step) {
  require_cuda({&w, &g, &m, &v}, "adam_update");
  const int64_t n = w.numel();
  if (n == 0) return;
  const AdamBiasCorrection c = adam_bias_correction(beta1, beta2, step);
  const float omb1 = 1 - beta1, omb2 = 1 - beta2;
  adam_update_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(
      w.f32(), g.f32(), m.f32(), v.f32(), n, lr, beta1, beta2, omb1, omb2, eps, c.c1, c.c2);
  MARE_LAUNCH_CHECK("adam_update_kernel");
}

}  // namespace mare::cuda
