// Losses: class-weighted cross-entropy over logits, and mean squared error.
// Both return a 1-element tensor; backward takes d_loss (usually 1).
#pragma once

#include "kernels/tensor.h"

namespace mare {

// loss = Σ_n w[y_n] · (−log softmax(z_n)[y_n]) / Σ_n w[y_n]
// logits: [N, C]; targets: i32 [N], a class in [0, C) or −1 (ignored);
// weights: [C] or undefined (all 1). With thesis eq. 4-2 weights
// w_c = total / (classes · count_c) this is the class-balanced loss.
// An all-ignored batch has loss 0 and zero gradient.
struct CrossEntropyResult {
  Tensor loss;   // [1]
  Tensor probs;  // [N, C], softmax(logits), what backward needs
};
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                         const Tensor& weights = {});
// d_loss: [1], the loss's gradient, on the device of the other tensors (the GPU
// kernels read it there: no wait for the device).
void cross_entropy_backward(Tensor& d_logits, const Tensor& d_loss, const Tensor& probs,
                            const Tensor& targets, const Tensor& weights = {});

// loss = mean((pred − target)²) over all elements; pred, target: same shape.
Tensor mse_forward(const Tensor& pred, const Tensor& target);
// d_loss: [1], as for cross_entropy_backward.
void mse_backward(Tensor& d_pred, Tensor& d_target, const Tensor& d_loss, const Tensor& pred,
                  const Tensor& target);

}  // namespace mare
