// Memory access ops on the CPU: the readable reference, memory by memory.
//
//   content:     cos = k·m / (‖k‖‖m‖ + ε), ‖x‖ = sqrt(Σx² + ε); y = softmax(β cos)
//                d_s = y ⊙ (d_y − Σ d_y y);  d_β = Σ_n d_s cos;  d_cos = β d_s
//                ∂cos/∂k = m/D − cos · ‖m‖ k / (‖k‖ D),  D = ‖k‖‖m‖ + ε  (same for m)
//   retention:   ψ = Π_r (1 − f_r w_r);  ∂ψ/∂f_r = −w_r Π_{r'≠r}(…),  ∂ψ/∂w_r = −f_r Π_{r'≠r}(…)
//   usage:       u = (u0 + w − u0 w) ψ;  d_u0 = d (1 − w) ψ;  d_ψ = d (u0 + w − u0 w)
//   write:       ww = gw (ga a + (1 − ga) c)
//   memory:      M' = M ⊙ (1 − w eᵀ) + w vᵀ
//   links:       L[i,j] = (1 − w_i − w_j) L0[i,j] + w_i p0[j],  L[i,i] = 0
//   precedence:  p = (1 − Σw) p0 + w
//   directions:  F = W Lᵀ, B = W L  (W = read weights [R, N]);  d_W = d_F L + d_B Lᵀ,
//                d_L = d_Fᵀ W + Wᵀ d_B
//   read:        w^r = π₁ b + π₂ c + π₃ f;  r = W M
// Products without one factor are recomputed (R is small), never divided out.
// Threads: memories (or (memory, head) rows) are independent, each op runs them
// in chunks (for_items); every memory's bytes are those of the plain loop.
#include "kernels/memory/access.h"

#include <cmath>
#include <vector>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {

// Checks shared by every op of the family: defined, float, exact shape. The
// device is decided by each op's MARE_CUDA_DISPATCH after these checks.
void expect(const Tensor& t, const Shape& shape, const char* what) {
  check_defined(t, what);
  check_dtype(t, DType::f32, what);
  check_shape(t, shape, what);
}
// Gradients: undefined is allowed (skipped), otherwise the input's shape.
bool want(const Tensor& d, const Shape& shape, const char* what) {
  if (!d.defined()) return false;
  check_shape(d, shape, what);
  return true;
}

using MatMap = Eigen::Map<MatRM>;
using CMatMap = Eigen::Map<const MatRM>;

}  // namespace

// ------------------------------------------------------------- content weighting
Tensor content_weighting_forward(const Tensor& memory, const Tensor& keys,
                                 const Tensor& strengths) {
  check_defined(memory, "content_weighting_forward: memory");
  check_rank(memory, 3, "content_weighting_forward: memory");
  check_defined(keys, "content_weighting_forward: keys");
  check_rank(keys, 3, "content_weighting_forward: keys");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), h = keys.dim(1);
  expect(memory, {m, n, w}, "content_weighting_forward: memory");
  expect(keys, {m, h, w}, "content_weighting_forward: keys");
  expect(strengths, {m, h}, "content_weighting_forward: strengths");
  MARE_CUDA_DISPATCH("content_weighting_forward",
                     content_weighting_forward(memory, keys, strengths), &memory, &keys,
                     &strengths);
  Tensor out = Tensor::empty({m, h, n});
  for_items(m, 4.0 * h * n * w, [&](int64_t b0, int64_t b1) {
    std::vector<double> logits(n);
    for (int64_t b = b0; b < b1; ++b) {
      const float* mem = memory.f32() + b * n * w;
      for (int64_t hh = 0; hh < h; ++hh) {
        const float* k = keys.f32() + (b * h + hh) * w;
        const float beta = strengths.f32()[b * h + hh];
        double kk = 0.0;
        for (int64_t j = 0; j < w; ++j) kk += double(k[j]) * k[j];
        const double nk = std::sqrt(kk + kContentEpsilon);
        double mx = -INFINITY;
        for (int64_t s = 0; s < n; ++s) {
          double dot = 0.0, mm = 0.0;
          for (int64_t j = 0; j < w; ++j) {
            dot += double(k[j]) * mem[s * w + j];
            mm += double(mem[s * w + j]) * mem[s * w + j];
          }
          const double cosine = dot / (nk * std::sqrt(mm + kContentEpsilon) + kContentEpsilon);
          logits[s] = beta * cosine;
          mx = std::max(mx, logits[s]);
        }
        double sum = 0.0;
        for (int64_t s = 0; s < n; ++s) sum += std::exp(logits[s] - mx);
        float* y = out.f32() + (b * h + hh) * n;
        for (int64_t s = 0; s < n; ++s) y[s] = static_cast<float>(std::exp(logits[s] - mx) / sum);
      }
    }
  });
  return out;
}

