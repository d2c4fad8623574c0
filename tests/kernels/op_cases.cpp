// The cases of the op test table: one or more per op, odd shapes, each with a
// naive double-precision reference written from the equation, not from the
// kernel. Indices below are row-major: x[(i * C) + j] for a [R, C] tensor.
#include <cmath>
#include <limits>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/kernels/op_table.h"

namespace mare::test {

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(shape);
  fill_uniform(t, seed, 7, lo, hi);
  return t;
}

namespace {
Device g_table_device = Device::cpu;
}
Device table_device() {
  return g_table_device;
}
void set_table_device(Device d) {
  g_table_device = d;
}
Tensor on_dev(const Tensor& t) {
  if (!t.defined() || t.device() == g_table_device) return t;
  return t.to(g_table_device);
}

VecD to_double(const Tensor& t) {
  std::vector<float> v = t.to_vector();
  return {v.begin(), v.end()};
}

namespace {

using Ts = std::vector<Tensor>;
using Vs = std::vector<VecD>;

// Moves values that sit within `gap` of a kink (where the derivative jumps) away
// from it, so that central differences see a smooth function.
Tensor away_from_kinks(Tensor t, std::vector<float> kinks, float gap = 1e-2f) {
  for (int64_t i = 0; i < t.numel(); ++i)
    for (float k : kinks)
      if (std::fabs(t.f32()[i] - k) < gap) t.f32()[i] = k + (t.f32()[i] >= k ? gap : -gap);
  return t;
}

// ----------------------------------------------------------------- references
VecD ref_matmul(const VecD& a, const VecD& b, int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  VecD out(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        double av = ta ? a[p * m + i] : a[i * k + p];
        double bv = tb ? b[j * k + p] : b[p * n + j];
        s += av * bv;
      }
      out[i * n + j] = s;
    }
  return out;
}

template <class F>
VecD ref_map(const VecD& x, F f) {
  VecD y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}

// softmax / log-softmax of rows of length c, mask (possibly empty) 1 = keep.
VecD ref_softmax(const VecD& x, const VecD& mask, int64_t c, bool log_space) {
  VecD y(x.size(), 0.0);
  for (size_t r = 0; r < x.size() / c; ++r) {
    double sum = 0.0;
    bool any = false;
    for (int64_t j = 0; j < c; ++j)
      if (mask.empty() || mask[r * c + j] != 0) {
        sum += std::exp(x[r * c + j]);
        any = true;
      }
    if (!any) continue;
    for (int64_t j = 0; j < c; ++j)
      if (mask.empty() || mask[r * c + j] != 0)
        y[r * c + j] = log_space ? x[r * c + j] - std::log(sum) : std::exp(x[r * c + j]) / sum;
  }
  return y;
}

// ----------------------------------------------------------------- builders
OpCase matmul_case(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  OpCase c;
  c.name = std::string("matmul/") + std::to_string(m) + "x" + std::to_string(k) + "x" +
           std::to_string(n) + (ta ? "/ta" : "") + (tb ? "/tb" : "");
  c.op = "matmul";
  c.inputs = {random_tensor(ta ? Shape{k, m} : Shape{m, k}, 11),
              random_tensor(tb ? Shape{n, k} : Shape{k, n}, 12)};
  c.differentiable = {true, true};
  c.forward = [=](const Ts& in) { return Ts{matmul_forward(in[0], in[1], ta, tb)}; };
  c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
    matmul_backward(d[0], d[1], g[0], in[0], in[1], ta, tb);
  };
  c.reference = [=](const Vs& in) { return Vs{ref_matmul(in[0], in[1], m, k, n, ta, tb)}; };
  return c;
}

OpCase batched_matmul_case(int64_t b, int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  OpCase c;
  c.name = "batched_matmul/" + std::to_string(b) + "x" + std::to_string(m) + "x" +
           std::to_string(k) + "x" + std::to_string(n) + (ta ? "/ta" : "") + (tb ? "/tb" : "");
  c.op = "batched_matmul";
  c.inputs = {random_tensor(ta ? Shape{b, k, m} : Shape{b, m, k}, 13),
              random_tensor(tb ? Shape{b, n, k} : Shape{b, k, n}, 14)};
  c.differentiable = {true, true};
  c.forward = [=](const Ts& in) { return Ts{batched_matmul_forward(in[0], in[1], ta, tb)}; };
  c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
    batched_matmul_backward(d[0], d[1], g[0], in[0], in[1], ta, tb);
  };
  c.reference = [=](const Vs& in) {
    VecD out;
    for (int64_t i = 0; i < b; ++i) {
      VecD a(in[0].begin() + i * m * k, in[0].begin() + (i + 1) * m * k);
      VecD bb(in[1].begin() + i * k * n, in[1].begin() + (i + 1) * k * n);
      VecD o = ref_matmul(a, bb, m, k, n, ta, tb);
      out.insert(out.end(), o.begin(), o.end());
    }
    return Vs{out};
  };
  return c;
}

