// gru, bigru and lstm over (value, control) sequences (see
// models/recurrent_baselines.h).
#include "models/recurrent_baselines.h"

#include <stdexcept>

#include "models/functions.h"

namespace mare {

namespace {

constexpr int64_t kInputs = 2;  // value, control

// x_t = (value, control) of step t as [B, 2], and the step's mask [B], on `device`.
std::pair<Tensor, Tensor> step_inputs(const SequenceBatch& batch, int64_t t, Device device) {
  const int64_t B = batch.values.dim(1);
  Tensor x = Tensor::empty({B, kInputs}), mask = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) {
    x.f32()[2 * b] = batch.values.f32()[t * B + b];
    x.f32()[2 * b + 1] = batch.controls.f32()[t * B + b];
    mask.f32()[b] = batch.mask.f32()[t * B + b];
  }
  return {x.on(device), mask.on(device)};
}

}  // namespace

int64_t gru_cell_parameter_count(int64_t hidden, int64_t inputs) {
  return (inputs + hidden) * 3 * hidden + 3 * hidden;
}
int64_t lstm_cell_parameter_count(int64_t hidden, int64_t inputs) {
  return (inputs + hidden) * 4 * hidden + 4 * hidden;
}

RecurrentBaseline::RecurrentBaseline(const ModelSpec& spec, uint64_t seed)
    : SequenceModel(seed), kind_(spec.base), hidden_(spec.get_int("hidden", 100)) {
  for (const auto& [k, v] : spec.switches)
    if (k != "hidden")
      throw std::invalid_argument(kind_ + ": unknown switch '" + k + "' (known: hidden)");
  if (hidden_ < 1) throw std::invalid_argument(kind_ + ": hidden must be ≥ 1");
  const int64_t a = kInputs + hidden_;
  int64_t out_in = hidden_;
  if (kind_ == "lstm") {
    ag::Var b = params_.add("lstm.b", {4 * hidden_}, Init::zeros);
    params_.add("lstm.w", {a, 4 * hidden_}, Init::glorot_uniform);
    for (int64_t j = hidden_; j < 2 * hidden_; ++j) b->value.f32()[j] = 1.0f;  // forget gate
  } else {
    for (const char* dir : {"fw", "bw"}) {
      if (kind_ == "gru" && std::string(dir) == "bw") break;
      std::string p = std::string("gru_") + dir;
      params_.add(p + ".gates.w", {a, 2 * hidden_}, Init::glorot_uniform);
      params_.add(p + ".gates.b", {2 * hidden_}, Init::zeros);
      params_.add(p + ".candidate.w", {a, hidden_}, Init::glorot_uniform);
      params_.add(p + ".candidate.b", {hidden_}, Init::zeros);
    }
    if (kind_ == "bigru") out_in = 2 * hidden_;
  }
  params_.add("out.w", {out_in, 1}, Init::glorot_uniform);
  params_.add("out.b", {1}, Init::zeros);
}

std::string RecurrentBaseline::describe() const {
  return kind_ + ": H=" + std::to_string(hidden_) + ", inputs (value, control), linear output";
}

ag::Var RecurrentBaseline::run_gru(const SequenceBatch& batch, const std::string& p, bool reverse) {
  const int64_t T = batch.values.dim(0), B = batch.values.dim(1);
  ag::Var wg = params_.get(p + ".gates.w"), bg = params_.get(p + ".gates.b");
  ag::Var wc = params_.get(p + ".candidate.w"), bc = params_.get(p + ".candidate.b");
  ag::Var h = ag::constant(Tensor::zeros({B, hidden_}, params_.device()));
  // Backwards, the padded steps come first and leave the zero state untouched.
  for (int64_t i = 0; i < T; ++i) {
    auto [x, mask] = step_inputs(batch, reverse ? T - 1 - i : i, params_.device());
    h = ag::gru_cell(ag::constant(x), h, wg, bg, wc, bc, mask);
  }
  return h;
}

ag::Var RecurrentBaseline::run_lstm(const SequenceBatch& batch) {
  const int64_t T = batch.values.dim(0), B = batch.values.dim(1);
  ag::Var w = params_.get("lstm.w"), b = params_.get("lstm.b");
  ag::Var h = ag::constant(Tensor::zeros({B, hidden_}, params_.device()));
  ag::Var c = ag::constant(Tensor::zeros({B, hidden_}, params_.device()));
  for (int64_t t = 0; t < T; ++t) {
    auto [x, mask] = step_inputs(batch, t, params_.device());
    ag::LstmState next = ag::lstm_cell(ag::constant(x), h, c, w, b, mask);
    h = next.h;
    c = next.c;
  }
  return h;
}

ag::Var RecurrentBaseline::forward(const SequenceBatch& batch) {
  ag::Var feat;
  if (kind_ == "lstm")
    feat = run_lstm(batch);
  else if (kind_ == "gru")
    feat = run_gru(batch, "gru_fw", false);
  else
    feat = ag::concat({run_gru(batch, "gru_fw", false), run_gru(batch, "gru_bw", true)}, 1);
  return ag::bias_add(ag::matmul(feat, params_.get("out.w")), params_.get("out.b"));
}

}  // namespace mare
