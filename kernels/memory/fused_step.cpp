// The fused memory step on the CPU (fused_step.h). Each direction is two
// passes over the memories with the allocation kernel between them:
//
//   forward   pass 1: free gates, retention ψ, usage u          (steps 2–3)
//             allocation a = alloc(u) on all memories           (step 4)
//             pass 2: write content, write weights, memory, links,
//                     precedence, link weights, read content,
//                     read weights, read vectors                (steps 5–11)
//   backward  pass 2 reversed: 11 → 5, giving d_a and the gradients of
//                     everything but the usage path
//             d_u += alloc_backward(d_a)
//             pass 1 reversed: 3 → 2 and the free gates
//
// Per memory the equations (and comments) are those of access.cpp and
// interface.cpp; the code is a template on the scalar so the double
// instantiation can be checked by central differences. Memories are
// independent: the passes run in chunks of memories on the kernel thread pool
// (kernels/parallel.h), each memory's result the same whatever the thread count.
#include "kernels/memory/fused_step.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "kernels/memory/access.h"
#include "kernels/memory/interface.h"
#include "kernels/ops/common.h"
#include "kernels/parallel.h"

namespace mare {

namespace {

struct Dims {
  int64_t N, W, R, X;    // X = interface width
  InterfaceLayout part;  // where the parts of one interface vector start
};

template <class S>
S sigmoid(S x) {
  return x >= 0 ? S(1) / (S(1) + std::exp(-x)) : std::exp(x) / (S(1) + std::exp(x));
}
template <class S>
S oneplus(S x) {
  return S(1) + std::max(x, S(0)) + std::log1p(std::exp(-std::fabs(x)));
}
template <class S>
void softmax3(const S* x, S* y) {
  const S mx = std::max({x[0], x[1], x[2]});
  const S e0 = std::exp(x[0] - mx), e1 = std::exp(x[1] - mx), e2 = std::exp(x[2] - mx),
          sum = e0 + e1 + e2;
  y[0] = e0 / sum;
  y[1] = e1 / sum;
  y[2] = e2 / sum;
}

// Sums in double over eight interleaved partial sums (combined in a fixed
// order): the single running sum of access.cpp is a chain of dependent adds,
// which at W = 300 made the content lookups the step's bottleneck.
template <class S>
double dot(const S* a, const S* b, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += double(a[j + k]) * b[j + k];
  for (int k = 0; j < n; ++j, ++k) acc[k] += double(a[j]) * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
// The same in S (the read vectors' gradient).
template <class S>
S dot_s(const S* a, const S* b, int64_t n) {
  S acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[j + k] * b[j + k];
  for (int k = 0; j < n; ++j, ++k) acc[k] += a[j] * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// ‖x‖ = sqrt(Σ x² + ε) in double, as content_weighting_forward.
template <class S>
double norm(const S* x, int64_t w) {
  return std::sqrt(dot(x, x, w) + kContentEpsilon);
}

// y = softmax_n(β cos(k, mem[n])); mem_norms[n] = ‖mem[n]‖.
template <class S>
void content(const S* mem, const double* mem_norms, int64_t n, int64_t w, const S* k, S beta, S* y,
             double* logits) {
  const double nk = norm(k, w);
  double mx = -INFINITY;
  for (int64_t s = 0; s < n; ++s) {
    logits[s] = beta * (dot(k, mem + s * w, w) / (nk * mem_norms[s] + kContentEpsilon));
    mx = std::max(mx, logits[s]);
  }
  double sum = 0.0;
  for (int64_t s = 0; s < n; ++s) sum += std::exp(logits[s] - mx);
  for (int64_t s = 0; s < n; ++s) y[s] = static_cast<S>(std::exp(logits[s] - mx) / sum);
}

// Backward of content(): accumulates into d_mem (may be null), d_k, and returns d_β.
template <class S>
double content_backward(const S* mem, const double* mem_norms, int64_t n, int64_t w, const S* k,
                        S beta, const S* y, const S* g, S* d_mem, S* d_k) {
  const double nk = norm(k, w);
  double gy = 0.0, d_beta = 0.0;
  for (int64_t s = 0; s < n; ++s) gy += double(g[s]) * y[s];
  for (int64_t s = 0; s < n; ++s) {
    const double d_s = y[s] * (g[s] - gy);  // softmax backward
    const S* ms = mem + s * w;
    const double kd = dot(k, ms, w);
    const double den = nk * mem_norms[s] + kContentEpsilon;
    d_beta += d_s * (kd / den);
    const double d_cos = double(beta) * d_s;
    // ∂cos/∂k = m/den − dot·‖m‖·k/(‖k‖ den²), symmetric for m.
    const double c_dot = d_cos / den, c_norm = d_cos * kd / (den * den);
    const double c_k = c_norm * mem_norms[s] / nk, c_m = c_norm * nk / mem_norms[s];
    for (int64_t j = 0; j < w; ++j) d_k[j] += static_cast<S>(c_dot * ms[j] - c_k * k[j]);
    if (d_mem)
      for (int64_t j = 0; j < w; ++j)
        d_mem[s * w + j] += static_cast<S>(c_dot * k[j] - c_m * ms[j]);
  }
  return d_beta;
}

// Per-memory scratch (one per loop, so a parallel loop can own one per chunk).
template <class S>
struct Scratch {
  std::vector<double> norms, logits;
  std::vector<S> erase, modes, g_mem, g_wr, g_cr, g_fw, g_bw, g_links, g_ww, g_erase, g_vec;
  explicit Scratch(const Dims& d)
      : norms(d.N),
        logits(d.N),
        erase(d.W),
        modes(3 * d.R),
        g_mem(d.N * d.W),
        g_wr(d.R * d.N),
        g_cr(d.R * d.N),
        g_fw(d.R * d.N),
        g_bw(d.R * d.N),
        g_links(d.N * d.N),
        g_ww(d.N),
        g_erase(d.W),
        g_vec(d.W) {}
};

// Pointers of one memory's tensors (null: not given).
template <class S>
struct StateRef {
  S *memory, *usage, *write_weights, *read_weights, *precedence, *links;
};

// Forward pass 1 (steps 2–3): ψ and u.
template <class S>
void forward_usage(const Dims& d, const S* xi, const StateRef<const S>& p, S* psi, S* u) {
  for (int64_t s = 0; s < d.N; ++s) {
    S r = S(1);
    for (int64_t i = 0; i < d.R; ++i)
      r *= S(1) - sigmoid(xi[d.part.free_gates + i]) * p.read_weights[i * d.N + s];
    psi[s] = r;
    u[s] = (p.usage[s] + p.write_weights[s] - p.usage[s] * p.write_weights[s]) * r;
  }
}

// Forward pass 2 (steps 5–11) given the allocation a.
template <class S>
void forward_rest(const Dims& d, const S* xi, const StateRef<const S>& p, const S* a,
                  const StateRef<S>& o, S* cw, S* fw, S* bw, S* cr, S* reads, Scratch<S>& t) {
  const int64_t N = d.N, W = d.W, R = d.R;
  for (int64_t s = 0; s < N; ++s) t.norms[s] = norm(p.memory + s * W, W);
  content(p.memory, t.norms.data(), N, W, xi + d.part.write_key, oneplus(xi[d.part.write_strength]),
          cw, t.logits.data());
  const S ga = sigmoid(xi[d.part.allocation_gate]), gw = sigmoid(xi[d.part.write_gate]);
  S* ww = o.write_weights;
  for (int64_t s = 0; s < N; ++s) ww[s] = gw * (ga * a[s] + (S(1) - ga) * cw[s]);
  for (int64_t j = 0; j < W; ++j) t.erase[j] = sigmoid(xi[d.part.erase + j]);
  const S* v = xi + d.part.write_vector;
  for (int64_t s = 0; s < N; ++s)
    for (int64_t j = 0; j < W; ++j)
      o.memory[s * W + j] = p.memory[s * W + j] * (S(1) - ww[s] * t.erase[j]) + ww[s] * v[j];
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j)
      o.links[i * N + j] =
          i == j ? S(0) : (S(1) - ww[i] - ww[j]) * p.links[i * N + j] + ww[i] * p.precedence[j];
  S sum = S(0);
  for (int64_t i = 0; i < N; ++i) sum += ww[i];
  for (int64_t i = 0; i < N; ++i) o.precedence[i] = (S(1) - sum) * p.precedence[i] + ww[i];
  // f = W Lᵀ, b = W L (W = previous read weights [R, N]).
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < N; ++i) {
      S f = S(0), b = S(0);
      for (int64_t j = 0; j < N; ++j) {
        f += p.read_weights[r * N + j] * o.links[i * N + j];
        b += p.read_weights[r * N + j] * o.links[j * N + i];
      }
      fw[r * N + i] = f;
      bw[r * N + i] = b;
    }
  for (int64_t s = 0; s < N; ++s) t.norms[s] = norm(o.memory + s * W, W);
  for (int64_t r = 0; r < R; ++r) {
    content(o.memory, t.norms.data(), N, W, xi + d.part.read_keys + r * W,
            oneplus(xi[d.part.read_strengths + r]), cr + r * N, t.logits.data());
    S* pi = t.modes.data() + 3 * r;
    softmax3(xi + d.part.read_modes + 3 * r, pi);
    for (int64_t s = 0; s < N; ++s)
      o.read_weights[r * N + s] =
          pi[0] * bw[r * N + s] + pi[1] * cr[r * N + s] + pi[2] * fw[r * N + s];
  }
  // r = w^r M
  for (int64_t r = 0; r < R; ++r) {
    S* out = reads + r * W;
    for (int64_t j = 0; j < W; ++j) out[j] = S(0);
    for (int64_t s = 0; s < N; ++s) {
      const S wr = o.read_weights[r * N + s];
      for (int64_t j = 0; j < W; ++j) out[j] += wr * o.memory[s * W + j];
    }
  }
}

// Backward of pass 2 (steps 11 → 5): writes d_a, accumulates into d_xi and d_prev.
template <class S>
void backward_rest(const Dims& d, const S* xi, const StateRef<const S>& p, const S* a,
                   const StateRef<const S>& o, const S* cw, const S* fw, const S* bw, const S* cr,
                   const StateRef<const S>& g, const S* g_reads, S* d_xi, const StateRef<S>& dp,
                   S* d_a, Scratch<S>& t) {
  const int64_t N = d.N, W = d.W, R = d.R;
  // Gradients of the new memory and read weights, then through r = w^r M.
  for (int64_t i = 0; i < N * W; ++i) t.g_mem[i] = g.memory ? g.memory[i] : S(0);
  for (int64_t i = 0; i < R * N; ++i) t.g_wr[i] = g.read_weights ? g.read_weights[i] : S(0);
  if (g_reads)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < N; ++s) {
        const S wr = o.read_weights[r * N + s];
        for (int64_t j = 0; j < W; ++j) t.g_mem[s * W + j] += wr * g_reads[r * W + j];
        t.g_wr[r * N + s] += dot_s(g_reads + r * W, o.memory + s * W, W);
      }
  // Step 10: read weights and read content.
  for (int64_t s = 0; s < N; ++s) t.norms[s] = norm(o.memory + s * W, W);
  for (int64_t r = 0; r < R; ++r) {
    S* pi = t.modes.data() + 3 * r;
    softmax3(xi + d.part.read_modes + 3 * r, pi);
    S s0 = S(0), s1 = S(0), s2 = S(0);
    for (int64_t s = 0; s < N; ++s) {
      const S gr = t.g_wr[r * N + s];
      t.g_bw[r * N + s] = gr * pi[0];
      t.g_cr[r * N + s] = gr * pi[1];
      t.g_fw[r * N + s] = gr * pi[2];
      s0 += gr * bw[r * N + s];
      s1 += gr * cr[r * N + s];
      s2 += gr * fw[r * N + s];
    }
    const S dot = s0 * pi[0] + s1 * pi[1] + s2 * pi[2];
    S* dpi = d_xi + d.part.read_modes + 3 * r;
    dpi[0] += pi[0] * (s0 - dot);
    dpi[1] += pi[1] * (s1 - dot);
    dpi[2] += pi[2] * (s2 - dot);
    const S x_rs = xi[d.part.read_strengths + r];
    const double d_beta = content_backward(
        o.memory, t.norms.data(), N, W, xi + d.part.read_keys + r * W, oneplus(x_rs), cr + r * N,
        t.g_cr.data() + r * N, t.g_mem.data(), d_xi + d.part.read_keys + r * W);
    d_xi[d.part.read_strengths + r] += static_cast<S>(d_beta) * sigmoid(x_rs);
  }
  // Step 9: f = W Lᵀ, b = W L.  d_L = d_fᵀ W + Wᵀ d_b;  d_W = d_f L + d_b Lᵀ.
  for (int64_t i = 0; i < N * N; ++i) t.g_links[i] = g.links ? g.links[i] : S(0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) {
        t.g_links[i * N + j] += t.g_fw[r * N + i] * p.read_weights[r * N + j] +
                                p.read_weights[r * N + i] * t.g_bw[r * N + j];
        if (dp.read_weights)
          dp.read_weights[r * N + j] +=
              t.g_fw[r * N + i] * o.links[i * N + j] + t.g_bw[r * N + i] * o.links[j * N + i];
      }
  // Steps 8b and 8a: precedence and links.
  const S* ww = o.write_weights;
  for (int64_t s = 0; s < N; ++s) t.g_ww[s] = g.write_weights ? g.write_weights[s] : S(0);
  if (g.precedence) {
    S sum = S(0), gp = S(0);
    for (int64_t i = 0; i < N; ++i) {
      sum += ww[i];
      gp += g.precedence[i] * p.precedence[i];
    }
    for (int64_t i = 0; i < N; ++i) {
      if (dp.precedence) dp.precedence[i] += g.precedence[i] * (S(1) - sum);
      t.g_ww[i] += g.precedence[i] - gp;
    }
  }
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (i == j) continue;  // L[i,i] = 0 whatever the inputs
      const S gij = t.g_links[i * N + j], lij = p.links[i * N + j];
      if (dp.links) dp.links[i * N + j] += gij * (S(1) - ww[i] - ww[j]);
      if (dp.precedence) dp.precedence[j] += gij * ww[i];
      t.g_ww[i] += gij * (p.precedence[j] - lij);
      t.g_ww[j] -= gij * lij;
    }
  // Step 7: M = M0 ⊙ (1 − w eᵀ) + w vᵀ.
  for (int64_t j = 0; j < W; ++j) {
    t.erase[j] = sigmoid(xi[d.part.erase + j]);
    t.g_erase[j] = S(0);
    t.g_vec[j] = S(0);
  }
  const S* v = xi + d.part.write_vector;
  for (int64_t s = 0; s < N; ++s) {
    S sum_w[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // interleaved partial sums, as dot_s
    for (int64_t j = 0; j < W; ++j) {
      const S gm = t.g_mem[s * W + j], m0 = p.memory[s * W + j], e = t.erase[j];
      if (dp.memory) dp.memory[s * W + j] += gm * (S(1) - ww[s] * e);
      t.g_erase[j] -= gm * m0 * ww[s];
      t.g_vec[j] += gm * ww[s];
      sum_w[j % 8] += gm * (v[j] - m0 * e);
    }
    t.g_ww[s] += ((sum_w[0] + sum_w[1]) + (sum_w[2] + sum_w[3])) +
                 ((sum_w[4] + sum_w[5]) + (sum_w[6] + sum_w[7]));
  }
  for (int64_t j = 0; j < W; ++j) {
    d_xi[d.part.erase + j] += t.g_erase[j] * t.erase[j] * (S(1) - t.erase[j]);
    d_xi[d.part.write_vector + j] += t.g_vec[j];
  }
  // Step 6: w^w = g^w (g^a a + (1 − g^a) c^w).
  const S ga = sigmoid(xi[d.part.allocation_gate]), gw = sigmoid(xi[d.part.write_gate]);
  S sum_ga = S(0), sum_gw = S(0);
  S* g_cw = t.g_cr.data();  // reused: the read content's gradient is spent
  for (int64_t s = 0; s < N; ++s) {
    const S gs = t.g_ww[s];
    d_a[s] = gs * gw * ga;
    g_cw[s] = gs * gw * (S(1) - ga);
    sum_ga += gs * gw * (a[s] - cw[s]);
    sum_gw += gs * (ga * a[s] + (S(1) - ga) * cw[s]);
  }
  d_xi[d.part.allocation_gate] += sum_ga * ga * (S(1) - ga);
  d_xi[d.part.write_gate] += sum_gw * gw * (S(1) - gw);
  // Step 5: c^w = C(M0, k^w, β^w).
  for (int64_t s = 0; s < N; ++s) t.norms[s] = norm(p.memory + s * W, W);
  const S x_ws = xi[d.part.write_strength];
  const double d_beta =
      content_backward(p.memory, t.norms.data(), N, W, xi + d.part.write_key, oneplus(x_ws), cw,
                       g_cw, dp.memory, d_xi + d.part.write_key);
  d_xi[d.part.write_strength] += static_cast<S>(d_beta) * sigmoid(x_ws);
}

// Backward of pass 1 (steps 3 → 2) given the usage gradient d_u (output's plus allocation's).
template <class S>
void backward_usage(const Dims& d, const S* xi, const StateRef<const S>& p, const S* psi,
                    const S* d_u, S* d_xi, const StateRef<S>& dp) {
  for (int64_t s = 0; s < d.N; ++s) {
    const S g = d_u[s], u0 = p.usage[s], w0 = p.write_weights[s];
    if (dp.usage) dp.usage[s] += g * (S(1) - w0) * psi[s];
    const S g_psi = g * (u0 + w0 - u0 * w0);
    for (int64_t i = 0; i < d.R; ++i) {
      S others = S(1);  // Π_{r'≠i} (1 − f_r' w_r'), recomputed: no division
      for (int64_t j = 0; j < d.R; ++j)
        if (j != i)
          others *= S(1) - sigmoid(xi[d.part.free_gates + j]) * p.read_weights[j * d.N + s];
      const S f = sigmoid(xi[d.part.free_gates + i]);
      d_xi[d.part.free_gates + i] -= g_psi * p.read_weights[i * d.N + s] * others * f * (S(1) - f);
      if (dp.read_weights) dp.read_weights[i * d.N + s] -= g_psi * f * others;
    }
  }
}

// ---- the sorted allocation in any precision (the double tests) ----------------

template <class S>
void sorted_allocation(const S* u, S* a, std::vector<int64_t>& order, int64_t n) {
  const S eps = S(kAllocationEpsilon);
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  auto hat = [&](int64_t i) { return eps + (S(1) - eps) * u[i]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return hat(x) < hat(y); });
  S prod = S(1);
  for (int64_t j = 0; j < n; ++j) {
    const S s = hat(order[j]);
    a[order[j]] = (S(1) - s) * prod;
    prod *= s;
  }
}

