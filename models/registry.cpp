#include "models/registry.h"

#include <array>
#include <sstream>
#include <stdexcept>

#include "models/grpu.h"
#include "models/mlp.h"
#include "models/recurrent_baselines.h"

namespace mare {

ModelSpec ModelSpec::parse(const std::string& name) {
  ModelSpec s;
  std::stringstream in(name);
  std::string part;
  bool first = true;
  while (std::getline(in, part, '+')) {
    if (part.empty())
      throw std::invalid_argument("model name '" + name + "': empty part between '+' signs");
    if (first) {
      s.base = part;
      first = false;
      continue;
    }
    size_t eq = part.find('=');
    if (eq == std::string::npos)
      s.switches[part] = "on";
    else
      s.switches[part.substr(0, eq)] = part.substr(eq + 1);
  }
  if (s.base.empty()) throw std::invalid_argument("empty model name");
  return s;
}

std::string ModelSpec::canonical() const {
  std::string out = base;
  for (const auto& [k, v] : switches) out += "+" + (v == "on" ? k : k + "=" + v);
  return out;
}

int64_t ModelSpec::get_int(const std::string& key, int64_t fallback) const {
  auto it = switches.find(key);
  if (it == switches.end()) return fallback;
  try {
    size_t used = 0;
    int64_t v = std::stoll(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument(key);
    return v;
  } catch (const std::logic_error&) {
    throw std::invalid_argument("model switch " + key + "=" + it->second + ": expected an integer");
  }
}

double ModelSpec::get_double(const std::string& key, double fallback) const {
  auto it = switches.find(key);
  if (it == switches.end()) return fallback;
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument(key);
    return v;
  } catch (const std::logic_error&) {
    throw std::invalid_argument("model switch " + key + "=" + it->second + ": expected a number");
  }
}

namespace {
constexpr std::array kModels = {
    ModelInfo{"mlp", "classification", "multi-layer perceptron (hidden=16, layers=2, dropout=0)"},
    ModelInfo{"grpu", "sequence",
              "Gated Recurrent Programmer Unit (hidden=100, +prod, neutral_one=code|text)"},
    ModelInfo{"gru", "sequence", "GRU over (value, control), linear output (hidden=100)"},
    ModelInfo{"bigru", "sequence", "bidirectional GRU, linear output on both ends (hidden=100)"},
    ModelInfo{"lstm", "sequence", "LSTM over (value, control), linear output (hidden=100)"},
};
}  // namespace

std::span<const ModelInfo> model_registry() {
  return kModels;
}

std::unique_ptr<Classifier> build_classifier(const ModelSpec& spec, int64_t features,
                                             int64_t classes, uint64_t seed) {
  if (spec.base == "mlp") {
    for (const auto& [k, v] : spec.switches)
      if (k != "hidden" && k != "layers" && k != "dropout")
        throw std::invalid_argument("mlp: unknown switch '" + k +
                                    "' (known: hidden, layers, dropout)");
    return std::make_unique<Mlp>(spec, features, classes, seed);
  }
  std::string known;
  for (const ModelInfo& m : model_registry())
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw std::invalid_argument("unknown model '" + spec.base + "' (known: " + known + ")");
}

std::unique_ptr<SequenceModel> build_sequence_model(const ModelSpec& spec,
                                                    const SequenceTaskShape& task, uint64_t seed) {
  if (spec.base == "grpu") return std::make_unique<GrpuModel>(spec, task, seed);
  if (spec.base == "gru" || spec.base == "bigru" || spec.base == "lstm")
    return std::make_unique<RecurrentBaseline>(spec, seed);
  std::string known;
  for (const ModelInfo& m : model_registry())
    if (m.task_kind == "sequence") known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw std::invalid_argument("model '" + spec.base +
                              "' does not take sequence tasks (sequence models: " + known + ")");
}

}  // namespace mare
