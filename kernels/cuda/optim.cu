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

// Σ in[i] for i in [begin, end), in order, in double: a chunk of a later level
// of the norm's tree (chunk_sums_kernel, step_level_kernel).
__device__ __forceinline__ double chunk_sum(const double* __restrict__ in, int64_t begin,
                                            int64_t end) {
  double s = 0.0;
  for (int64_t i = begin; i < end; ++i) s = __dadd_rn(s, in[i]);
  return s;
}

// One element of the CPU loop of adam_update, operation by operation (m, v and
// w updated in place; g as given): adam_update_kernel and step_adam_kernel.
__device__ __forceinline__ void adam_element(float& w, float g, float& m, float& v, float lr,
                                             float beta1, float beta2, float omb1, float omb2,
                                             float eps, double c1, double c2) {
  const float mi = __fadd_rn(__fmul_rn(beta1, m), __fmul_rn(omb1, g));
  const float vi = __fadd_rn(__fmul_rn(beta2, v), __fmul_rn(__fmul_rn(omb2, g), g));
  m = mi;
  v = vi;
  const double mhat = __ddiv_rn(static_cast<double>(mi), c1);
  const double vhat = __ddiv_rn(static_cast<double>(vi), c2);
  const double step = __ddiv_rn(__dmul_rn(static_cast<double>(lr), mhat),
                                __dadd_rn(__dsqrt_rn(vhat), static_cast<double>(eps)));
  w = __fsub_rn(w, __double2float_rn(step));
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
    out[k] = chunk_sum(in, begin, min(n, begin + kSumSquaresChunk));
  }
}

// The CPU loop of adam_update, operation by operation.
__global__ void adam_update_kernel(float* __restrict__ w, const float* __restrict__ g,
                                   float* __restrict__ m, float* __restrict__ v, int64_t n,
                                   float lr, float beta1, float beta2, float omb1, float omb2,
                                   float eps, double c1, double c2) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    adam_element(w[i], g[i], m[i], v[i], lr, beta1, beta2, omb1, omb2, eps, c1, c2);
  }
}

int64_t chunks_of(int64_t n) {
  return (n + kSumSquaresChunk - 1) / kSumSquaresChunk;
}

// ------------------------------------------------------------------ adam_step
// The whole step over many tensors in a few launches (multi-tensor kernels, the
// way PyTorch's fused optimisers do it): each launch takes a table of up to
// kGroup tensors by value and a prefix of their work items; a thread (or a
// block) finds its tensor by a binary search of the prefix. The arithmetic of
// every element, chunk and level is that of the one-tensor kernels above, so
// the bits are those of l2_grad_add, sum_squares, scale_inplace and adam_update
// called one by one (and of the CPU).
constexpr int kGroup = 40;

// Level 0 of the norm, with L2 first when k2 ≠ 0: per chunk of one tensor's
// gradient, g ← g + k2·w element by element, then Σ g² in order.
struct SquaresTable {
  float* g[kGroup];
  const float* w[kGroup];
  int64_t n[kGroup];
  double* out[kGroup];        // the tensor's level-0 sums (its slot when one chunk)
  int64_t start[kGroup + 1];  // prefix of the tensors' chunk counts
  int count;
};

// A later level: per chunk of one tensor's previous sums, their sum in order.
struct LevelTable {
  const double* in[kGroup];
  int64_t n[kGroup];  // sums at the previous level
  double* out[kGroup];
  int64_t start[kGroup + 1];  // prefix of this level's chunk counts
  int count;
};

// Adam over whole tiles of kAdamTile elements of one tensor a block.
constexpr int64_t kAdamTile = 2048;
struct AdamTable {
  float* w[kGroup];
  float* g[kGroup];
  float* m[kGroup];
  float* v[kGroup];
  int64_t n[kGroup];
  int64_t start[kGroup + 1];  // prefix of the tensors' tile counts
  int count;
};

__device__ __forceinline__ int find_tensor(const int64_t* start, int count, int64_t item) {
  int lo = 0, hi = count - 1;  // the last k with start[k] <= item
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (start[mid] <= item)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Every work item of a table's tensors, by a grid-stride loop: f(k, local)
// with k the tensor (found in the prefix `start`) and local the item within it.
template <class F>
__device__ __forceinline__ void for_table_items(const int64_t* start, int count, F&& f) {
  const int64_t total = start[count];
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < total;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int k = find_tensor(start, count, c);
    f(k, c - start[k]);
  }
}

