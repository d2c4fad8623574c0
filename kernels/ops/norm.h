// Normalisation: layer norm (over the last axis) and batch norm (per channel of
// the last axis, statistics over all leading rows, e.g. B·I tokens).
#pragma once

#include "kernels/tensor.h"

namespace mare {

struct NormResult {
  Tensor out;   // x's shape
  Tensor mean;  // layer norm: [rows]; batch norm: [C]
  Tensor rstd;  // 1 / sqrt(var + eps), same shape as mean
};

// out = (x − μ_row) · rstd_row · γ + β       x: [.., C], γ, β: [C]
NormResult layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              float eps = 1e-5f);
void layer_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd);

// Batch norm, x: [.., C], γ, β, running_mean, running_var: [C].
// training: normalise with the batch mean and biased variance, and update
//   running ← (1 − momentum) · running + momentum · batch statistic
//   (the running variance takes the unbiased batch variance, as PyTorch and
//   TensorFlow's fused kernel do);
// eval: normalise with the running statistics, which are left unchanged.
// The result's mean/rstd are what normalised x (batch or running statistics).
//
// row_mask (f32 [rows], rows = x.numel() / C; undefined = every row): padding
// (SPEC §4.2). Rows whose mask is 0 take no part: the batch statistics are over
// the n rows with a nonzero mask only, masked rows output 0 (not β) and get no
// gradient, in training and in eval. Without a mask, training needs rows ≥ 2;
// with one, any n is accepted (a padded batch may hold few real tokens):
//   n ≥ 2: as above over those rows;
//   n = 1: running mean updated, running variance left unchanged (no unbiased
//          estimate from one row); the row normalises to β (variance 0);
//   n = 0: running statistics unchanged, result mean 0 and rstd 1/√ε, every
//          output 0.
NormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              Tensor& running_mean, Tensor& running_var, bool training,
                              float momentum = 0.1f, float eps = 1e-5f,
                              const Tensor& row_mask = {});
// `training` and `row_mask` must match the forward call: in eval mode μ and
// rstd are constants, in training mode gradient flows through the batch
// statistics (of the unmasked rows). Masked rows' d_x is left as it is; d_γ, d_β
// sum over unmasked rows only.
void batch_norm_backward(Tensor& d_x, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                         const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, bool training, const Tensor& row_mask = {});

}  // namespace mare
