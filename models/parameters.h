// Named parameters of a model, in registration order. Parameter i is
// initialised from Philox stream kStreamParamBase + i of the run's seed, so the
// same seed gives the same initial weights on every device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "models/autograd.h"

namespace mare {

enum class Init {
  zeros,
  ones,
  glorot_uniform,  // U(−a, a), a = √(6 / (fan_in + fan_out)); fans from the last two axes
  uniform_small,   // U(−0.05, 0.05), Keras's embedding default
};

class ParameterSet {
 public:
  explicit ParameterSet(uint64_t seed = 0) : seed_(seed) {}

  // Registers and initialises a parameter. Names must be unique.
  ag::Var add(const std::string& name, const Shape& shape, Init init);
  const std::vector<ag::Var>& all() const { return params_; }
  ag::Var get(const std::string& name) const;  // throws if unknown
  void zero_grad();
  int64_t count() const;  // number of scalar parameters
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
  std::vector<ag::Var> params_;
};

}  // namespace mare
