// Elementwise ops on the CPU: plain loops the compiler vectorises, cut into
// chunks of elements (or rows) when large (for_items: every element is
// computed as in the plain loop, so the bytes do not depend on the threads).
// bias_add's d_bias sums over rows in fixed chunks (reduce_rows).
#include "kernels/ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops/common.h"
#include "kernels/random.h"

namespace mare {
using namespace detail;

namespace {

// `cost`: about the flops of f (transcendental functions ~10).
template <class F>
Tensor map_unary(const Tensor& x, F f, double cost = 1.0) {
  Tensor out = Tensor::empty(x.shape(), x.device());
  const float* px = x.f32();
  float* po = out.f32();
  for_items(x.numel(), cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) po[i] = f(px[i]);
  });
  return out;
}

// The checks of a unary backward; false when d_x is undefined (nothing to do).
bool unary_backward_checks(const Tensor& d_x, const Tensor& d_out, const Tensor& saved,
                           const char* op) {
  if (!d_x.defined()) return false;
  check_same_shape(d_x, d_out, op);
  check_same_shape(saved, d_out, op);
  return true;
}

// d_x[i] += d_out[i] * g(saved[i])   (shapes checked by unary_backward_checks)
template <class G>
void accumulate_unary(Tensor& d_x, const Tensor& d_out, const Tensor& saved, G g,
                      double cost = 1.0) {
  float* pd = d_x.f32();
  const float* pg = d_out.f32();
  const float* ps = saved.f32();
  for_items(d_out.numel(), cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pd[i] += pg[i] * g(ps[i]);
  });
}

void check_accumulate(const Tensor& d_x, const Tensor& d_out, const char* op) {
  if (d_x.defined()) check_same_shape(d_x, d_out, op);
}

// d_x += s * d_out, when d_x is defined (shapes checked by check_accumulate)
void accumulate(Tensor& d_x, const Tensor& d_out, float s) {
  if (!d_x.defined()) return;
  float* pd = d_x.f32();
  const float* pg = d_out.f32();
  for_items(d_out.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pd[i] += s * pg[i];
  });
}

}  // namespace

Tensor bias_add_forward(const Tensor& x, const Tensor& bias) {
  check_defined(x, "bias_add_forward");
  check_shape(bias, {last_dim(x)}, "bias_add_forward: bias");
  MARE_CUDA_DISPATCH("bias_add_forward", bias_add_forward(x, bias), &x, &bias);
  Tensor out = Tensor::empty(x.shape(), x.device());
  int64_t c = last_dim(x), rows = leading_rows(x);
  const float *px = x.f32(), *pb = bias.f32();
  float* po = out.f32();
  for_items(rows, static_cast<double>(c), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (int64_t j = 0; j < c; ++j) po[r * c + j] = px[r * c + j] + pb[j];
  });
  return out;
}

void bias_add_backward(Tensor& d_x, Tensor& d_bias, const Tensor& d_out) {
  check_accumulate(d_x, d_out, "bias_add_backward: d_x");
  if (d_bias.defined()) check_shape(d_bias, {last_dim(d_out)}, "bias_add_backward: d_bias");
  MARE_CUDA_DISPATCH("bias_add_backward", bias_add_backward(d_x, d_bias, d_out), &d_x, &d_bias,
                     &d_out);
  accumulate(d_x, d_out, 1.0f);
  if (!d_bias.defined()) return;
  int64_t c = last_dim(d_out), rows = leading_rows(d_out);
  const float* pg = d_out.f32();
  reduce_rows(rows, static_cast<double>(c), c, std::array<float*, 1>{d_bias.f32()},
              [&](int64_t b, int64_t e, std::array<float*, 1> pb) {
                for (int64_t r = b; r < e; ++r)
                  for (int64_t j = 0; j < c; ++j) pb[0][j] += pg[r * c + j];
              });
}

namespace {

// out[i] = f(a[i], b[i]) over two host tensors of one shape.
template <class F>
Tensor zip_host(const Tensor& a, const Tensor& b, F f) {
  Tensor out = Tensor::empty(a.shape(), a.device());
  const float *pa = a.f32(), *pb = b.f32();
  float* po = out.f32();
  for_items(a.numel(), 1.0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) po[i] = f(pa[i], pb[i]);
  });
  return out;
}

}  // namespace

Tensor add_forward(const Tensor& a, const Tensor& b) {
  check_same_shape(a, b, "add_forward");
  MARE_CUDA_DISPATCH("add_forward", add_forward(a, b), &a, &b);
  return zip_host(a, b, [](float x, float y) { return x + y; });
}

