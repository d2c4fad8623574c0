// Named parameters of a model, in registration order. Parameter i is
// initialised from Philox stream kStreamParamBase + i of the run's seed.
//
// A ParameterSet lives on one device (cpu unless told otherwise). Initial
// values are always drawn on the CPU and then copied to that device, so the
// same seed gives the same initial weights on every device. `to(device)` moves
// every parameter (value and gradient) in place: the Vars a model holds keep
// pointing at the moved tensors. Build a model on the CPU (models may adjust
// initial values on the host, e.g. an LSTM's forget-gate bias), then move it,
// then build the optimiser (its moments are allocated where the parameters are).
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
  uniform_unit,    // U(−a, a), a = √(3 / D), D the last axis: standard deviation 1/√D, the
                   // Transformer's embedding initialisation (used with a √D factor)
};

class ParameterSet {
 public:
  explicit ParameterSet(uint64_t seed = 0, Device device = Device::cpu)
      : seed_(seed), device_(device) {}

  // Registers and initialises a parameter on the set's device. Names must be
  // unique, non-empty, and must not start with a prefix checkpoints reserve
  // ("adam.", "extra/").
  ag::Var add(const std::string& name, const Shape& shape, Init init);
  // Registers a parameter with the given initial value (copied to the set's
  // device; `initial` itself is left alone).
  ag::Var add(const std::string& name, const Tensor& initial);
  // Moves every parameter, and every gradient already allocated, to `device`.
  void to(Device device);
  Device device() const { return device_; }
  const std::vector<ag::Var>& all() const { return params_; }
  ag::Var get(const std::string& name) const;  // throws if unknown
  void zero_grad();
  int64_t count() const;  // number of scalar parameters
  uint64_t seed() const { return seed_; }

 private:
  void check_name(const std::string& name) const;

  uint64_t seed_;
  Device device_;
  std::vector<ag::Var> params_;
};

}  // namespace mare
