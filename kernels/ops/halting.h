// Dynamic halting (adaptive computation time, SPEC §4.4, thesis eqs. 3-8..3-11):
// the weights p_t that mix the iterations' states, the step counts and the
// ponder cost, from the halting probabilities of the steps taken so far.
//
// For N tokens and K ≤ t_max steps, h: [K, N] (h[t−1, i] = h_t of token i, after
// the sigmoid). Per real token, with S_t = Σ_{s<t} h_s (float, in step order)
// and the threshold θ = 1 − ε (float):
//   the token halts at n = the first t with S_t + h_t ≥ θ, or t = t_max;
//   p_t = h_t for t < n,   p_n = R = 1 − S_n,   p_t = 0 for t > n;
//   so Σ_t p_t = 1 (also when it stops at t_max).
// A token that has not halted within the K given steps (possible only when
// K < t_max) has p_t = h_t for every t ≤ K, steps K, halted 0 and
// R = 1 − Σ_{t≤K} h_t (its weights do not sum to 1 yet).
// Padding (mask 0): p = 0, steps 0, remainder 0, halted 1, and no part in
//   ponder = mean over real tokens of (steps + remainder)   (0 without one).
//
// Backward (n_real = number of real tokens, c = d_ponder / n_real; the
// threshold decisions and n are constants, as in ACT):
//   halted at n:  d_h_t += d_p_t − d_p_n − c   for t < n;  nothing for t ≥ n
//                 (R = 1 − Σ_{t<n} h_t does not depend on h_n);
//   running:      d_h_t += d_p_t − c           for t ≤ K   (R = 1 − Σ_{t≤K} h_t);
//   padding:      nothing.
// Undefined d_p counts as zero. Like every backward, it accumulates (+=).
#pragma once

#include "kernels/tensor.h"

namespace mare {

struct HaltingResult {
  Tensor p;          // [K, N] weights of the steps' states
  Tensor steps;      // i32 [N], the step at which the token halted (1-based), K if running
  Tensor remainder;  // [N], R
  Tensor halted;     // [N], 1 if halted within the K steps (and for padding), else 0
  Tensor ponder;     // [1], mean over real tokens of steps + remainder
};

// h: [K, N], 1 ≤ K ≤ t_max; mask: [N] (nonzero = real token) or undefined (all
// real); eps ∈ [0, 1).
HaltingResult halting_forward(const Tensor& h, const Tensor& mask, int t_max, float eps = 0.01f);
// d_h: [K, N] (skipped when undefined); d_p: [K, N] or undefined; fwd: the
// forward result for the same h, mask (its steps and halted are read); d_ponder:
// [1], the ponder cost's gradient on h's device (read there by the GPU kernels), or
// undefined (zero).
void halting_backward(Tensor& d_h, const Tensor& d_p, const Tensor& d_ponder, const Tensor& h,
                      const HaltingResult& fwd, const Tensor& mask);

}  // namespace mare
