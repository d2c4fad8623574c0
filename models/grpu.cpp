// The GRPU model: the step loop over the fused cell (see models/grpu.h).
#include "models/grpu.h"

#include <stdexcept>

#include "models/functions.h"

namespace mare {

int64_t grpu_parameter_count(int64_t hidden, int64_t fields, int64_t inputs) {
  const int64_t s = hidden + fields;
  return (inputs + hidden) * 2 * s + 2 * s + (inputs + hidden) * hidden + hidden;
}

GrpuModel::GrpuModel(const ModelSpec& spec, const SequenceTaskShape& task, uint64_t seed)
    : SequenceModel(seed), hidden_(spec.get_int("hidden", 100)) {
  for (const auto& [k, v] : spec.switches)
    if (k != "hidden" && k != "prod" && k != "cond" && k != "neutral_one")
      throw std::invalid_argument("grpu: unknown switch '" + k +
                                  "' (known: hidden, prod, cond, neutral_one)");
  if (hidden_ < 1) throw std::invalid_argument("grpu: hidden must be ≥ 1");
  cfg_.prod = spec.has("prod") || task.target == "prod";
  cfg_.cond = spec.has("cond") || task.conditional;
  cfg_.neutral_one = parse_neutral_one(
      spec.switches.count("neutral_one") ? spec.switches.at("neutral_one") : std::string("code"));
  cfg_.clip = task.clip;
  if (task.target != "sum" && task.target != "prod")
    throw std::invalid_argument("grpu: target '" + task.target + "' is not a machine field");
  output_field_ = task.target == "sum" ? cfg_.sum_field() : cfg_.prod_field();
  controller_inputs_ = task.conditional ? 0 : 1;
  const int64_t s = hidden_ + cfg_.fields(), a = controller_inputs_ + hidden_;
  params_.add("gates.w", {a, 2 * s}, Init::glorot_uniform);
  params_.add("gates.b", {2 * s}, Init::zeros);
  params_.add("candidate.w", {a, hidden_}, Init::glorot_uniform);
  params_.add("candidate.b", {hidden_}, Init::zeros);
}

std::string GrpuModel::describe() const {
  std::string ops = "read, sum";
  if (cfg_.prod) ops += ", prod";
  if (cfg_.cond) ops += ", cond";
  return "GRPU: controller H=" + std::to_string(hidden_) + " (inputs " +
         std::to_string(controller_inputs_) + "), machine fields [" + ops +
         "], neutral_one=" + to_string(cfg_.neutral_one) + ", clip " +
         std::to_string(static_cast<int>(cfg_.clip)) + ", output field " +
         (output_field_ == cfg_.sum_field() ? "sum" : "prod");
}

ag::Var GrpuModel::forward(const SequenceBatch& batch) {
  const int64_t T = batch.values.dim(0), B = batch.values.dim(1), iv = cfg_.machine_inputs();
  const int64_t s = hidden_ + cfg_.fields();
  ag::Var wg = params_.get("gates.w"), bg = params_.get("gates.b");
  ag::Var wc = params_.get("candidate.w"), bc = params_.get("candidate.b");
  const Device dev = params_.device();
  ag::Var h = ag::constant(Tensor::zeros({B, s}, dev));
  for (int64_t t = 0; t < T; ++t) {
    const float* v = batch.values.f32() + t * B;
    const float* c = batch.controls.f32() + t * B;
    Tensor x_c = Tensor::empty({B, controller_inputs_});
    Tensor x_vm = Tensor::empty({B, iv});
    Tensor mask = Tensor::empty({B});
    for (int64_t b = 0; b < B; ++b) {
      if (controller_inputs_ == 1) x_c.f32()[b] = c[b];
      x_vm.f32()[b * iv] = v[b];
      if (iv == 2) x_vm.f32()[b * iv + 1] = c[b];
      mask.f32()[b] = batch.mask.f32()[t * B + b];
    }
    h = ag::grpu_cell(ag::constant(x_c.on(dev)), x_vm.on(dev), h, wg, bg, wc, bc, mask.on(dev),
                      cfg_);
  }
  return ag::column(h, hidden_ + output_field_);
}

}  // namespace mare
