// The DNC memory ops on the GPU (SPEC §3): the interface split of
// kernels/memory/interface.h and every access op of kernels/memory/access.h,
// forward and backward, with the CPU signatures. Allocation is in allocation.cu.
//
// Layout as on the CPU: M memories of N slots × W floats, memories [M, N, W],
// usages / precedences / write weights [M, N], read weights [M, R, N], links
// [M, N, N], gates [M], content heads H (keys [M, H, W], strengths [M, H]).
//
// Kernel design (every kernel mirrors the loop of the CPU reference it stands
// for; "in order" below means the CPU's summation order, kept exactly):
// - Elementwise work (usage, write weighting, memory update, link update,
//   read weights, the interface transforms): one thread per output element in a
//   grid-stride loop, writing its element only (no two threads write one place).
// - Gradients that sum over an axis (a gate over N slots, an erase element over
//   N slots, a free gate over N slots, precedence sums): one thread per output
//   element looping over the summed axis in the CPU's order, accumulating into a
//   register that starts from the gradient's current value (so += as on the CPU,
//   with the CPU's rounding sequence).
// - Sums over the word axis W (d write weights of the memory update): one warp
//   per row, lanes stride over W, then a fixed xor-butterfly shuffle tree.
// - Content weighting: one block per (memory, head); warps take slots, lanes
//   stride over W with double accumulators (as the CPU) and a fixed shuffle
//   tree; thread 0 does the softmax max and sum over N sequentially. The
//   backward's per-(memory, head, slot) coefficients go to device scratch, then
//   d_keys (one thread per key element, looping over slots) and d_memory (one
//   thread per memory element, looping over heads) are gathered in the CPU's order.
// - Small GEMMs (link weights, read vectors): cuBLAS strided-batched SGEMM, one
//   matrix per memory, beta = 1 for the accumulating backward; the handle of
//   common.cuh forbids atomics, so the results are deterministic.
// No floating-point atomics anywhere: the same inputs give the same bits.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/memory_math.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

// ------------------------------------------------------------------ device helpers
__device__ __forceinline__ int64_t grid_start() {
  return blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return int64_t(gridDim.x) * blockDim.x;
}
// Warp index and warp count of a grid-stride loop whose items are warps.
__device__ __forceinline__ int64_t warp_start() {
  return grid_start() / 32;
}
__device__ __forceinline__ int64_t warp_stride() {
  return grid_stride() / 32;
}

// ------------------------------------------------------------------ interface split
// interface_parts (interface.h) for the kernels: parts in the order of SPEC §3,
// offsets into ξ, one pointer per part.
constexpr int kParts = kInterfaceParts;

struct PartTable {
  int offset[kParts + 1];  // column where part p starts; offset[kParts] = width of ξ
  InterfaceDomain domain[kParts];
};

struct PartPointers {
  const float* in[kParts];  // backward: part gradients (nullptr: undefined, skipped)
  const float* y[kParts];   // backward: the forward's outputs
  float* out[kParts];       // forward: outputs
};

__device__ __forceinline__ int part_of(const PartTable& t, int col) {
  int p = 0;
  while (p + 1 < kParts && col >= t.offset[p + 1]) ++p;
  return p;
}

// xi: [M, X] -> the ten parts (out pointers), one thread per element of ξ; the
// first thread of each read-mode triple writes its softmax.
__global__ void interface_forward_kernel(const float* __restrict__ xi, PartTable t,
                                         PartPointers ptr, int64_t count, int x) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / x, col = i % x;
    const int p = part_of(t, col), local = col - t.offset[p];
    const int width = t.offset[p + 1] - t.offset[p];
    float* y = ptr.out[p] + b * width;
    const float v = xi[i];
    switch (t.domain[p]) {
      case InterfaceDomain::identity:
        y[local] = v;
        break;
      case InterfaceDomain::oneplus:
        y[local] = oneplus_f(v);
        break;
      case InterfaceDomain::sigmoid:
        y[local] = sigmoid_f(v);
        break;
      case InterfaceDomain::softmax3:
        if (local % 3 == 0) {
          const float v1 = xi[i + 1], v2 = xi[i + 2];
          const float mx = fmaxf(fmaxf(v, v1), v2);
          const float e0 = expf(v - mx), e1 = expf(v1 - mx), e2 = expf(v2 - mx), sum = e0 + e1 + e2;
          y[local] = e0 / sum;
          y[local + 1] = e1 / sum;
          y[local + 2] = e2 / sum;
        }
        break;
    }
  }
}

// d_xi += per element the backward of its part's transform (parts whose
// gradient is undefined are skipped).
__global__ void interface_backward_kernel(float* __restrict__ d_xi, const float* __restrict__ xi,
                                          PartTable t, PartPointers ptr, int64_t count, int x) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / x, col = i % x;
    const int p = part_of(t, col), local = col - t.offset[p];
    if (ptr.in[p] == nullptr) continue;
    const int width = t.offset[p + 1] - t.offset[p];
    const float* gy = ptr.in[p] + b * width;
    const float* yy = ptr.y[p] + b * width;
    switch (t.domain[p]) {
      case InterfaceDomain::identity:
        d_xi[i] += gy[local];
        break;
      case InterfaceDomain::oneplus:
        d_xi[i] += gy[local] * sigmoid_f(xi[i]);
        break;
      case InterfaceDomain::sigmoid:
        d_xi[i] += gy[local] * yy[local] * (1.0f - yy[local]);
        break;
      case InterfaceDomain::softmax3: {
        const int g = local - local % 3;
        const float dot = gy[g] * yy[g] + gy[g + 1] * yy[g + 1] + gy[g + 2] * yy[g + 2];
        d_xi[i] += yy[local] * (gy[local] - dot);
        break;
      }
    }
  }
}

// ------------------------------------------------------------------ content weighting
// Σ_j k[j]·m[j] and Σ_j m[j]² over j < w in double, summed by one warp (lane l takes
// j = l, l + 32, …; the totals are in every lane).
struct DotSquares {
  double dot, squares;
};
__device__ DotSquares warp_dot_squares(const float* __restrict__ k, const float* __restrict__ m,
                                       int w, int lane) {
  double dot = 0.0, squares = 0.0;
  for (int j = lane; j < w; j += 32) {
    const double mj = m[j];
    dot += double(k[j]) * mj;
    squares += mj * mj;
  }
  return {warp_sum(dot), warp_sum(squares)};
}

