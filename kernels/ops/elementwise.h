// Elementwise ops: bias add, add, mul, scale, row selection and scaling, activations,
// dropout.
//
// Rule of the whole kernel layer: forward returns new tensors; backward
// ACCUMULATES (+=) into the gradient tensors it is given, and skips any that is
// undefined. Shapes: `x` is any shape; the bias of bias_add is [C] with C the
// last axis of x.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace mare {

// out[.., c] = x[.., c] + bias[c]          x: [.., C], bias: [C]
Tensor bias_add_forward(const Tensor& x, const Tensor& bias);
void bias_add_backward(Tensor& d_x, Tensor& d_bias, const Tensor& d_out);

// out = a + b, out = a ⊙ b (same shapes), out = s · x
Tensor add_forward(const Tensor& a, const Tensor& b);
void add_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out);
Tensor mul_forward(const Tensor& a, const Tensor& b);
void mul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a, const Tensor& b);
Tensor scale_forward(const Tensor& x, float s);
void scale_backward(Tensor& d_x, const Tensor& d_out, float s);
// out = a / b (same shapes; IEEE division, correctly rounded on both devices)
// d_a += d_out / b,   d_b += −(d_out · out) / b
// A step that runs on the device divides by counts it made there (the memory's gate
// regulariser over the tokens that step) exactly as the host divides by its own.
Tensor div_forward(const Tensor& a, const Tensor& b);
void div_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& out,
                  const Tensor& b);

// out[r, ..] = keep[r] ≠ 0 ? a[r, ..] : b[r, ..]      keep: [R]; a, b: one shape whose
// leading axes hold R rows ([R, ..] or [B, T, ..] with B·T = R)
// A state carried through dynamic halting: a running token (keep 1) takes its new
// state a, a halted or padded one (keep 0) keeps b. For finite values this is
// a·keep + b·(1 − keep) with keep ∈ {0, 1}, in one pass and without the widened
// masks. Backward routes each row of d_out to d_a (keep ≠ 0) or d_b (keep = 0);
// keep, a mask, takes no gradient.
Tensor select_rows_forward(const Tensor& keep, const Tensor& a, const Tensor& b);
void select_rows_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& keep);

// out[r, ..] = x[r, ..] · s[r]      s: [R]; x: leading axes holding R rows, as select_rows
// A per-row factor broadcast over the row, in one pass: a mask over tokens (padding),
// halting's weights p_t of the states. Backward: d_x += d_out · s[r], and d_s[r] += the
// row's Σ_j d_out[r, j] · x[r, j] (CPU: in float, j ascending, from 0, then added).
Tensor scale_rows_forward(const Tensor& x, const Tensor& s);
void scale_rows_backward(Tensor& d_x, Tensor& d_s, const Tensor& d_out, const Tensor& x,
                         const Tensor& s);

// Activations. Backward takes whichever of x or out its derivative needs.
Tensor relu_forward(const Tensor& x);  // max(0, x)
void relu_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
Tensor relu6_forward(const Tensor& x);  // min(max(0, x), 6)
void relu6_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
Tensor sigmoid_forward(const Tensor& x);  // 1 / (1 + e^-x)
void sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor tanh_forward(const Tensor& x);
void tanh_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out);
Tensor oneplus_forward(const Tensor& x);  // 1 + log(1 + e^x), DNC strengths
void oneplus_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);
// Hard sigmoid as in Keras/TensorFlow 1.x (the thesis's framework):
// clip(0.2·x + 0.5, 0, 1); derivative 0.2 on (−2.5, 2.5), 0 outside.
Tensor hard_sigmoid_forward(const Tensor& x);
void hard_sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x);

// Inverted dropout with a Philox mask: element j is kept when
// philox_uniform(seed, stream, offset + j) >= p, and kept values are scaled by
// 1/(1 − p). `mask` receives 0 or 1/(1 − p) per element (what backward needs).
struct DropoutResult {
  Tensor out;   // same shape as x
  Tensor mask;  // same shape as x
};
DropoutResult dropout_forward(const Tensor& x, float p, uint64_t seed, uint32_t stream,
                              uint64_t offset = 0);
void dropout_backward(Tensor& d_x, const Tensor& d_out, const Tensor& mask);

}  // namespace mare
