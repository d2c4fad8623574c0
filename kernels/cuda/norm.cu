// Layer norm and batch norm on the GPU (kernels/ops/norm.cpp is the reference).
//
// Design:
// - Layer norm (a group is a row): one warp per row, lane l takes columns
//   l, l + 32, ...; the statistics (mean, then the variance about it, as on the
//   CPU) and backward's two row sums accumulate in double per lane and combine
//   by a butterfly of warp shuffles (a fixed tree: every lane gets the same
//   bits).
// - Column reductions (batch-norm statistics and grads, layer norm's d_γ, d_β):
//   two passes in a fixed order, no atomics. Pass 1: one thread per (chunk of
//   kRowChunk rows, column) sums its rows in order, in double. Pass 2: one thread
//   per column adds the chunk sums in chunk order and finishes the column
//   (mean, rstd, running averages, or the gradient update).
// - Batch norm, three launches a direction. Forward (training): pass 1 gives
//   each (chunk, column) its rows' count, sum, mean and sum of squared deviations
//   about that mean (two sweeps of the chunk's rows, in double); pass 2 adds a
//   column's chunks in chunk order into n and μ (the bits of the earlier Σx / n)
//   and Σ(x − μ)² as Σ_k M2_k + n_k(μ_k − μ)², then rstd and the running
//   statistics; then the output. Backward: pass 1
//   gives each (chunk, column) Σ dy, Σ dy·x̂ and its row count, pass 2 the
//   column's totals (d_γ, d_β and the two means of d_x), then d_x. The row
//   count n thus comes out of the passes that read the mask anyway, exact in
//   double, with no launch of its own.
// - Batch norm's row mask (padding): pass 1 skips masked rows, the elementwise
//   kernels write 0 for masked rows (output) or leave them (d_x). Without a mask
//   every row counts.
// - The elementwise parts (normalised output, d_x) mirror the CPU's float
//   expressions with explicitly rounded operations (__fmul_rn, __fadd_rn, ...)
//   so that nvcc does not fuse them into FMAs the host does not do.
#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;
constexpr int64_t kRowChunk = 64;

// ------------------------------------------------------------------ device helpers
// Rows handled by this warp (the same for all 32 lanes).
__device__ inline int64_t first_row() {
  return blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
}
__device__ inline int64_t row_step() {
  return int64_t(gridDim.x) * kRowsPerBlock;
}

// (x − μ) · rstd · γ + β, in the CPU's order
__device__ inline float normalise(float x, float mu, float rstd, float gamma, float beta) {
  return __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, mu), rstd), gamma), beta);
}

// ------------------------------------------------------------------ column reductions
// Batch norm's gradient sums of a chunk (pass 1) or a column (pass 2), with their rows.
struct ChunkGradSums {  // Σ dy, Σ dy · x̂, rows
  double dy, dy_xhat, n;
};
// Per-element terms of the column reductions, f(r, j) -> the accumulator's fields.
struct LayerNormParamTerms {  // (dy · x̂, dy), x̂ with the row's μ, rstd
  const float *d_out, *x, *mean, *rstd;
  int64_t c;
  __device__ double2 operator()(int64_t r, int64_t j) const {
    float xhat = __fmul_rn(__fsub_rn(x[r * c + j], mean[r]), rstd[r]);
    float dy = d_out[r * c + j];
    return make_double2(__fmul_rn(dy, xhat), dy);
  }
};
struct BatchNormGradTerms {  // (dy, dy · x̂, 1), x̂ with the column's μ, rstd
  const float *d_out, *x, *mean, *rstd;
  int64_t c;
  __device__ ChunkGradSums operator()(int64_t r, int64_t j) const {
    const float xhat = __fmul_rn(__fsub_rn(x[r * c + j], mean[j]), rstd[j]);
    const float dy = d_out[r * c + j];
    return {dy, __fmul_rn(dy, xhat), 1.0};
  }
};

// The accumulators of pass 1: a pair of sums, or batch norm's gradient sums with
// their row count; `add` adds a term in place, in the order of its fields.
__device__ inline void add(double2& s, double2 v) {
  s.x += v.x;
  s.y += v.y;
}
__device__ inline void add(ChunkGradSums& s, ChunkGradSums v) {
  s.dy += v.dy;
  s.dy_xhat += v.dy_xhat;
  s.n += v.n;
}