void add_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out) {
  check_accumulate(d_a, d_out, "add_backward: d_a");
  check_accumulate(d_b, d_out, "add_backward: d_b");
  MARE_CUDA_DISPATCH("add_backward", add_backward(d_a, d_b, d_out), &d_a, &d_b, &d_out);
  accumulate(d_a, d_out, 1.0f);
  accumulate(d_b, d_out, 1.0f);
}

Tensor mul_forward(const Tensor& a, const Tensor& b) {
  check_same_shape(a, b, "mul_forward");
  MARE_CUDA_DISPATCH("mul_forward", mul_forward(a, b), &a, &b);
  return zip_host(a, b, [](float x, float y) { return x * y; });
}

void mul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a, const Tensor& b) {
  check_same_shape(a, d_out, "mul_backward: a");
  check_same_shape(b, d_out, "mul_backward: b");
  if (d_a.defined()) check_same_shape(d_a, d_out, "mul_backward: d_a");
  if (d_b.defined()) check_same_shape(d_b, d_out, "mul_backward: d_b");
  MARE_CUDA_DISPATCH("mul_backward", mul_backward(d_a, d_b, d_out, a, b), &d_a, &d_b, &d_out, &a,
                     &b);
  const float *pg = d_out.f32(), *pa = a.f32(), *pb = b.f32();
  float* da = d_a.defined() ? d_a.f32() : nullptr;
  float* db = d_b.defined() ? d_b.f32() : nullptr;
  for_items(d_out.numel(), 2.0, [&](int64_t b, int64_t e) {
    if (da)
      for (int64_t i = b; i < e; ++i) da[i] += pg[i] * pb[i];
    if (db)
      for (int64_t i = b; i < e; ++i) db[i] += pg[i] * pa[i];
  });
}

Tensor div_forward(const Tensor& a, const Tensor& b) {
  check_same_shape(a, b, "div_forward");
  MARE_CUDA_DISPATCH("div_forward", div_forward(a, b), &a, &b);
  return zip_host(a, b, [](float x, float y) { return x / y; });
}

void div_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& out,
                  const Tensor& b) {
  check_same_shape(out, d_out, "div_backward: out");
  check_same_shape(b, d_out, "div_backward: b");
  if (d_a.defined()) check_same_shape(d_a, d_out, "div_backward: d_a");
  if (d_b.defined()) check_same_shape(d_b, d_out, "div_backward: d_b");
  MARE_CUDA_DISPATCH("div_backward", div_backward(d_a, d_b, d_out, out, b), &d_a, &d_b, &d_out,
                     &out, &b);
  const float *pg = d_out.f32(), *po = out.f32(), *pb = b.f32();
  float* da = d_a.defined() ? d_a.f32() : nullptr;
  float* db = d_b.defined() ? d_b.f32() : nullptr;
  for_items(d_out.numel(), 3.0, [&](int64_t begin, int64_t end) {
    if (da)
      for (int64_t i = begin; i < end; ++i) da[i] += pg[i] / pb[i];
    if (db)
      for (int64_t i = begin; i < end; ++i) db[i] += -(pg[i] * po[i]) / pb[i];
  });
}

namespace {

// The row width of select_rows and scale_rows: a and b have one shape, keep is [R], and
// a's leading axes hold exactly R rows (their product is R); throws ShapeError naming
// `op` otherwise.
int64_t selected_row_width(const Tensor& keep, const Tensor& a, const Tensor& b, const char* op) {
  check_defined(keep, op);
  check_dtype(keep, DType::f32, op);
  check_rank(keep, 1, op);
  check_same_shape(a, b, op);
  const int64_t rows = keep.dim(0);
  int64_t lead = rows == 0 ? 0 : 1;
  for (int axis = 0; axis < a.rank() && lead < rows; ++axis) lead *= a.dim(axis);
  if (lead != rows || (rows == 0 && a.numel() != 0))
    throw ShapeError(std::string(op) + ": keep " + keep.shape().str() + " names " +
                     std::to_string(rows) + " rows, but the leading axes of " + a.shape().str() +
                     " do not hold exactly that many");
  return rows == 0 ? 0 : a.numel() / rows;
}

}  // namespace

Tensor select_rows_forward(const Tensor& keep, const Tensor& a, const Tensor& b) {
  const int64_t w = selected_row_width(keep, a, b, "select_rows_forward");
  MARE_CUDA_DISPATCH("select_rows_forward", select_rows_forward(keep, a, b), &keep, &a, &b);
  Tensor out = Tensor::empty(a.shape(), a.device());
  const float *pk = keep.f32(), *pa = a.f32(), *pb = b.f32();
  float* po = out.f32();
  for_items(keep.numel(), static_cast<double>(w), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* src = (pk[r] != 0.0f ? pa : pb) + r * w;
      std::copy(src, src + w, po + r * w);
    }
  });
  return out;
}