template <class S>
void sorted_allocation_backward(const S* u, const S* g, S* d_u, std::vector<int64_t>& order,
                                int64_t n) {
  std::vector<S> a(n);
  sorted_allocation(u, a.data(), order, n);
  const S eps = S(kAllocationEpsilon);
  std::vector<S> s(n), P(n), Rk(n);
  for (int64_t j = 0; j < n; ++j) s[j] = eps + (S(1) - eps) * u[order[j]];
  S prod = S(1);
  for (int64_t j = 0; j < n; ++j) P[j] = prod, prod *= s[j];
  S acc = S(0);  // R_k = Σ_{j>k} g_j (1 − s_j) Π_{k<m<j} s_m
  for (int64_t k = n - 1; k >= 0; --k) {
    Rk[k] = acc;
    acc = g[order[k]] * (S(1) - s[k]) + s[k] * acc;
  }
  for (int64_t k = 0; k < n; ++k) d_u[order[k]] += P[k] * (Rk[k] - g[order[k]]) * (S(1) - eps);
}

// ---- checks -------------------------------------------------------------------

// Every tensor of a step is on `device` (xi's), f32, of its shape.
void expect(const Tensor& t, const Shape& shape, Device device, const char* what) {
  if (!t.defined()) throw std::invalid_argument(std::string(what) + ": undefined tensor");
  if (t.device() != device)
    throw std::invalid_argument(std::string(what) + ": on " + to_string(t.device()) +
                                ", the step's xi on " + to_string(device) +
                                " (move them with Tensor::to() first)");
  if (t.dtype() != DType::f32) throw std::invalid_argument(std::string(what) + ": expected f32");
  if (t.shape() != shape)
    throw std::invalid_argument(std::string(what) + ": expected shape " + shape.str() + ", got " +
                                t.shape().str());
}
// A gradient that may be undefined: checked when given.
void expect_optional(const Tensor& t, const Shape& shape, Device device, const char* what) {
  if (t.defined()) expect(t, shape, device, what);
}
float* maybe(Tensor& t) {
  return t.defined() ? t.f32() : nullptr;
}
const float* maybe(const Tensor& t) {
  return t.defined() ? t.f32() : nullptr;
}