// A unary activation: forward f, kernel pair given as closures.
OpCase unary_case(const std::string& op, Tensor x, std::function<Tensor(const Tensor&)> fwd,
                  std::function<void(Tensor&, const Tensor&, const Tensor&, const Tensor&)> bwd,
                  std::function<double(double)> ref) {
  OpCase c;
  c.name = op + "/" + x.shape().str();
  c.op = op;
  c.inputs = {x};
  c.differentiable = {true};
  c.forward = [fwd](const Ts& in) { return Ts{fwd(in[0])}; };
  c.backward = [fwd, bwd](const Ts& in, const Ts& g, Ts& d) { bwd(d[0], g[0], in[0], fwd(in[0])); };
  c.reference = [ref](const Vs& in) { return Vs{ref_map(in[0], ref)}; };
  return c;
}

double sigmoid_d(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

std::vector<OpCase> elementwise_cases() {
  std::vector<OpCase> cs;
  {
    OpCase c;
    c.name = "bias_add/[3, 5, 7]";
    c.op = "bias_add";
    c.inputs = {random_tensor({3, 5, 7}, 21), random_tensor({7}, 22)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{bias_add_forward(in[0], in[1])}; };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { bias_add_backward(d[0], d[1], g[0]); };
    c.reference = [](const Vs& in) {
      VecD y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] + in[1][i % 7];
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "add/[3, 7]";
    c.op = "add";
    c.inputs = {random_tensor({3, 7}, 23), random_tensor({3, 7}, 24)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{add_forward(in[0], in[1])}; };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { add_backward(d[0], d[1], g[0]); };
    c.reference = [](const Vs& in) {
      VecD y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] + in[1][i];
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "mul/[3, 7]";
    c.op = "mul";
    c.inputs = {random_tensor({3, 7}, 25), random_tensor({3, 7}, 26)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{mul_forward(in[0], in[1])}; };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      mul_backward(d[0], d[1], g[0], in[0], in[1]);
    };
    c.reference = [](const Vs& in) {
      VecD y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] * in[1][i];
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    // b kept away from 0 (0.5 ≤ |b| ≤ 1.5) so that central differences are accurate.
    Tensor b = random_tensor({3, 7}, 27, 0.5f, 1.5f);
    for (int64_t i = 1; i < b.numel(); i += 2) b.f32()[i] = -b.f32()[i];
    OpCase c;
    c.name = "div/[3, 7]";
    c.op = "div";
    c.inputs = {random_tensor({3, 7}, 26), b};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{div_forward(in[0], in[1])}; };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      div_backward(d[0], d[1], g[0], div_forward(in[0], in[1]), in[1]);
    };
    c.reference = [](const Vs& in) {
      VecD y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] / in[1][i];
      return Vs{y};
    };
    cs.push_back(c);
  }
  // select_rows: keep [R] picks a's or b's row; rows over one axis ([5, 3]) and over two
  // ([2, 3, 4]: B·T = 6), with the mask captured as data (it takes no gradient).
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 4}}) {
    const int64_t rows = shape.rank() == 2 ? shape[0] : shape[0] * shape[1];
    std::vector<float> kv(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) kv[r] = (r * 7 + 3) % 3 == 0 ? 0.0f : 1.0f;
    const Tensor keep = Tensor::from_vector(kv, {rows});
    OpCase c;
    c.name = "select_rows/" + shape.str();
    c.op = "select_rows";
    c.inputs = {random_tensor(shape, 28), random_tensor(shape, 29)};
    c.differentiable = {true, true};
    c.forward = [=](const Ts& in) { return Ts{select_rows_forward(on_dev(keep), in[0], in[1])}; };
    c.backward = [=](const Ts&, const Ts& g, Ts& d) {
      select_rows_backward(d[0], d[1], g[0], on_dev(keep));
    };
    c.reference = [=](const Vs& in) {
      VecD y(in[0].size());
      const size_t w = y.size() / static_cast<size_t>(rows);
      for (size_t i = 0; i < y.size(); ++i) y[i] = kv[i / w] != 0 ? in[0][i] : in[1][i];
      return Vs{y};
    };
    cs.push_back(c);
  }
  // scale_rows: a factor per row over one axis ([5, 3]) and over two ([2, 3, 4]: 6 rows).
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 4}}) {
    const int64_t rows = shape.rank() == 2 ? shape[0] : shape[0] * shape[1];
    OpCase c;
    c.name = "scale_rows/" + shape.str();
    c.op = "scale_rows";
    c.inputs = {random_tensor(shape, 30), random_tensor({rows}, 31, -2, 2)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{scale_rows_forward(in[0], in[1])}; };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      scale_rows_backward(d[0], d[1], g[0], in[0], in[1]);
    };
    c.reference = [rows](const Vs& in) {
      VecD y(in[0].size());
      const size_t w = y.size() / static_cast<size_t>(rows);
      for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] * in[1][i / w];
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "scale/[2, 3, 5]";
    c.op = "scale";
    c.inputs = {random_tensor({2, 3, 5}, 27)};
    c.differentiable = {true};
    c.forward = [](const Ts& in) { return Ts{scale_forward(in[0], -1.7f)}; };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { scale_backward(d[0], g[0], -1.7f); };
    c.reference = [](const Vs& in) {
      return Vs{ref_map(in[0], [](double v) { return static_cast<double>(-1.7f) * v; })};
    };
    cs.push_back(c);
  }
  auto uses_x = [](auto bwd) {
    return [bwd](Tensor& d, const Tensor& g, const Tensor& x, const Tensor&) { bwd(d, g, x); };
  };
  auto uses_y = [](auto bwd) {
    return [bwd](Tensor& d, const Tensor& g, const Tensor&, const Tensor& y) { bwd(d, g, y); };
  };
  cs.push_back(unary_case("relu", away_from_kinks(random_tensor({3, 5, 7}, 31, -2, 2), {0}),
                          relu_forward, uses_x(relu_backward),
                          [](double v) { return v > 0 ? v : 0.0; }));
  cs.push_back(unary_case("relu6", away_from_kinks(random_tensor({5, 9}, 32, -8, 8), {0, 6}),
                          relu6_forward, uses_x(relu6_backward),
                          [](double v) { return std::min(std::max(v, 0.0), 6.0); }));
  cs.push_back(unary_case("sigmoid", random_tensor({5, 9}, 33, -6, 6), sigmoid_forward,
                          uses_y(sigmoid_backward), sigmoid_d));
  cs.push_back(unary_case("tanh", random_tensor({5, 9}, 34, -3, 3), tanh_forward,
                          uses_y(tanh_backward), [](double v) { return std::tanh(v); }));
  cs.push_back(unary_case("oneplus", random_tensor({5, 9}, 35, -8, 8), oneplus_forward,
                          uses_x(oneplus_backward),
                          [](double v) { return 1.0 + std::log1p(std::exp(v)); }));
  cs.push_back(unary_case("hard_sigmoid",
                          away_from_kinks(random_tensor({5, 9}, 36, -4, 4), {-2.5f, 2.5f}),
                          hard_sigmoid_forward, uses_x(hard_sigmoid_backward),
                          [](double v) { return std::min(std::max(0.2 * v + 0.5, 0.0), 1.0); }));
  {
    // Dropout: the reference recomputes the keep decision from the documented
    // Philox layout (element j keeps when u(seed, stream, offset + j) >= p).
    const float p = 0.3f;
    const uint64_t seed = 99, offset = 5;
    const uint32_t stream = 4;
    OpCase c;
    c.name = "dropout/[7, 11]/p0.3";
    c.op = "dropout";
    c.inputs = {random_tensor({7, 11}, 37)};
    c.differentiable = {true};
    c.forward = [=](const Ts& in) {
      return Ts{dropout_forward(in[0], p, seed, stream, offset).out};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      dropout_backward(d[0], g[0], dropout_forward(in[0], p, seed, stream, offset).mask);
    };
    c.reference = [=](const Vs& in) {
      VecD y(in[0].size());
      for (size_t j = 0; j < y.size(); ++j)
        y[j] = philox_uniform(seed, stream, offset + j) >= p ? in[0][j] / (1.0 - p) : 0.0;
      return Vs{y};
    };
    // The scale 1/(1 − p) is a float in the kernel and a double here.
    c.forward_tol = {1e-6, 1e-6};
    cs.push_back(c);
  }
  return cs;
}

