// Layer norm and batch norm on the CPU. Statistics accumulate in double.
// Threads: rows run in chunks; sums over rows (batch norm's statistics, the
// d_γ and d_β of both) add per-chunk partials in chunk order (reduce_rows), the
// chunks fixed by the shape, so the bytes do not depend on the thread count.
//
// With x̂ = (x − μ)·rstd and g = d_out ⊙ γ over a group of n elements:
//   d_x = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))   (statistics of the group)
//   d_γ += Σ d_out ⊙ x̂,   d_β += Σ d_out
// Layer norm's group is a row; batch norm's is a channel over all rows, or over
// the rows of a nonzero row mask (n of them; masked rows output 0, get no
// gradient and add nothing to any sum).
#include "kernels/ops/norm.h"

#include <array>
#include <cmath>
#include <vector>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

NormResult layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  check_defined(x, "layer_norm_forward");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "layer_norm_forward: gamma");
  check_shape(beta, {c}, "layer_norm_forward: beta");
  MARE_CUDA_DISPATCH("layer_norm_forward", layer_norm_forward(x, gamma, beta, eps), &x, &gamma,
                     &beta);
  NormResult r{Tensor::empty(x.shape()), Tensor::empty({rows}), Tensor::empty({rows})};
  for_items(rows, 6.0 * c, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xi = x.f32() + i * c;
      double mu = 0.0, var = 0.0;
      for (int64_t j = 0; j < c; ++j) mu += xi[j];
      mu /= c;
      for (int64_t j = 0; j < c; ++j) var += (xi[j] - mu) * (xi[j] - mu);
      var /= c;
      float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
      r.mean.f32()[i] = static_cast<float>(mu);
      r.rstd.f32()[i] = rstd;
      float* yi = r.out.f32() + i * c;
      for (int64_t j = 0; j < c; ++j)
        yi[j] = (xi[j] - static_cast<float>(mu)) * rstd * gamma.f32()[j] + beta.f32()[j];
    }
  });
  return r;
}

void layer_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd) {
  check_same_shape(d_out, x, "layer_norm_backward: d_out");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "layer_norm_backward: gamma");
  check_shape(mean, {rows}, "layer_norm_backward: mean");
  check_shape(rstd, {rows}, "layer_norm_backward: rstd");
  if (d_x.defined()) check_same_shape(d_x, x, "layer_norm_backward: d_x");
  if (d_gamma.defined()) check_shape(d_gamma, {c}, "layer_norm_backward: d_gamma");
  if (d_beta.defined()) check_shape(d_beta, {c}, "layer_norm_backward: d_beta");
  MARE_CUDA_DISPATCH("layer_norm_backward",
                     layer_norm_backward(d_x, d_gamma, d_beta, d_out, x, gamma, mean, rstd), &d_x,
                     &d_gamma, &d_beta, &d_out, &x, &gamma, &mean, &rstd);
  std::array<float*, 2> accs{d_gamma.defined() ? d_gamma.f32() : nullptr,
                             d_beta.defined() ? d_beta.f32() : nullptr};
  reduce_rows(rows, 12.0 * c, c, accs, [&](int64_t begin, int64_t end, std::array<float*, 2> acc) {
    float *dg = acc[0], *db = acc[1];
    for (int64_t i = begin; i < end; ++i) {
      const float *xi = x.f32() + i * c, *gi = d_out.f32() + i * c;
      float mu = mean.f32()[i], rs = rstd.f32()[i];
      double mean_g = 0.0, mean_gx = 0.0;
      for (int64_t j = 0; j < c; ++j) {
        float xhat = (xi[j] - mu) * rs;
        float g = gi[j] * gamma.f32()[j];
        mean_g += g;
        mean_gx += g * xhat;
        if (dg) dg[j] += gi[j] * xhat;
        if (db) db[j] += gi[j];
      }
      mean_g /= c;
      mean_gx /= c;
      if (!d_x.defined()) continue;
      float* dxi = d_x.f32() + i * c;
      for (int64_t j = 0; j < c; ++j) {
        float xhat = (xi[j] - mu) * rs;
        float g = gi[j] * gamma.f32()[j];
        dxi[j] += rs * (g - static_cast<float>(mean_g) - xhat * static_cast<float>(mean_gx));
      }
    }
  });
}