Dims dims_of(const Tensor& xi, const MemoryStepState& prev, int64_t read_heads, const char* op) {
  if (!prev.memory.defined() || prev.memory.rank() != 3)
    throw std::invalid_argument(std::string(op) + ": memory must be [M, N, W]");
  if (!xi.defined()) throw std::invalid_argument(std::string(op) + ": xi: undefined tensor");
  const int64_t M = prev.memory.dim(0), N = prev.memory.dim(1), W = prev.memory.dim(2),
                R = read_heads;
  if (R < 1) throw std::invalid_argument(std::string(op) + ": need at least one read head");
  const std::string o(op);
  const Device dev = xi.device();
  expect(xi, {M, interface_width(R, W)}, dev, (o + ": xi").c_str());
  expect(prev.memory, {M, N, W}, dev, (o + ": memory").c_str());
  expect(prev.usage, {M, N}, dev, (o + ": usage").c_str());
  expect(prev.write_weights, {M, N}, dev, (o + ": write_weights").c_str());
  expect(prev.read_weights, {M, R, N}, dev, (o + ": read_weights").c_str());
  expect(prev.precedence, {M, N}, dev, (o + ": precedence").c_str());
  expect(prev.links, {M, N, N}, dev, (o + ": links").c_str());
  return {N, W, R, interface_width(R, W), InterfaceLayout::of(R, W)};
}