// Pass 1: partial[k, j] = Σ_{r in chunk k, in order, row_mask[r] ≠ 0} f(r, j), in the
// accumulator type f returns (zero-initialised).
//   partial: [chunks, c]; row_mask: [rows] or null (every row)
template <class F, class Acc>
__global__ void column_chunk_sums_kernel(F f, int64_t rows, int64_t c, int64_t chunks,
                                         const float* __restrict__ row_mask,
                                         Acc* __restrict__ partial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < chunks * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i / c, j = i % c;
    const int64_t end = min(rows, (k + 1) * kRowChunk);
    Acc s{};
    for (int64_t r = k * kRowChunk; r < end; ++r) {
      if (row_mask && row_mask[r] == 0.0f) continue;
      add(s, f(r, j));
    }
    partial[i] = s;
  }
}

// Pass 2 core: Σ_k partial[k, j], chunks in order.
__device__ inline double2 column_total(const double2* partial, int64_t chunks, int64_t c,
                                       int64_t j) {
  double2 s = make_double2(0.0, 0.0);
  // Unrolled so that the loads of eight chunks are in flight at once (a column's
  // chunks are a dependent chain of adds; the order stays the same).
#pragma unroll 8
  for (int64_t k = 0; k < chunks; ++k) {
    s.x += partial[k * c + j].x;
    s.y += partial[k * c + j].y;
  }
  return s;
}

// ------------------------------------------------------------------ batch norm
// Pass 1 of the forward: for chunk k of kRowChunk rows and column j, over the
// rows that take part (row_mask ≠ 0, or every row without a mask), in order:
// their count, their sum, their mean and Σ (x − mean)² about it.   partial: [chunks, c]
struct ChunkMoments {
  double n, sum, mean, m2;
};
__global__ void bn_chunk_moments_kernel(const float* __restrict__ x, int64_t rows, int64_t c,
                                        int64_t chunks, const float* __restrict__ row_mask,
                                        ChunkMoments* __restrict__ partial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < chunks * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i / c, j = i % c;
    const int64_t begin = k * kRowChunk, end = min(rows, begin + kRowChunk);
    double n = 0.0, sum = 0.0;
    for (int64_t r = begin; r < end; ++r) {
      if (row_mask && row_mask[r] == 0.0f) continue;
      sum += x[r * c + j];
      n += 1.0;
    }
    const double mean = n > 0 ? sum / n : 0.0;
    double m2 = 0.0;
    for (int64_t r = begin; r < end; ++r) {
      if (row_mask && row_mask[r] == 0.0f) continue;
      const double d = static_cast<double>(x[r * c + j]) - mean;
      m2 += d * d;
    }
    partial[i] = {n, sum, mean, m2};
  }
}

// Pass 2 of the forward, one thread per column, the chunks in order: n = Σ n_k and
// μ = (Σ sum_k) / n (the column sum in the order of the earlier two-pass kernels, so
// μ keeps their bits), then Σ (x − μ)² = Σ_k M2_k + n_k (μ_k − μ)² (exact: the
// deviations about each chunk's mean plus each mean's about μ; no division in the
// loops); then the result's mean and rstd (biased variance) and the running averages
// (unbiased variance), as the CPU rounds them. With n = 1 the running variance
// stays, with n = 0 both stay (and μ = 0, rstd = 1/√ε).
__global__ void bn_stats_kernel(const ChunkMoments* __restrict__ partial, int64_t chunks, int64_t c,
                                float momentum, float eps, float* __restrict__ mean,
                                float* __restrict__ rstd, float* __restrict__ running_mean,
                                float* __restrict__ running_var) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < c;
       j += int64_t(gridDim.x) * blockDim.x) {
    double n = 0.0, total = 0.0;
#pragma unroll 8
    for (int64_t k = 0; k < chunks; ++k) {
      n += partial[k * c + j].n;
      total += partial[k * c + j].sum;
    }
    const double mu = n > 0 ? total / n : 0.0;
    double m2 = 0.0;
#pragma unroll 8
    for (int64_t k = 0; k < chunks; ++k) {
      const ChunkMoments p = partial[k * c + j];
      const double d = p.mean - mu;
      m2 += p.m2 + p.n * (d * d);
    }
    const double biased = n > 0 ? m2 / n : 0.0;
    mean[j] = static_cast<float>(mu);
    rstd[j] = static_cast<float>(1.0 / sqrt(biased + static_cast<double>(eps)));
    // running = (1 − m) · running + m · stat: a float product, then a double sum.
    const float keep = 1.0f - momentum;
    if (n >= 1)
      running_mean[j] = static_cast<float>(__dadd_rn(__fmul_rn(keep, running_mean[j]),
                                                     __dmul_rn(static_cast<double>(momentum), mu)));
    if (n >= 2) {
      const double unbiased = m2 / (n - 1);
      running_var[j] = static_cast<float>(__dadd_rn(
          __fmul_rn(keep, running_var[j]), __dmul_rn(static_cast<double>(momentum), unbiased)));
    }
  }
}

