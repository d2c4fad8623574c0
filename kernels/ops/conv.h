// 1-D convolutions over the sequence axis with "same" padding.
//
// Layout [B, I, C]: batch, sequence position, channel. Kernel size K is odd;
// position i sees inputs i − K/2 .. i + K/2, zeros beyond the ends.
#pragma once

#include "kernels/tensor.h"

namespace mare {

// out[b, i, o] = bias[o] + Σ_k Σ_c x[b, i + k − K/2, c] · w[k, c, o]
// x: [B, I, Cin], w: [K, Cin, Cout], bias: [Cout] or undefined -> out: [B, I, Cout]
Tensor conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias = {});
void conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out, const Tensor& x,
                     const Tensor& w);

// Depthwise: each channel has its own kernel.
// out[b, i, c] = bias[c] + Σ_k x[b, i + k − K/2, c] · w[k, c]
// x: [B, I, C], w: [K, C], bias: [C] or undefined -> out: [B, I, C]
Tensor depthwise_conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias = {});
void depthwise_conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out,
                               const Tensor& x, const Tensor& w);

}  // namespace mare
