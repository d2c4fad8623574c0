// Autograd wrappers of the ops that the relation-extraction models add to the
// kernel layer: batch norm over the non-padded tokens and the halting unit's
// weights (SPEC §4.2–4.4).
#pragma once

#include "kernels/tensor.h"
#include "models/autograd.h"

namespace mare::ag {

// Batch norm whose statistics (and running averages) use only the rows with
// row_mask 1; masked rows come out as 0. x: [.., C], row_mask: [rows].
Var batch_norm_masked(const Var& x, const Var& gamma, const Var& beta, Tensor& running_mean,
                      Tensor& running_var, const Tensor& row_mask, bool training,
                      float momentum = 0.1f, float eps = 1e-5f);

// Adaptive computation time over the K steps taken so far (SPEC §4.4).
struct Halting {
  Var p;             // [K, N] the weight of each step's state
  Var ponder;        // [1] mean over real tokens of steps + remainder
  Tensor steps;      // i32 [N]
  Tensor remainder;  // [N]
  Tensor halted;     // [N] 1 when the token has halted within the K steps
};
// h: [K, N] halting probabilities; mask: [N] (1 real token).
Halting halting(const Var& h, const Tensor& mask, int t_max, float eps = 0.01f);

}  // namespace mare::ag
