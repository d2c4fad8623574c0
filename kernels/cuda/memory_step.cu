// The fused DNC memory step on the GPU (kernels/memory/fused_step.h): the CPU
// op's two passes a direction, with the allocation kernel of allocation.cu
// between them, as five launches in place of the composed step's thirteen ops
// a direction (each of which walks the [M, N, W] memories again):
//
//   forward   usage kernel      one thread per (memory, slot): ψ and u  (steps 2–3)
//             allocation        cuda::allocation_forward_into, free lists kept
//             rest kernel       one warp per memory: steps 5–11
//   backward  rest kernel       one warp per memory: steps 11 → 5, giving d_a
//             allocation        cuda::allocation_backward on d_u = d_usage + …
//             usage kernel      one thread per memory: steps 3 → 2
//
// A warp owns one memory: lane l takes the word columns j = l, l + 32, … of
// every slot (the memory, the keys, the erase and write vectors, the gradient
// of ξ's word-wide parts), and the small per-memory arrays (slots, links,
// read weights) are taken lane-parallel by element. Sums over W run in double
// (the content lookups, as on the CPU) or float (the read vectors' gradient, as
// on the CPU) per lane and close by the fixed xor butterfly of warp_sum, so
// every lane holds the same bits; sums over slots are taken by every lane in the
// CPU's order (the same bits in every lane, no communication). A value one lane
// writes and others read goes through global memory (the step's own outputs and
// saved tensors, or the backward's scratch) or the warp's shared slice, with
// __syncwarp() between (it orders the warp's memory accesses). Every memory's
// result is the same whatever the grid: no atomics, no cross-warp sums.
//
// Equal to the CPU op to rounding, not bit for bit (the butterfly sums in
// another order than the CPU's eight interleaved partial sums); the tests
// compare both (tests/kernels/fused_step/).
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/memory_math.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/memory/access.h"
#include "kernels/memory/interface.h"

namespace mare::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kMaxWarpsPerBlock = 4;
constexpr size_t kSharedBudget = 48 * 1024;  // the default dynamic shared memory a block may ask

// The step's extents (int: the kernels' indices) and where the parts of one interface
// vector start (kernels/memory/interface.h).
struct Dims {
  int N, W, R, X;
  InterfaceLayoutOf<int> part;
};

// One memory's state tensors (null: not given).
template <class P>
struct State {
  P *memory, *usage, *write_weights, *read_weights, *precedence, *links;
};

template <class P>
__device__ State<P> at(const State<P>& s, const Dims& d, int64_t m) {
  auto o = [](P* p, int64_t off) { return p ? p + off : nullptr; };
  return {o(s.memory, m * d.N * d.W),       o(s.usage, m * d.N),      o(s.write_weights, m * d.N),
          o(s.read_weights, m * d.R * d.N), o(s.precedence, m * d.N), o(s.links, m * d.N * d.N)};
}

// ------------------------------------------------------------------ device helpers
// Σ_j a[j]·b[j] over j < w in double, in every lane. No __restrict__ on these helpers:
// they read what the kernel wrote (the new memory), which the read-only (.nc) load path
// __restrict__ permits would not see.
__device__ double warp_dot(const float* a, const float* b, int w, int lane) {
  double acc = 0.0;
  for (int j = lane; j < w; j += kWarp) acc += double(a[j]) * b[j];
  return warp_sum(acc);
}
// The same in float (the read vectors' gradient, a float sum on the CPU too).
__device__ float warp_dot_f(const float* a, const float* b, int w, int lane) {
  float acc = 0.0f;
  for (int j = lane; j < w; j += kWarp) acc += a[j] * b[j];
  return warp_sum(acc);
}
// ‖x‖ = sqrt(Σ x² + ε) in double.
__device__ double warp_norm(const float* x, int w, int lane) {
  return sqrt(warp_dot(x, x, w, lane) + double(kContentEpsilon));
}

