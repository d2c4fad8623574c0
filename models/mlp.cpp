#include "models/mlp.h"

#include "kernels/random.h"
#include "models/functions.h"

namespace mare {

Mlp::Mlp(const ModelSpec& spec, int64_t features, int64_t classes, uint64_t seed)
    : Classifier(seed),
      layers_(spec.get_int("layers", 2)),
      dropout_(static_cast<float>(spec.get_double("dropout", 0.0))) {
  int64_t hidden = spec.get_int("hidden", 16);
  if (layers_ < 1 || hidden < 1) throw std::invalid_argument("mlp: layers and hidden must be ≥ 1");
  int64_t in = features;
  for (int64_t l = 0; l < layers_; ++l) {
    params_.add("layer" + std::to_string(l) + ".w", {in, hidden}, Init::glorot_uniform);
    params_.add("layer" + std::to_string(l) + ".b", {hidden}, Init::zeros);
    in = hidden;
  }
  params_.add("out.w", {in, classes}, Init::glorot_uniform);
  params_.add("out.b", {classes}, Init::zeros);
}

ag::Var Mlp::forward(const ag::Var& x, bool training) {
  ag::Var h = x;
  for (int64_t l = 0; l < layers_; ++l) {
    std::string p = "layer" + std::to_string(l);
    h = ag::relu(ag::bias_add(ag::matmul(h, params_.get(p + ".w")), params_.get(p + ".b")));
    h = ag::dropout(h, dropout_, training, params_.seed(),
                    kStreamDropoutBase + static_cast<uint32_t>(l), step_ * h->value.numel());
  }
  if (training) ++step_;
  return ag::bias_add(ag::matmul(h, params_.get("out.w")), params_.get("out.b"));
}

}  // namespace mare