namespace {

// The row mask of batch norm: f32 [rows] (checked without reading it).
void check_row_mask(const Tensor& row_mask, int64_t rows, const char* what) {
  if (!row_mask.defined()) return;
  check_dtype(row_mask, DType::f32, what);
  check_shape(row_mask, {rows}, what);
}

// One row of batch norm's output, (x − μ)·rstd·γ + β with one rounding per
// operation. Without contraction: GCC's C++ default (-ffp-contract=fast) would
// fuse the last multiply-add into an FMA once the loop vectorizes, and these
// are the bytes of the earlier kernel, whose scalar loop (accessor calls in the
// expression) was never fused. Vectorized: ~5× faster than that loop.
__attribute__((optimize("fp-contract=off"))) void batch_norm_row(
    float* __restrict y, const float* __restrict x, const float* __restrict mean,
    const float* __restrict rstd, const float* __restrict gamma, const float* __restrict beta,
    int64_t c) {
  for (int64_t j = 0; j < c; ++j) y[j] = (x[j] - mean[j]) * rstd[j] * gamma[j] + beta[j];
}

// Rows that take part in the statistics: all, or those with a nonzero mask.
int64_t active_rows(const float* mask, int64_t rows) {
  if (!mask) return rows;
  int64_t n = 0;
  for (int64_t i = 0; i < rows; ++i) n += mask[i] != 0.0f;
  return n;
}

}  // namespace

NormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              Tensor& running_mean, Tensor& running_var, bool training,
                              float momentum, float eps, const Tensor& row_mask) {
  check_defined(x, "batch_norm_forward");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "batch_norm_forward: gamma");
  check_shape(beta, {c}, "batch_norm_forward: beta");
  check_shape(running_mean, {c}, "batch_norm_forward: running_mean");
  check_shape(running_var, {c}, "batch_norm_forward: running_var");
  check_row_mask(row_mask, rows, "batch_norm_forward: row_mask");
  if (training && rows < 2 && !row_mask.defined())
    throw std::invalid_argument("batch_norm_forward: training needs at least 2 rows, got " +
                                std::to_string(rows) + " (shape " + x.shape().str() + ")");
  MARE_CUDA_DISPATCH("batch_norm_forward",
                     batch_norm_forward(x, gamma, beta, running_mean, running_var, training,
                                        momentum, eps, row_mask),
                     &x, &gamma, &beta, &running_mean, &running_var, &row_mask);
  NormResult r{Tensor::empty(x.shape()), Tensor::empty({c}), Tensor::empty({c})};
  // Masked rows are skipped in every sum (skipping adds nothing, so without a
  // mask the sums and their order are the unmasked ones).
  const float* m = row_mask.defined() ? row_mask.f32() : nullptr;
  auto active = [m](int64_t i) { return !m || m[i] != 0.0f; };
  if (training) {
    const int64_t n = active_rows(m, rows);
    std::vector<double> mu(c, 0.0), var(c, 0.0);
    const float* px = x.f32();
    // sums[j] += term(x[i, j], j) over the active rows i (reduce_rows' chunk order).
    auto column_sums = [&](double cost, std::vector<double>& sums, auto term) {
      reduce_rows(rows, cost * c, c, std::array<double*, 1>{sums.data()},
                  [&](int64_t begin, int64_t end, std::array<double*, 1> acc) {
                    double* __restrict a = acc[0];
                    for (int64_t i = begin; i < end; ++i)
                      if (active(i)) {
                        const float* xi = px + i * c;
                        for (int64_t j = 0; j < c; ++j) a[j] += term(xi[j], j);
                      }
                  });
    };
    column_sums(1.0, mu, [](float v, int64_t) { return static_cast<double>(v); });
    for (int64_t j = 0; j < c; ++j) mu[j] = n ? mu[j] / n : 0.0;
    const double* pmu = mu.data();
    column_sums(3.0, var, [pmu](float v, int64_t j) {
      double d = v - pmu[j];
      return d * d;
    });
    for (int64_t j = 0; j < c; ++j) {
      double biased = n ? var[j] / n : 0.0;
      r.mean.f32()[j] = static_cast<float>(mu[j]);
      r.rstd.f32()[j] = static_cast<float>(1.0 / std::sqrt(biased + eps));
      // n < 2 happens only with a mask: see norm.h.
      if (n >= 1) running_mean.f32()[j] = (1 - momentum) * running_mean.f32()[j] + momentum * mu[j];
      if (n >= 2) {
        double unbiased = var[j] / (n - 1);
        running_var.f32()[j] = (1 - momentum) * running_var.f32()[j] + momentum * unbiased;
      }
    }
  } else {
    for (int64_t j = 0; j < c; ++j) {
      r.mean.f32()[j] = running_mean.f32()[j];
      r.rstd.f32()[j] = 1.0f / std::sqrt(running_var.f32()[j] + eps);
    }
  }
  const float *px = x.f32(), *pmean = r.mean.f32(), *prstd = r.rstd.f32(), *pg = gamma.f32(),
              *pb = beta.f32();
  float* py = r.out.f32();
  for_items(rows, 4.0 * c, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (!active(i)) {
        for (int64_t j = 0; j < c; ++j) py[i * c + j] = 0.0f;
        continue;
      }
      batch_norm_row(py + i * c, px + i * c, pmean, prstd, pg, pb, c);
    }
  });
  return r;
}