// norms[s] = ‖mem[s]‖ for the n slots (the warp's shared slice).
__device__ void slot_norms(const float* mem, int n, int w, double* norms, int lane) {
  for (int s = 0; s < n; ++s) {
    const double v = warp_norm(mem + int64_t(s) * w, w, lane);
    if (lane == 0) norms[s] = v;
  }
  __syncwarp();
}

// y = softmax_n(β cos(k, mem[n])), mem's norms given; logits: the warp's shared [n].
__device__ void content(const float* mem, const double* norms, int n, int w, const float* k,
                        float beta, float* y, double* logits, int lane) {
  const double nk = warp_norm(k, w, lane);
  for (int s = 0; s < n; ++s) {
    const double v = beta * (warp_dot(k, mem + int64_t(s) * w, w, lane) /
                             (nk * norms[s] + double(kContentEpsilon)));
    if (lane == 0) logits[s] = v;
  }
  __syncwarp();
  double mx = -INFINITY, sum = 0.0;
  for (int s = 0; s < n; ++s) mx = fmax(mx, logits[s]);
  for (int s = 0; s < n; ++s) sum += exp(logits[s] - mx);
  for (int s = lane; s < n; s += kWarp) y[s] = static_cast<float>(exp(logits[s] - mx) / sum);
  __syncwarp();  // y written, logits free again
}

// Backward of content(): accumulates into d_mem (may be null) and d_k, returns d_β
// (in every lane). g: the gradient of y.
__device__ double content_backward(const float* mem, const double* norms, int n, int w,
                                   const float* k, float beta, const float* y, const float* g,
                                   float* d_mem, float* d_k, int lane) {
  const double nk = warp_norm(k, w, lane);
  double gy = 0.0, d_beta = 0.0;
  for (int s = 0; s < n; ++s) gy += double(g[s]) * y[s];
  for (int s = 0; s < n; ++s) {
    const double d_s = y[s] * (g[s] - gy);  // softmax backward
    const float* ms = mem + int64_t(s) * w;
    const double kd = warp_dot(k, ms, w, lane);
    const double den = nk * norms[s] + double(kContentEpsilon);
    d_beta += d_s * (kd / den);
    const double d_cos = double(beta) * d_s;
    const double c_dot = d_cos / den, c_norm = d_cos * kd / (den * den);
    const double c_k = c_norm * norms[s] / nk, c_m = c_norm * nk / norms[s];
    for (int j = lane; j < w; j += kWarp) {
      d_k[j] += static_cast<float>(c_dot * ms[j] - c_k * k[j]);
      if (d_mem) d_mem[int64_t(s) * w + j] += static_cast<float>(c_dot * k[j] - c_m * ms[j]);
    }
  }
  return d_beta;
}

// The warp's index in the grid, the warps of the grid, its lane, and its slice of
// the block's dynamic shared memory (2n doubles: slot norms, then logits).
struct WarpSlot {
  int64_t first, step;
  int lane;
  double *norms, *logits;
};
__device__ WarpSlot warp_slot(int n) {
  extern __shared__ double shared[];
  const int warp = threadIdx.x / kWarp;
  WarpSlot s;
  s.first = blockIdx.x * int64_t(blockDim.x / kWarp) + warp;
  s.step = int64_t(gridDim.x) * (blockDim.x / kWarp);
  s.lane = threadIdx.x % kWarp;
  s.norms = shared + 2 * n * warp;
  s.logits = s.norms + n;
  return s;
}

// ------------------------------------------------------------------ forward
// Steps 2–3, one thread per (memory, slot): ψ[m, s] and u[m, s].
__global__ void step_usage_forward_kernel(Dims d, int64_t M, const float* __restrict__ xi,
                                          State<const float> p, float* __restrict__ psi,
                                          float* __restrict__ u) {
  const int64_t count = M * d.N;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < count;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = e / d.N;
    const int s = static_cast<int>(e % d.N);
    const float* x = xi + m * d.X;
    const float* wr = p.read_weights + m * d.R * d.N;
    float r = 1.0f;
    for (int i = 0; i < d.R; ++i) r *= 1.0f - sigmoid_f(x[d.part.free_gates + i]) * wr[i * d.N + s];
    psi[e] = r;
    u[e] = (p.usage[e] + p.write_weights[e] - p.usage[e] * p.write_weights[e]) * r;
  }
}

