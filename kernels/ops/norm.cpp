// Layer norm and batch norm on the CPU. Statistics accumulate in double.
//
// With x̂ = (x − μ)·rstd and g = d_out ⊙ γ over a group of n elements:
//   d_x = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))   (statistics of the group)
//   d_γ += Σ d_out ⊙ x̂,   d_β += Σ d_out
// Layer norm's group is a row; batch norm's is a channel over all rows.
#include "kernels/ops/norm.h"

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
  for (int64_t i = 0; i < rows; ++i) {
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
  for (int64_t i = 0; i < rows; ++i) {
    const float *xi = x.f32() + i * c, *gi = d_out.f32() + i * c;
    float mu = mean.f32()[i], rs = rstd.f32()[i];
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      float xhat = (xi[j] - mu) * rs;
      float g = gi[j] * gamma.f32()[j];
      mean_g += g;
      mean_gx += g * xhat;
      if (d_gamma.defined()) d_gamma.f32()[j] += gi[j] * xhat;
      if (d_beta.defined()) d_beta.f32()[j] += gi[j];
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
}

NormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              Tensor& running_mean, Tensor& running_var, bool training,
                              float momentum, float eps) {
  check_defined(x, "batch_norm_forward");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "batch_norm_forward: gamma");
  check_shape(beta, {c}, "batch_norm_forward: beta");
  check_shape(running_mean, {c}, "batch_norm_forward: running_mean");
  check_shape(running_var, {c}, "batch_norm_forward: running_var");
  if (training && rows < 2)
    throw std::invalid_argument("batch_norm_forward: training needs at least 2 rows, got " +
                                std::to_string(rows) + " (shape " + x.shape().str() + ")");
  MARE_CUDA_DISPATCH(
      "batch_norm_forward",
      batch_norm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps), &x,
      &gamma, &beta, &running_mean, &running_var);
  NormResult r{Tensor::empty(x.shape()), Tensor::empty({c}), Tensor::empty({c})};
  if (training) {
    std::vector<double> mu(c, 0.0), var(c, 0.0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < c; ++j) mu[j] += x.f32()[i * c + j];
    for (int64_t j = 0; j < c; ++j) mu[j] /= rows;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < c; ++j) {
        double d = x.f32()[i * c + j] - mu[j];
        var[j] += d * d;
      }
    for (int64_t j = 0; j < c; ++j) {
      double biased = var[j] / rows, unbiased = var[j] / (rows - 1);
      r.mean.f32()[j] = static_cast<float>(mu[j]);
      r.rstd.f32()[j] = static_cast<float>(1.0 / std::sqrt(biased + eps));
      running_mean.f32()[j] = (1 - momentum) * running_mean.f32()[j] + momentum * mu[j];
      running_var.f32()[j] = (1 - momentum) * running_var.f32()[j] + momentum * unbiased;
    }
  } else {
    for (int64_t j = 0; j < c; ++j) {
      r.mean.f32()[j] = running_mean.f32()[j];
      r.rstd.f32()[j] = 1.0f / std::sqrt(running_var.f32()[j] + eps);
    }
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j)
      r.out.f32()[i * c + j] =
          (x.f32()[i * c + j] - r.mean.f32()[j]) * r.rstd.f32()[j] * gamma.f32()[j] + beta.f32()[j];
  return r;
}

void batch_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, bool training) {
  check_same_shape(d_out, x, "batch_norm_backward: d_out");
  int64_t c = last_dim(x), rows = leading_rows(x);
  check_shape(gamma, {c}, "batch_norm_backward: gamma");
  check_shape(mean, {c}, "batch_norm_backward: mean");
  check_shape(rstd, {c}, "batch_norm_backward: rstd");
  if (d_x.defined()) check_same_shape(d_x, x, "batch_norm_backward: d_x");
  if (d_gamma.defined()) check_shape(d_gamma, {c}, "batch_norm_backward: d_gamma");
  if (d_beta.defined()) check_shape(d_beta, {c}, "batch_norm_backward: d_beta");
  MARE_CUDA_DISPATCH(
      "batch_norm_backward",
      batch_norm_backward(d_x, d_gamma, d_beta, d_out, x, gamma, mean, rstd, training), &d_x,
      &d_gamma, &d_beta, &d_out, &x, &gamma, &mean, &rstd);
  std::vector<double> sum_g(c, 0.0), sum_gx(c, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j) {
      float xhat = (x.f32()[i * c + j] - mean.f32()[j]) * rstd.f32()[j];
      float dy = d_out.f32()[i * c + j];
      sum_g[j] += dy;
      sum_gx[j] += dy * xhat;
    }
  for (int64_t j = 0; j < c; ++j) {
    if (d_gamma.defined()) d_gamma.f32()[j] += static_cast<float>(sum_gx[j]);
    if (d_beta.defined()) d_beta.f32()[j] += static_cast<float>(sum_g[j]);
  }
  if (!d_x.defined()) return;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j) {
      float k = gamma.f32()[j] * rstd.f32()[j];
      float dy = d_out.f32()[i * c + j];
      if (!training) {
        d_x.f32()[i * c + j] += k * dy;
        continue;
      }
      float xhat = (x.f32()[i * c + j] - mean.f32()[j]) * rstd.f32()[j];
      d_x.f32()[i * c + j] += k * (dy - static_cast<float>(sum_g[j] / rows) -
                                   xhat * static_cast<float>(sum_gx[j] / rows));
    }
}

}  // namespace mare
