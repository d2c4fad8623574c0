// Optimisation: Adam, L2 regularisation, global-norm gradient clipping and
// learning-rate schedules. One step, in this order:
//   1. L2:   g ← g + 2·λ·w  (the gradient of λ·Σw², Keras's l2(λ) convention)
//   2. clip: if ‖g‖₂ over all parameters > c, g ← g · c / ‖g‖₂
//   3. Adam: m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,
//            w ← w − lr · m̂ / (√v̂ + ε) with bias-corrected m̂, v̂.
// A parameter without a gradient at a step (one the loss did not reach) is left
// alone by it: no L2, no moment decay, no move (experiments/re_trainer.h relies
// on it). The step is one op, adam_step (kernels/ops/optim.h), so it runs on whichever
// device the ParameterSet lives on and never touches tensor data on the host
// (the norm, the clipping decision and the scale stay on the device). Adam's
// moments are allocated on the parameters' device: build Adam after
// ParameterSet::to().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "models/parameters.h"

namespace mare {

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float l2 = 0.0f;         // λ; 0 turns it off
  float clip_norm = 0.0f;  // c; 0 turns clipping off
};

class Adam {
 public:
  Adam(const ParameterSet& params, AdamConfig config = {});
  // One update with learning rate lr (L2, clipping, Adam): one op over all
  // parameters (adam_step, kernels/ops/optim.h), which on the GPU leaves the
  // host free to go on. Throws std::logic_error when a parameter has moved to
  // another device since this Adam was built.
  void step(float lr);
  // The global gradient norm before clipping at the last step, as a float (0
  // before the first); on the GPU this reads the device.
  double last_grad_norm() const;
  int64_t steps() const { return t_; }
  // State for checkpoints: first and second moments per parameter.
  std::vector<Tensor>& first_moments() { return m_; }
  std::vector<Tensor>& second_moments() { return v_; }
  void set_steps(int64_t t) { t_ = t; }

 private:
  std::vector<ag::Var> params_;
  AdamConfig cfg_;
  std::vector<Tensor> m_, v_;
  Tensor last_norm_;
  int64_t t_ = 0;
};

// Learning rate as a function of the step (0-based).
struct LrSchedule {
  enum class Kind { constant, warmup, step_decay };
  Kind kind = Kind::constant;
  float base = 1e-3f;
  int64_t warmup_steps = 0;  // warmup: linear from base/warmup_steps to base
  int64_t step_size = 1;     // step_decay: multiply by gamma every step_size steps
  float gamma = 0.5f;

  float at(int64_t step) const;
  static LrSchedule parse(const std::string& spec,
                          float base);  // "constant", "warmup:N", "step:N:G"
};

}  // namespace mare