template <class S>
StateRef<const S> ref_at(const StateRef<const S>& base, const Dims& d, int64_t b) {
  auto at = [](const S* p, int64_t off) { return p ? p + off : nullptr; };
  return {at(base.memory, b * d.N * d.W),  at(base.usage, b * d.N),
          at(base.write_weights, b * d.N), at(base.read_weights, b * d.R * d.N),
          at(base.precedence, b * d.N),    at(base.links, b * d.N * d.N)};
}
template <class S>
StateRef<S> ref_at(const StateRef<S>& base, const Dims& d, int64_t b) {
  auto at = [](S* p, int64_t off) { return p ? p + off : nullptr; };
  return {at(base.memory, b * d.N * d.W),  at(base.usage, b * d.N),
          at(base.write_weights, b * d.N), at(base.read_weights, b * d.R * d.N),
          at(base.precedence, b * d.N),    at(base.links, b * d.N * d.N)};
}

StateRef<const float> cref(const MemoryStepState& s) {
  return {s.memory.f32(),       s.usage.f32(),      s.write_weights.f32(),
          s.read_weights.f32(), s.precedence.f32(), s.links.f32()};
}

}  // namespace

MemoryStepResult memory_step_forward(const Tensor& xi, const MemoryStepState& prev,
                                     int64_t read_heads, AllocationVariant variant) {
  const Dims d = dims_of(xi, prev, read_heads, "memory_step_forward");
  MARE_CUDA_DISPATCH("memory_step_forward", memory_step_forward(xi, prev, read_heads, variant), &xi,
                     &prev.memory);
  const int64_t M = xi.dim(0), N = d.N, W = d.W, R = d.R;
  MemoryStepResult out;
  out.state = {Tensor::empty({M, N, W}), Tensor::empty({M, N}), Tensor::empty({M, N}),
               Tensor::empty({M, R, N}), Tensor::empty({M, N}), Tensor::empty({M, N, N})};
  out.read_vectors = Tensor::empty({M, R, W});
  out.retention = Tensor::empty({M, N});
  out.write_content = Tensor::empty({M, N});
  out.forward_weights = Tensor::empty({M, R, N});
  out.backward_weights = Tensor::empty({M, R, N});
  out.read_content = Tensor::empty({M, R, N});
  const StateRef<const float> p = cref(prev);
  const StateRef<float> o{out.state.memory.f32(),        out.state.usage.f32(),
                          out.state.write_weights.f32(), out.state.read_weights.f32(),
                          out.state.precedence.f32(),    out.state.links.f32()};
  const int64_t grain = grain_for(M, static_cast<double>(N * W * (R + 4)));
  parallel_for_chunks(M, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      forward_usage(d, xi.f32() + b * d.X, ref_at(p, d, b), out.retention.f32() + b * N,
                    out.state.usage.f32() + b * N);
  });
  // The allocation keeps its free lists for the backward where that is free (as
  // ag::allocation does): the backward then sweeps them, with the same bits.
  out.allocation = Tensor::empty({M, N});
  if (allocation_keeps_free_list(variant, Device::cpu))
    out.free_lists = Tensor::empty({M, N}, Device::cpu, DType::i32);
  if (!allocation_forward_into(out.allocation, out.state.usage, variant,
                               out.free_lists.defined() ? &out.free_lists : nullptr))
    out.free_lists = Tensor();
  parallel_for_chunks(M, grain, [&](int64_t begin, int64_t end) {
    Scratch<float> t(d);  // one per chunk: chunks may run on different threads
    for (int64_t b = begin; b < end; ++b)
      forward_rest(d, xi.f32() + b * d.X, ref_at(p, d, b), out.allocation.f32() + b * N,
                   ref_at(o, d, b), out.write_content.f32() + b * N,
                   out.forward_weights.f32() + b * R * N, out.backward_weights.f32() + b * R * N,
                   out.read_content.f32() + b * R * N, out.read_vectors.f32() + b * R * W, t);
  });
  return out;
}