// Batch-norm eval statistics: mean = running mean, rstd = 1 / √(running var + ε).
__global__ void bn_eval_stats_kernel(const float* __restrict__ running_mean,
                                     const float* __restrict__ running_var, int64_t c, float eps,
                                     float* __restrict__ mean, float* __restrict__ rstd) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < c;
       j += int64_t(gridDim.x) * blockDim.x) {
    mean[j] = running_mean[j];
    rstd[j] = 1.0f / sqrtf(__fadd_rn(running_var[j], eps));
  }
}

// out[r, j] = (x − mean[j]) · rstd[j] · γ[j] + β[j], 0 where row_mask[r] = 0
//   x, out: [rows, c]; row_mask: [rows] or null. A row launch over [rows, c].
__global__ void bn_output_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                                 const float* __restrict__ rstd, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, const float* __restrict__ row_mask,
                                 float* __restrict__ out, int64_t rows, int64_t c) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const bool masked = row_mask && row_mask[r] == 0.0f;
    for (int64_t j = launch_col_begin(); j < c; j += launch_col_step()) {
      const int64_t i = r * c + j;
      out[i] = masked ? 0.0f : normalise(x[i], mean[j], rstd[j], gamma[j], beta[j]);
    }
  }
}

// Pass 2 of the backward, per column, the chunks in order: d_γ += Σ dy · x̂, d_β += Σ dy
// (either may be null), and, for d_x in training mode, means[j] = (Σ dy / m,
// Σ dy · x̂ / m) with m the rows that take part, rounded to float as the CPU does,
// once a column rather than once an element (means null: not wanted).
__global__ void bn_grad_sums_kernel(const ChunkGradSums* __restrict__ partial, int64_t chunks,
                                    int64_t c, float2* __restrict__ means,
                                    float* __restrict__ d_gamma, float* __restrict__ d_beta) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < c;
       j += int64_t(gridDim.x) * blockDim.x) {
    ChunkGradSums s{0.0, 0.0, 0.0};
#pragma unroll 8
    for (int64_t k = 0; k < chunks; ++k) {
      const ChunkGradSums p = partial[k * c + j];
      s.dy += p.dy;
      s.dy_xhat += p.dy_xhat;
      s.n += p.n;
    }
    if (means)
      means[j] = make_float2(static_cast<float>(s.dy / s.n), static_cast<float>(s.dy_xhat / s.n));
    if (d_gamma) d_gamma[j] += static_cast<float>(s.dy_xhat);
    if (d_beta) d_beta[j] += static_cast<float>(s.dy);
  }
}

// Batch-norm d_x, with k = γ · rstd and m the rows that take part:
//   training: d_x += k · (dy − Σdy / m − x̂ · Σ(dy · x̂) / m);   eval: d_x += k · dy
// (means: the two column means of bn_grad_sums_kernel; null in eval mode)
// Rows with row_mask 0 are left as they are. A row launch over [rows, c].
__global__ void bn_dx_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                             const float* __restrict__ x, const float* __restrict__ gamma,
                             const float* __restrict__ mean, const float* __restrict__ rstd,
                             const float2* __restrict__ means, const float* __restrict__ row_mask,
                             int64_t c, int64_t rows, bool training) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    if (row_mask && row_mask[r] == 0.0f) continue;
    for (int64_t j = launch_col_begin(); j < c; j += launch_col_step()) {
      const int64_t i = r * c + j;
      const float k = __fmul_rn(gamma[j], rstd[j]);
      const float dy = d_out[i];
      if (!training) {
        d_x[i] = __fadd_rn(d_x[i], __fmul_rn(k, dy));
        continue;
      }
      const float xhat = __fmul_rn(__fsub_rn(x[i], mean[j]), rstd[j]);
      const float2 mg = means[j];
      const float t = __fsub_rn(__fsub_rn(dy, mg.x), __fmul_rn(xhat, mg.y));
      d_x[i] = __fadd_rn(d_x[i], __fmul_rn(k, t));
    }
  }
}