void content_weighting_backward(Tensor& d_memory, Tensor& d_keys, Tensor& d_strengths,
                                const Tensor& d_out, const Tensor& memory, const Tensor& keys,
                                const Tensor& strengths, const Tensor& out) {
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), h = keys.dim(1);
  expect(memory, {m, n, w}, "content_weighting_backward: memory");
  expect(keys, {m, h, w}, "content_weighting_backward: keys");
  expect(strengths, {m, h}, "content_weighting_backward: strengths");
  expect(out, {m, h, n}, "content_weighting_backward: out");
  expect(d_out, {m, h, n}, "content_weighting_backward: d_out");
  const bool dm = want(d_memory, {m, n, w}, "content_weighting_backward: d_memory");
  const bool dk = want(d_keys, {m, h, w}, "content_weighting_backward: d_keys");
  const bool db = want(d_strengths, {m, h}, "content_weighting_backward: d_strengths");
  MARE_CUDA_DISPATCH("content_weighting_backward",
                     content_weighting_backward(d_memory, d_keys, d_strengths, d_out, memory, keys,
                                                strengths, out),
                     &d_memory, &d_keys, &d_strengths, &d_out, &memory, &keys, &strengths, &out);
  if (!dm && !dk && !db) return;
  for_items(m, 10.0 * h * n * w, [&](int64_t b0, int64_t b1) {
    std::vector<double> norm_m(n), d_s(n);
    for (int64_t b = b0; b < b1; ++b) {
      const float* mem = memory.f32() + b * n * w;
      for (int64_t s = 0; s < n; ++s) {
        double mm = 0.0;
        for (int64_t j = 0; j < w; ++j) mm += double(mem[s * w + j]) * mem[s * w + j];
        norm_m[s] = std::sqrt(mm + kContentEpsilon);
      }
      for (int64_t hh = 0; hh < h; ++hh) {
        const float* k = keys.f32() + (b * h + hh) * w;
        const float* y = out.f32() + (b * h + hh) * n;
        const float* g = d_out.f32() + (b * h + hh) * n;
        const double beta = strengths.f32()[b * h + hh];
        double kk = 0.0, gy = 0.0;
        for (int64_t j = 0; j < w; ++j) kk += double(k[j]) * k[j];
        const double nk = std::sqrt(kk + kContentEpsilon);
        for (int64_t s = 0; s < n; ++s) gy += double(g[s]) * y[s];
        for (int64_t s = 0; s < n; ++s) d_s[s] = y[s] * (g[s] - gy);  // softmax backward
        double d_beta = 0.0;
        for (int64_t s = 0; s < n; ++s) {
          const float* ms = mem + s * w;
          double dot = 0.0;
          for (int64_t j = 0; j < w; ++j) dot += double(k[j]) * ms[j];
          const double den = nk * norm_m[s] + kContentEpsilon;
          const double cosine = dot / den;
          d_beta += d_s[s] * cosine;
          const double d_cos = beta * d_s[s];
          // cos = dot / den:  ∂/∂k = m/den − dot·‖m‖·k/(‖k‖ den²), symmetric for m.
          const double c_dot = d_cos / den, c_norm = d_cos * dot / (den * den);
          for (int64_t j = 0; j < w; ++j) {
            if (dk)
              d_keys.f32()[(b * h + hh) * w + j] +=
                  static_cast<float>(c_dot * ms[j] - c_norm * norm_m[s] * k[j] / nk);
            if (dm)
              d_memory.f32()[(b * n + s) * w + j] +=
                  static_cast<float>(c_dot * k[j] - c_norm * nk * ms[j] / norm_m[s]);
          }
        }
        if (db) d_strengths.f32()[b * h + hh] += static_cast<float>(d_beta);
      }
    }
  });
}

// ------------------------------------------------------------- retention
Tensor retention_forward(const Tensor& free_gates, const Tensor& read_weights_prev) {
  check_defined(read_weights_prev, "retention_forward: read_weights_prev");
  check_rank(read_weights_prev, 3, "retention_forward: read_weights_prev");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  expect(free_gates, {m, r}, "retention_forward: free_gates");
  expect(read_weights_prev, {m, r, n}, "retention_forward: read_weights_prev");
  MARE_CUDA_DISPATCH("retention_forward", retention_forward(free_gates, read_weights_prev),
                     &free_gates, &read_weights_prev);
  Tensor out = Tensor::empty({m, n});
  for_items(m, 2.0 * r * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t s = 0; s < n; ++s) {
        float psi = 1.0f;
        for (int64_t i = 0; i < r; ++i)
          psi *= 1.0f - free_gates.f32()[b * r + i] * read_weights_prev.f32()[(b * r + i) * n + s];
        out.f32()[b * n + s] = psi;
      }
  });
  return out;
}

