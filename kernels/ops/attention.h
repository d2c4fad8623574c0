// Multi-head scaled dot-product attention with a key padding mask.
//
// The projections (X·W_Q, X·W_K, X·W_V and the output projection) are matmuls
// done by the caller; this op is the part between them. With H heads and
// d_k = D / H, head h uses columns [h·d_k, (h+1)·d_k) of q, k, v:
//   S_h = Q_h K_hᵀ / √d_k,  P_h = softmax over unmasked keys of S_h,  O_h = P_h V_h
// and out concatenates the O_h along the feature axis. A query whose keys are
// all masked gets a zero output.
#pragma once

#include "kernels/tensor.h"

namespace mare {

struct AttentionResult {
  Tensor out;    // [B, I, D]
  Tensor probs;  // [B, H, I, J], what backward needs (and what a researcher inspects)
};

// q: [B, I, D], k, v: [B, J, D], key_mask: [B, J] (1 attend, 0 padding) or undefined.
AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads,
                                  const Tensor& key_mask = {});
void attention_backward(Tensor& d_q, Tensor& d_k, Tensor& d_v, const Tensor& d_out, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& probs, int heads);

}  // namespace mare
