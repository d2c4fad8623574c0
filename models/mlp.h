// `mlp`: a multi-layer perceptron over feature vectors, the smallest model of
// the registry and the end-to-end proof of the training stack.
//   h_0 = x,  h_l = ReLU(h_{l−1} W_l + b_l),  logits = h_L W_out + b_out
// Switches: hidden=H (16), layers=L (2), dropout=P (0).
#pragma once

#include "models/registry.h"

namespace mare {

class Mlp : public Classifier {
 public:
  Mlp(const ModelSpec& spec, int64_t features, int64_t classes, uint64_t seed);
  ag::Var forward(const ag::Var& x, bool training) override;

 private:
  int64_t layers_;
  float dropout_;
  uint64_t step_ = 0;  // advances the dropout counter between calls
};

}  // namespace mare
