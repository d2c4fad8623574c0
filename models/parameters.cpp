#include "models/parameters.h"

#include <cmath>
#include <stdexcept>

#include "kernels/random.h"

namespace mare {

void ParameterSet::check_name(const std::string& name) const {
  if (name.empty()) throw std::invalid_argument("parameter with an empty name");
  if (name.rfind("adam.", 0) == 0 || name.rfind("extra/", 0) == 0)
    throw std::invalid_argument(
        "parameter '" + name + "': the prefixes 'adam.' and 'extra/' are reserved for checkpoints");
  for (const ag::Var& p : params_)
    if (p->name == name) throw std::invalid_argument("parameter '" + name + "' registered twice");
}

ag::Var ParameterSet::add(const std::string& name, const Shape& shape, Init init) {
  check_name(name);
  Tensor t = Tensor::empty(shape);  // drawn on the CPU, then moved: one set of bits per seed
  uint32_t stream = kStreamParamBase + static_cast<uint32_t>(params_.size());
  switch (init) {
    case Init::zeros:
      t.fill(0.0f);
      break;
    case Init::ones:
      t.fill(1.0f);
      break;
    case Init::uniform_small:
      fill_uniform(t, seed_, stream, -0.05f, 0.05f);
      break;
    case Init::uniform_unit: {
      const float a = std::sqrt(3.0f / static_cast<float>(shape[-1]));
      fill_uniform(t, seed_, stream, -a, a);
      break;
    }
    case Init::glorot_uniform: {
      int64_t fan_out = shape[-1], fan_in = shape.rank() > 1 ? shape.numel() / fan_out : 1;
      if (shape.rank() == 3) fan_in = shape[0] * shape[1];  // conv kernels [K, Cin, Cout]
      float a = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      fill_uniform(t, seed_, stream, -a, a);
      break;
    }
  }
  params_.push_back(ag::leaf(device_ == Device::cpu ? t : t.to(device_), name));
  return params_.back();
}

ag::Var ParameterSet::add(const std::string& name, const Tensor& initial) {
  check_name(name);
  check_defined(initial, "ParameterSet::add");
  check_dtype(initial, DType::f32, "ParameterSet::add");
  params_.push_back(ag::leaf(initial.to(device_), name));
  return params_.back();
}

void ParameterSet::to(Device device) {
  if (device == device_) return;
  // Copy everything first, so a failure (no GPU, out of memory) leaves the set
  // whole on its old device.
  std::vector<Tensor> values, grads;
  for (const ag::Var& p : params_) {
    values.push_back(p->value.to(device));
    grads.push_back(p->grad.defined() ? p->grad.to(device) : Tensor());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i]->value = values[i];
    params_[i]->grad = grads[i];
  }
  device_ = device;
}

ag::Var ParameterSet::get(const std::string& name) const {
  for (const ag::Var& p : params_)
    if (p->name == name) return p;
  throw std::out_of_range("no parameter named '" + name + "'");
}

void ParameterSet::zero_grad() {
  for (const ag::Var& p : params_)
    if (p->grad.defined()) p->grad.zero();
}

int64_t ParameterSet::count() const {
  int64_t n = 0;
  for (const ag::Var& p : params_) n += p->value.numel();
  return n;
}

}  // namespace mare