// One block per row (memory b, head hh), rows = M·H. Shared: logits [N] (dynamic).
__global__ void content_forward_kernel(const float* __restrict__ memory,
                                       const float* __restrict__ keys,
                                       const float* __restrict__ strengths, float* __restrict__ out,
                                       int rows, int h, int n, int w) {
  extern __shared__ double logits[];  // [n]
  __shared__ double s_norm_k, s_max, s_sum;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const int b = row / h;
    const float* k = keys + int64_t(row) * w;
    const float* mem = memory + int64_t(b) * n * w;
    const double beta = strengths[row];
    if (warp == 0) {
      const double kk = warp_dot_squares(k, k, w, lane).squares;
      if (lane == 0) s_norm_k = sqrt(kk + kContentEpsilon);
    }
    __syncthreads();
    const double nk = s_norm_k;
    for (int s = warp; s < n; s += warps) {
      const auto [dot, mm] = warp_dot_squares(k, mem + int64_t(s) * w, w, lane);
      if (lane == 0) logits[s] = beta * (dot / (nk * sqrt(mm + kContentEpsilon) + kContentEpsilon));
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // softmax statistics, sequential as on the CPU
      double mx = logits[0];
      for (int s = 1; s < n; ++s) mx = fmax(mx, logits[s]);
      double sum = 0.0;
      for (int s = 0; s < n; ++s) sum += exp(logits[s] - mx);
      s_max = mx;
      s_sum = sum;
    }
    __syncthreads();
    for (int s = threadIdx.x; s < n; s += blockDim.x)
      out[int64_t(row) * n + s] = static_cast<float>(exp(logits[s] - s_max) / s_sum);
    __syncthreads();  // the next row reuses the shared values
  }
}

// Backward, step 1: one block per row (b, hh). Per slot s of the row:
//   d_s = y (g − Σ g y), d_cos = β d_s, c_dot = d_cos / den, c_norm = d_cos·dot / den²
// to scratch, d_β = Σ_s d_s cos in slot order (+= into d_strengths when wanted),
// ‖k‖ per row and ‖M_s‖ per slot (written by the head-0 block) to scratch.
__global__ void content_backward_rows_kernel(
    const float* __restrict__ memory, const float* __restrict__ keys,
    const float* __restrict__ strengths, const float* __restrict__ out,
    const float* __restrict__ d_out, float* __restrict__ d_strengths, double* __restrict__ c_dot,
    double* __restrict__ c_norm, double* __restrict__ norm_k, double* __restrict__ norm_m, int rows,
    int h, int n, int w) {
  extern __shared__ double beta_terms[];  // [n]: d_s · cos per slot
  __shared__ double s_norm_k, s_gy;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const int b = row / h, hh = row % h;
    const float* k = keys + int64_t(row) * w;
    const float* mem = memory + int64_t(b) * n * w;
    const float* y = out + int64_t(row) * n;
    const float* g = d_out + int64_t(row) * n;
    const double beta = strengths[row];
    if (warp == 0) {
      const double kk = warp_dot_squares(k, k, w, lane).squares;
      if (lane == 0) {
        s_norm_k = sqrt(kk + kContentEpsilon);
        double gy = 0.0;
        for (int s = 0; s < n; ++s) gy += double(g[s]) * y[s];
        s_gy = gy;
      }
    }
    __syncthreads();
    const double nk = s_norm_k, gy = s_gy;
    for (int s = warp; s < n; s += warps) {
      const auto [dot, mm] = warp_dot_squares(k, mem + int64_t(s) * w, w, lane);
      if (lane == 0) {
        const double nm = sqrt(mm + kContentEpsilon);
        const double den = nk * nm + kContentEpsilon;
        const double cosine = dot / den;
        const double d_s = y[s] * (g[s] - gy);  // softmax backward
        beta_terms[s] = d_s * cosine;
        const double d_cos = beta * d_s;
        c_dot[int64_t(row) * n + s] = d_cos / den;
        c_norm[int64_t(row) * n + s] = d_cos * dot / (den * den);
        if (hh == 0) norm_m[int64_t(b) * n + s] = nm;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      norm_k[row] = nk;
      if (d_strengths != nullptr) {
        double d_beta = 0.0;
        for (int s = 0; s < n; ++s) d_beta += beta_terms[s];
        d_strengths[row] += static_cast<float>(d_beta);
      }
    }
    __syncthreads();  // the next row reuses the shared values
  }
}

// Backward, step 2: d_keys[b, hh, j] += Σ_s (c_dot m_sj − c_norm ‖m_s‖ k_j / ‖k‖),
// one thread per key element, slots in order. count = M·H·W.
__global__ void content_backward_keys_kernel(
    const float* __restrict__ memory, const float* __restrict__ keys,
    const double* __restrict__ c_dot, const double* __restrict__ c_norm,
    const double* __restrict__ norm_k, const double* __restrict__ norm_m,
    float* __restrict__ d_keys, int64_t count, int h, int n, int w) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), row = i / w, j = i % w, b = row / h;
    const double nk = norm_k[row];
    const float kj = keys[i];
    float acc = d_keys[i];
    for (int s = 0; s < n; ++s) {
      const float ms = memory[(int64_t(b) * n + s) * w + j];
      const int64_t rs = int64_t(row) * n + s;
      acc += static_cast<float>(c_dot[rs] * ms - c_norm[rs] * norm_m[int64_t(b) * n + s] * kj / nk);
    }
    d_keys[i] = acc;
  }
}

// Backward, step 3: d_memory[b, s, j] += Σ_hh (c_dot k_j − c_norm ‖k‖ m_sj / ‖m_s‖),
// one thread per memory element, heads in order. count = M·N·W.
__global__ void content_backward_memory_kernel(
    const float* __restrict__ memory, const float* __restrict__ keys,
    const double* __restrict__ c_dot, const double* __restrict__ c_norm,
    const double* __restrict__ norm_k, const double* __restrict__ norm_m,
    float* __restrict__ d_memory, int64_t count, int h, int n, int w) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), j = i % w, bs = i / w, b = bs / n, s = bs % n;
    const float ms = memory[i];
    const double nm = norm_m[bs];
    float acc = d_memory[i];
    for (int hh = 0; hh < h; ++hh) {
      const int row = b * h + hh;
      const int64_t rs = int64_t(row) * n + s;
      acc += static_cast<float>(c_dot[rs] * keys[int64_t(row) * w + j] -
                                c_norm[rs] * norm_k[row] * ms / nm);
    }
    d_memory[i] = acc;
  }
}

// ------------------------------------------------------------------ retention
// Π_{i ≠ skip} (1 − f_i w_i[s]) for memory b, slot s (skip = −1: the whole product).
__device__ __forceinline__ float retention_product(const float* __restrict__ f,
                                                   const float* __restrict__ wr, int b, int r,
                                                   int n, int s, int skip) {
  float psi = 1.0f;
  for (int i = 0; i < r; ++i)
    if (i != skip) psi *= 1.0f - f[b * r + i] * wr[(int64_t(b) * r + i) * n + s];
  return psi;
}

// out[b, s] = ψ; count = M·N.
__global__ void retention_forward_kernel(const float* __restrict__ f, const float* __restrict__ wr,
                                         float* __restrict__ out, int64_t count, int r, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e);
    out[i] = retention_product(f, wr, i / n, r, n, i % n, -1);
  }
}