// Outputs of the rest of the forward (saved tensors beside the new state).
struct RestOut {
  State<float> state;
  float *write_content, *forward_weights, *backward_weights, *read_content, *read_vectors;
};

// Steps 5–11, one warp per memory, given the allocation a [M, N]. Bounded to 96
// registers a thread (five blocks of four warps an SM), which ptxas meets without
// spilling on sm_90 (unbounded: 121, four blocks; at 80 it spills); the backward is
// left unbounded, since every bound below its 176 registers spills. Not timed yet:
// the bound is for occupancy, to be measured on a GPU.
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp, 5)
    step_rest_forward_kernel(Dims d, int64_t M, const float* __restrict__ xi,
                             State<const float> prev, const float* __restrict__ alloc,
                             RestOut out) {
  const WarpSlot ws = warp_slot(d.N);
  const int lane = ws.lane, N = d.N, W = d.W, R = d.R;
  for (int64_t m = ws.first; m < M; m += ws.step) {
    const float* x = xi + m * d.X;
    const State<const float> p = at(prev, d, m);
    const State<float> o = at(out.state, d, m);
    const float* a = alloc + m * N;
    float* cw = out.write_content + m * N;
    float* fw = out.forward_weights + m * R * N;
    float* bw = out.backward_weights + m * R * N;
    float* cr = out.read_content + m * R * N;
    float* reads = out.read_vectors + m * R * W;

    // Step 5: write content over the previous memory.
    slot_norms(p.memory, N, W, ws.norms, lane);
    content(p.memory, ws.norms, N, W, x + d.part.write_key, oneplus_f(x[d.part.write_strength]), cw,
            ws.logits, lane);
    // Step 6: write weights.
    const float ga = sigmoid_f(x[d.part.allocation_gate]), gw = sigmoid_f(x[d.part.write_gate]);
    float* ww = o.write_weights;
    for (int s = lane; s < N; s += kWarp) ww[s] = gw * (ga * a[s] + (1.0f - ga) * cw[s]);
    __syncwarp();
    // Step 7: memory.
    const float* v = x + d.part.write_vector;
    for (int s = 0; s < N; ++s)
      for (int j = lane; j < W; j += kWarp) {
        const int64_t i = int64_t(s) * W + j;
        o.memory[i] = p.memory[i] * (1.0f - ww[s] * sigmoid_f(x[d.part.erase + j])) + ww[s] * v[j];
      }
    // Step 8: links and precedence.
    for (int e = lane; e < N * N; e += kWarp) {
      const int i = e / N, j = e % N;
      o.links[e] = i == j ? 0.0f : (1.0f - ww[i] - ww[j]) * p.links[e] + ww[i] * p.precedence[j];
    }
    float sum = 0.0f;
    for (int i = 0; i < N; ++i) sum += ww[i];
    for (int i = lane; i < N; i += kWarp) o.precedence[i] = (1.0f - sum) * p.precedence[i] + ww[i];
    __syncwarp();  // the new memory and links are read across lanes below
    // Step 9: f = W Lᵀ, b = W L (W = the previous read weights [R, N]).
    for (int e = lane; e < R * N; e += kWarp) {
      const int r = e / N, i = e % N;
      float f = 0.0f, b = 0.0f;
      for (int j = 0; j < N; ++j) {
        f += p.read_weights[r * N + j] * o.links[i * N + j];
        b += p.read_weights[r * N + j] * o.links[j * N + i];
      }
      fw[e] = f;
      bw[e] = b;
    }
    // Step 10: read content over the new memory, then the read weights.
    slot_norms(o.memory, N, W, ws.norms, lane);
    for (int r = 0; r < R; ++r)
      content(o.memory, ws.norms, N, W, x + d.part.read_keys + r * W,
              oneplus_f(x[d.part.read_strengths + r]), cr + r * N, ws.logits, lane);
    for (int e = lane; e < R * N; e += kWarp) {
      float pi[3];
      softmax3(x + d.part.read_modes + 3 * (e / N), pi);
      o.read_weights[e] = pi[0] * bw[e] + pi[1] * cr[e] + pi[2] * fw[e];
    }
    __syncwarp();
    // Step 11: r = w^r M.
    for (int r = 0; r < R; ++r)
      for (int j = lane; j < W; j += kWarp) {
        float acc = 0.0f;
        for (int s = 0; s < N; ++s) acc += o.read_weights[r * N + s] * o.memory[int64_t(s) * W + j];
        reads[int64_t(r) * W + j] = acc;
      }
    __syncwarp();  // the shared slice is the next memory's
  }
}