std::vector<OpCase> softmax_cases() {
  std::vector<OpCase> cs;
  // A mask with one fully masked row (row 1) and scattered zeros elsewhere.
  Tensor mask = Tensor::from_vector({1, 0, 1, 1, 1, 0, 1,  //
                                     0, 0, 0, 0, 0, 0, 0,  //
                                     1, 1, 1, 0, 1, 1, 1,  //
                                     0, 1, 0, 1, 0, 1, 0},
                                    {4, 7});
  for (bool log_space : {false, true})
    for (bool masked : {false, true}) {
      OpCase c;
      std::string op = log_space ? "log_softmax" : "softmax";
      c.name = op + (masked ? "/masked" : "/plain") + "/[4, 7]";
      c.op = op;
      // Logits up to ±4 so that exp spans a wide range.
      c.inputs = {random_tensor({4, 7}, log_space ? 41 : 42, -4, 4)};
      c.differentiable = {true};
      Tensor m = masked ? mask : Tensor();
      c.forward = [=](const Ts& in) {
        Tensor md = on_dev(m);
        return Ts{log_space ? log_softmax_forward(in[0], md) : softmax_forward(in[0], md)};
      };
      c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
        Tensor md = on_dev(m);
        if (log_space)
          log_softmax_backward(d[0], g[0], log_softmax_forward(in[0], md), md);
        else
          softmax_backward(d[0], g[0], softmax_forward(in[0], md));
      };
      VecD mref = masked ? to_double(mask) : VecD{};
      c.reference = [=](const Vs& in) { return Vs{ref_softmax(in[0], mref, 7, log_space)}; };
      cs.push_back(c);
    }
  {
    // Sets {0, 2}, {1}, {3, 4, 5, 0} over 6 rows of 5 columns.
    Tensor offsets = Tensor::from_indices({0, 2, 3, 7}, {4});
    Tensor rows = Tensor::from_indices({0, 2, 1, 3, 4, 5, 0}, {7});
    OpCase c;
    c.name = "logsumexp_sets/[6, 5]/3 sets";
    c.op = "logsumexp_sets";
    c.inputs = {random_tensor({6, 5}, 43, -3, 3)};
    c.differentiable = {true};
    c.forward = [=](const Ts& in) {
      return Ts{logsumexp_sets_forward(in[0], on_dev(offsets), on_dev(rows))};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      Tensor o = on_dev(offsets), r = on_dev(rows);
      logsumexp_sets_backward(d[0], g[0], in[0], logsumexp_sets_forward(in[0], o, r), o, r);
    };
    c.reference = [](const Vs& in) {
      std::vector<std::vector<int>> sets = {{0, 2}, {1}, {3, 4, 5, 0}};
      VecD y;
      for (auto& s : sets)
        for (int j = 0; j < 5; ++j) {
          double sum = 0.0;
          for (int r : s) sum += std::exp(in[0][r * 5 + j]);
          y.push_back(std::log(sum));
        }
      return Vs{y};
    };
    cs.push_back(c);
  }
  return cs;
}