void retention_backward(Tensor& d_free_gates, Tensor& d_read_weights_prev, const Tensor& d_out,
                        const Tensor& free_gates, const Tensor& read_weights_prev) {
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  expect(free_gates, {m, r}, "retention_backward: free_gates");
  expect(read_weights_prev, {m, r, n}, "retention_backward: read_weights_prev");
  expect(d_out, {m, n}, "retention_backward: d_out");
  const bool df = want(d_free_gates, {m, r}, "retention_backward: d_free_gates");
  const bool dw = want(d_read_weights_prev, {m, r, n}, "retention_backward: d_read_weights_prev");
  MARE_CUDA_DISPATCH(
      "retention_backward",
      retention_backward(d_free_gates, d_read_weights_prev, d_out, free_gates, read_weights_prev),
      &d_free_gates, &d_read_weights_prev, &d_out, &free_gates, &read_weights_prev);
  if (!df && !dw) return;
  const float *f = free_gates.f32(), *wr = read_weights_prev.f32();
  for_items(m, 3.0 * r * r * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t s = 0; s < n; ++s) {
        const float g = d_out.f32()[b * n + s];
        for (int64_t i = 0; i < r; ++i) {
          float others = 1.0f;  // Π_{r'≠i} (1 − f_r' w_r'), recomputed: no division
          for (int64_t j = 0; j < r; ++j)
            if (j != i) others *= 1.0f - f[b * r + j] * wr[(b * r + j) * n + s];
          if (df) d_free_gates.f32()[b * r + i] -= g * wr[(b * r + i) * n + s] * others;
          if (dw) d_read_weights_prev.f32()[(b * r + i) * n + s] -= g * f[b * r + i] * others;
        }
      }
  });
}

// ------------------------------------------------------------- usage
Tensor usage_forward(const Tensor& usage_prev, const Tensor& write_weights_prev,
                     const Tensor& retention) {
  check_defined(usage_prev, "usage_forward: usage_prev");
  check_rank(usage_prev, 2, "usage_forward: usage_prev");
  const Shape s = usage_prev.shape();
  expect(usage_prev, s, "usage_forward: usage_prev");
  expect(write_weights_prev, s, "usage_forward: write_weights_prev");
  expect(retention, s, "usage_forward: retention");
  MARE_CUDA_DISPATCH("usage_forward", usage_forward(usage_prev, write_weights_prev, retention),
                     &usage_prev, &write_weights_prev, &retention);
  Tensor out = Tensor::empty(s);
  const float *u = usage_prev.f32(), *w = write_weights_prev.f32(), *psi = retention.f32();
  float* o = out.f32();
  for_items(out.numel(), 3.0, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) o[i] = (u[i] + w[i] - u[i] * w[i]) * psi[i];
  });
  return out;
}

void usage_backward(Tensor& d_usage_prev, Tensor& d_retention, const Tensor& d_out,
                    const Tensor& usage_prev, const Tensor& write_weights_prev,
                    const Tensor& retention) {
  const Shape s = usage_prev.shape();
  expect(usage_prev, s, "usage_backward: usage_prev");
  expect(write_weights_prev, s, "usage_backward: write_weights_prev");
  expect(retention, s, "usage_backward: retention");
  expect(d_out, s, "usage_backward: d_out");
  const bool du = want(d_usage_prev, s, "usage_backward: d_usage_prev");
  const bool dr = want(d_retention, s, "usage_backward: d_retention");
  MARE_CUDA_DISPATCH(
      "usage_backward",
      usage_backward(d_usage_prev, d_retention, d_out, usage_prev, write_weights_prev, retention),
      &d_usage_prev, &d_retention, &d_out, &usage_prev, &write_weights_prev, &retention);
  const float *u = usage_prev.f32(), *w = write_weights_prev.f32(), *psi = retention.f32(),
              *g = d_out.f32();
  float* pdu = du ? d_usage_prev.f32() : nullptr;
  float* pdr = dr ? d_retention.f32() : nullptr;
  for_items(usage_prev.numel(), 6.0, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (pdu) pdu[i] += g[i] * (1.0f - w[i]) * psi[i];
      if (pdr) pdr[i] += g[i] * (u[i] + w[i] - u[i] * w[i]);
    }
  });
}