// Layer norm d_γ += Σ_r dy · x̂, d_β += Σ_r dy (either may be null).
__global__ void ln_param_grads_kernel(const double2* __restrict__ partial, int64_t chunks,
                                      int64_t c, float* __restrict__ d_gamma,
                                      float* __restrict__ d_beta) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < c;
       j += int64_t(gridDim.x) * blockDim.x) {
    const double2 s = column_total(partial, chunks, c, j);
    if (d_gamma) d_gamma[j] += static_cast<float>(s.x);
    if (d_beta) d_beta[j] += static_cast<float>(s.y);
  }
}

// ------------------------------------------------------------------ row kernels
// Layer norm forward, one warp per row.   x, out: [rows, c]; mean, rstd: [rows]
__global__ void ln_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ out,
                                  float* __restrict__ mean, float* __restrict__ rstd, int64_t rows,
                                  int64_t c, float eps) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_row(); r < rows; r += row_step()) {
    const float* xr = x + r * c;
    double mu = 0.0, var = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) mu += xr[j];
    mu = warp_sum(mu) / c;
    for (int64_t j = lane; j < c; j += kWarp) {
      double d = xr[j] - mu;
      var += d * d;
    }
    var = warp_sum(var) / c;
    const float rs = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
    const float muf = static_cast<float>(mu);
    if (lane == 0) {
      mean[r] = muf;
      rstd[r] = rs;
    }
    float* yr = out + r * c;
    for (int64_t j = lane; j < c; j += kWarp) yr[j] = normalise(xr[j], muf, rs, gamma[j], beta[j]);
  }
}

// Layer norm d_x, one warp per row, with g = dy ⊙ γ:
//   d_x += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))
__global__ void ln_dx_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                             const float* __restrict__ x, const float* __restrict__ gamma,
                             const float* __restrict__ mean, const float* __restrict__ rstd,
                             int64_t rows, int64_t c) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_row(); r < rows; r += row_step()) {
    const float *xr = x + r * c, *gr = d_out + r * c;
    const float mu = mean[r], rs = rstd[r];
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      float xhat = __fmul_rn(__fsub_rn(xr[j], mu), rs);
      float g = __fmul_rn(gr[j], gamma[j]);
      mean_g += g;
      mean_gx += __fmul_rn(g, xhat);
    }
    const float mg = static_cast<float>(warp_sum(mean_g) / c);
    const float mgx = static_cast<float>(warp_sum(mean_gx) / c);
    float* dxr = d_x + r * c;
    for (int64_t j = lane; j < c; j += kWarp) {
      float xhat = __fmul_rn(__fsub_rn(xr[j], mu), rs);
      float g = __fmul_rn(gr[j], gamma[j]);
      float t = __fsub_rn(__fsub_rn(g, mg), __fmul_rn(xhat, mgx));
      dxr[j] = __fadd_rn(dxr[j], __fmul_rn(rs, t));
    }
  }
}

// ------------------------------------------------------------------ helpers
int64_t chunks_for(int64_t rows) {
  return (rows + kRowChunk - 1) / kRowChunk;
}

// Runs pass 1 over a [rows, c] matrix into `partial` ([chunks_for(rows), c]),
// skipping the rows whose row_mask entry is 0 (row_mask null: none).
template <class F, class Acc>
void column_chunk_sums(F f, int64_t rows, int64_t c, Acc* partial,
                       const float* row_mask = nullptr) {
  const int64_t n = chunks_for(rows) * c;
  launch("column_chunk_sums_kernel", n, column_chunk_sums_kernel<F, Acc>, f, rows, c,
         chunks_for(rows), row_mask, partial);
}

}  // namespace

// ------------------------------------------------------------------ launchers
NormResult layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  require_cuda({&x, &gamma, &beta}, "layer_norm_forward");
  const int64_t c = x.dim(-1), rows = c ? x.numel() / c : 0;
  NormResult r{Tensor::empty(x.shape(), Device::cuda), Tensor::empty({rows}, Device::cuda),
               Tensor::empty({rows}, Device::cuda)};
  if (rows == 0) return r;
  ln_forward_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream()>>>(
      x.f32(), gamma.f32(), beta.f32(), r.out.f32(), r.mean.f32(), r.rstd.f32(), rows, c, eps);
  MARE_LAUNCH_CHECK("ln_forward_kernel");
  return r;
}