void select_rows_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& keep) {
  const int64_t w = selected_row_width(keep, d_out, d_out, "select_rows_backward");
  check_accumulate(d_a, d_out, "select_rows_backward: d_a");
  check_accumulate(d_b, d_out, "select_rows_backward: d_b");
  MARE_CUDA_DISPATCH("select_rows_backward", select_rows_backward(d_a, d_b, d_out, keep), &d_a,
                     &d_b, &d_out, &keep);
  const float *pk = keep.f32(), *pg = d_out.f32();
  float* da = d_a.defined() ? d_a.f32() : nullptr;
  float* db = d_b.defined() ? d_b.f32() : nullptr;
  for_items(keep.numel(), static_cast<double>(w), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* dst = pk[r] != 0.0f ? da : db;
      if (dst == nullptr) continue;
      for (int64_t j = r * w; j < (r + 1) * w; ++j) dst[j] += pg[j];
    }
  });
}

Tensor scale_rows_forward(const Tensor& x, const Tensor& s) {
  const int64_t w = selected_row_width(s, x, x, "scale_rows_forward");
  MARE_CUDA_DISPATCH("scale_rows_forward", scale_rows_forward(x, s), &x, &s);
  Tensor out = Tensor::empty(x.shape(), x.device());
  const float *px = x.f32(), *ps = s.f32();
  float* po = out.f32();
  for_items(s.numel(), static_cast<double>(w), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t j = r * w; j < (r + 1) * w; ++j) po[j] = px[j] * ps[r];
  });
  return out;
}

void scale_rows_backward(Tensor& d_x, Tensor& d_s, const Tensor& d_out, const Tensor& x,
                         const Tensor& s) {
  const int64_t w = selected_row_width(s, x, d_out, "scale_rows_backward");
  check_accumulate(d_x, d_out, "scale_rows_backward: d_x");
  if (d_s.defined()) check_same_shape(d_s, s, "scale_rows_backward: d_s");
  MARE_CUDA_DISPATCH("scale_rows_backward", scale_rows_backward(d_x, d_s, d_out, x, s), &d_x, &d_s,
                     &d_out, &x, &s);
  const float *pg = d_out.f32(), *px = x.f32(), *ps = s.f32();
  float* dx = d_x.defined() ? d_x.f32() : nullptr;
  float* ds = d_s.defined() ? d_s.f32() : nullptr;
  for_items(s.numel(), 2.0 * static_cast<double>(w), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (dx)
        for (int64_t j = r * w; j < (r + 1) * w; ++j) dx[j] += pg[j] * ps[r];
      if (ds) {
        float sum = 0.0f;
        for (int64_t j = r * w; j < (r + 1) * w; ++j) sum += pg[j] * px[j];
        ds[r] += sum;
      }
    }
  });
}

Tensor scale_forward(const Tensor& x, float s) {
  check_defined(x, "scale_forward");
  MARE_CUDA_DISPATCH("scale_forward", scale_forward(x, s), &x);
  return map_unary(x, [s](float v) { return s * v; });
}
void scale_backward(Tensor& d_x, const Tensor& d_out, float s) {
  check_accumulate(d_x, d_out, "scale_backward");
  MARE_CUDA_DISPATCH("scale_backward", scale_backward(d_x, d_out, s), &d_x, &d_out);
  accumulate(d_x, d_out, s);
}

Tensor relu_forward(const Tensor& x) {
  check_defined(x, "relu_forward");
  MARE_CUDA_DISPATCH("relu_forward", relu_forward(x), &x);
  return map_unary(x, [](float v) { return v > 0.0f ? v : 0.0f; });
}
void relu_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  if (!unary_backward_checks(d_x, d_out, x, "relu_backward")) return;
  MARE_CUDA_DISPATCH("relu_backward", relu_backward(d_x, d_out, x), &d_x, &d_out, &x);
  accumulate_unary(d_x, d_out, x, [](float v) { return v > 0.0f ? 1.0f : 0.0f; });
}

Tensor relu6_forward(const Tensor& x) {
  check_defined(x, "relu6_forward");
  MARE_CUDA_DISPATCH("relu6_forward", relu6_forward(x), &x);
  return map_unary(x, [](float v) { return std::min(std::max(v, 0.0f), 6.0f); });
}
void relu6_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  if (!unary_backward_checks(d_x, d_out, x, "relu6_backward")) return;
  MARE_CUDA_DISPATCH("relu6_backward", relu6_backward(d_x, d_out, x), &d_x, &d_out, &x);
  accumulate_unary(d_x, d_out, x, [](float v) { return (v > 0.0f && v < 6.0f) ? 1.0f : 0.0f; });
}

