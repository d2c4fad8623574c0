// conv1d as one GEMM per kernel tap (Eigen), depthwise conv1d as plain loops.
//
// For tap k with shift s = k − K/2, the rows i ∈ [max(0, −s), min(I, I − s))
// of out take x rows i + s times w[k]:  out[rows] += x[rows + s] · w[k].
// Backward per tap:  d_x[rows + s] += d_out[rows] · w[k]ᵀ,
//                    d_w[k]        += x[rows + s]ᵀ · d_out[rows].
#include "kernels/ops/conv.h"

#include <algorithm>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {

struct TapRange {
  int64_t shift, begin, end;  // out rows [begin, end) read x rows [begin + shift, end + shift)
};

TapRange tap_range(int64_t k, int64_t kernel, int64_t len) {
  int64_t s = k - kernel / 2;
  return {s, std::max<int64_t>(0, -s), std::min<int64_t>(len, len - s)};
}

void check_odd_kernel(int64_t k, const char* op) {
  if (k < 1 || k % 2 == 0)
    throw std::invalid_argument(
        std::string(op) + ": kernel size must be odd for same padding, got " + std::to_string(k));
}

}  // namespace

Tensor conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_rank(x, 3, "conv1d_forward: x");
  check_rank(w, 3, "conv1d_forward: w");
  int64_t b = x.dim(0), len = x.dim(1), cin = x.dim(2), kernel = w.dim(0), cout = w.dim(2);
  check_odd_kernel(kernel, "conv1d_forward");
  if (w.dim(1) != cin)
    throw ShapeError("conv1d_forward: w " + w.shape().str() + " expects " +
                     std::to_string(w.dim(1)) + " input channels, x " + x.shape().str() + " has " +
                     std::to_string(cin));
  if (bias.defined()) check_shape(bias, {cout}, "conv1d_forward: bias");
  MARE_CUDA_DISPATCH("conv1d_forward", conv1d_forward(x, w, bias), &x, &w, &bias);
  Tensor out = Tensor::zeros({b, len, cout});
  for (int64_t n = 0; n < b; ++n) {
    CMapRM xb(x.f32() + n * len * cin, len, cin);
    MapRM ob(out.f32() + n * len * cout, len, cout);
    for (int64_t k = 0; k < kernel; ++k) {
      TapRange t = tap_range(k, kernel, len);
      if (t.end <= t.begin) continue;
      CMapRM wk(w.f32() + k * cin * cout, cin, cout);
      ob.middleRows(t.begin, t.end - t.begin).noalias() +=
          xb.middleRows(t.begin + t.shift, t.end - t.begin) * wk;
    }
    if (bias.defined()) ob.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias.f32(), cout);
  }
  return out;
}

void conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out, const Tensor& x,
                     const Tensor& w) {
  check_rank(x, 3, "conv1d_backward: x");
  check_rank(w, 3, "conv1d_backward: w");
  int64_t b = x.dim(0), len = x.dim(1), cin = x.dim(2), kernel = w.dim(0), cout = w.dim(2);
  check_odd_kernel(kernel, "conv1d_backward");
  if (w.dim(1) != cin)
    throw ShapeError("conv1d_backward: w " + w.shape().str() + " expects " +
                     std::to_string(w.dim(1)) + " input channels, x " + x.shape().str() + " has " +
                     std::to_string(cin));
  check_shape(d_out, {b, len, cout}, "conv1d_backward: d_out");
  if (d_x.defined()) check_same_shape(d_x, x, "conv1d_backward: d_x");
  if (d_w.defined()) check_same_shape(d_w, w, "conv1d_backward: d_w");
  if (d_bias.defined()) check_shape(d_bias, {cout}, "conv1d_backward: d_bias");
  MARE_CUDA_DISPATCH("conv1d_backward", conv1d_backward(d_x, d_w, d_bias, d_out, x, w), &d_x, &d_w,
                     &d_bias, &d_out, &x, &w);
  for (int64_t n = 0; n < b; ++n) {
    CMapRM xb(x.f32() + n * len * cin, len, cin);
    CMapRM gb(d_out.f32() + n * len * cout, len, cout);
    for (int64_t k = 0; k < kernel; ++k) {
      TapRange t = tap_range(k, kernel, len);
      if (t.end <= t.begin) continue;
      int64_t rows = t.end - t.begin;
      CMapRM wk(w.f32() + k * cin * cout, cin, cout);
      if (d_x.defined()) {
        MapRM dxb(d_x.f32() + n * len * cin, len, cin);
        dxb.middleRows(t.begin + t.shift, rows).noalias() +=
            gb.middleRows(t.begin, rows) * wk.transpose();
      }
      if (d_w.defined()) {
        MapRM dwk(d_w.f32() + k * cin * cout, cin, cout);
        dwk.noalias() +=
            xb.middleRows(t.begin + t.shift, rows).transpose() * gb.middleRows(t.begin, rows);
      }
    }
    if (d_bias.defined()) Eigen::Map<Eigen::RowVectorXf>(d_bias.f32(), cout) += gb.colwise().sum();
  }
}