// d_wr[b, i, s] −= g[b, s] f_i Π_{i' ≠ i}(…); count = M·R·N.
__global__ void retention_backward_weights_kernel(const float* __restrict__ f,
                                                  const float* __restrict__ wr,
                                                  const float* __restrict__ d_out,
                                                  float* __restrict__ d_wr, int64_t count, int r,
                                                  int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), s = idx % n, bi = idx / n, b = bi / r, i = bi % r;
    const float g = d_out[int64_t(b) * n + s];
    d_wr[idx] -= g * f[bi] * retention_product(f, wr, b, r, n, s, i);
  }
}

// d_f[b, i] −= Σ_s g[b, s] w_i[s] Π_{i' ≠ i}(…), slots in order; count = M·R.
__global__ void retention_backward_gates_kernel(const float* __restrict__ f,
                                                const float* __restrict__ wr,
                                                const float* __restrict__ d_out,
                                                float* __restrict__ d_f, int64_t count, int r,
                                                int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int bi = static_cast<int>(e), b = bi / r, i = bi % r;
    float acc = d_f[bi];
    for (int s = 0; s < n; ++s) {
      const float g = d_out[int64_t(b) * n + s];
      acc -= g * wr[int64_t(bi) * n + s] * retention_product(f, wr, b, r, n, s, i);
    }
    d_f[bi] = acc;
  }
}

// ------------------------------------------------------------------ usage
__global__ void usage_forward_kernel(const float* __restrict__ u, const float* __restrict__ w,
                                     const float* __restrict__ psi, float* __restrict__ out,
                                     int64_t count) {
  for (int64_t i = grid_start(); i < count; i += grid_stride())
    out[i] = (u[i] + w[i] - u[i] * w[i]) * psi[i];
}

// No gradient into the previous write weights (SPEC §3 step 3).
__global__ void usage_backward_kernel(const float* __restrict__ u, const float* __restrict__ w,
                                      const float* __restrict__ psi, const float* __restrict__ g,
                                      float* __restrict__ d_u, float* __restrict__ d_psi,
                                      int64_t count) {
  for (int64_t i = grid_start(); i < count; i += grid_stride()) {
    if (d_u != nullptr) d_u[i] += g[i] * (1.0f - w[i]) * psi[i];
    if (d_psi != nullptr) d_psi[i] += g[i] * (u[i] + w[i] - u[i] * w[i]);
  }
}

// ------------------------------------------------------------------ write weighting
// count = M·N
__global__ void write_weighting_forward_kernel(const float* __restrict__ a,
                                               const float* __restrict__ c,
                                               const float* __restrict__ ga,
                                               const float* __restrict__ gw,
                                               float* __restrict__ out, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / n;
    out[i] = gw[b] * (ga[b] * a[i] + (1.0f - ga[b]) * c[i]);
  }
}

// d_a, d_c elementwise; count = M·N.
__global__ void write_weighting_backward_kernel(const float* __restrict__ ga,
                                                const float* __restrict__ gw,
                                                const float* __restrict__ d_out,
                                                float* __restrict__ d_a, float* __restrict__ d_c,
                                                int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / n;
    const float g = d_out[i];
    if (d_a != nullptr) d_a[i] += g * gw[b] * ga[b];
    if (d_c != nullptr) d_c[i] += g * gw[b] * (1.0f - ga[b]);
  }
}

// The gate gradients, one thread per memory, slots in order; count = M.
__global__ void write_weighting_backward_gates_kernel(
    const float* __restrict__ a, const float* __restrict__ c, const float* __restrict__ ga,
    const float* __restrict__ gw, const float* __restrict__ d_out, float* __restrict__ d_ga,
    float* __restrict__ d_gw, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int b = static_cast<int>(e);
    float sum_ga = 0.0f, sum_gw = 0.0f;
    for (int s = 0; s < n; ++s) {
      const int64_t i = int64_t(b) * n + s;
      const float g = d_out[i];
      sum_ga += g * gw[b] * (a[i] - c[i]);
      sum_gw += g * (ga[b] * a[i] + (1.0f - ga[b]) * c[i]);
    }
    if (d_ga != nullptr) d_ga[b] += sum_ga;
    if (d_gw != nullptr) d_gw[b] += sum_gw;
  }
}

// ------------------------------------------------------------------ memory update
// count = M·N·W
__global__ void memory_update_forward_kernel(const float* __restrict__ memory,
                                             const float* __restrict__ ww,
                                             const float* __restrict__ erase,
                                             const float* __restrict__ v, float* __restrict__ out,
                                             int64_t count, int n, int w) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), j = i % w, bs = i / w, b = bs / n;
    const float wt = ww[bs];
    out[i] = memory[i] * (1.0f - wt * erase[b * w + j]) + wt * v[b * w + j];
  }
}

// d_memory elementwise; count = M·N·W.
__global__ void memory_update_backward_memory_kernel(const float* __restrict__ ww,
                                                     const float* __restrict__ erase,
                                                     const float* __restrict__ d_out,
                                                     float* __restrict__ d_memory, int64_t count,
                                                     int n, int w) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), j = i % w, bs = i / w, b = bs / n;
    d_memory[i] += d_out[i] * (1.0f - ww[bs] * erase[b * w + j]);
  }
}

// d_erase, d_write_vector: one thread per (b, j), slots in order; count = M·W.
__global__ void memory_update_backward_vectors_kernel(
    const float* __restrict__ memory, const float* __restrict__ ww, const float* __restrict__ d_out,
    float* __restrict__ d_erase, float* __restrict__ d_v, int64_t count, int n, int w) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int bj = static_cast<int>(e), b = bj / w, j = bj % w;
    float acc_e = d_erase != nullptr ? d_erase[bj] : 0.0f;
    float acc_v = d_v != nullptr ? d_v[bj] : 0.0f;
    for (int s = 0; s < n; ++s) {
      const int64_t i = (int64_t(b) * n + s) * w + j;
      const float g = d_out[i], wt = ww[int64_t(b) * n + s];
      acc_e -= g * memory[i] * wt;
      acc_v += g * wt;
    }
    if (d_erase != nullptr) d_erase[bj] = acc_e;
    if (d_v != nullptr) d_v[bj] = acc_v;
  }
}

// d_write_weights[b, s] += Σ_j g (v_j − m_sj e_j): one warp per (b, s); rows = M·N.
__global__ void memory_update_backward_weights_kernel(
    const float* __restrict__ memory, const float* __restrict__ erase, const float* __restrict__ v,
    const float* __restrict__ d_out, float* __restrict__ d_ww, int64_t rows, int n, int w) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_start(); row < rows; row += warp_stride()) {
    const int bs = static_cast<int>(row), b = bs / n;
    float sum = 0.0f;
    for (int j = lane; j < w; j += 32) {
      const int64_t i = int64_t(bs) * w + j;
      sum += d_out[i] * (v[b * w + j] - memory[i] * erase[b * w + j]);
    }
    sum = warp_sum(sum);
    if (lane == 0) d_ww[bs] += sum;
  }
}

