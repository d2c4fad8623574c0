// Losses on the CPU.
//   cross-entropy: d_z[n, c] = d_loss · w[y_n] / Σw · (p[n, c] − [c = y_n])
//   mse:           d_pred = d_loss · 2 (pred − target) / n,  d_target = −d_pred
#include "kernels/ops/loss.h"

#include <cmath>

#include "kernels/ops/common.h"
#include "kernels/ops/softmax.h"

namespace mare {
using namespace detail;

namespace {

double weight_sum(const Tensor& targets, const Tensor& weights, int64_t classes, const char* op) {
  double total = 0.0;
  for (int64_t n = 0, n_n = targets.numel(); n < n_n; ++n) {
    int32_t y = targets.i32()[n];
    if (y == -1) continue;
    if (y < 0 || y >= classes)
      throw std::out_of_range(std::string(op) + ": target " + std::to_string(y) + " of row " +
                              std::to_string(n) + " is not a class in [0, " +
                              std::to_string(classes) + ") or −1");
    total += weights.defined() ? weights.f32()[y] : 1.0;
  }
  return total;
}

// The loss's gradient: a defined float32 [1] tensor.
void check_loss_gradient(const Tensor& d_loss, const char* what) {
  check_defined(d_loss, what);
  check_dtype(d_loss, DType::f32, what);
  check_shape(d_loss, {1}, what);
}

}  // namespace

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const Tensor& weights) {
  check_rank(logits, 2, "cross_entropy_forward: logits");
  check_dtype(targets, DType::i32, "cross_entropy_forward: targets");
  check_shape(targets, {logits.dim(0)}, "cross_entropy_forward: targets");
  int64_t n = logits.dim(0), c = logits.dim(1);
  if (weights.defined()) check_shape(weights, {c}, "cross_entropy_forward: weights");
  MARE_CUDA_DISPATCH("cross_entropy_forward", cross_entropy_forward(logits, targets, weights),
                     &logits, &targets, &weights);
  double wsum = weight_sum(targets, weights, c, "cross_entropy_forward");
  Tensor logp = log_softmax_forward(logits);
  CrossEntropyResult r{Tensor::zeros({1}), Tensor::empty(logits.shape())};
  double loss = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) r.probs.f32()[i * c + j] = std::exp(logp.f32()[i * c + j]);
    int32_t y = targets.i32()[i];
    if (y == -1) continue;
    double w = weights.defined() ? weights.f32()[y] : 1.0;
    loss -= w * logp.f32()[i * c + y];
  }
  r.loss.f32()[0] = wsum > 0 ? static_cast<float>(loss / wsum) : 0.0f;
  return r;
}

void cross_entropy_backward(Tensor& d_logits, const Tensor& d_loss, const Tensor& probs,
                            const Tensor& targets, const Tensor& weights) {
  if (!d_logits.defined()) return;
  check_loss_gradient(d_loss, "cross_entropy_backward: d_loss");
  check_rank(probs, 2, "cross_entropy_backward: probs");
  check_same_shape(d_logits, probs, "cross_entropy_backward: d_logits");
  int64_t n = probs.dim(0), c = probs.dim(1);
  check_dtype(targets, DType::i32, "cross_entropy_backward: targets");
  check_shape(targets, {n}, "cross_entropy_backward: targets");
  if (weights.defined()) check_shape(weights, {c}, "cross_entropy_backward: weights");
  MARE_CUDA_DISPATCH("cross_entropy_backward",
                     cross_entropy_backward(d_logits, d_loss, probs, targets, weights), &d_logits,
                     &d_loss, &probs, &targets, &weights);
  double wsum = weight_sum(targets, weights, c, "cross_entropy_backward");
  if (wsum <= 0) return;
  const float g = d_loss.f32()[0];
  for (int64_t i = 0; i < n; ++i) {
    int32_t y = targets.i32()[i];
    if (y == -1) continue;
    float k = static_cast<float>(g * (weights.defined() ? weights.f32()[y] : 1.0) / wsum);
    for (int64_t j = 0; j < c; ++j)
      d_logits.f32()[i * c + j] += k * (probs.f32()[i * c + j] - (j == y ? 1.0f : 0.0f));
  }
}

Tensor mse_forward(const Tensor& pred, const Tensor& target) {
  check_same_shape(pred, target, "mse_forward");
  MARE_CUDA_DISPATCH("mse_forward", mse_forward(pred, target), &pred, &target);
  double sum = 0.0;
  for (int64_t i = 0, n_i = pred.numel(); i < n_i; ++i) {
    double d = static_cast<double>(pred.f32()[i]) - target.f32()[i];
    sum += d * d;
  }
  Tensor out = Tensor::empty({1});
  out.f32()[0] = pred.numel() ? static_cast<float>(sum / pred.numel()) : 0.0f;
  return out;
}

void mse_backward(Tensor& d_pred, Tensor& d_target, const Tensor& d_loss, const Tensor& pred,
                  const Tensor& target) {
  check_loss_gradient(d_loss, "mse_backward: d_loss");
  check_same_shape(pred, target, "mse_backward");
  if (d_pred.defined()) check_same_shape(d_pred, pred, "mse_backward: d_pred");
  if (d_target.defined()) check_same_shape(d_target, target, "mse_backward: d_target");
  MARE_CUDA_DISPATCH("mse_backward", mse_backward(d_pred, d_target, d_loss, pred, target), &d_pred,
                     &d_target, &d_loss, &pred, &target);
  float k = pred.numel() ? 2.0f * d_loss.f32()[0] / static_cast<float>(pred.numel()) : 0.0f;
  for (int64_t i = 0, n_i = pred.numel(); i < n_i; ++i) {
    float g = k * (pred.f32()[i] - target.f32()[i]);
    if (d_pred.defined()) d_pred.f32()[i] += g;
    if (d_target.defined()) d_target.f32()[i] -= g;
  }
}

}  // namespace mare