// ------------------------------------------------------------- write weighting
Tensor write_weighting_forward(const Tensor& allocation, const Tensor& write_content,
                               const Tensor& allocation_gate, const Tensor& write_gate) {
  check_defined(allocation, "write_weighting_forward: allocation");
  check_rank(allocation, 2, "write_weighting_forward: allocation");
  const int64_t m = allocation.dim(0), n = allocation.dim(1);
  expect(allocation, {m, n}, "write_weighting_forward: allocation");
  expect(write_content, {m, n}, "write_weighting_forward: write_content");
  expect(allocation_gate, {m}, "write_weighting_forward: allocation_gate");
  expect(write_gate, {m}, "write_weighting_forward: write_gate");
  MARE_CUDA_DISPATCH(
      "write_weighting_forward",
      write_weighting_forward(allocation, write_content, allocation_gate, write_gate), &allocation,
      &write_content, &allocation_gate, &write_gate);
  Tensor out = Tensor::empty({m, n});
  for_items(m, 4.0 * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float ga = allocation_gate.f32()[b], gw = write_gate.f32()[b];
      for (int64_t s = 0; s < n; ++s)
        out.f32()[b * n + s] =
            gw * (ga * allocation.f32()[b * n + s] + (1.0f - ga) * write_content.f32()[b * n + s]);
    }
  });
  return out;
}

void write_weighting_backward(Tensor& d_allocation, Tensor& d_write_content,
                              Tensor& d_allocation_gate, Tensor& d_write_gate, const Tensor& d_out,
                              const Tensor& allocation, const Tensor& write_content,
                              const Tensor& allocation_gate, const Tensor& write_gate) {
  const int64_t m = allocation.dim(0), n = allocation.dim(1);
  expect(allocation, {m, n}, "write_weighting_backward: allocation");
  expect(write_content, {m, n}, "write_weighting_backward: write_content");
  expect(allocation_gate, {m}, "write_weighting_backward: allocation_gate");
  expect(write_gate, {m}, "write_weighting_backward: write_gate");
  expect(d_out, {m, n}, "write_weighting_backward: d_out");
  const bool da = want(d_allocation, {m, n}, "write_weighting_backward: d_allocation");
  const bool dc = want(d_write_content, {m, n}, "write_weighting_backward: d_write_content");
  const bool dga = want(d_allocation_gate, {m}, "write_weighting_backward: d_allocation_gate");
  const bool dgw = want(d_write_gate, {m}, "write_weighting_backward: d_write_gate");
  MARE_CUDA_DISPATCH(
      "write_weighting_backward",
      write_weighting_backward(d_allocation, d_write_content, d_allocation_gate, d_write_gate,
                               d_out, allocation, write_content, allocation_gate, write_gate),
      &d_allocation, &d_write_content, &d_allocation_gate, &d_write_gate, &d_out, &allocation,
      &write_content, &allocation_gate, &write_gate);
  for_items(m, 6.0 * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float ga = allocation_gate.f32()[b], gw = write_gate.f32()[b];
      float sum_ga = 0.0f, sum_gw = 0.0f;
      for (int64_t s = 0; s < n; ++s) {
        const float g = d_out.f32()[b * n + s], a = allocation.f32()[b * n + s],
                    c = write_content.f32()[b * n + s];
        if (da) d_allocation.f32()[b * n + s] += g * gw * ga;
        if (dc) d_write_content.f32()[b * n + s] += g * gw * (1.0f - ga);
        sum_ga += g * gw * (a - c);
        sum_gw += g * (ga * a + (1.0f - ga) * c);
      }
      if (dga) d_allocation_gate.f32()[b] += sum_ga;
      if (dgw) d_write_gate.f32()[b] += sum_gw;
    }
  });
}