__global__ void step_squares_kernel(SquaresTable t, float k2) {
  for_table_items(t.start, t.count, [&](int k, int64_t local) {
    const int64_t begin = local * kSumSquaresChunk;
    const int64_t end = min(t.n[k], begin + kSumSquaresChunk);
    float* g = t.g[k];
    const float* w = t.w[k];
    double s = 0.0;
    for (int64_t i = begin; i < end; ++i) {
      float gi = g[i];
      if (k2 != 0.0f) {
        gi = __fadd_rn(gi, __fmul_rn(k2, w[i]));
        g[i] = gi;
      }
      const double d = gi;
      s = __dadd_rn(s, __dmul_rn(d, d));
    }
    t.out[k][local] = s;
  });
}

__global__ void step_level_kernel(LevelTable t) {
  for_table_items(t.start, t.count, [&](int k, int64_t local) {
    const int64_t begin = local * kSumSquaresChunk;
    t.out[k][local] = chunk_sum(t.in[k], begin, min(t.n[k], begin + kSumSquaresChunk));
  });
}

// One thread: the slots in list order (as the host adds them), the norm, and
// the clipping decision of models/optim.h: scale[0] = float(c / norm) and
// clip[0] = 1 when c > 0 and norm > c, else clip[0] = 0.
__global__ void step_norm_kernel(const double* __restrict__ slots, int64_t count, double max_norm,
                                 float* __restrict__ norm_out, float* __restrict__ scale,
                                 int* __restrict__ clip) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = 0.0;
  for (int64_t k = 0; k < count; ++k) total = __dadd_rn(total, slots[k]);
  const double norm = __dsqrt_rn(total);
  *norm_out = __double2float_rn(norm);
  const bool on = max_norm > 0 && norm > max_norm;
  *clip = on ? 1 : 0;
  *scale = on ? __double2float_rn(__ddiv_rn(max_norm, norm)) : 1.0f;
}

__global__ void step_adam_kernel(AdamTable t, const float* __restrict__ scale,
                                 const int* __restrict__ clip, float lr, float beta1, float beta2,
                                 float omb1, float omb2, float eps, double c1, double c2) {
  const int64_t tiles = t.start[t.count];
  const bool scaled = *clip != 0;
  const float s = *scale;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int k = find_tensor(t.start, t.count, tile);
    const int64_t begin = (tile - t.start[k]) * kAdamTile;
    const int64_t end = min(t.n[k], begin + kAdamTile);
    float *w = t.w[k], *g = t.g[k], *m = t.m[k], *v = t.v[k];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float gi = g[i];
      if (scaled) {
        gi = __fmul_rn(gi, s);
        g[i] = gi;  // as scale_inplace leaves it
      }
      adam_element(w[i], gi, m[i], v[i], lr, beta1, beta2, omb1, omb2, eps, c1, c2);
    }
  }
}

unsigned int grid_for(int64_t items) {
  return blocks_for(items > 0 ? items : 1);
}

}  // namespace

// ------------------------------------------------------------------ launchers
void l2_grad_add(Tensor& grad, const Tensor& w, float lambda) {
  require_cuda({&grad, &w}, "l2_grad_add");
  const int64_t n = w.numel();
  if (n == 0) return;
  launch("l2_grad_add_kernel", n, l2_grad_add_kernel, grad.f32(), w.f32(), n, 2.0f * lambda);
}