// ------------------------------------------------------------------ backward
// Inputs of the backward of steps 11 → 5 (saved tensors of the forward, the output
// gradients, null where undefined).
struct RestIn {
  const float *xi, *alloc, *write_content, *forward_weights, *backward_weights, *read_content;
  State<const float> prev, out, grad;
  const float* grad_reads;
};
// Per-memory scratch of the backward, in global memory: g_mem [N, W], then
// g_wr, g_cr, g_fw, g_bw [R, N] each, g_links [N, N], g_ww [N].
__host__ __device__ inline int64_t scratch_floats(int N, int W, int R) {
  return int64_t(N) * W + 4 * int64_t(R) * N + int64_t(N) * N + N;
}

__global__ void step_rest_backward_kernel(Dims d, int64_t M, RestIn in, float* __restrict__ d_xi,
                                          State<float> d_prev, float* __restrict__ d_a,
                                          float* __restrict__ scratch) {
  const WarpSlot ws = warp_slot(d.N);
  const int lane = ws.lane, N = d.N, W = d.W, R = d.R;
  for (int64_t m = ws.first; m < M; m += ws.step) {
    const float* x = in.xi + m * d.X;
    float* dx = d_xi + m * d.X;
    const State<const float> p = at(in.prev, d, m), o = at(in.out, d, m), g = at(in.grad, d, m);
    const State<float> dp = at(d_prev, d, m);
    const float* a = in.alloc + m * N;
    const float* cw = in.write_content + m * N;
    const float* fw = in.forward_weights + m * R * N;
    const float* bw = in.backward_weights + m * R * N;
    const float* cr = in.read_content + m * R * N;
    const float* g_reads = in.grad_reads ? in.grad_reads + m * R * W : nullptr;
    float* g_mem = scratch + m * scratch_floats(N, W, R);
    float* g_wr = g_mem + int64_t(N) * W;
    float* g_cr = g_wr + R * N;
    float* g_fw = g_cr + R * N;
    float* g_bw = g_fw + R * N;
    float* g_links = g_bw + R * N;
    float* g_ww = g_links + N * N;

    // Gradients of the new memory and read weights, then through r = w^r M.
    for (int s = 0; s < N; ++s)
      for (int j = lane; j < W; j += kWarp) {
        const int64_t i = int64_t(s) * W + j;
        float v = g.memory ? g.memory[i] : 0.0f;
        if (g_reads)
          for (int r = 0; r < R; ++r) v += o.read_weights[r * N + s] * g_reads[int64_t(r) * W + j];
        g_mem[i] = v;
      }
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < N; ++s) {
        const float t =
            g_reads ? warp_dot_f(g_reads + int64_t(r) * W, o.memory + int64_t(s) * W, W, lane)
                    : 0.0f;
        if (lane == 0) g_wr[r * N + s] = (g.read_weights ? g.read_weights[r * N + s] : 0.0f) + t;
      }
    __syncwarp();
    // Step 10: read weights and read content.
    slot_norms(o.memory, N, W, ws.norms, lane);
    for (int r = 0; r < R; ++r) {
      float pi[3];
      softmax3(x + d.part.read_modes + 3 * r, pi);
      float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
      for (int s = 0; s < N; ++s) {
        const float gr = g_wr[r * N + s];
        s0 += gr * bw[r * N + s];
        s1 += gr * cr[r * N + s];
        s2 += gr * fw[r * N + s];
      }
      for (int s = lane; s < N; s += kWarp) {
        const float gr = g_wr[r * N + s];
        g_bw[r * N + s] = gr * pi[0];
        g_cr[r * N + s] = gr * pi[1];
        g_fw[r * N + s] = gr * pi[2];
      }
      const float dot = s0 * pi[0] + s1 * pi[1] + s2 * pi[2];
      if (lane == 0) {
        float* dpi = dx + d.part.read_modes + 3 * r;
        dpi[0] += pi[0] * (s0 - dot);
        dpi[1] += pi[1] * (s1 - dot);
        dpi[2] += pi[2] * (s2 - dot);
      }
      __syncwarp();
      const float x_rs = x[d.part.read_strengths + r];
      const double d_beta =
          content_backward(o.memory, ws.norms, N, W, x + d.part.read_keys + r * W, oneplus_f(x_rs),
                           cr + r * N, g_cr + r * N, g_mem, dx + d.part.read_keys + r * W, lane);
      if (lane == 0) dx[d.part.read_strengths + r] += static_cast<float>(d_beta) * sigmoid_f(x_rs);
    }
    // Step 9: d_L = d_fᵀ W + Wᵀ d_b; d_W = d_f L + d_b Lᵀ (W = previous read weights).
    for (int e = lane; e < N * N; e += kWarp) {
      const int i = e / N, j = e % N;
      float v = g.links ? g.links[e] : 0.0f;
      for (int r = 0; r < R; ++r)
        v += g_fw[r * N + i] * p.read_weights[r * N + j] +
             p.read_weights[r * N + i] * g_bw[r * N + j];
      g_links[e] = v;
    }
    if (dp.read_weights)
      for (int e = lane; e < R * N; e += kWarp) {
        const int r = e / N, j = e % N;
        float v = dp.read_weights[e];
        for (int i = 0; i < N; ++i)
          v += g_fw[r * N + i] * o.links[i * N + j] + g_bw[r * N + i] * o.links[j * N + i];
        dp.read_weights[e] = v;
      }
    __syncwarp();
    // Steps 8b and 8a: precedence and links; lane k owns g_ww[k] and d precedence[k].
    const float* ww = o.write_weights;
    float sum = 0.0f, gp = 0.0f;
    if (g.precedence)
      for (int i = 0; i < N; ++i) {
        sum += ww[i];
        gp += g.precedence[i] * p.precedence[i];
      }
    for (int k = lane; k < N; k += kWarp) {
      float gk = g.write_weights ? g.write_weights[k] : 0.0f;
      float dpk = dp.precedence ? dp.precedence[k] : 0.0f;
      if (g.precedence) {
        dpk += g.precedence[k] * (1.0f - sum);
        gk += g.precedence[k] - gp;
      }
      // The CPU's (i, j) order: (i, k) terms for i < k, then row k, then (i, k) for i > k.
      for (int i = 0; i < N; ++i) {
        if (i == k) {
          for (int j = 0; j < N; ++j)
            if (j != k) gk += g_links[k * N + j] * (p.precedence[j] - p.links[k * N + j]);
          continue;
        }
        const float gik = g_links[i * N + k], lik = p.links[i * N + k];
        dpk += gik * ww[i];
        gk -= gik * lik;
      }
      g_ww[k] = gk;
      if (dp.precedence) dp.precedence[k] = dpk;
    }
    if (dp.links)
      for (int e = lane; e < N * N; e += kWarp) {
        const int i = e / N, j = e % N;
        if (i != j) dp.links[e] += g_links[e] * (1.0f - ww[i] - ww[j]);
      }
    __syncwarp();
    // Step 7: M = M0 ⊙ (1 − w eᵀ) + w vᵀ.
    const float* v = x + d.part.write_vector;
    for (int j = lane; j < W; j += kWarp) {
      const float e = sigmoid_f(x[d.part.erase + j]);
      float g_erase = 0.0f, g_vec = 0.0f;
      for (int s = 0; s < N; ++s) {
        const int64_t i = int64_t(s) * W + j;
        const float gm = g_mem[i], m0 = p.memory[i];
        if (dp.memory) dp.memory[i] += gm * (1.0f - ww[s] * e);
        g_erase -= gm * m0 * ww[s];
        g_vec += gm * ww[s];
      }
      dx[d.part.erase + j] += g_erase * e * (1.0f - e);
      dx[d.part.write_vector + j] += g_vec;
    }
    for (int s = 0; s < N; ++s) {
      float acc = 0.0f;
      for (int j = lane; j < W; j += kWarp) {
        const int64_t i = int64_t(s) * W + j;
        acc += g_mem[i] * (v[j] - p.memory[i] * sigmoid_f(x[d.part.erase + j]));
      }
      acc = warp_sum(acc);
      if (lane == 0) g_ww[s] += acc;
    }
    __syncwarp();
    // Step 6: w^w = g^w (g^a a + (1 − g^a) c^w).
    const float ga = sigmoid_f(x[d.part.allocation_gate]), gw = sigmoid_f(x[d.part.write_gate]);
    float* g_cw = g_cr;  // reused: the read content's gradient is spent
    float sum_ga = 0.0f, sum_gw = 0.0f;
    for (int s = 0; s < N; ++s) {
      const float gs = g_ww[s];
      sum_ga += gs * gw * (a[s] - cw[s]);
      sum_gw += gs * (ga * a[s] + (1.0f - ga) * cw[s]);
    }
    for (int s = lane; s < N; s += kWarp) {
      const float gs = g_ww[s];
      d_a[m * N + s] = gs * gw * ga;
      g_cw[s] = gs * gw * (1.0f - ga);
    }
    if (lane == 0) {
      dx[d.part.allocation_gate] += sum_ga * ga * (1.0f - ga);
      dx[d.part.write_gate] += sum_gw * gw * (1.0f - gw);
    }
    __syncwarp();
    // Step 5: c^w = C(M0, k^w, β^w).
    slot_norms(p.memory, N, W, ws.norms, lane);
    const float x_ws = x[d.part.write_strength];
    const double d_beta =
        content_backward(p.memory, ws.norms, N, W, x + d.part.write_key, oneplus_f(x_ws), cw, g_cw,
                         dp.memory, dx + d.part.write_key, lane);
    if (lane == 0) dx[d.part.write_strength] += static_cast<float>(d_beta) * sigmoid_f(x_ws);
    __syncwarp();  // the shared slice is the next memory's
  }
}