// ------------------------------------------------------------------ temporal links
// count = M·N·N
__global__ void link_update_forward_kernel(const float* __restrict__ l0,
                                           const float* __restrict__ p,
                                           const float* __restrict__ ww, float* __restrict__ out,
                                           int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), j = idx % n, bi = idx / n, b = bi / n, i = bi % n;
    const float wi = ww[bi], wj = ww[b * n + j];
    out[idx] = i == j ? 0.0f : (1.0f - wi - wj) * l0[idx] + wi * p[b * n + j];
  }
}

// d_links_prev elementwise (the diagonal receives nothing); count = M·N·N.
__global__ void link_update_backward_links_kernel(const float* __restrict__ ww,
                                                  const float* __restrict__ d_out,
                                                  float* __restrict__ d_l0, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), j = idx % n, bi = idx / n, b = bi / n, i = bi % n;
    if (i != j) d_l0[idx] += d_out[idx] * (1.0f - ww[bi] - ww[b * n + j]);
  }
}

// d_precedence_prev[b, j] += Σ_{i ≠ j} g_ij w_i, rows i in order; count = M·N.
__global__ void link_update_backward_precedence_kernel(const float* __restrict__ ww,
                                                       const float* __restrict__ d_out,
                                                       float* __restrict__ d_p, int64_t count,
                                                       int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int bj = static_cast<int>(e), b = bj / n, j = bj % n;
    const float* g = d_out + int64_t(b) * n * n;
    float acc = d_p[bj];
    for (int i = 0; i < n; ++i)
      if (i != j) acc += g[i * n + j] * ww[b * n + i];
    d_p[bj] = acc;
  }
}

// d_write_weights[b, k] in the CPU's row-major order over (i, j ≠ i): from
// element (i, k), i ≠ k: −= g_ik l_ik; from row k: += g_kj (p_j − l_kj), j ≠ k.
// count = M·N.
__global__ void link_update_backward_weights_kernel(const float* __restrict__ l0,
                                                    const float* __restrict__ p,
                                                    const float* __restrict__ d_out,
                                                    float* __restrict__ d_ww, int64_t count,
                                                    int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int bk = static_cast<int>(e), b = bk / n, k = bk % n;
    const float* g = d_out + int64_t(b) * n * n;
    const float* l = l0 + int64_t(b) * n * n;
    const float* pb = p + int64_t(b) * n;
    float acc = d_ww[bk];
    for (int i = 0; i < n; ++i) {
      if (i == k) {
        for (int j = 0; j < n; ++j)
          if (j != k) acc += g[k * n + j] * (pb[j] - l[k * n + j]);
      } else {
        acc -= g[i * n + k] * l[i * n + k];
      }
    }
    d_ww[bk] = acc;
  }
}

// ------------------------------------------------------------------ precedence
// Per memory, in slot order: sums[2b] = Σ w, sums[2b + 1] = Σ g p (g may be null).
__global__ void precedence_sums_kernel(const float* __restrict__ ww, const float* __restrict__ p,
                                       const float* __restrict__ g, float* __restrict__ sums,
                                       int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int b = static_cast<int>(e);
    float sum = 0.0f, gp = 0.0f;
    for (int i = 0; i < n; ++i) {
      sum += ww[int64_t(b) * n + i];
      if (g != nullptr) gp += g[int64_t(b) * n + i] * p[int64_t(b) * n + i];
    }
    sums[2 * b] = sum;
    sums[2 * b + 1] = gp;
  }
}

// count = M·N
__global__ void precedence_forward_kernel(const float* __restrict__ p, const float* __restrict__ ww,
                                          const float* __restrict__ sums, float* __restrict__ out,
                                          int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / n;
    out[i] = (1.0f - sums[2 * b]) * p[i] + ww[i];
  }
}

// count = M·N
__global__ void precedence_backward_kernel(const float* __restrict__ g,
                                           const float* __restrict__ sums, float* __restrict__ d_p,
                                           float* __restrict__ d_ww, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), b = i / n;
    if (d_p != nullptr) d_p[i] += g[i] * (1.0f - sums[2 * b]);
    if (d_ww != nullptr) d_ww[i] += g[i] - sums[2 * b + 1];
  }
}

// ------------------------------------------------------------------ read weights
// count = M·R·N
__global__ void read_weights_forward_kernel(const float* __restrict__ pi,
                                            const float* __restrict__ bw,
                                            const float* __restrict__ c,
                                            const float* __restrict__ fw, float* __restrict__ out,
                                            int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), hd = i / n;
    out[i] = pi[hd * 3] * bw[i] + pi[hd * 3 + 1] * c[i] + pi[hd * 3 + 2] * fw[i];
  }
}

// d_bw, d_c, d_fw elementwise; count = M·R·N.
__global__ void read_weights_backward_kernel(const float* __restrict__ pi,
                                             const float* __restrict__ d_out,
                                             float* __restrict__ d_bw, float* __restrict__ d_c,
                                             float* __restrict__ d_fw, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e), hd = i / n;
    const float g = d_out[i];
    if (d_bw != nullptr) d_bw[i] += g * pi[hd * 3];
    if (d_c != nullptr) d_c[i] += g * pi[hd * 3 + 1];
    if (d_fw != nullptr) d_fw[i] += g * pi[hd * 3 + 2];
  }
}

// d_read_modes: one thread per head (M·R), slots in order.
__global__ void read_weights_backward_modes_kernel(const float* __restrict__ bw,
                                                   const float* __restrict__ c,
                                                   const float* __restrict__ fw,
                                                   const float* __restrict__ d_out,
                                                   float* __restrict__ d_pi, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int hd = static_cast<int>(e);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    for (int s = 0; s < n; ++s) {
      const int64_t i = int64_t(hd) * n + s;
      const float g = d_out[i];
      s0 += g * bw[i];
      s1 += g * c[i];
      s2 += g * fw[i];
    }
    d_pi[hd * 3] += s0;
    d_pi[hd * 3 + 1] += s1;
    d_pi[hd * 3 + 2] += s2;
  }
}

// ------------------------------------------------------------------ host helpers
// The output of an element-wise forward kernel: a new GPU tensor of `shape` and its
// element count, checked to fit the kernels' int indices (`what` names it in errors).
struct NewOutput {
  Tensor out;
  int64_t count;
};
NewOutput new_output(const Shape& shape, const char* what) {
  Tensor out = Tensor::empty(shape, Device::cuda);
  const int64_t count = to_int(out.numel(), what);
  return {out, count};
}