void batch_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, bool training, const Tensor& row_mask) {
  check_same_shape(d_out, x, "batch_norm_backward: d_out");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "batch_norm_backward: gamma");
  check_shape(mean, {c}, "batch_norm_backward: mean");
  check_shape(rstd, {c}, "batch_norm_backward: rstd");
  check_row_mask(row_mask, rows, "batch_norm_backward: row_mask");
  if (d_x.defined()) check_same_shape(d_x, x, "batch_norm_backward: d_x");
  if (d_gamma.defined()) check_shape(d_gamma, {c}, "batch_norm_backward: d_gamma");
  if (d_beta.defined()) check_shape(d_beta, {c}, "batch_norm_backward: d_beta");
  MARE_CUDA_DISPATCH(
      "batch_norm_backward",
      batch_norm_backward(d_x, d_gamma, d_beta, d_out, x, gamma, mean, rstd, training, row_mask),
      &d_x, &d_gamma, &d_beta, &d_out, &x, &gamma, &mean, &rstd, &row_mask);
  const float* m = row_mask.defined() ? row_mask.f32() : nullptr;
  auto active = [m](int64_t i) { return !m || m[i] != 0.0f; };
  const int64_t n = active_rows(m, rows);
  std::vector<double> sum_g(c, 0.0), sum_gx(c, 0.0);
  // Pointers and per-channel constants hoisted out of the loops: the same
  // expressions as per element, so the same bits.
  const float *px = x.f32(), *pdy = d_out.f32(), *pmean = mean.f32(), *prstd = rstd.f32(),
              *pgamma = gamma.f32();
  reduce_rows(rows, 5.0 * c, c, std::array<double*, 2>{sum_g.data(), sum_gx.data()},
              [&](int64_t begin, int64_t end, std::array<double*, 2> acc) {
                double* __restrict a0 = acc[0], * __restrict a1 = acc[1];
                for (int64_t i = begin; i < end; ++i) {
                  if (!active(i)) continue;
                  const float *xi = px + i * c, *dyi = pdy + i * c;
                  for (int64_t j = 0; j < c; ++j) {
                    float xhat = (xi[j] - pmean[j]) * prstd[j];
                    float dy = dyi[j];
                    a0[j] += dy;
                    a1[j] += dy * xhat;
                  }
                }
              });
  for (int64_t j = 0; j < c; ++j) {
    if (d_gamma.defined()) d_gamma.f32()[j] += static_cast<float>(sum_gx[j]);
    if (d_beta.defined()) d_beta.f32()[j] += static_cast<float>(sum_g[j]);
  }
  if (!d_x.defined()) return;
  std::vector<float> k(c), mean_g(c), mean_gx(c);
  for (int64_t j = 0; j < c; ++j) {
    k[j] = pgamma[j] * prstd[j];
    mean_g[j] = static_cast<float>(sum_g[j] / n);
    mean_gx[j] = static_cast<float>(sum_gx[j] / n);
  }
  const float *pk = k.data(), *pmg = mean_g.data(), *pmgx = mean_gx.data();
  float* pdx = d_x.f32();
  for_items(rows, 8.0 * c, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (!active(i)) continue;  // masked rows: no gradient
      const float *xi = px + i * c, *dyi = pdy + i * c;
      float* dxi = pdx + i * c;
      if (!training) {
        for (int64_t j = 0; j < c; ++j) dxi[j] += pk[j] * dyi[j];
        continue;
      }
      for (int64_t j = 0; j < c; ++j) {
        float xhat = (xi[j] - pmean[j]) * prstd[j];
        dxi[j] += pk[j] * (dyi[j] - pmg[j] - xhat * pmgx[j]);
      }
    }
  });
}

}  // namespace mare
