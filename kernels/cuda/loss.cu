// Losses on the GPU: class-weighted cross-entropy over logits and mean squared
// error (kernels/ops/loss.cpp is the reference).
//
// Design:
// - The scalar sums (cross-entropy's Σ w[y]·log p and Σ w[y], mse's Σ d²) run in
//   one block of kThreads threads: thread t takes items t, t + kThreads, ... in
//   order, in double, and cub::BlockReduce combines the threads with a fixed
//   tree, so the loss has the same bits on every run. The loss stays on the
//   GPU as a [1] tensor (no synchronisation).
// - Cross-entropy's log-probabilities come from log_softmax_forward
//   (softmax.cu), probs = exp(log p) elementwise, as on the CPU. Backward
//   recomputes Σ w[y] in the same one-block kernel, then one thread per element
//   adds d_loss · w[y] / Σw · (p − [c = y]).
// - Targets are validated before use, forward and backward, as the CPU's
//   weight_sum does; the kernels then trust them. Targets whose range the host
//   knows (uploaded from host memory, as a batch's labels are:
//   Tensor::known_index_range) inside [−1, C) need no look. Others are scanned on
//   the device: a grid-stride scan finds the first row whose target is neither
//   −1 nor a class in [0, C) (integer atomicMin, independent of scheduling), one
//   thread writes (found, row, target), the host reads those bytes back (one
//   counted device read, a stream synchronisation) and throws the CPU's
//   std::out_of_range with the CPU's message.
// - The loss's own gradient d_loss is a [1] tensor on the GPU, read by the
//   kernels: a backward pass never waits for the device to learn it.
#include <cub/block/block_reduce.cuh>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

using BlockReduceDouble = cub::BlockReduce<double, kThreads>;

constexpr unsigned int kNone = 0xffffffffu;  // no bad row (memset 0xFF)

// ------------------------------------------------------------------ kernels
// probs[i] = exp(logp[i])
__global__ void exp_kernel(const float* __restrict__ logp, float* __restrict__ probs, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    probs[i] = expf(logp[i]);
}

// *first = min n with targets[n] neither −1 nor in [0, c) (starts at kNone).
__global__ void scan_targets_kernel(const int32_t* __restrict__ targets, int64_t n, int64_t c,
                                    unsigned int* __restrict__ first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t y = targets[i];
    if (y != -1 && (y < 0 || y >= c)) atomicMin(first, static_cast<unsigned int>(i));
  }
}

// One thread: verdict = (1 when a target is bad, its row, its value), or (0, 0, 0).
__global__ void targets_verdict_kernel(const int32_t* __restrict__ targets,
                                       const unsigned int* __restrict__ first,
                                       int* __restrict__ verdict) {
  const bool bad = *first != kNone;
  verdict[0] = bad ? 1 : 0;
  verdict[1] = bad ? static_cast<int>(*first) : 0;
  verdict[2] = bad ? targets[*first] : 0;
}

// One block. loss[0] = −Σ_n w[y_n] · logp[n, y_n] / Σ_n w[y_n] over rows with
// y_n ≠ −1 (0 when Σw = 0). Targets validated (check_targets_on_device).
//   logp: [n, c]; targets: [n]; weights: [c] or null (all 1)
__global__ void cross_entropy_loss_kernel(const float* __restrict__ logp,
                                          const int32_t* __restrict__ targets,
                                          const float* __restrict__ weights, int64_t n, int64_t c,
                                          float* __restrict__ loss) {
  __shared__ typename BlockReduceDouble::TempStorage temp;
  double sum = 0.0, wsum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int32_t y = targets[i];
    if (y == -1) continue;
    const double w = weights ? weights[y] : 1.0;
    sum -= w * logp[i * c + y];
    wsum += w;
  }
  sum = BlockReduceDouble(temp).Sum(sum);
  __syncthreads();  // temp is reused
  wsum = BlockReduceDouble(temp).Sum(wsum);
  if (threadIdx.x == 0) loss[0] = wsum > 0 ? static_cast<float>(sum / wsum) : 0.0f;
}

// One block. *wsum = Σ_n w[y_n] over rows with y_n ≠ −1 (targets validated).
__global__ void weight_sum_kernel(const int32_t* __restrict__ targets,
                                  const float* __restrict__ weights, int64_t n, int64_t c,
                                  double* __restrict__ wsum) {
  __shared__ typename BlockReduceDouble::TempStorage temp;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int32_t y = targets[i];
    if (y == -1) continue;
    s += weights ? weights[y] : 1.0;
  }
  s = BlockReduceDouble(temp).Sum(s);
  if (threadIdx.x == 0) *wsum = s;
}

// d_logits[i, j] += d_loss · w[y_i] / Σw · (p[i, j] − [j = y_i]) for y_i ≠ −1
// (nothing when Σw ≤ 0). Targets validated.
__global__ void cross_entropy_grad_kernel(float* __restrict__ d_logits,
                                          const float* __restrict__ probs,
                                          const int32_t* __restrict__ targets,
                                          const float* __restrict__ weights,
                                          const double* __restrict__ wsum_ptr,
                                          const float* __restrict__ d_loss_ptr, int64_t n,
                                          int64_t c) {
  const double wsum = *wsum_ptr;
  if (!(wsum > 0)) return;
  const float d_loss = *d_loss_ptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / c, j = i % c;
    const int32_t y = targets[row];
    if (y == -1) continue;
    const float k = static_cast<float>(
        __ddiv_rn(__dmul_rn(static_cast<double>(d_loss), weights ? weights[y] : 1.0), wsum));
    d_logits[i] = __fadd_rn(d_logits[i], __fmul_rn(k, __fsub_rn(probs[i], j == y ? 1.0f : 0.0f)));
  }
}