void scale_inplace(Tensor& x, float s) {
  require_cuda({&x}, "scale_inplace");
  const int64_t n = x.numel();
  if (n == 0) return;
  launch("scale_inplace_kernel", n, scale_inplace_kernel, x.f32(), n, s);
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
    launch("chunk_squares_kernel", c0, chunk_squares_kernel, x.f32(), x.numel(), c0, out);
    const double* in = out;
    bool in_a = true;
    for (int64_t count = c0; count > 1;) {
      const int64_t next = chunks_of(count);
      double* dst = next == 1 ? slot : (in_a ? b.as<double>() : a.as<double>());
      launch("chunk_sums_kernel", next, chunk_sums_kernel, in, count, next, dst);
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
  launch("adam_update_kernel", n, adam_update_kernel, w.f32(), g.f32(), m.f32(), v.f32(), n, lr,
         beta1, beta2, omb1, omb2, eps, c.c1, c.c2);
}

Tensor adam_step(std::span<Tensor> ws, std::span<Tensor> gs, std::span<Tensor> ms,
                 std::span<Tensor> vs, const AdamStepConfig& c) {
  const size_t count = ws.size();
  Tensor norm = Tensor::empty({1}, Device::cuda);
  // The per-tensor sums of squares (slots, list order), then the scale and the flag.
  Workspace slots(std::max<size_t>(count, 1) * sizeof(double));
  Workspace decision(2 * sizeof(float));
  float* scale = decision.as<float>();
  int* clip = reinterpret_cast<int*>(scale + 1);
  MARE_CUDA_CHECK(cudaMemsetAsync(slots.get(), 0, slots.bytes(), stream()));
  const float k2 = c.l2 > 0 ? 2.0f * c.l2 : 0.0f;

  // The norm's tree, level by level, every tensor of a group in one launch.
  // Level sizes per tensor: n, then ⌈n / chunk⌉, … down to 1 (the slot).
  std::vector<std::vector<int64_t>> sizes(count);  // sums at each level
  size_t scratch = 0;
  for (size_t k = 0; k < count; ++k) {
    if (!gs[k].defined() || gs[k].numel() == 0) continue;
    for (int64_t m = chunks_of(gs[k].numel());; m = chunks_of(m)) {
      sizes[k].push_back(m);
      if (m == 1) break;
      scratch += static_cast<size_t>(m);
    }
  }
  Workspace tree(scratch * sizeof(double));
  std::vector<std::vector<double*>> at(count);  // where each level's sums go
  size_t used = 0;
  for (size_t k = 0; k < count; ++k)
    for (int64_t m : sizes[k]) {
      if (m == 1) {
        at[k].push_back(slots.as<double>() + k);
      } else {
        at[k].push_back(tree.as<double>() + used);
        used += static_cast<size_t>(m);
      }
    }

  for (size_t g0 = 0; g0 < count; g0 += kGroup) {
    const size_t g1 = std::min(count, g0 + kGroup);
    SquaresTable t{};
    for (size_t k = g0; k < g1; ++k) {
      if (sizes[k].empty()) continue;
      const int i = t.count++;
      t.g[i] = gs[k].f32();
      t.w[i] = ws[k].f32();
      t.n[i] = gs[k].numel();
      t.out[i] = at[k][0];
      t.start[i + 1] = t.start[i] + sizes[k][0];
    }
    if (t.count > 0) {
      step_squares_kernel<<<grid_for(t.start[t.count]), kThreads, 0, stream()>>>(t, k2);
      MARE_LAUNCH_CHECK("step_squares_kernel");
    }
    for (size_t level = 1;; ++level) {
      LevelTable lt{};
      for (size_t k = g0; k < g1; ++k) {
        if (sizes[k].size() <= level) continue;
        const int i = lt.count++;
        lt.in[i] = at[k][level - 1];
        lt.n[i] = sizes[k][level - 1];
        lt.out[i] = at[k][level];
        lt.start[i + 1] = lt.start[i] + sizes[k][level];
      }
      if (lt.count == 0) break;
      step_level_kernel<<<grid_for(lt.start[lt.count]), kThreads, 0, stream()>>>(lt);
      MARE_LAUNCH_CHECK("step_level_kernel");
    }
  }
  step_norm_kernel<<<1, 32, 0, stream()>>>(slots.as<double>(), static_cast<int64_t>(count),
                                           static_cast<double>(c.clip_norm), norm.f32(), scale,
                                           clip);
  MARE_LAUNCH_CHECK("step_norm_kernel");

  const AdamBiasCorrection bc = adam_bias_correction(c.beta1, c.beta2, c.step);
  const float omb1 = 1 - c.beta1, omb2 = 1 - c.beta2;
  for (size_t g0 = 0; g0 < count; g0 += kGroup) {
    const size_t g1 = std::min(count, g0 + kGroup);
    AdamTable t{};
    for (size_t k = g0; k < g1; ++k) {
      if (!gs[k].defined() || ws[k].numel() == 0) continue;
      const int i = t.count++;
      t.w[i] = ws[k].f32();
      t.g[i] = gs[k].f32();
      t.m[i] = ms[k].f32();
      t.v[i] = vs[k].f32();
      t.n[i] = ws[k].numel();
      t.start[i + 1] = t.start[i] + (t.n[i] + kAdamTile - 1) / kAdamTile;
    }
    if (t.count == 0) continue;
    const int64_t tiles = t.start[t.count];
    const unsigned int grid = static_cast<unsigned int>(std::min<int64_t>(tiles, 65535));
    step_adam_kernel<<<grid, kThreads, 0, stream()>>>(t, scale, clip, c.lr, c.beta1, c.beta2, omb1,
                                                      omb2, c.eps, bc.c1, bc.c2);
    MARE_LAUNCH_CHECK("step_adam_kernel");
  }
  return norm;
}

}  // namespace mare::cuda
