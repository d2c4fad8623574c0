#include "models/optim.h"

#include <cmath>
#include <stdexcept>

#include "kernels/ops/optim.h"

namespace mare {

Adam::Adam(const ParameterSet& params, AdamConfig config) : params_(params.all()), cfg_(config) {
  for (const ag::Var& p : params_) {
    m_.push_back(Tensor::zeros_like(p->value));
    v_.push_back(Tensor::zeros_like(p->value));
  }
}

void Adam::step(float lr) {
  for (size_t k = 0; k < params_.size(); ++k)
    if (params_[k]->value.device() != m_[k].device())
      throw std::logic_error("Adam: parameter '" + params_[k]->name + "' is on " +
                             to_string(params_[k]->value.device()) + " but its moments are on " +
                             to_string(m_[k].device()) +
                             "; build the optimiser after ParameterSet::to()");
  // A parameter with no gradient (one this step's loss does not reach) is left
  // alone: no L2, no moment decay, no move.
  std::vector<Tensor> ws, gs;
  ws.reserve(params_.size());
  gs.reserve(params_.size());
  for (const ag::Var& p : params_) {
    ws.push_back(p->value);
    gs.push_back(p->grad);  // shallow: L2 and clipping update p->grad
  }
  ++t_;
  AdamStepConfig c;
  c.lr = lr;
  c.beta1 = cfg_.beta1;
  c.beta2 = cfg_.beta2;
  c.eps = cfg_.eps;
  c.l2 = cfg_.l2 > 0 ? cfg_.l2 : 0.0f;
  c.clip_norm = cfg_.clip_norm;
  c.step = t_;
  last_norm_ = adam_step(ws, gs, m_, v_, c);
}

double Adam::last_grad_norm() const {
  return last_norm_.defined() ? static_cast<double>(last_norm_.item()) : 0.0;
}

float LrSchedule::at(int64_t step) const {
  switch (kind) {
    case Kind::constant:
      return base;
    case Kind::warmup:
      return step < warmup_steps ? base * static_cast<float>(step + 1) / warmup_steps : base;
    case Kind::step_decay:
      return base * std::pow(gamma, static_cast<float>(step / std::max<int64_t>(1, step_size)));
  }
  return base;
}

LrSchedule LrSchedule::parse(const std::string& spec, float base) {
  LrSchedule s;
  s.base = base;
  auto fail = [&] {
    return std::invalid_argument("learning-rate schedule '" + spec +
                                 "': expected constant, warmup:STEPS or step:SIZE:GAMMA");
  };
  try {
    if (spec == "constant") return s;
    if (spec.rfind("warmup:", 0) == 0) {
      s.kind = Kind::warmup;
      s.warmup_steps = std::stoll(spec.substr(7));
      if (s.warmup_steps < 1) throw fail();
      return s;
    }
    if (spec.rfind("step:", 0) == 0) {
      size_t colon = spec.find(':', 5);
      if (colon == std::string::npos) throw fail();
      s.kind = Kind::step_decay;
      s.step_size = std::stoll(spec.substr(5, colon - 5));
      s.gamma = std::stof(spec.substr(colon + 1));
      if (s.step_size < 1 || !(s.gamma > 0)) throw fail();
      return s;
    }
  } catch (const std::logic_error&) {
    throw fail();
  }
  throw fail();
}

}  // namespace mare