// Steps 3 → 2, one thread per memory, given d_u (the output's plus the allocation's).
__global__ void step_usage_backward_kernel(Dims d, int64_t M, const float* __restrict__ xi,
                                           State<const float> prev, const float* __restrict__ psi,
                                           const float* __restrict__ d_u, float* __restrict__ d_xi,
                                           State<float> d_prev) {
  for (int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; m < M;
       m += int64_t(gridDim.x) * blockDim.x) {
    const float* x = xi + m * d.X;
    float* dx = d_xi + m * d.X;
    const State<const float> p = at(prev, d, m);
    const State<float> dp = at(d_prev, d, m);
    for (int s = 0; s < d.N; ++s) {
      const float g = d_u[m * d.N + s], u0 = p.usage[s], w0 = p.write_weights[s];
      if (dp.usage) dp.usage[s] += g * (1.0f - w0) * psi[m * d.N + s];
      const float g_psi = g * (u0 + w0 - u0 * w0);
      for (int i = 0; i < d.R; ++i) {
        float others = 1.0f;  // Π_{r'≠i} (1 − f_r' w_r'), recomputed: no division
        for (int j = 0; j < d.R; ++j)
          if (j != i)
            others *= 1.0f - sigmoid_f(x[d.part.free_gates + j]) * p.read_weights[j * d.N + s];
        const float f = sigmoid_f(x[d.part.free_gates + i]);
        dx[d.part.free_gates + i] -= g_psi * p.read_weights[i * d.N + s] * others * f * (1.0f - f);
        if (dp.read_weights) dp.read_weights[i * d.N + s] -= g_psi * f * others;
      }
    }
  }
}

