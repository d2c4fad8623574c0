// Softmax family on the CPU, row by row, max-subtracted for stability (rows in
// parallel chunks when large: each row's bytes do not depend on its chunk).
//
//   softmax:      y = e^{x − m} / Σ e^{x − m};   d_x = y ⊙ (d_y − Σ d_y ⊙ y)
//   log-softmax:  y = x − m − log Σ e^{x − m};    d_x = d_y − softmax(x) · Σ d_y
//   logsumexp:    y_s = log Σ_{r∈s} e^{x_r};      d_x_r += d_y_s · e^{x_r − y_s}
#include "kernels/ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {

void check_mask(const Tensor& x, const Tensor& mask, const char* op) {
  if (!mask.defined()) return;
  check_same_shape(mask, x, op);
}

inline bool kept(const float* mask_row, int64_t j) {
  return !mask_row || mask_row[j] != 0.0f;
}

// Writes softmax (log_space = false) or log-softmax of one row.
void row_softmax(const float* x, const float* m, float* y, int64_t c, bool log_space) {
  float mx = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int64_t j = 0; j < c; ++j)
    if (kept(m, j)) any = true, mx = std::max(mx, x[j]);
  // Every position excluded: zeros. (Decided by the mask, not by the maximum, so
  // that a row of NaN comes out NaN: std::max skips NaN, and a diverged model
  // must not look like a masked row.)
  if (!any) {
    for (int64_t j = 0; j < c; ++j) y[j] = 0.0f;
    return;
  }
  // exp once per element in float (it dominates the cost); the sum in double.
  double sum = 0.0;
  for (int64_t j = 0; j < c; ++j) {
    y[j] = kept(m, j) ? std::exp(x[j] - mx) : 0.0f;
    sum += y[j];
  }
  if (log_space) {
    float lse = static_cast<float>(std::log(sum));
    for (int64_t j = 0; j < c; ++j) y[j] = kept(m, j) ? x[j] - mx - lse : 0.0f;
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < c; ++j) y[j] *= inv;
  }
}

// x and mask checked by the caller.
Tensor softmax_impl(const Tensor& x, const Tensor& mask, bool log_space) {
  Tensor out = Tensor::empty(x.shape(), x.device());
  int64_t c = last_dim(x), rows = leading_rows(x);
  // Rows are independent: in chunks of rows when large.
  for_items(rows, 15.0 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      row_softmax(x.f32() + r * c, mask.defined() ? mask.f32() + r * c : nullptr, out.f32() + r * c,
                  c, log_space);
  });
  return out;
}

// Ranks and dtypes of the index sets (no element is read: they may be on the GPU).
void check_set_shapes(const Tensor& offsets, const Tensor& rows, const char* op) {
  check_rank(offsets, 1, op);
  check_rank(rows, 1, op);
  check_dtype(offsets, DType::i32, op);
  check_dtype(rows, DType::i32, op);
  if (offsets.numel() < 1)
    throw std::invalid_argument(std::string(op) + ": offsets must start at 0");
}

// Rows whose range the host knows (a large upload) to lie in [0, num_rows).
bool rows_inside(const Tensor& rows, int64_t num_rows) {
  int32_t lo = 0, hi = 0;
  return rows.known_index_range(lo, hi) && lo >= 0 && hi < num_rows;
}

}  // namespace

bool host_can_check_index_sets(const Tensor& offsets, const Tensor& rows, int64_t num_rows) {
  return offsets.host_has_bytes() && (rows.host_has_bytes() || rows_inside(rows, num_rows));
}

void check_index_sets(const Tensor& offsets, const Tensor& rows, int64_t num_rows, const char* op) {
  if (!host_can_check_index_sets(offsets, rows, num_rows))
    throw std::logic_error(std::string(op) + ": index sets the host cannot check");
  const Tensor on_host = offsets.on(Device::cpu);
  const int32_t* o = on_host.i32();
  int64_t s = on_host.numel() - 1;
  if (o[0] != 0) throw std::invalid_argument(std::string(op) + ": offsets must start at 0");
  for (int64_t i = 0; i < s; ++i)
    if (o[i + 1] <= o[i])
      throw std::invalid_argument(std::string(op) + ": set " + std::to_string(i) +
                                  " is empty or offsets decrease");
  if (o[s] != rows.numel())
    throw std::invalid_argument(std::string(op) + ": offsets end at " + std::to_string(o[s]) +
                                " but there are " + std::to_string(rows.numel()) + " row indices");
  if (!rows.host_has_bytes()) return;  // its known range lies inside [0, num_rows)
  const Tensor rows_on_host = rows.on(Device::cpu);
  const int32_t* r = rows_on_host.i32();
  for (int64_t i = 0, n_i = rows.numel(); i < n_i; ++i)
    if (r[i] < 0 || r[i] >= num_rows)
      throw std::out_of_range(std::string(op) + ": row index " + std::to_string(r[i]) +
                              " at position " + std::to_string(i) + " is outside [0, " +
                              std::to_string(num_rows) + ")");
}

Tensor softmax_forward(const Tensor& x, const Tensor& mask) {
  check_defined(x, "softmax_forward");
  check_mask(x, mask, "softmax_forward");
  MARE_CUDA_DISPATCH("softmax_forward", softmax_forward(x, mask), &x, &mask);
  return softmax_impl(x, mask, false);
}

void softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  if (!d_x.defined()) return;
  check_same_shape(d_out, out, "softmax_backward");
  check_same_shape(d_x, out, "softmax_backward: d_x");
  MARE_CUDA_DISPATCH("softmax_backward", softmax_backward(d_x, d_out, out), &d_x, &d_out, &out);
  int64_t c = last_dim(out), rows = leading_rows(out);
  for_items(rows, 4.0 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *y = out.f32() + r * c, *g = d_out.f32() + r * c;
      float* dx = d_x.f32() + r * c;
      double dot = 0.0;
      for (int64_t j = 0; j < c; ++j) dot += static_cast<double>(g[j]) * y[j];
      for (int64_t j = 0; j < c; ++j) dx[j] += y[j] * (g[j] - static_cast<float>(dot));
    }
  });
}

Tensor log_softmax_forward(const Tensor& x, const Tensor& mask) {
  check_defined(x, "log_softmax_forward");
  check_mask(x, mask, "log_softmax_forward");
  MARE_CUDA_DISPATCH("log_softmax_forward", log_softmax_forward(x, mask), &x, &mask);
  return softmax_impl(x, mask, true);
}

void log_softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out, const Tensor& mask) {
  if (!d_x.defined()) return;
  check_same_shape(d_out, out, "log_softmax_backward");
  check_same_shape(d_x, out, "log_softmax_backward: d_x");
  check_mask(out, mask, "log_softmax_backward: mask");
  MARE_CUDA_DISPATCH("log_softmax_backward", log_softmax_backward(d_x, d_out, out, mask), &d_x,
                     &d_out, &out, &mask);
  int64_t c = last_dim(out), rows = leading_rows(out);
  for_items(rows, 12.0 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *y = out.f32() + r * c, *g = d_out.f32() + r * c;
      const float* m = mask.defined() ? mask.f32() + r * c : nullptr;
      float* dx = d_x.f32() + r * c;
      double sum = 0.0;
      for (int64_t j = 0; j < c; ++j)
        if (kept(m, j)) sum += g[j];
      for (int64_t j = 0; j < c; ++j)
        if (kept(m, j)) dx[j] += g[j] - std::exp(y[j]) * static_cast<float>(sum);
    }
  });
}

Tensor logsumexp_sets_forward(const Tensor& x, const Tensor& offsets, const Tensor& rows) {
  check_rank(x, 2, "logsumexp_sets_forward: x");
  check_set_shapes(offsets, rows, "logsumexp_sets_forward");
  MARE_CUDA_DISPATCH("logsumexp_sets_forward", logsumexp_sets_forward(x, offsets, rows), &x,
                     &offsets, &rows);
  check_index_sets(offsets, rows, x.dim(0), "logsumexp_sets_forward");
  int64_t s = offsets.numel() - 1, c = x.dim(1);
  Tensor out = Tensor::empty({s, c}, x.device());
  const int32_t *o = offsets.i32(), *idx = rows.i32();
  // Sets are independent (each writes its own output row). Backward stays
  // serial: two sets may share a row of d_x.
  const double per_set = 20.0 * c * static_cast<double>(rows.numel()) / std::max<int64_t>(s, 1);
  for_items(s, per_set, [&](int64_t b, int64_t e) {
    for (int64_t set = b; set < e; ++set) {
      for (int64_t j = 0; j < c; ++j) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int32_t t = o[set]; t < o[set + 1]; ++t) mx = std::max(mx, x.f32()[idx[t] * c + j]);
        double sum = 0.0;
        for (int32_t t = o[set]; t < o[set + 1]; ++t)
          sum += std::exp(static_cast<double>(x.f32()[idx[t] * c + j] - mx));
        out.f32()[set * c + j] = mx + static_cast<float>(std::log(sum));
      }
    }
  });
  return out;
}

void logsumexp_sets_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x, const Tensor& out,
                             const Tensor& offsets, const Tensor& rows) {
  if (!d_x.defined()) return;
  check_rank(x, 2, "logsumexp_sets_backward: x");
  check_set_shapes(offsets, rows, "logsumexp_sets_backward");
  check_same_shape(d_x, x, "logsumexp_sets_backward: d_x");
  check_shape(out, {offsets.numel() - 1, x.dim(1)}, "logsumexp_sets_backward: out");
  check_same_shape(d_out, out, "logsumexp_sets_backward: d_out");
  MARE_CUDA_DISPATCH("logsumexp_sets_backward",
                     logsumexp_sets_backward(d_x, d_out, x, out, offsets, rows), &d_x, &d_out, &x,
                     &out, &offsets, &rows);
  check_index_sets(offsets, rows, x.dim(0), "logsumexp_sets_backward");
  int64_t s = offsets.numel() - 1, c = x.dim(1);
  const int32_t *o = offsets.i32(), *idx = rows.i32();
  for (int64_t set = 0; set < s; ++set)
    for (int32_t t = o[set]; t < o[set + 1]; ++t)
      for (int64_t j = 0; j < c; ++j)
        d_x.f32()[idx[t] * c + j] +=
            d_out.f32()[set * c + j] * std::exp(x.f32()[idx[t] * c + j] - out.f32()[set * c + j]);
}

}  // namespace mare
