// conv1d as one GEMM per kernel tap (Eigen), depthwise conv1d as plain loops.
// Threads: batch items in parallel; the weight and bias gradients, sums over
// the batch, add per-chunk partials in chunk order (reduce_rows, chunks fixed
// by the shapes), so the bytes do not depend on the thread count.
//
// For tap k with shift s = k − K/2, the rows i ∈ [max(0, −s), min(I, I − s))
// of out take x rows i + s times w[k]:  out[rows] += x[rows + s] · w[k].
// Backward per tap:  d_x[rows + s] += d_out[rows] · w[k]ᵀ,
//                    d_w[k]        += x[rows + s]ᵀ · d_out[rows].
#include "kernels/ops/conv.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kernels/ops/common.h"
#include "kernels/ops/gemm_count.h"

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

struct ConvDims {
  int64_t b, len, cin, kernel, cout;
};

// x [B, I, Cin] and w [K, Cin, Cout] with K odd: their sizes, or the error naming `op`.
ConvDims check_conv(const Tensor& x, const Tensor& w, const std::string& op) {
  check_rank(x, 3, (op + ": x").c_str());
  check_rank(w, 3, (op + ": w").c_str());
  const ConvDims d{x.dim(0), x.dim(1), x.dim(2), w.dim(0), w.dim(2)};
  check_odd_kernel(d.kernel, op.c_str());
  if (w.dim(1) != d.cin)
    throw ShapeError(op + ": w " + w.shape().str() + " expects " + std::to_string(w.dim(1)) +
                     " input channels, x " + x.shape().str() + " has " + std::to_string(d.cin));
  return d;
}

// f(k, t) for each tap k of the kernel that reaches the sequence: output rows
// [t.begin, t.end) take input rows shifted by t.shift.
template <class F>
void for_each_tap(int64_t kernel, int64_t len, F f) {
  for (int64_t k = 0; k < kernel; ++k) {
    const TapRange t = tap_range(k, kernel, len);
    if (t.end > t.begin) f(k, t);
  }
}

// Rows that the kernel's taps multiply, summed over the taps (each tap is a
// [rows, cin] × [cin, cout] product per batch item).
int64_t tap_rows(int64_t kernel, int64_t len) {
  int64_t rows = 0;
  for_each_tap(kernel, len, [&](int64_t, const TapRange& t) { rows += t.end - t.begin; });
  return rows;
}

}  // namespace

Tensor conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const auto [b, len, cin, kernel, cout] = check_conv(x, w, "conv1d_forward");
  if (bias.defined()) check_shape(bias, {cout}, "conv1d_forward: bias");
  MARE_CUDA_DISPATCH("conv1d_forward", conv1d_forward(x, w, bias), &x, &w, &bias);
  Tensor out = Tensor::zeros({b, len, cout});
  count_gemm(b * tap_rows(kernel, len), cout, cin);
  const double item_cost = static_cast<double>(len) * cin * cout * kernel;
  for_items(b, item_cost, [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) {
      CMapRM xb(x.f32() + n * len * cin, len, cin);
      MapRM ob(out.f32() + n * len * cout, len, cout);
      for_each_tap(kernel, len, [&](int64_t k, const TapRange& t) {
        CMapRM wk(w.f32() + k * cin * cout, cin, cout);
        ob.middleRows(t.begin, t.end - t.begin).noalias() +=
            xb.middleRows(t.begin + t.shift, t.end - t.begin) * wk;
      });
      if (bias.defined()) ob.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias.f32(), cout);
    }
  });
  return out;
}

void conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out, const Tensor& x,
                     const Tensor& w) {
  const auto [b, len, cin, kernel, cout] = check_conv(x, w, "conv1d_backward");
  check_shape(d_out, {b, len, cout}, "conv1d_backward: d_out");
  if (d_x.defined()) check_same_shape(d_x, x, "conv1d_backward: d_x");
  if (d_w.defined()) check_same_shape(d_w, w, "conv1d_backward: d_w");
  if (d_bias.defined()) check_shape(d_bias, {cout}, "conv1d_backward: d_bias");
  MARE_CUDA_DISPATCH("conv1d_backward", conv1d_backward(d_x, d_w, d_bias, d_out, x, w), &d_x, &d_w,
                     &d_bias, &d_out, &x, &w);
  const double item_cost = static_cast<double>(len) * cin * cout * kernel;
  if (d_x.defined()) count_gemm(b * tap_rows(kernel, len), cin, cout);
  if (d_w.defined()) count_gemm(cin, cout, b * tap_rows(kernel, len));
  // d_x: each batch item its own rows.
  if (d_x.defined())
    for_items(b, item_cost, [&](int64_t first, int64_t last) {
      for (int64_t n = first; n < last; ++n) {
        CMapRM gb(d_out.f32() + n * len * cout, len, cout);
        MapRM dxb(d_x.f32() + n * len * cin, len, cin);
        for_each_tap(kernel, len, [&](int64_t k, const TapRange& t) {
          CMapRM wk(w.f32() + k * cin * cout, cin, cout);
          dxb.middleRows(t.begin + t.shift, t.end - t.begin).noalias() +=
              gb.middleRows(t.begin, t.end - t.begin) * wk.transpose();
        });
      }
    });
  // d_w: a sum over batch items (at most 8 partials of the whole weight).
  if (d_w.defined())
    reduce_rows(
        b, item_cost, kernel * cin * cout, std::array<float*, 1>{d_w.f32()},
        [&](int64_t first, int64_t last, std::array<float*, 1> acc) {
          for (int64_t n = first; n < last; ++n) {
            CMapRM xb(x.f32() + n * len * cin, len, cin);
            CMapRM gb(d_out.f32() + n * len * cout, len, cout);
            for_each_tap(kernel, len, [&](int64_t k, const TapRange& t) {
              MapRM dwk(acc[0] + k * cin * cout, cin, cout);
              dwk.noalias() += xb.middleRows(t.begin + t.shift, t.end - t.begin).transpose() *
                               gb.middleRows(t.begin, t.end - t.begin);
            });
          }
        },
        8);
  if (d_bias.defined())
    reduce_rows(b, static_cast<double>(len) * cout, cout, std::array<float*, 1>{d_bias.f32()},
                [&](int64_t first, int64_t last, std::array<float*, 1> acc) {
                  for (int64_t n = first; n < last; ++n) {
                    CMapRM gb(d_out.f32() + n * len * cout, len, cout);
                    // Into an Eigen vector first: Eigen's column sums take a
                    // different order in its SIMD and scalar paths, chosen by
                    // the destination's alignment, which a partial's is not.
                    const Eigen::RowVectorXf item = gb.colwise().sum();
                    for (int64_t j = 0; j < cout; ++j) acc[0][j] += item[j];
                  }
                });
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
  for_items(b * len, 2.0 * kernel * c, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t n = row / len, i = row % len;
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
  });
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
  // Batch items in parallel (an item's d_x rows are its own); d_w and d_bias
  // are sums over items: per-chunk partials, added in chunk order. The partial
  // holds d_w ([kernel·c]) then d_bias ([c]).
  const int64_t width = (kernel + 1) * c;
  float* dw_acc = d_w.defined() ? d_w.f32() : nullptr;
  float* db_acc = d_bias.defined() ? d_bias.f32() : nullptr;
  auto item_rows = [&](int64_t first, int64_t last, float* dw_all, float* db_all) {
    for (int64_t n = first; n < last; ++n)
      for (int64_t i = 0; i < len; ++i) {
        const float* g = d_out.f32() + (n * len + i) * c;
        if (db_all)
          for (int64_t j = 0; j < c; ++j) db_all[j] += g[j];
        for (int64_t k = 0; k < kernel; ++k) {
          int64_t src = i + k - kernel / 2;
          if (src < 0 || src >= len) continue;
          const float* xs = x.f32() + (n * len + src) * c;
          const float* wk = w.f32() + k * c;
          if (d_x.defined()) {
            float* dx = d_x.f32() + (n * len + src) * c;
            for (int64_t j = 0; j < c; ++j) dx[j] += g[j] * wk[j];
          }
          if (dw_all) {
            float* dw = dw_all + k * c;
            for (int64_t j = 0; j < c; ++j) dw[j] += g[j] * xs[j];
          }
        }
      }
  };
  const double item_cost = 4.0 * len * kernel * c;
  const int64_t grain =
      split_work(b * item_cost, kSplitWork) ? grain_for(b, item_cost, kSplitWork / 2, 16) : b;
  const int64_t chunks = chunk_count(b, grain);
  if (chunks <= 1) {
    item_rows(0, b, dw_acc, db_acc);  // the plain loop, straight into the gradients
    return;
  }
  std::vector<float> parts(static_cast<size_t>(chunks * width), 0.0f);
  parallel_for_chunks(b, grain, [&](int64_t first, int64_t last) {
    float* part = parts.data() + (first / grain) * width;
    item_rows(first, last, dw_acc ? part : nullptr, db_acc ? part + kernel * c : nullptr);
  });
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const float* part = parts.data() + ch * width;
    if (dw_acc)
      for (int64_t j = 0; j < kernel * c; ++j) dw_acc[j] += part[j];
    if (db_acc)
      for (int64_t j = 0; j < c; ++j) db_acc[j] += part[kernel * c + j];
  }
}

}  // namespace mare