// ------------------------------------------------------------- memory update
Tensor memory_update_forward(const Tensor& memory, const Tensor& write_weights, const Tensor& erase,
                             const Tensor& write_vector) {
  check_defined(memory, "memory_update_forward: memory");
  check_rank(memory, 3, "memory_update_forward: memory");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2);
  expect(memory, {m, n, w}, "memory_update_forward: memory");
  expect(write_weights, {m, n}, "memory_update_forward: write_weights");
  expect(erase, {m, w}, "memory_update_forward: erase");
  expect(write_vector, {m, w}, "memory_update_forward: write_vector");
  MARE_CUDA_DISPATCH("memory_update_forward",
                     memory_update_forward(memory, write_weights, erase, write_vector), &memory,
                     &write_weights, &erase, &write_vector);
  Tensor out = Tensor::empty({m, n, w});
  for_items(m, 4.0 * n * w, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t s = 0; s < n; ++s) {
        const float ww = write_weights.f32()[b * n + s];
        for (int64_t j = 0; j < w; ++j) {
          const int64_t i = (b * n + s) * w + j;
          out.f32()[i] = memory.f32()[i] * (1.0f - ww * erase.f32()[b * w + j]) +
                         ww * write_vector.f32()[b * w + j];
        }
      }
  });
  return out;
}

void memory_update_backward(Tensor& d_memory, Tensor& d_write_weights, Tensor& d_erase,
                            Tensor& d_write_vector, const Tensor& d_out, const Tensor& memory,
                            const Tensor& write_weights, const Tensor& erase,
                            const Tensor& write_vector) {
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2);
  expect(memory, {m, n, w}, "memory_update_backward: memory");
  expect(write_weights, {m, n}, "memory_update_backward: write_weights");
  expect(erase, {m, w}, "memory_update_backward: erase");
  expect(write_vector, {m, w}, "memory_update_backward: write_vector");
  expect(d_out, {m, n, w}, "memory_update_backward: d_out");
  const bool dm = want(d_memory, {m, n, w}, "memory_update_backward: d_memory");
  const bool dw = want(d_write_weights, {m, n}, "memory_update_backward: d_write_weights");
  const bool de = want(d_erase, {m, w}, "memory_update_backward: d_erase");
  const bool dv = want(d_write_vector, {m, w}, "memory_update_backward: d_write_vector");
  MARE_CUDA_DISPATCH("memory_update_backward",
                     memory_update_backward(d_memory, d_write_weights, d_erase, d_write_vector,
                                            d_out, memory, write_weights, erase, write_vector),
                     &d_memory, &d_write_weights, &d_erase, &d_write_vector, &d_out, &memory,
                     &write_weights, &erase, &write_vector);
  for_items(m, 8.0 * n * w, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t s = 0; s < n; ++s) {
        const float ww = write_weights.f32()[b * n + s];
        float sum_w = 0.0f;
        for (int64_t j = 0; j < w; ++j) {
          const int64_t i = (b * n + s) * w + j;
          const float g = d_out.f32()[i], mem = memory.f32()[i], e = erase.f32()[b * w + j];
          if (dm) d_memory.f32()[i] += g * (1.0f - ww * e);
          if (de) d_erase.f32()[b * w + j] -= g * mem * ww;
          if (dv) d_write_vector.f32()[b * w + j] += g * ww;
          sum_w += g * (write_vector.f32()[b * w + j] - mem * e);
        }
        if (dw) d_write_weights.f32()[b * n + s] += sum_w;
      }
  });
}

// ------------------------------------------------------------- temporal links
Tensor link_update_forward(const Tensor& links_prev, const Tensor& precedence_prev,
                           const Tensor& write_weights) {
  check_defined(write_weights, "link_update_forward: write_weights");
  check_rank(write_weights, 2, "link_update_forward: write_weights");
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  expect(links_prev, {m, n, n}, "link_update_forward: links_prev");
  expect(precedence_prev, {m, n}, "link_update_forward: precedence_prev");
  expect(write_weights, {m, n}, "link_update_forward: write_weights");
  MARE_CUDA_DISPATCH("link_update_forward",
                     link_update_forward(links_prev, precedence_prev, write_weights), &links_prev,
                     &precedence_prev, &write_weights);
  Tensor out = Tensor::empty({m, n, n});
  for_items(m, 4.0 * n * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float *w = write_weights.f32() + b * n, *p = precedence_prev.f32() + b * n;
      const float* l0 = links_prev.f32() + b * n * n;
      float* l = out.f32() + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          l[i * n + j] = i == j ? 0.0f : (1.0f - w[i] - w[j]) * l0[i * n + j] + w[i] * p[j];
    }
  });
  return out;
}