// ------------------------------------------------------------------ helpers
State<const float> state_of(const MemoryStepState& s) {
  return {ptr_or_null(s.memory),       ptr_or_null(s.usage),      ptr_or_null(s.write_weights),
          ptr_or_null(s.read_weights), ptr_or_null(s.precedence), ptr_or_null(s.links)};
}

// The launch of a warp-per-memory kernel: warps per block and the dynamic shared
// memory (2N doubles a warp). N beyond what one warp's slice can hold is refused.
struct WarpLaunch {
  unsigned int blocks, threads;
  size_t shared;
};
WarpLaunch warp_launch(int64_t M, int64_t N, const char* op) {
  const size_t per_warp = 2 * static_cast<size_t>(N) * sizeof(double);
  if (per_warp > kSharedBudget)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(N) +
                                " slots need more shared memory than a block has (at most " +
                                std::to_string(kSharedBudget / (2 * sizeof(double))) +
                                " slots on the GPU); use the composed memory ops "
                                "(memory_step=composed)");
  int warps = kMaxWarpsPerBlock;
  while (warps > 1 && warps * per_warp > kSharedBudget) --warps;
  return {blocks_for(M, warps), static_cast<unsigned int>(warps * kWarp), warps * per_warp};
}

Dims dims_of(const Tensor& xi, const MemoryStepState& prev, int64_t read_heads) {
  const int64_t N = prev.memory.dim(1), W = prev.memory.dim(2);
  const int n = to_int(N, "memory_step: slots"), w = to_int(W, "memory_step: word"),
            r = to_int(read_heads, "memory_step: read heads");
  return {n, w, r, to_int(xi.dim(1), "memory_step: xi"), InterfaceLayoutOf<int>::of(r, w)};
}

}  // namespace