// Normalise groups: layer norm groups are rows, batch norm groups are columns.
VecD ref_normalise(const VecD& x, const VecD& gamma, const VecD& beta, int64_t rows, int64_t c,
                   bool per_row, double eps, const VecD* fixed_mean = nullptr,
                   const VecD* fixed_var = nullptr) {
  VecD y(x.size());
  int64_t groups = per_row ? rows : c, n = per_row ? c : rows;
  for (int64_t g = 0; g < groups; ++g) {
    auto at = [&](int64_t t) { return per_row ? g * c + t : t * c + g; };
    double mu = 0.0, var = 0.0;
    if (fixed_mean) {
      mu = (*fixed_mean)[g];
      var = (*fixed_var)[g];
    } else {
      for (int64_t t = 0; t < n; ++t) mu += x[at(t)];
      mu /= n;
      for (int64_t t = 0; t < n; ++t) var += (x[at(t)] - mu) * (x[at(t)] - mu);
      var /= n;
    }
    for (int64_t t = 0; t < n; ++t) {
      int64_t col = per_row ? t : g;
      y[at(t)] = (x[at(t)] - mu) / std::sqrt(var + eps) * gamma[col] + beta[col];
    }
  }
  return y;
}

std::vector<OpCase> norm_cases() {
  std::vector<OpCase> cs;
  {
    OpCase c;
    c.name = "layer_norm/[3, 2, 7]";
    c.op = "layer_norm";
    c.inputs = {random_tensor({3, 2, 7}, 51, -2, 2), random_tensor({7}, 52, 0.5, 1.5),
                random_tensor({7}, 53)};
    c.differentiable = {true, true, true};
    c.forward = [](const Ts& in) { return Ts{layer_norm_forward(in[0], in[1], in[2]).out}; };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      NormResult r = layer_norm_forward(in[0], in[1], in[2]);
      layer_norm_backward(d[0], d[1], d[2], g[0], in[0], in[1], r.mean, r.rstd);
    };
    c.reference = [](const Vs& in) {
      return Vs{ref_normalise(in[0], in[1], in[2], 6, 7, true, static_cast<double>(1e-5f))};
    };
    cs.push_back(c);
  }
  for (bool training : {true, false}) {
    // [5, 3, 4]: 15 rows (B·I tokens), 4 channels.
    Tensor rm = random_tensor({4}, 54, -0.5, 0.5), rv = random_tensor({4}, 55, 0.5, 2.0);
    OpCase c;
    c.name = std::string("batch_norm/") + (training ? "train" : "eval") + "/[5, 3, 4]";
    c.op = "batch_norm";
    c.inputs = {random_tensor({5, 3, 4}, 56, -2, 2), random_tensor({4}, 57, 0.5, 1.5),
                random_tensor({4}, 58)};
    c.differentiable = {true, true, true};
    auto run = [=](const Ts& in) {
      Tensor m = on_dev(rm).clone(), v = on_dev(rv).clone();  // fresh running statistics
      return batch_norm_forward(in[0], in[1], in[2], m, v, training, 0.1f, 1e-5f);
    };
    c.forward = [=](const Ts& in) { return Ts{run(in).out}; };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      NormResult r = run(in);
      batch_norm_backward(d[0], d[1], d[2], g[0], in[0], in[1], r.mean, r.rstd, training);
    };
    VecD mref = to_double(rm), vref = to_double(rv);
    c.reference = [=](const Vs& in) {
      return Vs{ref_normalise(in[0], in[1], in[2], 15, 4, false, static_cast<double>(1e-5f),
                              training ? nullptr : &mref, training ? nullptr : &vref)};
    };
    cs.push_back(c);
  }
  // Padding masked out of batch norm (SPEC §4.2): rows with mask 0 take no part
  // in the statistics, output 0 and get no gradient. "one row": a single real
  // row (variance 0, it normalises to β). [50, 4, 4]: 200 rows, more than one of
  // the GPU's row chunks (64 rows; the last one partial), so its statistics merge
  // chunks whose means differ; with the mask, the second chunk has no real row.
  struct MaskCfg {
    const char* name;
    int64_t b, t;
    std::vector<float> mask;  // b·t entries; empty: no mask
  };
  std::vector<float> many(200, 1.0f);
  for (int r = 64; r < 128; ++r) many[r] = 0.0f;  // the second chunk, every row
  for (int r : {3, 70, 150, 199}) many[r] = 0.0f;
  for (const MaskCfg& mc : {MaskCfg{"masked", 5, 3, {1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0}},
                            MaskCfg{"one row", 5, 3, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}},
                            MaskCfg{"chunks", 50, 4, {}}, MaskCfg{"chunks masked", 50, 4, many}})
    for (bool training : {true, false}) {
      const int64_t rows = mc.b * mc.t;
      Tensor rm = random_tensor({4}, 54, -0.5, 0.5), rv = random_tensor({4}, 55, 0.5, 2.0);
      const bool masked = !mc.mask.empty();
      Tensor mask = masked ? Tensor::from_vector(mc.mask, {rows}) : Tensor();
      OpCase c;
      c.name = std::string("batch_norm/") + (training ? "train" : "eval") + "/" + mc.name + "/" +
               Shape{mc.b, mc.t, 4}.str();
      c.op = "batch_norm";
      // The 200-row cases' rows drift with their index, so the chunks' means differ
      // (the 15-row cases keep their inputs).
      Tensor x = random_tensor({mc.b, mc.t, 4}, 59, -2, 2);
      if (rows > 15)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < 4; ++j) x.f32()[r * 4 + j] += 0.01f * static_cast<float>(r);
      c.inputs = {x, random_tensor({4}, 57, 0.5, 1.5), random_tensor({4}, 58)};
      c.differentiable = {true, true, true};
      auto run = [=](const Ts& in) {
        Tensor m = on_dev(rm).clone(), v = on_dev(rv).clone();
        return batch_norm_forward(in[0], in[1], in[2], m, v, training, 0.1f, 1e-5f,
                                  masked ? on_dev(mask) : Tensor());
      };
      c.forward = [=](const Ts& in) { return Ts{run(in).out}; };
      c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
        NormResult r = run(in);
        batch_norm_backward(d[0], d[1], d[2], g[0], in[0], in[1], r.mean, r.rstd, training,
                            masked ? on_dev(mask) : Tensor());
      };
      VecD mref = to_double(rm), vref = to_double(rv);
      VecD keep = masked ? to_double(mask) : VecD(static_cast<size_t>(rows), 1.0);
      c.reference = [=](const Vs& in) {
        const double eps = static_cast<double>(1e-5f);
        VecD y(in[0].size(), 0.0);
        for (int64_t j = 0; j < 4; ++j) {
          double mu = mref[j], var = vref[j];
          if (training) {
            double n = 0.0;
            mu = var = 0.0;
            for (int64_t r = 0; r < rows; ++r)
              if (keep[r] != 0) {
                mu += in[0][r * 4 + j];
                n += 1;
              }
            mu /= n;
            for (int64_t r = 0; r < rows; ++r)
              if (keep[r] != 0) var += (in[0][r * 4 + j] - mu) * (in[0][r * 4 + j] - mu);
            var /= n;
          }
          for (int64_t r = 0; r < rows; ++r)
            if (keep[r] != 0)
              y[r * 4 + j] = (in[0][r * 4 + j] - mu) / std::sqrt(var + eps) * in[1][j] + in[2][j];
        }
        return Vs{y};
      };
      cs.push_back(c);
    }
  return cs;
}