// Row-major batched GEMM on the memory axis: for every b < batch,
//   C[b] = op(A[b]) · op(B[b]) + beta · C[b],  C: [rows, cols], op(A): [rows, k], op(B): [k, cols],
// A, B, C row-major with their stored row lengths lda, ldb (ldc = cols): the backend's
// one GEMM (linalg.cu), so these products count as GEMM flops and take the process's
// matmul precision like every other.
void gemm_rm_batched(bool trans_a, bool trans_b, int rows, int cols, int k, const float* a, int lda,
                     int64_t stride_a, const float* b, int ldb, int64_t stride_b, float beta,
                     float* c, int64_t stride_c, int batch) {
  gemm_row_major(trans_a, trans_b, rows, cols, k, 1.0f, a, lda, stride_a, b, ldb, stride_b, beta, c,
                 cols, stride_c, batch);
}

// Dynamic shared memory of the content kernels: one double per slot.
// The per-slot doubles, rounded up to whole 32-byte groups. ptxas unrolls the
// thread-0 softmax sums by four and loads their remainder as 16-byte pairs
// (LDS.128) before it tests how many slots remain: with N = 4k + 1 the pair's
// second double lay past the end of an exact-size array. compute-sanitizer's
// memcheck caught it on an H100 (content_weighting/2x5x3/h2: a 16-byte read
// at content_forward_kernel+0x4cf0, the remainder's LDS.128 in the SASS); the
// value was never used, so no result changed. The padding is never written or
// read as a slot; with it, memcheck is clean on every GPU test.
size_t content_shared_bytes(int64_t n, const char* op) {
  const size_t bytes = static_cast<size_t>((n + 3) / 4 * 4) * sizeof(double);
  if (bytes > 40 * 1024)
    throw std::invalid_argument(
        std::string(op) + ": " + std::to_string(n) +
        " slots exceed the shared memory of the CUDA kernel (5120 at most)");
  return bytes;
}

constexpr int kRowThreads = 128;  // content weighting: 4 warps per (memory, head)

unsigned int row_blocks(int rows) {
  return static_cast<unsigned int>(rows < 2097120 ? rows : 2097120);
}

}  // namespace

// ------------------------------------------------------------------ interface split
namespace {

constexpr auto kFields = InterfaceParts::members();

PartTable part_table(int64_t r, int64_t w) {
  const auto parts = interface_parts(r, w);
  const auto offsets = interface_offsets(r, w);
  PartTable t{};
  for (int p = 0; p <= kParts; ++p) t.offset[p] = static_cast<int>(offsets[p]);
  for (int p = 0; p < kParts; ++p) t.domain[p] = parts[p].domain;
  return t;
}

}  // namespace

InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word) {
  require_cuda({&xi}, "interface_split_forward");
  const int64_t m = xi.dim(0), x = xi.dim(1);
  const int64_t count = to_int(xi.numel(), "interface_split_forward: xi");
  const PartTable t = part_table(read_heads, word);
  const auto layout = interface_parts(read_heads, word);
  PartPointers ptr{};
  InterfaceParts parts;
  for (int p = 0; p < kParts; ++p) {
    Tensor out = Tensor::empty(layout[p].shape(m), Device::cuda);
    ptr.out[p] = out.f32();
    parts.*kFields[p] = out;
  }
  if (count == 0) return parts;
  launch("interface_forward_kernel", count, interface_forward_kernel, xi.f32(), t, ptr, count,
         static_cast<int>(x));
  return parts;
}

void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word) {
  if (!d_xi.defined()) return;
  require_cuda({&d_xi, &xi}, "interface_split_backward");
  const int64_t x = xi.dim(1);
  const int64_t count = to_int(xi.numel(), "interface_split_backward: xi");
  const PartTable t = part_table(read_heads, word);
  PartPointers ptr{};
  bool any = false;
  for (int p = 0; p < kParts; ++p) {
    const Tensor& g = d_parts.*kFields[p];
    if (!g.defined()) continue;
    const Tensor& y = parts.*kFields[p];
    require_cuda({&g, &y}, "interface_split_backward: part");
    ptr.in[p] = g.f32();
    ptr.y[p] = y.f32();
    any = true;
  }
  if (!any || count == 0) return;
  launch("interface_backward_kernel", count, interface_backward_kernel, d_xi.f32(), xi.f32(), t,
         ptr, count, static_cast<int>(x));
}

// ------------------------------------------------------------------ content weighting
Tensor content_weighting_forward(const Tensor& memory, const Tensor& keys,
                                 const Tensor& strengths) {
  require_cuda({&memory, &keys, &strengths}, "content_weighting_forward");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), h = keys.dim(1);
  Tensor out = Tensor::empty({m, h, n}, Device::cuda);
  to_int(memory.numel(), "content_weighting_forward: memory");
  to_int(keys.numel(), "content_weighting_forward: keys");
  to_int(out.numel(), "content_weighting_forward: out");
  const int rows = to_int(m * h, "content_weighting_forward: rows");
  if (rows == 0 || n == 0) return out;
  const size_t shared = content_shared_bytes(n, "content_weighting_forward");
  content_forward_kernel<<<row_blocks(rows), kRowThreads, shared, stream()>>>(
      memory.f32(), keys.f32(), strengths.f32(), out.f32(), rows, static_cast<int>(h),
      static_cast<int>(n), static_cast<int>(w));
  MARE_LAUNCH_CHECK("content_forward_kernel");
  return out;
}

void content_weighting_backward(Tensor& d_memory, Tensor& d_keys, Tensor& d_strengths,
                                const Tensor& d_out, const Tensor& memory, const Tensor& keys,
                                const Tensor& strengths, const Tensor& out) {
  require_cuda({&d_memory, &d_keys, &d_strengths, &d_out, &memory, &keys, &strengths, &out},
               "content_weighting_backward");
  if (!d_memory.defined() && !d_keys.defined() && !d_strengths.defined()) return;
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), h = keys.dim(1);
  to_int(memory.numel(), "content_weighting_backward: memory");
  to_int(keys.numel(), "content_weighting_backward: keys");
  const int rows = to_int(m * h, "content_weighting_backward: rows");
  to_int(out.numel(), "content_weighting_backward: out");
  if (rows == 0 || n == 0) return;  // no slot: every gradient is zero
  const size_t shared = content_shared_bytes(n, "content_weighting_backward");
  // Scratch: c_dot, c_norm [M·H·N], ‖k‖ [M·H], ‖M_s‖ [M·N], all double.
  const int64_t rn = int64_t(rows) * n;
  Workspace ws(sizeof(double) * static_cast<size_t>(2 * rn + rows + m * n));
  double* c_dot = ws.as<double>();
  double* c_norm = c_dot + rn;
  double* norm_k = c_norm + rn;
  double* norm_m = norm_k + rows;
  content_backward_rows_kernel<<<row_blocks(rows), kRowThreads, shared, stream()>>>(
      memory.f32(), keys.f32(), strengths.f32(), out.f32(), d_out.f32(), ptr_or_null(d_strengths),
      c_dot, c_norm, norm_k, norm_m, rows, static_cast<int>(h), static_cast<int>(n),
      static_cast<int>(w));
  MARE_LAUNCH_CHECK("content_backward_rows_kernel");
  if (d_keys.defined() && keys.numel() > 0) {
    launch("content_backward_keys_kernel", keys.numel(), content_backward_keys_kernel, memory.f32(),
           keys.f32(), c_dot, c_norm, norm_k, norm_m, d_keys.f32(), keys.numel(),
           static_cast<int>(h), static_cast<int>(n), static_cast<int>(w));
  }
  if (d_memory.defined() && memory.numel() > 0) {
    launch("content_backward_memory_kernel", memory.numel(), content_backward_memory_kernel,
           memory.f32(), keys.f32(), c_dot, c_norm, norm_k, norm_m, d_memory.f32(), memory.numel(),
           static_cast<int>(h), static_cast<int>(n), static_cast<int>(w));
  }
}

