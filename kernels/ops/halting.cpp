// Dynamic halting on the CPU (equations in kernels/ops/halting.h). One token
// at a time, its steps in order; the running sum and the threshold test are in
// float (the CUDA kernel repeats them operation for operation), the ponder mean
// accumulates in double over the tokens in order.
#include "kernels/ops/halting.h"

#include <string>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {

void check_halting_args(const Tensor& h, const Tensor& mask, int t_max, float eps, const char* op) {
  check_defined(h, op);
  check_rank(h, 2, op);
  check_dtype(h, DType::f32, op);
  if (t_max < 1)
    throw std::invalid_argument(std::string(op) + ": t_max must be at least 1, got " +
                                std::to_string(t_max));
  if (h.dim(0) < 1 || h.dim(0) > t_max)
    throw std::invalid_argument(std::string(op) + ": h must hold 1..t_max (" +
                                std::to_string(t_max) + ") steps, got shape " + h.shape().str());
  if (!(eps >= 0.0f && eps < 1.0f))
    throw std::invalid_argument(std::string(op) + ": eps must be in [0, 1), got " +
                                std::to_string(eps));
  if (mask.defined()) {
    check_dtype(mask, DType::f32, op);
    check_shape(mask, {h.dim(1)}, op);
  }
}

void check_halting_result(const HaltingResult& fwd, int64_t n) {
  check_defined(fwd.steps, "halting_backward: fwd.steps");
  check_defined(fwd.halted, "halting_backward: fwd.halted");
  check_dtype(fwd.steps, DType::i32, "halting_backward: fwd.steps");
  check_dtype(fwd.halted, DType::f32, "halting_backward: fwd.halted");
  check_shape(fwd.steps, {n}, "halting_backward: fwd.steps");
  check_shape(fwd.halted, {n}, "halting_backward: fwd.halted");
}

inline bool is_real(const Tensor& mask, int64_t i) {
  return !mask.defined() || mask.f32()[i] != 0.0f;
}

}  // namespace

HaltingResult halting_forward(const Tensor& h, const Tensor& mask, int t_max, float eps) {
  check_halting_args(h, mask, t_max, eps, "halting_forward");
  MARE_CUDA_DISPATCH("halting_forward", halting_forward(h, mask, t_max, eps), &h, &mask);
  const int64_t k = h.dim(0), n = h.dim(1);
  HaltingResult r{Tensor::zeros({k, n}), Tensor::zeros({n}, Device::cpu, DType::i32),
                  Tensor::zeros({n}), Tensor::zeros({n}), Tensor::zeros({1})};
  const float threshold = 1.0f - eps;
  const float* hp = h.f32();
  float* p = r.p.f32();
  double ponder = 0.0;
  int64_t real = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!is_real(mask, i)) {  // padding: p, steps, R stay 0
      r.halted.f32()[i] = 1.0f;
      continue;
    }
    float s = 0.0f;  // Σ of the earlier h
    int32_t steps = static_cast<int32_t>(k);
    bool halted = false;
    for (int64_t t = 0; t < k; ++t) {
      const float ht = hp[t * n + i];
      if (t + 1 == t_max || s + ht >= threshold) {
        p[t * n + i] = 1.0f - s;
        steps = static_cast<int32_t>(t + 1);
        halted = true;
        break;
      }
      p[t * n + i] = ht;
      s += ht;
    }
    const float remainder = 1.0f - s;
    r.steps.i32()[i] = steps;
    r.remainder.f32()[i] = remainder;
    r.halted.f32()[i] = halted ? 1.0f : 0.0f;
    ponder += static_cast<double>(steps) + remainder;
    ++real;
  }
  r.ponder.f32()[0] = real ? static_cast<float>(ponder / real) : 0.0f;
  return r;
}

void halting_backward(Tensor& d_h, const Tensor& d_p, const Tensor& d_ponder, const Tensor& h,
                      const HaltingResult& fwd, const Tensor& mask) {
  check_defined(h, "halting_backward");
  if (d_ponder.defined()) {
    check_dtype(d_ponder, DType::f32, "halting_backward: d_ponder");
    check_shape(d_ponder, {1}, "halting_backward: d_ponder");
  }
  check_rank(h, 2, "halting_backward");
  const int64_t k = h.dim(0), n = h.dim(1);
  if (mask.defined()) {
    check_dtype(mask, DType::f32, "halting_backward: mask");
    check_shape(mask, {n}, "halting_backward: mask");
  }
  check_halting_result(fwd, n);
  if (d_p.defined()) check_same_shape(d_p, h, "halting_backward: d_p");
  if (d_h.defined()) check_same_shape(d_h, h, "halting_backward: d_h");
  MARE_CUDA_DISPATCH("halting_backward", halting_backward(d_h, d_p, d_ponder, h, fwd, mask), &d_h,
                     &d_p, &d_ponder, &h, &fwd.steps, &fwd.halted, &mask);
  if (!d_h.defined()) return;
  // Host step counts are checked before anything is written (a GPU run trusts
  // its own forward's).
  int64_t real = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!is_real(mask, i)) continue;
    ++real;
    const int32_t steps = fwd.steps.i32()[i];
    if (steps < 1 || steps > k)
      throw std::invalid_argument("halting_backward: fwd.steps[" + std::to_string(i) +
                                  "] = " + std::to_string(steps) + " is not a step in [1, " +
                                  std::to_string(k) + "]");
  }
  if (real == 0) return;
  const float g = d_ponder.defined() ? d_ponder.f32()[0] : 0.0f;
  const float c = static_cast<float>(static_cast<double>(g) / real);
  const float* dp = d_p.defined() ? d_p.f32() : nullptr;
  float* dh = d_h.f32();
  for (int64_t i = 0; i < n; ++i) {
    if (!is_real(mask, i)) continue;
    // A halted token's steps before n feed p_t and R = p_n; a running one's
    // every step feeds p_t and R.
    const int32_t steps = fwd.steps.i32()[i];
    const bool halted = fwd.halted.f32()[i] != 0.0f;
    const int64_t last = halted ? steps - 1 : steps;
    const float d_rem = (halted && dp ? dp[(steps - 1) * n + i] : 0.0f) + c;
    for (int64_t t = 0; t < last; ++t) dh[t * n + i] += (dp ? dp[t * n + i] : 0.0f) - d_rem;
  }
}

}  // namespace mare