std::vector<OpCase> conv_cases() {
  std::vector<OpCase> cs;
  struct Cfg {
    int64_t b, len, cin, cout, k;
    bool bias;
  };
  for (Cfg f : {Cfg{2, 7, 3, 5, 3, true}, Cfg{1, 9, 4, 2, 5, false}, Cfg{2, 2, 3, 3, 5, true},
                Cfg{3, 5, 2, 4, 1, true}}) {
    OpCase c;
    c.name = "conv1d/x[" + std::to_string(f.b) + "," + std::to_string(f.len) + "," +
             std::to_string(f.cin) + "]/k" + std::to_string(f.k) + "/out" + std::to_string(f.cout) +
             (f.bias ? "/bias" : "");
    c.op = "conv1d";
    c.inputs = {random_tensor({f.b, f.len, f.cin}, 61), random_tensor({f.k, f.cin, f.cout}, 62)};
    c.differentiable = {true, true};
    if (f.bias) {
      c.inputs.push_back(random_tensor({f.cout}, 63));
      c.differentiable.push_back(true);
    }
    c.forward = [](const Ts& in) {
      return Ts{conv1d_forward(in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
    };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      Tensor none;
      conv1d_backward(d[0], d[1], d.size() > 2 ? d[2] : none, g[0], in[0], in[1]);
    };
    c.reference = [f](const Vs& in) {
      VecD y(f.b * f.len * f.cout, 0.0);
      for (int64_t n = 0; n < f.b; ++n)
        for (int64_t i = 0; i < f.len; ++i)
          for (int64_t o = 0; o < f.cout; ++o) {
            double s = f.bias ? in[2][o] : 0.0;
            for (int64_t k = 0; k < f.k; ++k) {
              int64_t src = i + k - f.k / 2;
              if (src < 0 || src >= f.len) continue;
              for (int64_t ci = 0; ci < f.cin; ++ci)
                s += in[0][(n * f.len + src) * f.cin + ci] * in[1][(k * f.cin + ci) * f.cout + o];
            }
            y[(n * f.len + i) * f.cout + o] = s;
          }
      return Vs{y};
    };
    cs.push_back(c);
  }
  for (Cfg f : {Cfg{2, 7, 3, 3, 3, true}, Cfg{1, 4, 5, 5, 5, false}}) {
    OpCase c;
    c.name = "depthwise_conv1d/x[" + std::to_string(f.b) + "," + std::to_string(f.len) + "," +
             std::to_string(f.cin) + "]/k" + std::to_string(f.k) + (f.bias ? "/bias" : "");
    c.op = "depthwise_conv1d";
    c.inputs = {random_tensor({f.b, f.len, f.cin}, 64), random_tensor({f.k, f.cin}, 65)};
    c.differentiable = {true, true};
    if (f.bias) {
      c.inputs.push_back(random_tensor({f.cin}, 66));
      c.differentiable.push_back(true);
    }
    c.forward = [](const Ts& in) {
      return Ts{depthwise_conv1d_forward(in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
    };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      Tensor none;
      depthwise_conv1d_backward(d[0], d[1], d.size() > 2 ? d[2] : none, g[0], in[0], in[1]);
    };
    c.reference = [f](const Vs& in) {
      VecD y(f.b * f.len * f.cin, 0.0);
      for (int64_t n = 0; n < f.b; ++n)
        for (int64_t i = 0; i < f.len; ++i)
          for (int64_t ch = 0; ch < f.cin; ++ch) {
            double s = f.bias ? in[2][ch] : 0.0;
            for (int64_t k = 0; k < f.k; ++k) {
              int64_t src = i + k - f.k / 2;
              if (src >= 0 && src < f.len)
                s += in[0][(n * f.len + src) * f.cin + ch] * in[1][k * f.cin + ch];
            }
            y[(n * f.len + i) * f.cin + ch] = s;
          }
      return Vs{y};
    };
    cs.push_back(c);
  }
  return cs;
}

std::vector<OpCase> indexing_cases() {
  std::vector<OpCase> cs;
  for (int axis : {0, 1, -1}) {
    OpCase c;
    c.name = "max/[3, 5, 4]/axis" + std::to_string(axis);
    c.op = "max";
    c.inputs = {random_tensor({3, 5, 4}, 71)};
    c.differentiable = {true};
    c.forward = [axis](const Ts& in) { return Ts{max_forward(in[0], axis).out}; };
    c.backward = [axis](const Ts& in, const Ts& g, Ts& d) {
      max_backward(d[0], g[0], max_forward(in[0], axis).argmax, axis);
    };
    c.reference = [axis](const Vs& in) {
      int64_t dims[3] = {3, 5, 4};
      int a = axis < 0 ? axis + 3 : axis;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < a; ++i) outer *= dims[i];
      for (int i = a + 1; i < 3; ++i) inner *= dims[i];
      VecD y(outer * inner, -std::numeric_limits<double>::infinity());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < dims[a]; ++k)
          for (int64_t i = 0; i < inner; ++i)
            y[o * inner + i] = std::max(y[o * inner + i], in[0][(o * dims[a] + k) * inner + i]);
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    std::vector<int32_t> id_values = {3, 0, 6, 3, 3, 1};  // repeats accumulate
    Tensor ids = Tensor::from_indices(id_values, {2, 3});
    OpCase c;
    c.name = "embedding/table[7, 5]/ids[2, 3]";
    c.op = "embedding";
    c.inputs = {random_tensor({7, 5}, 72)};
    c.differentiable = {true};
    c.forward = [=](const Ts& in) { return Ts{embedding_forward(in[0], on_dev(ids))}; };
    c.backward = [=](const Ts&, const Ts& g, Ts& d) {
      embedding_backward(d[0], g[0], on_dev(ids));
    };
    c.reference = [=](const Vs& in) {
      VecD y;
      for (int32_t id : id_values)
        for (int j = 0; j < 5; ++j) y.push_back(in[0][id * 5 + j]);
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "concat/axis1/[2, 3|1|2, 4]";
    c.op = "concat";
    c.inputs = {random_tensor({2, 3, 4}, 73), random_tensor({2, 1, 4}, 74),
                random_tensor({2, 2, 4}, 75)};
    c.differentiable = {true, true, true};
    c.forward = [](const Ts& in) { return Ts{concat_forward(in, 1)}; };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { concat_backward(d, g[0], 1); };
    c.reference = [](const Vs& in) {
      VecD y;
      int64_t ext[3] = {3, 1, 2};
      for (int b = 0; b < 2; ++b)
        for (int p = 0; p < 3; ++p)
          for (int64_t r = 0; r < ext[p]; ++r)
            for (int j = 0; j < 4; ++j) y.push_back(in[p][(b * ext[p] + r) * 4 + j]);
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "concat/axis-1/[3, 2|5]";
    c.op = "concat";
    c.inputs = {random_tensor({3, 2}, 76), random_tensor({3, 5}, 77)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{concat_forward(in, -1)}; };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { concat_backward(d, g[0], -1); };
    c.reference = [](const Vs& in) {
      VecD y;
      for (int r = 0; r < 3; ++r) {
        for (int j = 0; j < 2; ++j) y.push_back(in[0][r * 2 + j]);
        for (int j = 0; j < 5; ++j) y.push_back(in[1][r * 5 + j]);
      }
      return Vs{y};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "split/axis1/[2, 6, 3]->1,2,3";
    c.op = "split";
    c.inputs = {random_tensor({2, 6, 3}, 78)};
    c.differentiable = {true};
    c.forward = [](const Ts& in) { return split_forward(in[0], {1, 2, 3}, 1); };
    c.backward = [](const Ts&, const Ts& g, Ts& d) { split_backward(d[0], g, 1); };
    c.reference = [](const Vs& in) {
      Vs ys(3);
      int64_t start[3] = {0, 1, 3}, size[3] = {1, 2, 3};
      for (int p = 0; p < 3; ++p)
        for (int b = 0; b < 2; ++b)
          for (int64_t r = start[p]; r < start[p] + size[p]; ++r)
            for (int j = 0; j < 3; ++j) ys[p].push_back(in[0][(b * 6 + r) * 3 + j]);
      return ys;
    };
    cs.push_back(c);
  }
  return cs;
}

std::vector<OpCase> loss_cases() {
  std::vector<OpCase> cs;
  std::vector<int32_t> targets = {0, 3, -1, 2, 3};
  Tensor t = Tensor::from_indices(targets, {5});
  for (bool weighted : {false, true}) {
    Tensor w = weighted ? Tensor::from_vector({0.5f, 2.0f, 1.0f, 0.25f}, {4}) : Tensor();
    OpCase c;
    c.name = std::string("cross_entropy/[5, 4]/") + (weighted ? "weighted" : "unweighted");
    c.op = "cross_entropy";
    c.inputs = {random_tensor({5, 4}, 81, -3, 3)};
    c.differentiable = {true};
    c.forward = [=](const Ts& in) {
      return Ts{cross_entropy_forward(in[0], on_dev(t), on_dev(w)).loss};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      Tensor td = on_dev(t), wd = on_dev(w);
      cross_entropy_backward(d[0], g[0], cross_entropy_forward(in[0], td, wd).probs, td, wd);
    };
    VecD wd = weighted ? to_double(w) : VecD{1, 1, 1, 1};
    c.reference = [=](const Vs& in) {
      double loss = 0.0, wsum = 0.0;
      for (int n = 0; n < 5; ++n) {
        if (targets[n] < 0) continue;
        double lse = 0.0;
        for (int j = 0; j < 4; ++j) lse += std::exp(in[0][n * 4 + j]);
        loss += wd[targets[n]] * (std::log(lse) - in[0][n * 4 + targets[n]]);
        wsum += wd[targets[n]];
      }
      return Vs{{loss / wsum}};
    };
    cs.push_back(c);
  }
  {
    OpCase c;
    c.name = "mse/[3, 5]";
    c.op = "mse";
    c.inputs = {random_tensor({3, 5}, 82), random_tensor({3, 5}, 83)};
    c.differentiable = {true, true};
    c.forward = [](const Ts& in) { return Ts{mse_forward(in[0], in[1])}; };
    c.backward = [](const Ts& in, const Ts& g, Ts& d) {
      mse_backward(d[0], d[1], g[0], in[0], in[1]);
    };
    c.reference = [](const Vs& in) {
      double s = 0.0;
      for (size_t i = 0; i < in[0].size(); ++i) s += (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
      return Vs{{s / in[0].size()}};
    };
    cs.push_back(c);
  }
  return cs;
}

std::vector<OpCase> attention_cases() {
  std::vector<OpCase> cs;
  struct Cfg {
    int64_t b, i, j, d;
    int heads;
    bool masked;
  };
  for (Cfg f : {Cfg{2, 3, 5, 6, 2, true}, Cfg{1, 4, 4, 3, 1, false}, Cfg{2, 5, 3, 9, 3, false}}) {
    // Mask: batch 0 drops keys 1 and 4; batch 1 keeps all but the first.
    Tensor mask;
    if (f.masked) mask = Tensor::from_vector({1, 0, 1, 1, 0, 0, 1, 1, 1, 1}, {2, 5});
    OpCase c;
    c.name = "attention/b" + std::to_string(f.b) + "/i" + std::to_string(f.i) + "/j" +
             std::to_string(f.j) + "/d" + std::to_string(f.d) + "/h" + std::to_string(f.heads) +
             (f.masked ? "/masked" : "");
    c.op = "attention";
    c.inputs = {random_tensor({f.b, f.i, f.d}, 91), random_tensor({f.b, f.j, f.d}, 92),
                random_tensor({f.b, f.j, f.d}, 93)};
    c.differentiable = {true, true, true};
    c.forward = [=](const Ts& in) {
      return Ts{attention_forward(in[0], in[1], in[2], f.heads, on_dev(mask)).out};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      AttentionResult r = attention_forward(in[0], in[1], in[2], f.heads, on_dev(mask));
      attention_backward(d[0], d[1], d[2], g[0], in[0], in[1], in[2], r.probs, f.heads);
    };
    VecD mref = f.masked ? to_double(mask) : VecD{};
    c.reference = [=](const Vs& in) {
      int64_t dk = f.d / f.heads;
      VecD y(f.b * f.i * f.d, 0.0);
      for (int64_t b = 0; b < f.b; ++b)
        for (int64_t h = 0; h < f.heads; ++h)
          for (int64_t qi = 0; qi < f.i; ++qi) {
            VecD s(f.j), w(f.j, 0.0);
            double mx = -1e300;
            for (int64_t kj = 0; kj < f.j; ++kj) {
              double dot = 0.0;
              for (int64_t t = 0; t < dk; ++t)
                dot += in[0][(b * f.i + qi) * f.d + h * dk + t] *
                       in[1][(b * f.j + kj) * f.d + h * dk + t];
              s[kj] = dot / std::sqrt(static_cast<double>(dk));
              if (mref.empty() || mref[b * f.j + kj] != 0) mx = std::max(mx, s[kj]);
            }
            double sum = 0.0;
            for (int64_t kj = 0; kj < f.j; ++kj)
              if (mref.empty() || mref[b * f.j + kj] != 0) sum += (w[kj] = std::exp(s[kj] - mx));
            for (int64_t kj = 0; kj < f.j; ++kj)
              for (int64_t t = 0; t < dk; ++t)
                y[(b * f.i + qi) * f.d + h * dk + t] +=
                    w[kj] / sum * in[2][(b * f.j + kj) * f.d + h * dk + t];
          }
      return Vs{y};
    };
    cs.push_back(c);
  }
  return cs;
}

}  // namespace

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> cs;
  for (auto [ta, tb] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}})
    cs.push_back(matmul_case(3, 5, 7, ta, tb));
  cs.push_back(matmul_case(1, 9, 2, false, false));
  for (auto [ta, tb] : {std::pair{false, false}, {true, true}, {false, true}})
    cs.push_back(batched_matmul_case(3, 2, 5, 3, ta, tb));
  for (auto* family : {elementwise_cases, softmax_cases, norm_cases, conv_cases, indexing_cases,
                       loss_cases, attention_cases})
    for (OpCase& c : family()) cs.push_back(std::move(c));
  for (auto* family : {memory_op_cases, grpu_op_cases, halting_op_cases})
    for (OpCase& c : family()) cs.push_back(std::move(c));
  return cs;
}

}  // namespace mare::test