void link_update_backward(Tensor& d_links_prev, Tensor& d_precedence_prev, Tensor& d_write_weights,
                          const Tensor& d_out, const Tensor& links_prev,
                          const Tensor& precedence_prev, const Tensor& write_weights) {
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  expect(write_weights, {m, n}, "link_update_backward: write_weights");
  expect(links_prev, {m, n, n}, "link_update_backward: links_prev");
  expect(precedence_prev, {m, n}, "link_update_backward: precedence_prev");
  expect(d_out, {m, n, n}, "link_update_backward: d_out");
  const bool dl = want(d_links_prev, {m, n, n}, "link_update_backward: d_links_prev");
  const bool dp = want(d_precedence_prev, {m, n}, "link_update_backward: d_precedence_prev");
  const bool dw = want(d_write_weights, {m, n}, "link_update_backward: d_write_weights");
  MARE_CUDA_DISPATCH("link_update_backward",
                     link_update_backward(d_links_prev, d_precedence_prev, d_write_weights, d_out,
                                          links_prev, precedence_prev, write_weights),
                     &d_links_prev, &d_precedence_prev, &d_write_weights, &d_out, &links_prev,
                     &precedence_prev, &write_weights);
  for_items(m, 8.0 * n * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float *w = write_weights.f32() + b * n, *p = precedence_prev.f32() + b * n;
      const float *l0 = links_prev.f32() + b * n * n, *g = d_out.f32() + b * n * n;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          if (i == j) continue;  // L[i,i] = 0 whatever the inputs
          const float gij = g[i * n + j], lij = l0[i * n + j];
          if (dl) d_links_prev.f32()[b * n * n + i * n + j] += gij * (1.0f - w[i] - w[j]);
          if (dp) d_precedence_prev.f32()[b * n + j] += gij * w[i];
          if (dw) {
            d_write_weights.f32()[b * n + i] += gij * (p[j] - lij);
            d_write_weights.f32()[b * n + j] -= gij * lij;
          }
        }
    }
  });
}

Tensor precedence_update_forward(const Tensor& precedence_prev, const Tensor& write_weights) {
  check_defined(write_weights, "precedence_update_forward: write_weights");
  check_rank(write_weights, 2, "precedence_update_forward: write_weights");
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  expect(precedence_prev, {m, n}, "precedence_update_forward: precedence_prev");
  expect(write_weights, {m, n}, "precedence_update_forward: write_weights");
  MARE_CUDA_DISPATCH("precedence_update_forward",
                     precedence_update_forward(precedence_prev, write_weights), &precedence_prev,
                     &write_weights);
  Tensor out = Tensor::empty({m, n});
  for_items(m, 3.0 * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float *w = write_weights.f32() + b * n, *p = precedence_prev.f32() + b * n;
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += w[i];
      for (int64_t i = 0; i < n; ++i) out.f32()[b * n + i] = (1.0f - sum) * p[i] + w[i];
    }
  });
  return out;
}

void precedence_update_backward(Tensor& d_precedence_prev, Tensor& d_write_weights,
                                const Tensor& d_out, const Tensor& precedence_prev,
                                const Tensor& write_weights) {
  const int64_t m = write_weights.dim(0), n = write_weights.dim(1);
  expect(write_weights, {m, n}, "precedence_update_backward: write_weights");
  expect(precedence_prev, {m, n}, "precedence_update_backward: precedence_prev");
  expect(d_out, {m, n}, "precedence_update_backward: d_out");
  const bool dp = want(d_precedence_prev, {m, n}, "precedence_update_backward: d_precedence_prev");
  const bool dw = want(d_write_weights, {m, n}, "precedence_update_backward: d_write_weights");
  MARE_CUDA_DISPATCH("precedence_update_backward",
                     precedence_update_backward(d_precedence_prev, d_write_weights, d_out,
                                                precedence_prev, write_weights),
                     &d_precedence_prev, &d_write_weights, &d_out, &precedence_prev,
                     &write_weights);
  for_items(m, 4.0 * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float *w = write_weights.f32() + b * n, *p = precedence_prev.f32() + b * n,
                  *g = d_out.f32() + b * n;
      float sum = 0.0f, gp = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        sum += w[i];
        gp += g[i] * p[i];
      }
      for (int64_t i = 0; i < n; ++i) {
        if (dp) d_precedence_prev.f32()[b * n + i] += g[i] * (1.0f - sum);
        if (dw) d_write_weights.f32()[b * n + i] += g[i] - gp;
      }
    }
  });
}