void memory_step_backward(Tensor& d_xi, MemoryStepState& d_prev, const MemoryStepState& d_state,
                          const Tensor& d_read_vectors, const Tensor& xi,
                          const MemoryStepState& prev, const MemoryStepResult& out,
                          int64_t read_heads, AllocationVariant variant) {
  const Dims d = dims_of(xi, prev, read_heads, "memory_step_backward");
  const int64_t M = xi.dim(0), N = d.N, W = d.W, R = d.R;
  const Device dev = xi.device();
  const char* op = "memory_step_backward";
  auto check = [&](const Tensor& t, const Shape& shape, const char* what) {
    expect_optional(t, shape, dev, (std::string(op) + ": " + what).c_str());
  };
  check(d_xi, {M, d.X}, "d_xi");
  check(d_state.memory, {M, N, W}, "d memory");
  check(d_state.usage, {M, N}, "d usage");
  check(d_state.write_weights, {M, N}, "d write_weights");
  check(d_state.read_weights, {M, R, N}, "d read_weights");
  check(d_state.precedence, {M, N}, "d precedence");
  check(d_state.links, {M, N, N}, "d links");
  check(d_read_vectors, {M, R, W}, "d read_vectors");
  check(d_prev.memory, {M, N, W}, "d_prev memory");
  check(d_prev.usage, {M, N}, "d_prev usage");
  check(d_prev.read_weights, {M, R, N}, "d_prev read_weights");
  check(d_prev.precedence, {M, N}, "d_prev precedence");
  check(d_prev.links, {M, N, N}, "d_prev links");
  if (out.free_lists.defined() &&
      (out.free_lists.device() != dev || out.free_lists.dtype() != DType::i32 ||
       out.free_lists.shape() != Shape{M, N}))
    throw std::invalid_argument(std::string(op) + ": free_lists: expected int32 " +
                                Shape{M, N}.str() + " on " + to_string(dev) + ", got " +
                                out.free_lists.shape().str());
  MARE_CUDA_DISPATCH("memory_step_backward",
                     memory_step_backward(d_xi, d_prev, d_state, d_read_vectors, xi, prev, out,
                                          read_heads, variant),
                     &xi, &prev.memory);
  // Every path runs through ξ: without d_xi the gradients still reach the state.
  Tensor unused;
  Tensor& dx = d_xi.defined() ? d_xi : (unused = Tensor::zeros({M, d.X}));
  const StateRef<const float> g{maybe(d_state.memory),        maybe(d_state.usage),
                                maybe(d_state.write_weights), maybe(d_state.read_weights),
                                maybe(d_state.precedence),    maybe(d_state.links)};
  const float* g_reads = maybe(d_read_vectors);
  const StateRef<float> dp{
      maybe(d_prev.memory),       maybe(d_prev.usage),      nullptr,
      maybe(d_prev.read_weights), maybe(d_prev.precedence), maybe(d_prev.links)};
  const StateRef<const float> p = cref(prev), o = cref(out.state);
  Tensor d_a = Tensor::empty({M, N});
  const int64_t grain = grain_for(M, static_cast<double>(N * W * (2 * R + 6)));
  parallel_for_chunks(M, grain, [&](int64_t begin, int64_t end) {
    Scratch<float> t(d);
    for (int64_t b = begin; b < end; ++b)
      backward_rest(d, xi.f32() + b * d.X, ref_at(p, d, b), out.allocation.f32() + b * N,
                    ref_at(o, d, b), out.write_content.f32() + b * N,
                    out.forward_weights.f32() + b * R * N, out.backward_weights.f32() + b * R * N,
                    out.read_content.f32() + b * R * N, ref_at(g, d, b),
                    g_reads ? g_reads + b * R * W : nullptr, dx.f32() + b * d.X, ref_at(dp, d, b),
                    d_a.f32() + b * N, t);
  });
  Tensor d_u = g.usage ? d_state.usage.clone() : Tensor::zeros({M, N});
  allocation_backward(d_u, d_a, out.state.usage, variant,
                      out.free_lists.defined() ? &out.free_lists : nullptr);
  parallel_for_chunks(M, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      backward_usage(d, xi.f32() + b * d.X, ref_at(p, d, b), out.retention.f32() + b * N,
                     d_u.f32() + b * N, dx.f32() + b * d.X, ref_at(dp, d, b));
  });
}