// ------------------------------------------------------------------ launchers
MemoryStepResult memory_step_forward(const Tensor& xi, const MemoryStepState& prev,
                                     int64_t read_heads, AllocationVariant variant) {
  require_cuda({&xi, &prev.memory, &prev.usage, &prev.write_weights, &prev.read_weights,
                &prev.precedence, &prev.links},
               "memory_step_forward");
  const Dims d = dims_of(xi, prev, read_heads);
  const int64_t M = xi.dim(0), N = d.N, W = d.W, R = d.R;
  const Device g = Device::cuda;
  MemoryStepResult out;
  out.state = {Tensor::empty({M, N, W}, g), Tensor::empty({M, N}, g), Tensor::empty({M, N}, g),
               Tensor::empty({M, R, N}, g), Tensor::empty({M, N}, g), Tensor::empty({M, N, N}, g)};
  out.read_vectors = Tensor::empty({M, R, W}, g);
  out.retention = Tensor::empty({M, N}, g);
  out.write_content = Tensor::empty({M, N}, g);
  out.forward_weights = Tensor::empty({M, R, N}, g);
  out.backward_weights = Tensor::empty({M, R, N}, g);
  out.read_content = Tensor::empty({M, R, N}, g);
  out.allocation = Tensor::empty({M, N}, g);
  if (M == 0) return out;
  const WarpLaunch wl = warp_launch(M, N, "memory_step_forward");
  const State<const float> p = state_of(prev);
  launch("step_usage_forward_kernel", M * N, step_usage_forward_kernel, d, M, xi.f32(), p,
         out.retention.f32(), out.state.usage.f32());
  if (allocation_keeps_free_list(variant, Device::cuda))
    out.free_lists = Tensor::empty({M, N}, g, DType::i32);
  // Through the op's entry point (checked, counted as a dispatch, as on the CPU).
  if (!::mare::allocation_forward_into(out.allocation, out.state.usage, variant,
                                       out.free_lists.defined() ? &out.free_lists : nullptr))
    out.free_lists = Tensor();
  const RestOut o{{out.state.memory.f32(), out.state.usage.f32(), out.state.write_weights.f32(),
                   out.state.read_weights.f32(), out.state.precedence.f32(), out.state.links.f32()},
                  out.write_content.f32(),
                  out.forward_weights.f32(),
                  out.backward_weights.f32(),
                  out.read_content.f32(),
                  out.read_vectors.f32()};
  step_rest_forward_kernel<<<wl.blocks, wl.threads, wl.shared, stream()>>>(d, M, xi.f32(), p,
                                                                           out.allocation.f32(), o);
  MARE_LAUNCH_CHECK("step_rest_forward_kernel");
  return out;
}

