#include "models/optim.h"

#include <cmath>
#include <stdexcept>

namespace mare {

double clip_grad_norm(const std::vector<ag::Var>& params, double max_norm) {
  double sq = 0.0;
  for (const ag::Var& p : params) {
    if (!p->grad.defined()) continue;
    const float* g = p->grad.f32();
    for (int64_t i = 0; i < p->grad.numel(); ++i) sq += static_cast<double>(g[i]) * g[i];
  }
  double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    float k = static_cast<float>(max_norm / norm);
    for (const ag::Var& p : params)
      if (p->grad.defined()) {
        float* g = p->grad.f32();
        for (int64_t i = 0; i < p->grad.numel(); ++i) g[i] *= k;
      }
  }
  return norm;
}

Adam::Adam(const ParameterSet& params, AdamConfig config) : params_(params.all()), cfg_(config) {
  for (const ag::Var& p : params_) {
    m_.push_back(Tensor::zeros_like(p->value));
    v_.push_back(Tensor::zeros_like(p->value));
  }
}

double Adam::step(float lr) {
  if (cfg_.l2 > 0)
    for (const ag::Var& p : params_) {
      float* g = p->grad_buffer().f32();
      const float* w = p->value.f32();
      for (int64_t i = 0; i < p->value.numel(); ++i) g[i] += 2.0f * cfg_.l2 * w[i];
    }
  double norm = clip_grad_norm(params_, cfg_.clip_norm);
  ++t_;
  const double c1 = 1.0 - std::pow(static_cast<double>(cfg_.beta1), static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(static_cast<double>(cfg_.beta2), static_cast<double>(t_));
  for (size_t k = 0; k < params_.size(); ++k) {
    const ag::Var& p = params_[k];
    if (!p->grad.defined()) continue;
    float *w = p->value.f32(), *m = m_[k].f32(), *v = v_[k].f32();
    const float* g = p->grad.f32();
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      m[i] = cfg_.beta1 * m[i] + (1 - cfg_.beta1) * g[i];
      v[i] = cfg_.beta2 * v[i] + (1 - cfg_.beta2) * g[i] * g[i];
      double mhat = m[i] / c1, vhat = v[i] / c2;
      w[i] -= static_cast<float>(lr * mhat / (std::sqrt(vhat) + cfg_.eps));
    }
  }
  return norm;
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