// ---- double precision, sorted allocation (tests) --------------------------------

namespace {

struct F64Layout {
  Dims d;
  int64_t M;
  // Offsets of memory, usage, write_weights, read_weights, precedence, links (and read vectors).
  std::vector<int64_t> off;
  explicit F64Layout(const MemoryStepDims& m)
      : d{m.N, m.W, m.R, interface_width(m.R, m.W), InterfaceLayout::of(m.R, m.W)}, M(m.M) {
    const int64_t sizes[] = {m.N * m.W, m.N, m.N, m.R * m.N, m.N, m.N * m.N, m.R * m.W};
    int64_t at = 0;
    for (int64_t s : sizes) off.push_back(at), at += M * s;
    off.push_back(at);
  }
  int64_t state_size() const { return off[6]; }
  template <class P>
  StateRef<P> state(P* base) const {
    return {base + off[0], base + off[1], base + off[2],
            base + off[3], base + off[4], base + off[5]};
  }
};

}  // namespace

void memory_step_forward_f64(const MemoryStepDims& dims, const std::vector<double>& xi,
                             const std::vector<double>& prev, std::vector<double>& outputs) {
  const F64Layout L(dims);
  const Dims& d = L.d;
  if (static_cast<int64_t>(xi.size()) != L.M * d.X ||
      static_cast<int64_t>(prev.size()) != L.state_size())
    throw std::invalid_argument("memory_step_forward_f64: sizes do not match the dims");
  outputs.assign(L.off[7], 0.0);
  const StateRef<const double> p = L.state(prev.data());
  const StateRef<double> o = L.state(outputs.data());
  std::vector<double> psi(d.N), cw(d.N), fw(d.R * d.N), bw(d.R * d.N), cr(d.R * d.N), a(d.N);
  std::vector<int64_t> order;
  Scratch<double> t(d);
  for (int64_t b = 0; b < L.M; ++b) {
    const StateRef<double> ob = ref_at(o, d, b);
    forward_usage(d, xi.data() + b * d.X, ref_at(p, d, b), psi.data(), ob.usage);
    sorted_allocation(ob.usage, a.data(), order, d.N);
    forward_rest(d, xi.data() + b * d.X, ref_at(p, d, b), a.data(), ob, cw.data(), fw.data(),
                 bw.data(), cr.data(), outputs.data() + L.off[6] + b * d.R * d.W, t);
  }
}