// ------------------------------------------------------------- link (forward/backward) weights
LinkWeights link_weights_forward(const Tensor& links, const Tensor& read_weights_prev) {
  check_defined(read_weights_prev, "link_weights_forward: read_weights_prev");
  check_rank(read_weights_prev, 3, "link_weights_forward: read_weights_prev");
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  expect(links, {m, n, n}, "link_weights_forward: links");
  expect(read_weights_prev, {m, r, n}, "link_weights_forward: read_weights_prev");
  MARE_CUDA_DISPATCH("link_weights_forward", link_weights_forward(links, read_weights_prev), &links,
                     &read_weights_prev);
  LinkWeights out{Tensor::empty({m, r, n}), Tensor::empty({m, r, n})};
  for_items(m, 4.0 * r * n * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      CMatMap l(links.f32() + b * n * n, n, n), wr(read_weights_prev.f32() + b * r * n, r, n);
      MatMap(out.forward.f32() + b * r * n, r, n).noalias() = wr * l.transpose();
      MatMap(out.backward.f32() + b * r * n, r, n).noalias() = wr * l;
    }
  });
  return out;
}

void link_weights_backward(Tensor& d_links, Tensor& d_read_weights_prev, const Tensor& d_forward,
                           const Tensor& d_backward, const Tensor& links,
                           const Tensor& read_weights_prev) {
  const int64_t m = read_weights_prev.dim(0), r = read_weights_prev.dim(1),
                n = read_weights_prev.dim(2);
  expect(links, {m, n, n}, "link_weights_backward: links");
  expect(read_weights_prev, {m, r, n}, "link_weights_backward: read_weights_prev");
  const bool has_f = want(d_forward, {m, r, n}, "link_weights_backward: d_forward");
  const bool has_b = want(d_backward, {m, r, n}, "link_weights_backward: d_backward");
  const bool dl = want(d_links, {m, n, n}, "link_weights_backward: d_links");
  const bool dw =
      want(d_read_weights_prev, {m, r, n}, "link_weights_backward: d_read_weights_prev");
  MARE_CUDA_DISPATCH("link_weights_backward",
                     link_weights_backward(d_links, d_read_weights_prev, d_forward, d_backward,
                                           links, read_weights_prev),
                     &d_links, &d_read_weights_prev, &d_forward, &d_backward, &links,
                     &read_weights_prev);
  for_items(m, 8.0 * r * n * n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      CMatMap l(links.f32() + b * n * n, n, n), wr(read_weights_prev.f32() + b * r * n, r, n);
      if (has_f) {
        CMatMap gf(d_forward.f32() + b * r * n, r, n);
        if (dl) MatMap(d_links.f32() + b * n * n, n, n).noalias() += gf.transpose() * wr;
        if (dw) MatMap(d_read_weights_prev.f32() + b * r * n, r, n).noalias() += gf * l;
      }
      if (has_b) {
        CMatMap gb(d_backward.f32() + b * r * n, r, n);
        if (dl) MatMap(d_links.f32() + b * n * n, n, n).noalias() += wr.transpose() * gb;
        if (dw) MatMap(d_read_weights_prev.f32() + b * r * n, r, n).noalias() += gb * l.transpose();
      }
    }
  });
}

// ------------------------------------------------------------- read weights
Tensor read_weights_forward(const Tensor& read_modes, const Tensor& backward_weights,
                            const Tensor& read_content, const Tensor& forward_weights) {
  check_defined(read_content, "read_weights_forward: read_content");
  check_rank(read_content, 3, "read_weights_forward: read_content");
  const int64_t m = read_content.dim(0), r = read_content.dim(1), n = read_content.dim(2);
  expect(read_modes, {m, r, 3}, "read_weights_forward: read_modes");
  expect(backward_weights, {m, r, n}, "read_weights_forward: backward_weights");
  expect(read_content, {m, r, n}, "read_weights_forward: read_content");
  expect(forward_weights, {m, r, n}, "read_weights_forward: forward_weights");
  MARE_CUDA_DISPATCH(
      "read_weights_forward",
      read_weights_forward(read_modes, backward_weights, read_content, forward_weights),
      &read_modes, &backward_weights, &read_content, &forward_weights);
  Tensor out = Tensor::empty({m, r, n});
  for_items(m * r, 8.0 * n, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const float* pi = read_modes.f32() + h * 3;
      for (int64_t s = 0; s < n; ++s)
        out.f32()[h * n + s] = pi[0] * backward_weights.f32()[h * n + s] +
                               pi[1] * read_content.f32()[h * n + s] +
                               pi[2] * forward_weights.f32()[h * n + s];
    }
  });
  return out;
}

