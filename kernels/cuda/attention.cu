// Multi-head scaled dot-product attention on the GPU, mirroring
// kernels/ops/attention.cpp (the CPU reference and its algorithm).
//
// Head h uses columns [h·d_k, (h+1)·d_k) of q, k, v: a strided view with row
// stride D, so every product is a cuBLAS strided-batched GEMM over the batch
// (one call per head and product; see gemm_row_major in linalg.cu) and nothing
// is copied into per-head buffers. Forward per head:
//   S = Q Kᵀ / √d_k (written straight into probs [B, H, I, J]),
//   P = masked softmax of S per row (kernel below), O = P V (into out's columns).
// Backward per head, P from forward:
//   d_V += Pᵀ d_O,  d_P = d_O Vᵀ,  d_S = P ⊙ (d_P − rowsum(d_P ⊙ P)),
//   d_Q += d_S K / √d_k,  d_K += d_Sᵀ Q / √d_k.
//
// The two row kernels give one warp to each row of J scores: lanes stride over
// the columns, then a butterfly (xor-shuffle) reduction, whose order is fixed
// and whose result every lane holds. As on the CPU, masked keys get
// exp(−inf) = 0, the sum of the exponentials is taken in double, and a row
// whose keys are all masked gets zero probabilities (so a zero output).
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
// File-local (internal linkage): other family files define kernels of the same names.
namespace {

constexpr int kWarp = 32;

__device__ float warp_max(float v) {
  for (int off = kWarp / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// In place on p [rows, J] (rows = B·H·I, scores in, probabilities out); the key
// mask row of score row r is mask[r / rows_per_batch] (mask [B, J], or null).
__global__ void masked_softmax_kernel(float* __restrict__ p, const float* __restrict__ mask,
                                      int64_t rows, int64_t rows_per_batch, int64_t cols) {
  const float neg_inf = -INFINITY;
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarp;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; r < rows; r += warps) {
    float* row = p + r * cols;
    const float* keep = mask ? mask + (r / rows_per_batch) * cols : nullptr;
    float mx = neg_inf;
    bool any = false;
    for (int64_t c = lane; c < cols; c += kWarp) {
      float s = row[c];
      if (keep && keep[c] == 0.0f)
        row[c] = s = neg_inf;
      else
        any = true;
      mx = mx < s ? s : mx;  // std::max(mx, s), as on the CPU
    }
    mx = warp_max(mx);
    if (!__any_sync(0xffffffffu, any)) {  // every key masked (NaN scores stay NaN, as on the CPU)
      for (int64_t c = lane; c < cols; c += kWarp) row[c] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t c = lane; c < cols; c += kWarp) {
      float e = expf(row[c] - mx);  // masked: exp(−inf) = 0
      row[c] = e;
      sum += e;
    }
    float inv = static_cast<float>(1.0 / warp_sum(sum));
    for (int64_t c = lane; c < cols; c += kWarp) row[c] *= inv;
  }
}

// In place on ds [rows, J] (d_P in, d_S out): d_S = P ⊙ (d_P − rowsum(d_P ⊙ P)).
__global__ void softmax_backward_kernel(float* __restrict__ ds, const float* __restrict__ p,
                                        int64_t rows, int64_t cols) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarp;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; r < rows; r += warps) {
    float* g = ds + r * cols;
    const float* pr = p + r * cols;
    float dot = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) dot += pr[c] * g[c];
    dot = warp_sum(dot);
    for (int64_t c = lane; c < cols; c += kWarp) g[c] = pr[c] * (g[c] - dot);
  }
}

}  // namespace

// ------------------------------------------------------------------ launchers
namespace {

struct Dims {
  int64_t b, i, j, d, heads, dk;
};

Dims dims_of(const Tensor& q, const Tensor& k, int heads) {
  return {q.dim(0), q.dim(1), k.dim(1), q.dim(2), heads, q.dim(2) / heads};
}

unsigned int warp_blocks(int64_t rows) {
  return blocks_for(rows * kWarp);
}

}  // namespace

AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads,
                                  const Tensor& key_mask) {
  require_cuda({&q, &k, &v, &key_mask}, "attention_forward");
  Dims d = dims_of(q, k, heads);
  AttentionResult r{Tensor::empty({d.b, d.i, d.d}, Device::cuda),
                    Tensor::empty({d.b, d.heads, d.i, d.j}, Device::cuda)};
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  const int64_t st_q = d.i * d.d, st_k = d.j * d.d, st_p = d.heads * d.i * d.j;
  if (r.probs.numel() == 0) {  // no keys (or no queries): the output is zero
    if (r.out.numel() > 0)
      MARE_CUDA_CHECK(cudaMemsetAsync(r.out.f32(), 0, r.out.nbytes(), stream()));
    return r;
  }
  float* p = r.probs.f32();
  for (int64_t h = 0; h < d.heads; ++h)  // S_h = Q_h K_hᵀ · scale, batched over b
    gemm_row_major(false, true, d.i, d.j, d.dk, scale, q.f32() + h * d.dk, d.d, st_q,
                   k.f32() + h * d.dk, d.d, st_k, 0.0f, p + h * d.i * d.j, d.j, st_p, d.b);
  int64_t rows = d.b * d.heads * d.i;
  masked_softmax_kernel<<<warp_blocks(rows), kThreads, 0, stream()>>>(p, ptr_or_null(key_mask),
                                                                      rows, d.heads * d.i, d.j);
  MARE_LAUNCH_CHECK("masked_softmax_kernel");
  for (int64_t h = 0; h < d.heads; ++h)  // O_h = P_h V_h, into out's columns of head h
    gemm_row_major(false, false, d.i, d.dk, d.j, 1.0f, p + h * d.i * d.j, d.j, st_p,
                   v.f32() + h * d.dk, d.d, st_k, 0.0f, r.out.f32() + h * d.dk, d.d, st_q, d.b);
  return r;
}

void attention_backward(Tensor& d_q, Tensor& d_k, Tensor& d_v, const Tensor& d_out, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& probs, int heads) {
  require_cuda({&d_q, &d_k, &d_v, &d_out, &q, &k, &v, &probs}, "attention_backward");
  Dims d = dims_of(q, k, heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  const int64_t st_q = d.i * d.d, st_k = d.j * d.d, st_p = d.heads * d.i * d.j;
  const float* p = probs.f32();
  if (d_v.defined())
    for (int64_t h = 0; h < d.heads; ++h)  // d_V_h [J, dk] += P_hᵀ [J, I] · d_O_h [I, dk]
      gemm_row_major(true, false, d.j, d.dk, d.i, 1.0f, p + h * d.i * d.j, d.j, st_p,
                     d_out.f32() + h * d.dk, d.d, st_q, 1.0f, d_v.f32() + h * d.dk, d.d, st_k, d.b);
  if (!d_q.defined() && !d_k.defined()) return;
  int64_t rows = d.b * d.heads * d.i;
  Workspace ws(static_cast<size_t>(rows * d.j) * sizeof(float));  // d_P, then d_S: [B, H, I, J]
  float* ds = ws.as<float>();
  if (rows * d.j > 0) {
    for (int64_t h = 0; h < d.heads; ++h)  // d_P_h [I, J] = d_O_h [I, dk] · V_hᵀ
      gemm_row_major(false, true, d.i, d.j, d.dk, 1.0f, d_out.f32() + h * d.dk, d.d, st_q,
                     v.f32() + h * d.dk, d.d, st_k, 0.0f, ds + h * d.i * d.j, d.j, st_p, d.b);
    softmax_backward_kernel<<<warp_blocks(rows), kThreads, 0, stream()>>>(ds, p, rows, d.j);
    MARE_LAUNCH_CHECK("softmax_backward_kernel");
  }
  if (d_q.defined())
    for (int64_t h = 0; h < d.heads; ++h)  // d_Q_h [I, dk] += d_S_h [I, J] · K_h [J, dk] · scale
      gemm_row_major(false, false, d.i, d.dk, d.j, scale, ds + h * d.i * d.j, d.j, st_p,
                     k.f32() + h * d.dk, d.d, st_k, 1.0f, d_q.f32() + h * d.dk, d.d, st_q, d.b);
  if (d_k.defined())
    for (int64_t h = 0; h < d.heads; ++h)  // d_K_h [J, dk] += d_S_hᵀ [J, I] · Q_h [I, dk] · scale
      gemm_row_major(true, false, d.j, d.dk, d.i, scale, ds + h * d.i * d.j, d.j, st_p,
                     q.f32() + h * d.dk, d.d, st_q, 1.0f, d_k.f32() + h * d.dk, d.d, st_k, d.b);
}

}  // namespace mare::cuda