void memory_step_backward_f64(const MemoryStepDims& dims, const std::vector<double>& xi,
                              const std::vector<double>& prev, const std::vector<double>& d_outputs,
                              std::vector<double>& d_xi, std::vector<double>& d_prev) {
  const F64Layout L(dims);
  const Dims& d = L.d;
  std::vector<double> outputs;
  memory_step_forward_f64(dims, xi, prev, outputs);
  d_xi.resize(L.M * d.X, 0.0);
  d_prev.resize(L.state_size(), 0.0);
  const StateRef<const double> p = L.state(prev.data()),
                               o = L.state(static_cast<const double*>(outputs.data())),
                               g = L.state(d_outputs.data());
  StateRef<double> dp = L.state(d_prev.data());
  dp.write_weights = nullptr;
  std::vector<double> psi(d.N), cw(d.N), fw(d.R * d.N), bw(d.R * d.N), cr(d.R * d.N), a(d.N),
      u(d.N), reads(d.R * d.W), d_a(d.N), d_u(d.N);
  std::vector<int64_t> order;
  Scratch<double> t(d);
  std::vector<double> scratch_state(L.off[7]);
  for (int64_t b = 0; b < L.M; ++b) {
    const double* x = xi.data() + b * d.X;
    const StateRef<const double> pb = ref_at(p, d, b);
    // The saved intermediates, recomputed for this memory.
    const StateRef<double> sb = ref_at(L.state(scratch_state.data()), d, b);
    forward_usage(d, x, pb, psi.data(), u.data());
    sorted_allocation(u.data(), a.data(), order, d.N);
    forward_rest(d, x, pb, a.data(), sb, cw.data(), fw.data(), bw.data(), cr.data(), reads.data(),
                 t);
    backward_rest(d, x, pb, a.data(), ref_at(o, d, b), cw.data(), fw.data(), bw.data(), cr.data(),
                  ref_at(g, d, b), d_outputs.data() + L.off[6] + b * d.R * d.W,
                  d_xi.data() + b * d.X, ref_at(dp, d, b), d_a.data(), t);
    const double* gu = ref_at(g, d, b).usage;
    for (int64_t s = 0; s < d.N; ++s) d_u[s] = gu[s];
    sorted_allocation_backward(u.data(), d_a.data(), d_u.data(), order, d.N);
    backward_usage(d, x, pb, psi.data(), d_u.data(), d_xi.data() + b * d.X, ref_at(dp, d, b));
  }
}

}  // namespace mare