Tensor sigmoid_forward(const Tensor& x) {
  check_defined(x, "sigmoid_forward");
  MARE_CUDA_DISPATCH("sigmoid_forward", sigmoid_forward(x), &x);
  return map_unary(
      x,
      [](float v) {
        // Stable on both tails: never exponentiates a large positive number.
        if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
        float e = std::exp(v);
        return e / (1.0f + e);
      },
      10.0);
}
void sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  if (!unary_backward_checks(d_x, d_out, out, "sigmoid_backward")) return;
  MARE_CUDA_DISPATCH("sigmoid_backward", sigmoid_backward(d_x, d_out, out), &d_x, &d_out, &out);
  accumulate_unary(d_x, d_out, out, [](float y) { return y * (1.0f - y); });
}

Tensor tanh_forward(const Tensor& x) {
  check_defined(x, "tanh_forward");
  MARE_CUDA_DISPATCH("tanh_forward", tanh_forward(x), &x);
  return map_unary(
      x, [](float v) { return std::tanh(v); }, 10.0);
}
void tanh_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  if (!unary_backward_checks(d_x, d_out, out, "tanh_backward")) return;
  MARE_CUDA_DISPATCH("tanh_backward", tanh_backward(d_x, d_out, out), &d_x, &d_out, &out);
  accumulate_unary(d_x, d_out, out, [](float y) { return 1.0f - y * y; });
}

Tensor oneplus_forward(const Tensor& x) {
  check_defined(x, "oneplus_forward");
  MARE_CUDA_DISPATCH("oneplus_forward", oneplus_forward(x), &x);
  // 1 + softplus(x) = 1 + max(x, 0) + log1p(e^-|x|)
  return map_unary(
      x, [](float v) { return 1.0f + std::max(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); },
      20.0);
}
void oneplus_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  if (!unary_backward_checks(d_x, d_out, x, "oneplus_backward")) return;
  MARE_CUDA_DISPATCH("oneplus_backward", oneplus_backward(d_x, d_out, x), &d_x, &d_out, &x);
  accumulate_unary(
      d_x, d_out, x,
      [](float v) {
        if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
        float e = std::exp(v);
        return e / (1.0f + e);
      },
      10.0);
}

Tensor hard_sigmoid_forward(const Tensor& x) {
  check_defined(x, "hard_sigmoid_forward");
  MARE_CUDA_DISPATCH("hard_sigmoid_forward", hard_sigmoid_forward(x), &x);
  return map_unary(x, [](float v) { return std::min(std::max(0.2f * v + 0.5f, 0.0f), 1.0f); });
}
void hard_sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  if (!unary_backward_checks(d_x, d_out, x, "hard_sigmoid_backward")) return;
  MARE_CUDA_DISPATCH("hard_sigmoid_backward", hard_sigmoid_backward(d_x, d_out, x), &d_x, &d_out,
                     &x);
  accumulate_unary(d_x, d_out, x, [](float v) { return (v > -2.5f && v < 2.5f) ? 0.2f : 0.0f; });
}

DropoutResult dropout_forward(const Tensor& x, float p, uint64_t seed, uint32_t stream,
                              uint64_t offset) {
  check_defined(x, "dropout_forward");
  if (!(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument("dropout_forward: p must be in [0, 1), got " + std::to_string(p));
  MARE_CUDA_DISPATCH("dropout_forward", dropout_forward(x, p, seed, stream, offset), &x);
  DropoutResult r{Tensor::empty(x.shape()), Tensor::empty(x.shape())};
  const float keep_scale = 1.0f / (1.0f - p);
  const float* px = x.f32();
  float *po = r.out.f32(), *pm = r.mask.f32();
  // Each element's draw is keyed by its index (Philox): chunks change nothing.
  // p and the scale by value: the stores below cannot alias them, so the loop vectorises.
  for_items(x.numel(), 4.0, [=](int64_t b, int64_t e) {
    float u[256];
    for (int64_t s = b; s < e; s += 256) {
      const int64_t m = std::min<int64_t>(256, e - s);
      philox_uniforms(seed, stream, offset + static_cast<uint64_t>(s), m, u);
      for (int64_t i = 0; i < m; ++i) {
        const float keep = u[i] >= p ? keep_scale : 0.0f;
        pm[s + i] = keep;
        po[s + i] = px[s + i] * keep;
      }
    }
  });
  return r;
}

void dropout_backward(Tensor& d_x, const Tensor& d_out, const Tensor& mask) {
  if (!unary_backward_checks(d_x, d_out, mask, "dropout_backward")) return;
  MARE_CUDA_DISPATCH("dropout_backward", dropout_backward(d_x, d_out, mask), &d_x, &d_out, &mask);
  accumulate_unary(d_x, d_out, mask, [](float m) { return m; });
}

}  // namespace mare