// ------------------------------------------------------------------ retention
Tensor retention_forward(const Tensor& free_gates, const Tensor& read_weights_prev) {
  require_cuda({&free_gates, &read_weights_prev}, "retention_forward");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  to_int(read_weights_prev.numel(), "retention_forward: read_weights_prev");
  Tensor out = Tensor::empty({m, n}, Device::cuda);
  const int64_t count = out.numel();
  if (count == 0) return out;
  launch("retention_forward_kernel", count, retention_forward_kernel, free_gates.f32(),
         read_weights_prev.f32(), out.f32(), count, static_cast<int>(r), static_cast<int>(n));
  return out;
}

void retention_backward(Tensor& d_free_gates, Tensor& d_read_weights_prev, const Tensor& d_out,
                        const Tensor& free_gates, const Tensor& read_weights_prev) {
  require_cuda({&d_free_gates, &d_read_weights_prev, &d_out, &free_gates, &read_weights_prev},
               "retention_backward");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  const int64_t count = to_int(read_weights_prev.numel(), "retention_backward: read_weights_prev");
  if (d_read_weights_prev.defined() && count > 0) {
    launch("retention_backward_weights_kernel", count, retention_backward_weights_kernel,
           free_gates.f32(), read_weights_prev.f32(), d_out.f32(), d_read_weights_prev.f32(), count,
           static_cast<int>(r), static_cast<int>(n));
  }
  if (d_free_gates.defined() && m * r > 0) {
    launch("retention_backward_gates_kernel", m * r, retention_backward_gates_kernel,
           free_gates.f32(), read_weights_prev.f32(), d_out.f32(), d_free_gates.f32(), m * r,
           static_cast<int>(r), static_cast<int>(n));
  }
}

// ------------------------------------------------------------------ usage
Tensor usage_forward(const Tensor& usage_prev, const Tensor& write_weights_prev,
                     const Tensor& retention) {
  require_cuda({&usage_prev, &write_weights_prev, &retention}, "usage_forward");
  auto [out, count] = new_output(usage_prev.shape(), "usage_forward: usage_prev");
  if (count > 0)
    launch("usage_forward_kernel", count, usage_forward_kernel, usage_prev.f32(),
           write_weights_prev.f32(), retention.f32(), out.f32(), count);
  return out;
}

void usage_backward(Tensor& d_usage_prev, Tensor& d_retention, const Tensor& d_out,
                    const Tensor& usage_prev, const Tensor& write_weights_prev,
                    const Tensor& retention) {
  require_cuda({&d_usage_prev, &d_retention, &d_out, &usage_prev, &write_weights_prev, &retention},
               "usage_backward");
  const int64_t count = to_int(usage_prev.numel(), "usage_backward: usage_prev");
  if (count == 0 || (!d_usage_prev.defined() && !d_retention.defined())) return;
  launch("usage_backward_kernel", count, usage_backward_kernel, usage_prev.f32(),
         write_weights_prev.f32(), retention.f32(), d_out.f32(), ptr_or_null(d_usage_prev),
         ptr_or_null(d_retention), count);
}

// ------------------------------------------------------------------ write weighting
Tensor write_weighting_forward(const Tensor& allocation, const Tensor& write_content,
                               const Tensor& allocation_gate, const Tensor& write_gate) {
  require_cuda({&allocation, &write_content, &allocation_gate, &write_gate},
               "write_weighting_forward");
  const int64_t n = allocation.dim(1);
  auto [out, count] = new_output(allocation.shape(), "write_weighting_forward: allocation");
  if (count > 0)
    launch("write_weighting_forward_kernel", count, write_weighting_forward_kernel,
           allocation.f32(), write_content.f32(), allocation_gate.f32(), write_gate.f32(),
           out.f32(), count, static_cast<int>(n));
  return out;
}

void write_weighting_backward(Tensor& d_allocation, Tensor& d_write_content,
                              Tensor& d_allocation_gate, Tensor& d_write_gate, const Tensor& d_out,
                              const Tensor& allocation, const Tensor& write_content,
                              const Tensor& allocation_gate, const Tensor& write_gate) {
  require_cuda({&d_allocation, &d_write_content, &d_allocation_gate, &d_write_gate, &d_out,
                &allocation, &write_content, &allocation_gate, &write_gate},
               "write_weighting_backward");
  const int64_t m = allocation.dim(0), n = allocation.dim(1);
  const int64_t count = to_int(allocation.numel(), "write_weighting_backward: allocation");
  if ((d_allocation.defined() || d_write_content.defined()) && count > 0) {
    launch("write_weighting_backward_kernel", count, write_weighting_backward_kernel,
           allocation_gate.f32(), write_gate.f32(), d_out.f32(), ptr_or_null(d_allocation),
           ptr_or_null(d_write_content), count, static_cast<int>(n));
  }
  if ((d_allocation_gate.defined() || d_write_gate.defined()) && m > 0) {
    launch("write_weighting_backward_gates_kernel", m, write_weighting_backward_gates_kernel,
           allocation.f32(), write_content.f32(), allocation_gate.f32(), write_gate.f32(),
           d_out.f32(), ptr_or_null(d_allocation_gate), ptr_or_null(d_write_gate), m,
           static_cast<int>(n));
  }
}

// ------------------------------------------------------------------ memory update
Tensor memory_update_forward(const Tensor& memory, const Tensor& write_weights, const Tensor& erase,
                             const Tensor& write_vector) {
  require_cuda({&memory, &write_weights, &erase, &write_vector}, "memory_update_forward");
  const int64_t n = memory.dim(1), w = memory.dim(2);
  auto [out, count] = new_output(memory.shape(), "memory_update_forward: memory");
  if (count > 0)
    launch("memory_update_forward_kernel", count, memory_update_forward_kernel, memory.f32(),
           write_weights.f32(), erase.f32(), write_vector.f32(), out.f32(), count,
           static_cast<int>(n), static_cast<int>(w));
  return out;
}

