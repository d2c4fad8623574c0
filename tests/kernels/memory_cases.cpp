// Op-table cases of the memory access family (SPEC §3): one or more per op,
// odd shapes, each with a naive double-precision reference written from the
// equations of SPEC §3, not from the kernels. Layouts are row-major: memory
// [M, N, W] is x[(b·N + n)·W + j], read weights [M, R, N] are x[(b·R + r)·N + n].
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/memory/access.h"
#include "kernels/memory/allocation.h"
#include "kernels/memory/interface.h"
#include "tests/kernels/op_table.h"

namespace mare::test {

namespace {

using Ts = std::vector<Tensor>;
using Vs = std::vector<VecD>;

constexpr double kEps = 1e-6;  // SPEC §3: cosine norms, û, ε'

double sigmoid_d(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// ------------------------------------------------------------- references
// C(M, k, β) for m memories, n slots, w word, h heads.
VecD ref_content(const VecD& mem, const VecD& keys, const VecD& beta, int64_t m, int64_t n,
                 int64_t w, int64_t h) {
  VecD out(m * h * n);
  for (int64_t b = 0; b < m; ++b)
    for (int64_t hh = 0; hh < h; ++hh) {
      const double* k = &keys[(b * h + hh) * w];
      double kk = 0.0;
      for (int64_t j = 0; j < w; ++j) kk += k[j] * k[j];
      VecD s(n);
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        double dot = 0.0, mm = 0.0;
        for (int64_t j = 0; j < w; ++j) {
          dot += k[j] * mem[(b * n + i) * w + j];
          mm += mem[(b * n + i) * w + j] * mem[(b * n + i) * w + j];
        }
        s[i] = beta[b * h + hh] * dot / (std::sqrt(kk + kEps) * std::sqrt(mm + kEps) + kEps);
      }
      double mx = *std::max_element(s.begin(), s.end());
      for (double& v : s) sum += std::exp(v - mx);
      for (int64_t i = 0; i < n; ++i) out[(b * h + hh) * n + i] = std::exp(s[i] - mx) / sum;
    }
  return out;
}

// Allocation of one memory from the DNC definition: sort, cumulative product,
// scatter. eps_kernel: order by n·ε' + (1 − ε')·u and use raw u (appendix A.1).
VecD ref_allocation(const VecD& usage, int64_t m, int64_t n, bool eps_kernel) {
  VecD out(m * n);
  for (int64_t b = 0; b < m; ++b) {
    VecD val(n), key(n);
    for (int64_t i = 0; i < n; ++i) {
      const double u = usage[b * n + i];
      val[i] = eps_kernel ? u : kEps + (1 - kEps) * u;
      key[i] = eps_kernel ? i * kEps + (1 - kEps) * u : val[i];
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return key[x] < key[y]; });
    double p = 1.0;
    for (int j = 0; j < n; ++j) {
      out[b * n + order[j]] = (1 - val[order[j]]) * p;
      p *= val[order[j]];
    }
  }
  return out;
}

Tensor uniform(const Shape& s, uint64_t seed, float lo, float hi) {
  return random_tensor(s, seed, lo, hi);
}

// ------------------------------------------------------------- cases
OpCase content_case(int64_t m, int64_t n, int64_t w, int64_t h) {
  OpCase c;
  c.name = "content_weighting/" + std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(w) + "/h" + std::to_string(h);
  c.op = "content_weighting";
  c.inputs = {uniform({m, n, w}, 301, -1, 1), uniform({m, h, w}, 302, -1, 1),
              uniform({m, h}, 303, 1, 4)};
  c.differentiable = {true, true, true};
  c.forward = [](const Ts& in) { return Ts{content_weighting_forward(in[0], in[1], in[2])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    Tensor out = content_weighting_forward(in[0], in[1], in[2]);
    content_weighting_backward(d[0], d[1], d[2], g[0], in[0], in[1], in[2], out);
  };
  c.reference = [=](const Vs& in) { return Vs{ref_content(in[0], in[1], in[2], m, n, w, h)}; };
  return c;
}

OpCase retention_case() {
  const int64_t m = 2, r = 3, n = 5;
  OpCase c;
  c.name = "retention/2x3x5";
  c.op = "retention";
  c.inputs = {uniform({m, r}, 311, 0, 1), uniform({m, r, n}, 312, 0, 1)};
  c.differentiable = {true, true};
  c.forward = [](const Ts& in) { return Ts{retention_forward(in[0], in[1])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    retention_backward(d[0], d[1], g[0], in[0], in[1]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * n, 1.0);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t h = 0; h < r; ++h)
          out[b * n + i] *= 1 - in[0][b * r + h] * in[1][(b * r + h) * n + i];
    return Vs{out};
  };
  return c;
}

// The previous write weights are an input without gradient (SPEC §3 step 3).
OpCase usage_case() {
  OpCase c;
  c.name = "usage/3x7";
  c.op = "usage";
  c.inputs = {uniform({3, 7}, 321, 0, 1), uniform({3, 7}, 322, 0, 0.3f),
              uniform({3, 7}, 323, 0.2f, 1)};
  c.differentiable = {true, false, true};
  c.forward = [](const Ts& in) { return Ts{usage_forward(in[0], in[1], in[2])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    usage_backward(d[0], d[2], g[0], in[0], in[1], in[2]);
  };
  c.reference = [](const Vs& in) {
    VecD out(in[0].size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = (in[0][i] + in[1][i] - in[0][i] * in[1][i]) * in[2][i];
    return Vs{out};
  };
  return c;
}

OpCase allocation_case(AllocationVariant v, int64_t m, int64_t n, uint64_t seed) {
  OpCase c;
  c.name =
      "allocation/" + std::string(to_string(v)) + "/" + std::to_string(m) + "x" + std::to_string(n);
  c.op = "allocation";
  // Usages at least 1e-2 apart within a memory, so the central differences
  // never cross a change of order.
  Tensor u = uniform({m, n}, seed, 0, 1);
  for (int64_t b = 0; b < m; ++b)
    for (int64_t i = 0; i < n; ++i)
      u.f32()[b * n + i] =
          (static_cast<float>((i * 5 + b * 3) % n) + 0.2f + 0.6f * u.f32()[b * n + i]) / n;
  c.inputs = {u};
  c.differentiable = {true};
  c.forward = [v](const Ts& in) { return Ts{allocation_forward(in[0], v)}; };
  c.backward = [v](const Ts& in, const Ts& g, Ts& d) { allocation_backward(d[0], g[0], in[0], v); };
  const bool eps = v == AllocationVariant::parallel_eps;
  c.reference = [=](const Vs& in) { return Vs{ref_allocation(in[0], m, n, eps)}; };
  return c;
}

OpCase write_weighting_case() {
  const int64_t m = 3, n = 5;
  OpCase c;
  c.name = "write_weighting/3x5";
  c.op = "write_weighting";
  c.inputs = {uniform({m, n}, 331, 0, 1), uniform({m, n}, 332, 0, 1), uniform({m}, 333, 0, 1),
              uniform({m}, 334, 0, 1)};
  c.differentiable = {true, true, true, true};
  c.forward = [](const Ts& in) { return Ts{write_weighting_forward(in[0], in[1], in[2], in[3])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    write_weighting_backward(d[0], d[1], d[2], d[3], g[0], in[0], in[1], in[2], in[3]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * n);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < n; ++i)
        out[b * n + i] =
            in[3][b] * (in[2][b] * in[0][b * n + i] + (1 - in[2][b]) * in[1][b * n + i]);
    return Vs{out};
  };
  return c;
}

OpCase memory_update_case() {
  const int64_t m = 2, n = 4, w = 3;
  OpCase c;
  c.name = "memory_update/2x4x3";
  c.op = "memory_update";
  c.inputs = {uniform({m, n, w}, 341, -1, 1), uniform({m, n}, 342, 0, 1),
              uniform({m, w}, 343, 0, 1), uniform({m, w}, 344, -1, 1)};
  c.differentiable = {true, true, true, true};
  c.forward = [](const Ts& in) { return Ts{memory_update_forward(in[0], in[1], in[2], in[3])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    memory_update_backward(d[0], d[1], d[2], d[3], g[0], in[0], in[1], in[2], in[3]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * n * w);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < w; ++j)
          out[(b * n + i) * w + j] =
              in[0][(b * n + i) * w + j] * (1 - in[1][b * n + i] * in[2][b * w + j]) +
              in[1][b * n + i] * in[3][b * w + j];
    return Vs{out};
  };
  return c;
}

OpCase link_update_case() {
  const int64_t m = 2, n = 4;
  OpCase c;
  c.name = "link_update/2x4";
  c.op = "link_update";
  c.inputs = {uniform({m, n, n}, 351, 0, 1), uniform({m, n}, 352, 0, 0.5f),
              uniform({m, n}, 353, 0, 0.4f)};
  c.differentiable = {true, true, true};
  c.forward = [](const Ts& in) { return Ts{link_update_forward(in[0], in[1], in[2])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    link_update_backward(d[0], d[1], d[2], g[0], in[0], in[1], in[2]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * n * n);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          out[(b * n + i) * n + j] =
              i == j ? 0.0
                     : (1 - in[2][b * n + i] - in[2][b * n + j]) * in[0][(b * n + i) * n + j] +
                           in[2][b * n + i] * in[1][b * n + j];
    return Vs{out};
  };
  return c;
}

OpCase precedence_case() {
  const int64_t m = 2, n = 5;
  OpCase c;
  c.name = "precedence_update/2x5";
  c.op = "precedence_update";
  c.inputs = {uniform({m, n}, 361, 0, 0.3f), uniform({m, n}, 362, 0, 0.2f)};
  c.differentiable = {true, true};
  c.forward = [](const Ts& in) { return Ts{precedence_update_forward(in[0], in[1])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    precedence_update_backward(d[0], d[1], g[0], in[0], in[1]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * n);
    for (int64_t b = 0; b < m; ++b) {
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += in[1][b * n + i];
      for (int64_t i = 0; i < n; ++i)
        out[b * n + i] = (1 - sum) * in[0][b * n + i] + in[1][b * n + i];
    }
    return Vs{out};
  };
  return c;
}

OpCase link_weights_case() {
  const int64_t m = 2, r = 3, n = 4;
  OpCase c;
  c.name = "link_weights/2x3x4";
  c.op = "link_weights";
  c.inputs = {uniform({m, n, n}, 371, 0, 1), uniform({m, r, n}, 372, 0, 1)};
  c.differentiable = {true, true};
  c.forward = [](const Ts& in) {
    LinkWeights d = link_weights_forward(in[0], in[1]);
    return Ts{d.forward, d.backward};
  };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    link_weights_backward(d[0], d[1], g[0], g[1], in[0], in[1]);
  };
  c.reference = [=](const Vs& in) {
    VecD f(m * r * n, 0.0), bw(m * r * n, 0.0);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t h = 0; h < r; ++h)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            f[(b * r + h) * n + i] += in[0][(b * n + i) * n + j] * in[1][(b * r + h) * n + j];
            bw[(b * r + h) * n + i] += in[0][(b * n + j) * n + i] * in[1][(b * r + h) * n + j];
          }
    return Vs{f, bw};
  };
  return c;
}

OpCase read_weights_case() {
  const int64_t m = 2, r = 3, n = 5;
  OpCase c;
  c.name = "read_weights/2x3x5";
  c.op = "read_weights";
  c.inputs = {uniform({m, r, 3}, 381, 0, 1), uniform({m, r, n}, 382, 0, 1),
              uniform({m, r, n}, 383, 0, 1), uniform({m, r, n}, 384, 0, 1)};
  c.differentiable = {true, true, true, true};
  c.forward = [](const Ts& in) { return Ts{read_weights_forward(in[0], in[1], in[2], in[3])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    read_weights_backward(d[0], d[1], d[2], d[3], g[0], in[0], in[1], in[2], in[3]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * r * n);
    for (int64_t h = 0; h < m * r; ++h)
      for (int64_t i = 0; i < n; ++i)
        out[h * n + i] = in[0][h * 3] * in[1][h * n + i] + in[0][h * 3 + 1] * in[2][h * n + i] +
                         in[0][h * 3 + 2] * in[3][h * n + i];
    return Vs{out};
  };
  return c;
}

OpCase read_vectors_case() {
  const int64_t m = 2, n = 5, w = 3, r = 2;
  OpCase c;
  c.name = "read_vectors/2x5x3/r2";
  c.op = "read_vectors";
  c.inputs = {uniform({m, n, w}, 391, -1, 1), uniform({m, r, n}, 392, 0, 1)};
  c.differentiable = {true, true};
  c.forward = [](const Ts& in) { return Ts{read_vectors_forward(in[0], in[1])}; };
  c.backward = [](const Ts& in, const Ts& g, Ts& d) {
    read_vectors_backward(d[0], d[1], g[0], in[0], in[1]);
  };
  c.reference = [=](const Vs& in) {
    VecD out(m * r * w, 0.0);
    for (int64_t b = 0; b < m; ++b)
      for (int64_t h = 0; h < r; ++h)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t i = 0; i < n; ++i)
            out[(b * r + h) * w + j] += in[1][(b * r + h) * n + i] * in[0][(b * n + i) * w + j];
    return Vs{out};
  };
  return c;
}

OpCase interface_case(int64_t m, int64_t r, int64_t w) {
  const int64_t x = interface_width(r, w);
  OpCase c;
  c.name =
      "interface_split/" + std::to_string(m) + "/r" + std::to_string(r) + "w" + std::to_string(w);
  c.op = "interface_split";
  c.inputs = {uniform({m, x}, 401, -3, 3)};
  c.differentiable = {true};
  auto as_list = [](const InterfaceParts& p) {
    return Ts{p.read_keys,    p.read_strengths, p.write_key,       p.write_strength, p.erase,
              p.write_vector, p.free_gates,     p.allocation_gate, p.write_gate,     p.read_modes};
  };
  c.forward = [=](const Ts& in) { return as_list(interface_split_forward(in[0], r, w)); };
  c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
    InterfaceParts parts = interface_split_forward(in[0], r, w);
    InterfaceParts dp{g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9]};
    interface_split_backward(d[0], dp, in[0], parts, r, w);
  };
  c.reference = [=](const Vs& in) {
    // Widths and transforms in the order of SPEC §3, written out here again.
    const int64_t widths[10] = {r * w, r, w, 1, w, w, r, 1, 1, 3 * r};
    const char kinds[10] = {'i', 'o', 'i', 'o', 's', 'i', 's', 's', 's', 'm'};
    Vs outs(10);
    for (int64_t b = 0; b < m; ++b) {
      int64_t off = 0;
      for (int p = 0; p < 10; ++p) {
        for (int64_t j = 0; j < widths[p]; ++j) {
          const double v = in[0][b * x + off + j];
          switch (kinds[p]) {
            case 'i':
              outs[p].push_back(v);
              break;
            case 'o':
              outs[p].push_back(1 + std::log(1 + std::exp(v)));
              break;
            case 's':
              outs[p].push_back(sigmoid_d(v));
              break;
            case 'm':
              if (j % 3 == 0) {
                const double* z = &in[0][b * x + off + j];
                const double s = std::exp(z[0]) + std::exp(z[1]) + std::exp(z[2]);
                for (int k = 0; k < 3; ++k) outs[p].push_back(std::exp(z[k]) / s);
              }
              break;
          }
        }
        off += widths[p];
      }
    }
    return outs;
  };
  return c;
}

}  // namespace

std::vector<OpCase> memory_op_cases() {
  std::vector<OpCase> cs;
  cs.push_back(content_case(2, 5, 3, 2));
  cs.push_back(content_case(3, 4, 6, 1));
  cs.push_back(retention_case());
  cs.push_back(usage_case());
  for (AllocationVariant v : allocation_variants()) {
    cs.push_back(allocation_case(v, 3, 7, 411));
    cs.push_back(allocation_case(v, 19, 4, 412));  // more memories than one parallel-block block
  }
  cs.push_back(write_weighting_case());
  cs.push_back(memory_update_case());
  cs.push_back(link_update_case());
  cs.push_back(precedence_case());
  cs.push_back(link_weights_case());
  cs.push_back(read_weights_case());
  cs.push_back(read_vectors_case());
  cs.push_back(interface_case(3, 2, 3));
  cs.push_back(interface_case(2, 1, 4));
  return cs;
}

}  // namespace mare::test
