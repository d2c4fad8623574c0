// Optimiser kernels: the in-place updates of one training step, on either
// device (models/optim.h composes them into L2, clipping and Adam). They are
// not differentiable ops: no backward, and not in op_registry() (the op table's
// gradient checks do not apply); tests/kernels/test_optim_kernels.cpp checks
// the CPU against naive references and the GPU against the CPU.
//
//   l2_grad_add:   g ← g + (2λ)·w                   (gradient of λ·Σw², Keras's l2(λ))
//   scale_inplace: x ← s·x
//   sum_squares:   Σ x², in double, in a fixed order (below)
//   adam_update:   m ← β₁·m + (1−β₁)·g,  v ← β₂·v + ((1−β₂)·g)·g  [float]
//                  m̂ = m / c₁, v̂ = v / c₂, c_k = 1 − β_kᵗ        [double]
//                  w ← w − float(lr·m̂ / (√v̂ + ε))
//
// Rounding is part of the contract: every float expression is evaluated in the
// order written above with one rounding per operation (the CUDA kernels spell
// each operation with an explicitly rounded intrinsic), so the GPU gives the
// CPU's bits. These are the expressions of the original models/optim.cpp loop,
// kept bit for bit. Caveat: GCC's default for C++ (unlike ISO C) is
// -ffp-contract=fast, so with -march=native the host may fuse a·b + c into an
// FMA; the CPU side stays bit for bit with the original loop (tested), and
// only the CUDA comparison test (run on a GPU) can show whether the host fused.
//
// sum_squares' order, the same on both devices and for any thread count: the
// squares (exact in double) are summed sequentially within chunks of
// kSumSquaresChunk consecutive elements; the chunk sums are summed the same way
// in chunks of kSumSquaresChunk, level after level, until one value remains.
// Over several tensors, the per-tensor totals are added in list order.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "kernels/tensor.h"

namespace mare {

inline constexpr int64_t kSumSquaresChunk = 256;

// grad, w: the same shape, float32, one device.
void l2_grad_add(Tensor& grad, const Tensor& w, float lambda);
void scale_inplace(Tensor& x, float s);
double sum_squares(const Tensor& x);
// Σ over the defined tensors of xs (undefined ones are skipped); all on one device.
double sum_squares(std::span<const Tensor> xs);

// One Adam update in place; `step` is t ≥ 1 (the count including this update).
// w, g, m, v: the same shape, float32, one device.
void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1,
                 float beta2, float eps, int64_t step);

// One whole optimiser step over a list of parameters, as one op: the
// composition of the kernels above in the order of models/optim.h, bit for bit
// the same as calling them one by one:
//   1. when l2 > 0, for every k with a defined gs[k]: l2_grad_add(gs[k], ws[k], l2)
//   2. norm = √(sum_squares(gs)); when clip_norm > 0 and norm > clip_norm, every
//      defined gs[k] ← gs[k] · float(clip_norm / norm)           (scale_inplace)
//   3. for every k with a defined gs[k]: adam_update(ws[k], gs[k], ms[k], vs[k], …)
// ws, gs, ms, vs: lists of one length; gs[k] may be undefined (no gradient: the
// parameter is left alone, no L2, no moment decay, and counts zero in the norm).
// Returns a 1-element float32 tensor on the parameters' device holding
// float(norm), the norm before clipping; it is not read back here, so on the
// GPU the whole step runs without the host waiting: the norm, the clipping
// decision and the scale stay on the device (a handful of launches in all,
// whatever the number of tensors).
struct AdamStepConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float l2 = 0.0f;         // λ; 0 turns it off
  float clip_norm = 0.0f;  // c; 0 turns clipping off
  int64_t step = 1;        // t ≥ 1, the count including this update
};
Tensor adam_step(std::span<Tensor> ws, std::span<Tensor> gs, std::span<Tensor> ms,
                 std::span<Tensor> vs, const AdamStepConfig& config);

// Adam's bias corrections c₁ = 1 − β₁ᵗ, c₂ = 1 − β₂ᵗ, computed on the host in
// double for both devices (one definition, so both use the same pow()).
struct AdamBiasCorrection {
  double c1, c2;
};
inline AdamBiasCorrection adam_bias_correction(float beta1, float beta2, int64_t step) {
  return {1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step)),
          1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step))};
}

}  // namespace mare