Tensor depthwise_conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_rank(x, 3, "depthwise_conv1d_forward: x");
  check_rank(w, 2, "depthwise_conv1d_forward: w");
  int64_t b = x.dim(0), len = x.dim(1), c = x.dim(2), kernel = w.dim(0);
  check_odd_kernel(kernel, "depthwise_conv1d_forward");
  check_shape(w, {kernel, c}, "depthwise_conv1d_forward: w");
  if (bias.defined()) check_shape(bias, {c}, "depthwise_conv1d_forward: bias");
  MARE_CUDA_DISPATCH("depthwise_conv1d_forward", depthwise_conv1d_forward(x, w, bias), &x, &w,
                     &bias);
  Tensor out = Tensor::empty({b, len, c});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < len; ++i) {
      float* o = out.f32() + (n * len + i) * c;
      for (int64_t j = 0; j < c; ++j) o[j] = bias.defined() ? bias.f32()[j] : 0.0f;
      for (int64_t k = 0; k < kernel; ++k) {
        int64_t src = i + k - kernel / 2;
        if (src < 0 || src >= len) continue;
        const float* xs = x.f32() + (n * len + src) * c;
        const float* wk = w.f32() + k * c;
        for (int64_t j = 0; j < c; ++j) o[j] += xs[j] * wk[j];
      }
    }
  return out;
}

void depthwise_conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out,
                               const Tensor& x, const Tensor& w) {
  check_rank(x, 3, "depthwise_conv1d_backward: x");
  check_rank(w, 2, "depthwise_conv1d_backward: w");
  int64_t b = x.dim(0), len = x.dim(1), c = x.dim(2), kernel = w.dim(0);
  check_odd_kernel(kernel, "depthwise_conv1d_backward");
  if (w.dim(1) != c)
    throw ShapeError("depthwise_conv1d_backward: w " + w.shape().str() + " has " +
                     std::to_string(w.dim(1)) + " channels, x " + x.shape().str() + " has " +
                     std::to_string(c));
  check_same_shape(d_out, x, "depthwise_conv1d_backward: d_out");
  if (d_x.defined()) check_same_shape(d_x, x, "depthwise_conv1d_backward: d_x");
  if (d_w.defined()) check_same_shape(d_w, w, "depthwise_conv1d_backward: d_w");
  if (d_bias.defined()) check_shape(d_bias, {c}, "depthwise_conv1d_backward: d_bias");
  MARE_CUDA_DISPATCH("depthwise_conv1d_backward",
                     depthwise_conv1d_backward(d_x, d_w, d_bias, d_out, x, w), &d_x, &d_w, &d_bias,
                     &d_out, &x, &w);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < len; ++i) {
      const float* g = d_out.f32() + (n * len + i) * c;
      if (d_bias.defined())
        for (int64_t j = 0; j < c; ++j) d_bias.f32()[j] += g[j];
      for (int64_t k = 0; k < kernel; ++k) {
        int64_t src = i + k - kernel / 2;
        if (src < 0 || src >= len) continue;
        const float* xs = x.f32() + (n * len + src) * c;
        const float* wk = w.f32() + k * c;
        if (d_x.defined()) {
          float* dx = d_x.f32() + (n * len + src) * c;
          for (int64_t j = 0; j < c; ++j) dx[j] += g[j] * wk[j];
        }
        if (d_w.defined()) {
          float* dw = d_w.f32() + k * c;
          for (int64_t j = 0; j < c; ++j) dw[j] += g[j] * xs[j];
        }
      }
    }
}

}  // namespace mare