void memory_step_backward(Tensor& d_xi, MemoryStepState& d_prev, const MemoryStepState& d_state,
                          const Tensor& d_read_vectors, const Tensor& xi,
                          const MemoryStepState& prev, const MemoryStepResult& out,
                          int64_t read_heads, AllocationVariant variant) {
  require_cuda({&d_xi,
                &d_prev.memory,
                &d_prev.usage,
                &d_prev.read_weights,
                &d_prev.precedence,
                &d_prev.links,
                &d_state.memory,
                &d_state.usage,
                &d_state.write_weights,
                &d_state.read_weights,
                &d_state.precedence,
                &d_state.links,
                &d_read_vectors,
                &xi,
                &prev.memory,
                &prev.usage,
                &prev.write_weights,
                &prev.read_weights,
                &prev.precedence,
                &prev.links},
               "memory_step_backward");
  const Dims d = dims_of(xi, prev, read_heads);
  const int64_t M = xi.dim(0), N = d.N;
  if (M == 0) return;
  const WarpLaunch wl = warp_launch(M, N, "memory_step_backward");
  // Every path runs through ξ: without d_xi the gradients still reach the state.
  Tensor unused;
  Tensor& dx = d_xi.defined() ? d_xi : (unused = Tensor::zeros({M, d.X}, Device::cuda));
  const RestIn in{xi.f32(),
                  out.allocation.f32(),
                  out.write_content.f32(),
                  out.forward_weights.f32(),
                  out.backward_weights.f32(),
                  out.read_content.f32(),
                  state_of(prev),
                  state_of(out.state),
                  state_of(d_state),
                  ptr_or_null(d_read_vectors)};
  State<float> dp{
      ptr_or_null(d_prev.memory),       ptr_or_null(d_prev.usage),      nullptr,
      ptr_or_null(d_prev.read_weights), ptr_or_null(d_prev.precedence), ptr_or_null(d_prev.links)};
  Tensor d_a = Tensor::empty({M, N}, Device::cuda);
  {
    Workspace scratch(static_cast<size_t>(M * scratch_floats(d.N, d.W, d.R)) * sizeof(float));
    step_rest_backward_kernel<<<wl.blocks, wl.threads, wl.shared, stream()>>>(
        d, M, in, dx.f32(), dp, d_a.f32(), scratch.as<float>());
    MARE_LAUNCH_CHECK("step_rest_backward_kernel");
  }
  Tensor d_u =
      d_state.usage.defined() ? d_state.usage.clone() : Tensor::zeros({M, N}, Device::cuda);
  ::mare::allocation_backward(d_u, d_a, out.state.usage, variant,
                              out.free_lists.defined() ? &out.free_lists : nullptr);
  launch("step_usage_backward_kernel", M, step_usage_backward_kernel, d, M, xi.f32(),
         state_of(prev), out.retention.f32(), d_u.f32(), dx.f32(), dp);
}

}  // namespace mare::cuda