// One block. loss[0] = Σ (pred − target)² / n in double (0 when n = 0).
__global__ void mse_loss_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                int64_t n, float* __restrict__ loss) {
  __shared__ typename BlockReduceDouble::TempStorage temp;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double d = static_cast<double>(pred[i]) - target[i];
    s += d * d;
  }
  s = BlockReduceDouble(temp).Sum(s);
  if (threadIdx.x == 0) loss[0] = n ? static_cast<float>(s / n) : 0.0f;
}

// g = k · (pred − target) with k = 2 · d_loss / n, as the CPU rounds it; d_pred += g;
// d_target −= g (either may be null). n > 0.
__global__ void mse_grad_kernel(float* __restrict__ d_pred, float* __restrict__ d_target,
                                const float* __restrict__ pred, const float* __restrict__ target,
                                int64_t n, const float* __restrict__ d_loss) {
  const float k = __fdiv_rn(__fmul_rn(2.0f, *d_loss), static_cast<float>(n));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = __fmul_rn(k, __fsub_rn(pred[i], target[i]));
    if (d_pred) d_pred[i] += g;
    if (d_target) d_target[i] -= g;
  }
}

// The CPU's target check (kernels/ops/loss.cpp, weight_sum) for targets on the
// GPU: the same std::out_of_range with the same message. Nothing to do when the
// host knows the targets lie in [−1, classes) (or there are none); otherwise it
// synchronises the stream once.
void check_targets_on_device(const Tensor& targets, int64_t classes, const char* op) {
  const int64_t n = to_int(targets.numel(), op);
  int32_t lo = 0, hi = 0;
  if (n == 0 || (targets.known_index_range(lo, hi) && lo >= -1 && hi < classes)) return;
  Workspace ws(4 * sizeof(int));
  unsigned int* first = ws.as<unsigned int>();
  int* verdict = reinterpret_cast<int*>(first + 1);
  MARE_CUDA_CHECK(cudaMemsetAsync(first, 0xFF, sizeof(unsigned int), stream()));
  launch("scan_targets_kernel", n, scan_targets_kernel, targets.i32(), n, classes, first);
  targets_verdict_kernel<<<1, 1, 0, stream()>>>(targets.i32(), first, verdict);
  MARE_LAUNCH_CHECK("targets_verdict_kernel");
  int v[3] = {0, 0, 0};
  copy_bytes(v, Device::cpu, verdict, Device::cuda, sizeof v);  // a counted device read
  if (v[0])
    throw std::out_of_range(std::string(op) + ": target " + std::to_string(v[2]) + " of row " +
                            std::to_string(v[1]) + " is not a class in [0, " +
                            std::to_string(classes) + ") or −1");
}

}  // namespace

// ------------------------------------------------------------------ launchers
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const Tensor& weights) {
  require_cuda({&logits, &targets, &weights}, "cross_entropy_forward");
  const int64_t n = logits.dim(0), c = logits.dim(1);
  check_targets_on_device(targets, c, "cross_entropy_forward");
  Tensor logp = cuda::log_softmax_forward(logits, Tensor());  // softmax.cu
  CrossEntropyResult r{Tensor::empty({1}, Device::cuda),
                       Tensor::empty(logits.shape(), Device::cuda)};
  if (n * c > 0) {
    launch("exp_kernel", n * c, exp_kernel, logp.f32(), r.probs.f32(), n * c);
  }
  // One block even when n = 0: it writes the loss (0).
  cross_entropy_loss_kernel<<<1, kThreads, 0, stream()>>>(logp.f32(), targets.i32(),
                                                          ptr_or_null(weights), n, c, r.loss.f32());
  MARE_LAUNCH_CHECK("cross_entropy_loss_kernel");
  return r;
}

void cross_entropy_backward(Tensor& d_logits, const Tensor& d_loss, const Tensor& probs,
                            const Tensor& targets, const Tensor& weights) {
  if (!d_logits.defined()) return;
  require_cuda({&d_logits, &d_loss, &probs, &targets, &weights}, "cross_entropy_backward");
  const int64_t n = probs.dim(0), c = probs.dim(1);
  check_targets_on_device(targets, c, "cross_entropy_backward");
  if (n * c == 0) return;
  const float* w = ptr_or_null(weights);
  Workspace wsum(sizeof(double));
  weight_sum_kernel<<<1, kThreads, 0, stream()>>>(targets.i32(), w, n, c, wsum.as<double>());
  MARE_LAUNCH_CHECK("weight_sum_kernel");
  launch("cross_entropy_grad_kernel", n * c, cross_entropy_grad_kernel, d_logits.f32(), probs.f32(),
         targets.i32(), w, wsum.as<double>(), d_loss.f32(), n, c);
}

Tensor mse_forward(const Tensor& pred, const Tensor& target) {
  require_cuda({&pred, &target}, "mse_forward");
  Tensor out = Tensor::empty({1}, Device::cuda);
  // One block even when empty: it writes the loss (0).
  mse_loss_kernel<<<1, kThreads, 0, stream()>>>(pred.f32(), target.f32(), pred.numel(), out.f32());
  MARE_LAUNCH_CHECK("mse_loss_kernel");
  return out;
}

void mse_backward(Tensor& d_pred, Tensor& d_target, const Tensor& d_loss, const Tensor& pred,
                  const Tensor& target) {
  require_cuda({&d_pred, &d_target, &d_loss, &pred, &target}, "mse_backward");
  const int64_t n = pred.numel();
  if (n == 0 || (!d_pred.defined() && !d_target.defined())) return;
  launch("mse_grad_kernel", n, mse_grad_kernel, ptr_or_null(d_pred), ptr_or_null(d_target),
         pred.f32(), target.f32(), n, d_loss.f32());
}

}  // namespace mare::cuda
