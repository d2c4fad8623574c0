// Dynamic halting on the GPU (kernels/ops/halting.cpp is the reference, the
// equations are in kernels/ops/halting.h).
//
// Design:
// - One thread per token walks its K steps in order, with the CPU's float
//   operations (explicitly rounded, so nothing is fused or reassociated): the
//   threshold decisions, p, steps, remainder and halted have the CPU's bits.
// - The ponder mean needs Σ_i (steps_i + R_i) and the number of real tokens:
//   the token kernel writes each token's term (0 for padding) in double, and one
//   block sums them (thread t takes tokens t, t + kThreads, ... in order, then
//   cub::BlockReduce's fixed tree): the same bits on every run, no atomics.
// - Backward: the same one-block count of real tokens, then one thread per
//   token adds its gradient column.
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

using BlockReduceDouble = cub::BlockReduce<double, kThreads>;

__device__ inline bool is_real(const float* mask, int64_t i) {
  return !mask || mask[i] != 0.0f;
}

// Per token i (h, p: [k, n]; mask: [n] or null):
//   p[:, i], steps[i], remainder[i], halted[i]; term[i] = steps + R (0 for padding).
__global__ void halting_forward_kernel(const float* __restrict__ h, const float* __restrict__ mask,
                                       int64_t k, int64_t n, int t_max, float threshold,
                                       float* __restrict__ p, int32_t* __restrict__ steps_out,
                                       float* __restrict__ remainder,
                                       float* __restrict__ halted_out, double* __restrict__ term) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (!is_real(mask, i)) {
      for (int64_t t = 0; t < k; ++t) p[t * n + i] = 0.0f;
      steps_out[i] = 0;
      remainder[i] = 0.0f;
      halted_out[i] = 1.0f;
      term[i] = 0.0;
      continue;
    }
    float s = 0.0f;
    int32_t steps = static_cast<int32_t>(k);
    bool halted = false;
    int64_t t = 0;
    for (; t < k; ++t) {
      const float ht = h[t * n + i];
      if (t + 1 == t_max || __fadd_rn(s, ht) >= threshold) {
        p[t * n + i] = __fsub_rn(1.0f, s);
        steps = static_cast<int32_t>(t + 1);
        halted = true;
        ++t;
        break;
      }
      p[t * n + i] = ht;
      s = __fadd_rn(s, ht);
    }
    for (; t < k; ++t) p[t * n + i] = 0.0f;  // after the halting step
    const float rem = __fsub_rn(1.0f, s);
    steps_out[i] = steps;
    remainder[i] = rem;
    halted_out[i] = halted ? 1.0f : 0.0f;
    term[i] = __dadd_rn(static_cast<double>(steps), static_cast<double>(rem));
  }
}

// One block: ponder[0] = Σ term / (number of real tokens), 0 without one.
__global__ void ponder_kernel(const double* __restrict__ term, const float* __restrict__ mask,
                              int64_t n, float* __restrict__ ponder) {
  __shared__ typename BlockReduceDouble::TempStorage temp;
  double sum = 0.0, real = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum += term[i];
    real += is_real(mask, i) ? 1.0 : 0.0;
  }
  sum = BlockReduceDouble(temp).Sum(sum);
  __syncthreads();  // temp is reused
  real = BlockReduceDouble(temp).Sum(real);
  if (threadIdx.x == 0) ponder[0] = real > 0 ? static_cast<float>(sum / real) : 0.0f;
}

// One block: *real = number of real tokens (exact in double).
__global__ void real_count_kernel(const float* __restrict__ mask, int64_t n,
                                  double* __restrict__ real) {
  __shared__ typename BlockReduceDouble::TempStorage temp;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += is_real(mask, i) ? 1.0 : 0.0;
  s = BlockReduceDouble(temp).Sum(s);
  if (threadIdx.x == 0) *real = s;
}

// Per real token i, with c = d_ponder / real and d_R = d_p[n−1, i] + c (halted)
// or c (running): d_h[t, i] += d_p[t, i] − d_R for t < n − 1 (halted) or t < K
// (running). d_p and d_ponder may be null (zero).
__global__ void halting_backward_kernel(float* __restrict__ d_h, const float* __restrict__ d_p,
                                        const float* __restrict__ d_ponder_ptr,
                                        const int32_t* __restrict__ steps,
                                        const float* __restrict__ halted,
                                        const float* __restrict__ mask,
                                        const double* __restrict__ real, int64_t n) {
  const double count = *real;
  if (!(count > 0)) return;
  const float d_ponder = d_ponder_ptr ? *d_ponder_ptr : 0.0f;
  const float c = static_cast<float>(__ddiv_rn(static_cast<double>(d_ponder), count));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (!is_real(mask, i)) continue;
    const int32_t si = steps[i];
    const bool h = halted[i] != 0.0f;
    const int64_t last = h ? si - 1 : si;
    const float d_rem = __fadd_rn(h && d_p ? d_p[(si - 1) * n + i] : 0.0f, c);
    for (int64_t t = 0; t < last; ++t)
      d_h[t * n + i] = __fadd_rn(d_h[t * n + i], __fsub_rn(d_p ? d_p[t * n + i] : 0.0f, d_rem));
  }
}

}  // namespace

// ------------------------------------------------------------------ launchers
HaltingResult halting_forward(const Tensor& h, const Tensor& mask, int t_max, float eps) {
  require_cuda({&h, &mask}, "halting_forward");
  const int64_t k = h.dim(0), n = h.dim(1);
  HaltingResult r{Tensor::empty({k, n}, Device::cuda), Tensor::empty({n}, Device::cuda, DType::i32),
                  Tensor::empty({n}, Device::cuda), Tensor::empty({n}, Device::cuda),
                  Tensor::empty({1}, Device::cuda)};
  const float* m = ptr_or_null(mask);
  Workspace term(static_cast<size_t>(n) * sizeof(double));
  if (n > 0) {
    launch("halting_forward_kernel", n, halting_forward_kernel, h.f32(), m, k, n, t_max, 1.0f - eps,
           r.p.f32(), r.steps.i32(), r.remainder.f32(), r.halted.f32(), term.as<double>());
  }
  // One block even when n = 0: it writes the ponder cost (0).
  ponder_kernel<<<1, kThreads, 0, stream()>>>(term.as<double>(), m, n, r.ponder.f32());
  MARE_LAUNCH_CHECK("ponder_kernel");
  return r;
}

void halting_backward(Tensor& d_h, const Tensor& d_p, const Tensor& d_ponder, const Tensor& h,
                      const HaltingResult& fwd, const Tensor& mask) {
  if (!d_h.defined()) return;
  require_cuda({&d_h, &d_p, &d_ponder, &h, &fwd.steps, &fwd.halted, &mask}, "halting_backward");
  const int64_t n = h.dim(1);
  if (n == 0) return;
  const float* m = ptr_or_null(mask);
  Workspace real(sizeof(double));
  real_count_kernel<<<1, kThreads, 0, stream()>>>(m, n, real.as<double>());
  MARE_LAUNCH_CHECK("real_count_kernel");
  launch("halting_backward_kernel", n, halting_backward_kernel, d_h.f32(), ptr_or_null(d_p),
         ptr_or_null(d_ponder), fwd.steps.i32(), fwd.halted.f32(), m, real.as<double>(), n);
}

}  // namespace mare::cuda