void memory_update_backward(Tensor& d_memory, Tensor& d_write_weights, Tensor& d_erase,
                            Tensor& d_write_vector, const Tensor& d_out, const Tensor& memory,
                            const Tensor& write_weights, const Tensor& erase,
                            const Tensor& write_vector) {
  require_cuda({&d_memory, &d_write_weights, &d_erase, &d_write_vector, &d_out, &memory,
                &write_weights, &erase, &write_vector},
               "memory_update_backward");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2);
  const int64_t count = to_int(memory.numel(), "memory_update_backward: memory");
  if (count == 0) return;
  if (d_memory.defined()) {
    launch("memory_update_backward_memory_kernel", count, memory_update_backward_memory_kernel,
           write_weights.f32(), erase.f32(), d_out.f32(), d_memory.f32(), count,
           static_cast<int>(n), static_cast<int>(w));
  }
  if (d_erase.defined() || d_write_vector.defined()) {
    launch("memory_update_backward_vectors_kernel", m * w, memory_update_backward_vectors_kernel,
           memory.f32(), write_weights.f32(), d_out.f32(), ptr_or_null(d_erase),
           ptr_or_null(d_write_vector), m * w, static_cast<int>(n), static_cast<int>(w));
  }
  if (d_write_weights.defined()) {
    launch("memory_update_backward_weights_kernel", m * n * 32,
           memory_update_backward_weights_kernel, memory.f32(), erase.f32(), write_vector.f32(),
           d_out.f32(), d_write_weights.f32(), m * n, static_cast<int>(n), static_cast<int>(w));
  }
}

// ------------------------------------------------------------------ temporal links
Tensor link_update_forward(const Tensor& links_prev, const Tensor& precedence_prev,
                           const Tensor& write_weights) {
  require_cuda({&links_prev, &precedence_prev, &write_weights}, "link_update_forward");
  const int64_t n = write_weights.dim(1);
  auto [out, count] = new_output(links_prev.shape(), "link_update_forward: links_prev");
  if (count > 0)
    launch("link_update_forward_kernel", count, link_update_forward_kernel, links_prev.f32(),
           precedence_prev.f32(), write_weights.f32(), out.f32(), count, static_cast<int>(n));
  return out;
}

void link_update_backward(Tensor& d_links_prev, Tensor& d_precedence_prev, Tensor& d_write_weights,
                          const Tensor& d_out, const Tensor& links_prev,
                          const Tensor& precedence_prev, const Tensor& write_weights) {
  require_cuda({&d_links_prev, &d_precedence_prev, &d_write_weights, &d_out, &links_prev,
                &precedence_prev, &write_weights},
               "link_update_backward");
  const int64_t n = write_weights.dim(1);
  const int64_t count = to_int(links_prev.numel(), "link_update_backward: links_prev");
  const int64_t slots = write_weights.numel();
  if (count == 0) return;
  if (d_links_prev.defined()) {
    launch("link_update_backward_links_kernel", count, link_update_backward_links_kernel,
           write_weights.f32(), d_out.f32(), d_links_prev.f32(), count, static_cast<int>(n));
  }
  if (d_precedence_prev.defined()) {
    launch("link_update_backward_precedence_kernel", slots, link_update_backward_precedence_kernel,
           write_weights.f32(), d_out.f32(), d_precedence_prev.f32(), slots, static_cast<int>(n));
  }
  if (d_write_weights.defined()) {
    launch("link_update_backward_weights_kernel", slots, link_update_backward_weights_kernel,
           links_prev.f32(), precedence_prev.f32(), d_out.f32(), d_write_weights.f32(), slots,
           static_cast<int>(n));
  }
}

// ------------------------------------------------------------------ precedence
Tensor precedence_update_forward(const Tensor& precedence_prev, const Tensor& write_weights) {
  require_cuda({&precedence_prev, &write_weights}, "precedence_update_forward");
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  Tensor out = Tensor::empty({m, n}, Device::cuda);
  const int64_t count = to_int(out.numel(), "precedence_update_forward: write_weights");
  if (count == 0) return out;
  Workspace sums(sizeof(float) * 2 * static_cast<size_t>(m));
  launch("precedence_sums_kernel", m, precedence_sums_kernel, write_weights.f32(),
         precedence_prev.f32(), nullptr, sums.as<float>(), m, static_cast<int>(n));
  launch("precedence_forward_kernel", count, precedence_forward_kernel, precedence_prev.f32(),
         write_weights.f32(), sums.as<float>(), out.f32(), count, static_cast<int>(n));
  return out;
}

void precedence_update_backward(Tensor& d_precedence_prev, Tensor& d_write_weights,
                                const Tensor& d_out, const Tensor& precedence_prev,
                                const Tensor& write_weights) {
  require_cuda({&d_precedence_prev, &d_write_weights, &d_out, &precedence_prev, &write_weights},
               "precedence_update_backward");
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  const int64_t count = to_int(write_weights.numel(), "precedence_update_backward: write_weights");
  if (count == 0 || (!d_precedence_prev.defined() && !d_write_weights.defined())) return;
  Workspace sums(sizeof(float) * 2 * static_cast<size_t>(m));
  launch("precedence_sums_kernel", m, precedence_sums_kernel, write_weights.f32(),
         precedence_prev.f32(), d_out.f32(), sums.as<float>(), m, static_cast<int>(n));
  launch("precedence_backward_kernel", count, precedence_backward_kernel, d_out.f32(),
         sums.as<float>(), ptr_or_null(d_precedence_prev), ptr_or_null(d_write_weights), count,
         static_cast<int>(n));
}

// ------------------------------------------------------------------ link weights
LinkWeights link_weights_forward(const Tensor& links, const Tensor& read_weights_prev) {
  require_cuda({&links, &read_weights_prev}, "link_weights_forward");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  to_int(links.numel(), "link_weights_forward: links");
  to_int(read_weights_prev.numel(), "link_weights_forward: read_weights_prev");
  LinkWeights out{Tensor::empty({m, r, n}, Device::cuda), Tensor::empty({m, r, n}, Device::cuda)};
  if (out.forward.numel() == 0) return out;
  const int in = static_cast<int>(n), ir = static_cast<int>(r), im = static_cast<int>(m);
  // forward [R, N] = W [R, N] · Lᵀ;  backward [R, N] = W [R, N] · L
  gemm_rm_batched(false, true, ir, in, in, read_weights_prev.f32(), in, r * n, links.f32(), in,
                  n * n, 0.0f, out.forward.f32(), r * n, im);
  gemm_rm_batched(false, false, ir, in, in, read_weights_prev.f32(), in, r * n, links.f32(), in,
                  n * n, 0.0f, out.backward.f32(), r * n, im);
  return out;
}