void layer_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd) {
  require_cuda({&d_x, &d_gamma, &d_beta, &d_out, &x, &gamma, &mean, &rstd}, "layer_norm_backward");
  const int64_t c = x.dim(-1);
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / c;
  if (d_gamma.defined() || d_beta.defined()) {
    Workspace partial(static_cast<size_t>(chunks_for(rows) * c) * sizeof(double2));
    column_chunk_sums(LayerNormParamTerms{d_out.f32(), x.f32(), mean.f32(), rstd.f32(), c}, rows, c,
                      partial.as<double2>());
    launch("ln_param_grads_kernel", c, ln_param_grads_kernel, partial.as<double2>(),
           chunks_for(rows), c, ptr_or_null(d_gamma), ptr_or_null(d_beta));
  }
  if (d_x.defined()) {
    ln_dx_kernel<<<blocks_for(rows, kRowsPerBlock), kThreads, 0, stream()>>>(
        d_x.f32(), d_out.f32(), x.f32(), gamma.f32(), mean.f32(), rstd.f32(), rows, c);
    MARE_LAUNCH_CHECK("ln_dx_kernel");
  }
}

NormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              Tensor& running_mean, Tensor& running_var, bool training,
                              float momentum, float eps, const Tensor& row_mask) {
  require_cuda({&x, &gamma, &beta, &running_mean, &running_var, &row_mask}, "batch_norm_forward");
  const int64_t c = x.dim(-1), rows = c ? x.numel() / c : 0;
  NormResult r{Tensor::empty(x.shape(), Device::cuda), Tensor::empty({c}, Device::cuda),
               Tensor::empty({c}, Device::cuda)};
  if (c == 0) return r;
  const float* mask = ptr_or_null(row_mask);
  if (training) {  // rows >= 2 without a mask (checked by the caller)
    const int64_t chunks = chunks_for(rows);
    Workspace partial(static_cast<size_t>(chunks * c) * sizeof(ChunkMoments));
    launch("bn_chunk_moments_kernel", chunks * c, bn_chunk_moments_kernel, x.f32(), rows, c, chunks,
           mask, partial.as<ChunkMoments>());
    launch("bn_stats_kernel", c, bn_stats_kernel, partial.as<ChunkMoments>(), chunks, c, momentum,
           eps, r.mean.f32(), r.rstd.f32(), running_mean.f32(), running_var.f32());
  } else {
    launch("bn_eval_stats_kernel", c, bn_eval_stats_kernel, running_mean.f32(), running_var.f32(),
           c, eps, r.mean.f32(), r.rstd.f32());
  }
  const int64_t n = x.numel();
  if (n == 0) return r;
  const RowLaunch l = row_launch(rows, c);
  bn_output_kernel<<<l.grid, l.block, 0, stream()>>>(
      x.f32(), r.mean.f32(), r.rstd.f32(), gamma.f32(), beta.f32(), mask, r.out.f32(), rows, c);
  MARE_LAUNCH_CHECK("bn_output_kernel");
  return r;
}

void batch_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, bool training, const Tensor& row_mask) {
  require_cuda({&d_x, &d_gamma, &d_beta, &d_out, &x, &gamma, &mean, &rstd, &row_mask},
               "batch_norm_backward");
  const int64_t c = x.dim(-1), n = x.numel();
  if (n == 0) return;
  const int64_t rows = n / c, chunks = chunks_for(rows);
  const float* mask = ptr_or_null(row_mask);
  // The column sums feed d_γ, d_β, and d_x in training mode (through their means).
  const bool dx_means = d_x.defined() && training;
  const bool need_sums = d_gamma.defined() || d_beta.defined() || dx_means;
  Workspace means(dx_means ? static_cast<size_t>(c) * sizeof(float2) : 0);
  if (need_sums) {
    Workspace partial(static_cast<size_t>(chunks * c) * sizeof(ChunkGradSums));
    column_chunk_sums(BatchNormGradTerms{d_out.f32(), x.f32(), mean.f32(), rstd.f32(), c}, rows, c,
                      partial.as<ChunkGradSums>(), mask);
    launch("bn_grad_sums_kernel", c, bn_grad_sums_kernel, partial.as<ChunkGradSums>(), chunks, c,
           dx_means ? means.as<float2>() : nullptr, ptr_or_null(d_gamma), ptr_or_null(d_beta));
  }
  if (!d_x.defined()) return;
  const RowLaunch l = row_launch(rows, c);
  bn_dx_kernel<<<l.grid, l.block, 0, stream()>>>(d_x.f32(), d_out.f32(), x.f32(), gamma.f32(),
                                                 mean.f32(), rstd.f32(), means.as<float2>(), mask,
                                                 c, rows, training);
  MARE_LAUNCH_CHECK("bn_dx_kernel");
}

}  // namespace mare::cuda