void read_weights_backward(Tensor& d_read_modes, Tensor& d_backward_weights, Tensor& d_read_content,
                           Tensor& d_forward_weights, const Tensor& d_out, const Tensor& read_modes,
                           const Tensor& backward_weights, const Tensor& read_content,
                           const Tensor& forward_weights) {
  const int64_t m = read_content.dim(0), r = read_content.dim(1), n = read_content.dim(2);
  expect(read_content, {m, r, n}, "read_weights_backward: read_content");
  expect(read_modes, {m, r, 3}, "read_weights_backward: read_modes");
  expect(backward_weights, {m, r, n}, "read_weights_backward: backward_weights");
  expect(forward_weights, {m, r, n}, "read_weights_backward: forward_weights");
  expect(d_out, {m, r, n}, "read_weights_backward: d_out");
  const bool dpi = want(d_read_modes, {m, r, 3}, "read_weights_backward: d_read_modes");
  const bool dbw = want(d_backward_weights, {m, r, n}, "read_weights_backward: d_backward_weights");
  const bool dc = want(d_read_content, {m, r, n}, "read_weights_backward: d_read_content");
  const bool dfw = want(d_forward_weights, {m, r, n}, "read_weights_backward: d_forward_weights");
  MARE_CUDA_DISPATCH(
      "read_weights_backward",
      read_weights_backward(d_read_modes, d_backward_weights, d_read_content, d_forward_weights,
                            d_out, read_modes, backward_weights, read_content, forward_weights),
      &d_read_modes, &d_backward_weights, &d_read_content, &d_forward_weights, &d_out, &read_modes,
      &backward_weights, &read_content, &forward_weights);
  for_items(m * r, 8.0 * n, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const float* pi = read_modes.f32() + h * 3;
      float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t i = h * n + s;
        const float g = d_out.f32()[i];
        if (dbw) d_backward_weights.f32()[i] += g * pi[0];
        if (dc) d_read_content.f32()[i] += g * pi[1];
        if (dfw) d_forward_weights.f32()[i] += g * pi[2];
        s0 += g * backward_weights.f32()[i];
        s1 += g * read_content.f32()[i];
        s2 += g * forward_weights.f32()[i];
      }
      if (dpi) {
        d_read_modes.f32()[h * 3 + 0] += s0;
        d_read_modes.f32()[h * 3 + 1] += s1;
        d_read_modes.f32()[h * 3 + 2] += s2;
      }
    }
  });
}

// ------------------------------------------------------------- read vectors
Tensor read_vectors_forward(const Tensor& memory, const Tensor& read_weights) {
  check_defined(memory, "read_vectors_forward: memory");
  check_rank(memory, 3, "read_vectors_forward: memory");
  check_defined(read_weights, "read_vectors_forward: read_weights");
  check_rank(read_weights, 3, "read_vectors_forward: read_weights");
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), r = read_weights.dim(1);
  expect(memory, {m, n, w}, "read_vectors_forward: memory");
  expect(read_weights, {m, r, n}, "read_vectors_forward: read_weights");
  MARE_CUDA_DISPATCH("read_vectors_forward", read_vectors_forward(memory, read_weights), &memory,
                     &read_weights);
  Tensor out = Tensor::empty({m, r, w});
  for_items(m, 2.0 * r * n * w, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      MatMap(out.f32() + b * r * w, r, w).noalias() =
          CMatMap(read_weights.f32() + b * r * n, r, n) * CMatMap(memory.f32() + b * n * w, n, w);
  });
  return out;
}

void read_vectors_backward(Tensor& d_memory, Tensor& d_read_weights, const Tensor& d_out,
                           const Tensor& memory, const Tensor& read_weights) {
  const int64_t m = memory.dim(0), n = memory.dim(1), w = memory.dim(2), r = read_weights.dim(1);
  expect(memory, {m, n, w}, "read_vectors_backward: memory");
  expect(read_weights, {m, r, n}, "read_vectors_backward: read_weights");
  expect(d_out, {m, r, w}, "read_vectors_backward: d_out");
  const bool dm = want(d_memory, {m, n, w}, "read_vectors_backward: d_memory");
  const bool dw = want(d_read_weights, {m, r, n}, "read_vectors_backward: d_read_weights");
  MARE_CUDA_DISPATCH("read_vectors_backward",
                     read_vectors_backward(d_memory, d_read_weights, d_out, memory, read_weights),
                     &d_memory, &d_read_weights, &d_out, &memory, &read_weights);
  for_items(m, 4.0 * r * n * w, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      CMatMap g(d_out.f32() + b * r * w, r, w), mem(memory.f32() + b * n * w, n, w),
          wr(read_weights.f32() + b * r * n, r, n);
      if (dm) MatMap(d_memory.f32() + b * n * w, n, w).noalias() += wr.transpose() * g;
      if (dw) MatMap(d_read_weights.f32() + b * r * n, r, n).noalias() += g * mem.transpose();
    }
  });
}

}  // namespace mare