void link_weights_backward(Tensor& d_links, Tensor& d_read_weights_prev, const Tensor& d_forward,
                           const Tensor& d_backward, const Tensor& links,
                           const Tensor& read_weights_prev) {
  require_cuda(
      {&d_links, &d_read_weights_prev, &d_forward, &d_backward, &links, &read_weights_prev},
      "link_weights_backward");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  to_int(links.numel(), "link_weights_backward: links");
  to_int(read_weights_prev.numel(), "link_weights_backward: read_weights_prev");
  // No read head: d_links gets Σ over zero heads, d_read_weights_prev is empty.
  if (m == 0 || n == 0 || r == 0) return;
  const int in = static_cast<int>(n), ir = static_cast<int>(r), im = static_cast<int>(m);
  const float* wr = read_weights_prev.f32();
  const float* l = links.f32();
  if (d_forward.defined()) {
    const float* gf = d_forward.f32();
    if (d_links.defined())  // d_L [N, N] += d_Fᵀ [N, R] · W [R, N]
      gemm_rm_batched(true, false, in, in, ir, gf, in, r * n, wr, in, r * n, 1.0f, d_links.f32(),
                      n * n, im);
    if (d_read_weights_prev.defined())  // d_W [R, N] += d_F [R, N] · L [N, N]
      gemm_rm_batched(false, false, ir, in, in, gf, in, r * n, l, in, n * n, 1.0f,
                      d_read_weights_prev.f32(), r * n, im);
  }
  if (d_backward.defined()) {
    const float* gb = d_backward.f32();
    if (d_links.defined())  // d_L [N, N] += Wᵀ [N, R] · d_B [R, N]
      gemm_rm_batched(true, false, in, in, ir, wr, in, r * n, gb, in, r * n, 1.0f, d_links.f32(),
                      n * n, im);
    if (d_read_weights_prev.defined())  // d_W [R, N] += d_B [R, N] · Lᵀ
      gemm_rm_batched(false, true, ir, in, in, gb, in, r * n, l, in, n * n, 1.0f,
                      d_read_weights_prev.f32(), r * n, im);
  }
}

// ------------------------------------------------------------------ read weights
Tensor read_weights_forward(const Tensor& read_modes, const Tensor& backward_weights,
                            const Tensor& read_content, const Tensor& forward_weights) {
  require_cuda({&read_modes, &backward_weights, &read_content, &forward_weights},
               "read_weights_forward");
  const int64_t n = read_content.dim(2);
  auto [out, count] = new_output(read_content.shape(), "read_weights_forward: read_content");
  if (count > 0)
    launch("read_weights_forward_kernel", count, read_weights_forward_kernel, read_modes.f32(),
           backward_weights.f32(), read_content.f32(), forward_weights.f32(), out.f32(), count,
           static_cast<int>(n));
  return out;
}

void read_weights_backward(Tensor& d_read_modes, Tensor& d_backward_weights, Tensor& d_read_content,
                           Tensor& d_forward_weights, const Tensor& d_out, const Tensor& read_modes,
                           const Tensor& backward_weights, const Tensor& read_content,
                           const Tensor& forward_weights) {
  require_cuda({&d_read_modes, &d_backward_weights, &d_read_content, &d_forward_weights, &d_out,
                &read_modes, &backward_weights, &read_content, &forward_weights},
               "read_weights_backward");
  const int64_t m = read_content.dim(0), r = read_content.dim(1), n = read_content.dim(2);
  const int64_t count = to_int(read_content.numel(), "read_weights_backward: read_content");
  if ((d_backward_weights.defined() || d_read_content.defined() || d_forward_weights.defined()) &&
      count > 0) {
    launch("read_weights_backward_kernel", count, read_weights_backward_kernel, read_modes.f32(),
           d_out.f32(), ptr_or_null(d_backward_weights), ptr_or_null(d_read_content),
           ptr_or_null(d_forward_weights), count, static_cast<int>(n));
  }
  if (d_read_modes.defined() && m * r > 0) {
    launch("read_weights_backward_modes_kernel", m * r, read_weights_backward_modes_kernel,
           backward_weights.f32(), read_content.f32(), forward_weights.f32(), d_out.f32(),
           d_read_modes.f32(), m * r, static_cast<int>(n));
  }
}

// ------------------------------------------------------------------ read vectors
Tensor read_vectors_forward(const Tensor& memory, const Tensor& read_weights) {
  require_cuda({&memory, &read_weights}, "read_vectors_forward");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), r = read_weights.dim(1);
  to_int(memory.numel(), "read_vectors_forward: memory");
  to_int(read_weights.numel(), "read_vectors_forward: read_weights");
  if (n == 0) return Tensor::zeros({m, r, w}, Device::cuda);  // a sum over no slot
  Tensor out = Tensor::empty({m, r, w}, Device::cuda);
  if (out.numel() == 0) return out;
  // out [R, W] = W_r [R, N] · M [N, W]
  gemm_rm_batched(false, false, static_cast<int>(r), static_cast<int>(w), static_cast<int>(n),
                  read_weights.f32(), static_cast<int>(n), r * n, memory.f32(), static_cast<int>(w),
                  n * w, 0.0f, out.f32(), r * w, static_cast<int>(m));
  return out;
}

void read_vectors_backward(Tensor& d_memory, Tensor& d_read_weights, const Tensor& d_out,
                           const Tensor& memory, const Tensor& read_weights) {
  require_cuda({&d_memory, &d_read_weights, &d_out, &memory, &read_weights},
               "read_vectors_backward");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), r = read_weights.dim(1);
  to_int(memory.numel(), "read_vectors_backward: memory");
  to_int(read_weights.numel(), "read_vectors_backward: read_weights");
  // An empty sum (R = 0 for d_memory, W = 0 for d_read_weights) adds nothing.
  if (m == 0 || n == 0 || r == 0 || w == 0) return;
  const int in = static_cast<int>(n), iw = static_cast<int>(w), ir = static_cast<int>(r),
            im = static_cast<int>(m);
  if (d_memory.defined())  // d_M [N, W] += W_rᵀ [N, R] · g [R, W]
    gemm_rm_batched(true, false, in, iw, ir, read_weights.f32(), in, r * n, d_out.f32(), iw, r * w,
                    1.0f, d_memory.f32(), n * w, im);
  if (d_read_weights.defined())  // d_W_r [R, N] += g [R, W] · Mᵀ [W, N]
    gemm_rm_batched(false, true, ir, in, iw, d_out.f32(), iw, r * w, memory.f32(), iw, n * w, 1.0f,
                    d_read_weights.f32(), r * n, im);
}

}  // namespace mare::cuda
