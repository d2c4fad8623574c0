#include "models/registry.h"

#include <cmath>

#include <array>
#include <charconv>
#include <sstream>
#include <stdexcept>

#include "models/grpu.h"
#include "models/mlp.h"
#include "models/recurrent_baselines.h"

namespace mare {

namespace {
// One spelling per number, so that +d=08 and +d=8 (or +dropout=0.10 and +dropout=0.1)
// name one model, one run directory and one sweep cell: a whole number in decimal
// without leading zeros, a finite number with a fraction in its shortest round-trip
// form. Anything else stays as written (words, +8, inf, and 8.0 or 1e3, which an
// integer switch refuses as before rather than reading as 8 or 1000).
std::string one_spelling(const std::string& v) {
  const char *begin = v.data(), *end = v.data() + v.size();
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(begin, end, i); ec == std::errc() && p == end)
    return std::to_string(i);
  double d = 0;
  if (auto [p, ec] = std::from_chars(begin, end, d);
      ec == std::errc() && p == end && std::isfinite(d) && d != std::floor(d)) {
    std::array<char, 32> buf{};
    auto [q, ec2] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
    if (ec2 == std::errc()) return std::string(buf.data(), q);
  }
  return v;
}
}  // namespace

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
    if (part.find_first_of(" \t\n") != std::string::npos)
      throw std::invalid_argument("model name '" + name + "': switch '" + part +
                                  "' holds white space; expected +key or +key=value");
    size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    // A switch given twice took the last value silently (+d=8+d=16 trained d 16).
    if (s.switches.count(key))
      throw std::invalid_argument("model name '" + name + "': switch '" + key +
                                  "' given twice; expected each switch once");
    s.switches[key] = eq == std::string::npos ? "on" : one_spelling(part.substr(eq + 1));
  }
  if (!name.empty() && name.back() == '+')
    throw std::invalid_argument("model name '" + name +
                                "': ends with '+'; expected a switch after it");
  if (s.base.empty()) throw std::invalid_argument("empty model name");
  return s;
}

std::string ModelSpec::canonical() const {
  std::string out = base;
  for (const auto& [k, v] : switches) out += "+" + (v == "on" ? k : k + "=" + v);
  return out;
}

namespace {

// A switch's value read as a whole string by `parse` (std::stoll or std::stod): the
// fallback when the switch is absent, an error naming it when the value is not `what`.
template <class T, class Parse>
T switch_value(const std::map<std::string, std::string>& switches, const std::string& key,
               T fallback, Parse parse, const char* what) {
  auto it = switches.find(key);
  if (it == switches.end()) return fallback;
  try {
    size_t used = 0;
    T v = parse(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument("model switch " + key + "=" + it->second + ": expected " + what);
}

}  // namespace

int64_t ModelSpec::get_int(const std::string& key, int64_t fallback) const {
  return switch_value<int64_t>(
      switches, key, fallback,
      [](const std::string& s, size_t* used) { return std::stoll(s, used); }, "an integer");
}

double ModelSpec::get_double(const std::string& key, double fallback) const {
  return switch_value<double>(
      switches, key, fallback,
      [](const std::string& s, size_t* used) { return std::stod(s, used); }, "a number");
}

namespace {

using K = SwitchInfo::Kind;

constexpr SwitchInfo kMlpSwitches[] = {
    {"hidden", K::integer, "16", "hidden units per layer"},
    {"layers", K::integer, "2", "hidden layers"},
    {"dropout", K::number, "0", "dropout rate after each hidden layer"},
};
constexpr SwitchInfo kGrpuSwitches[] = {
    {"hidden", K::integer, "100", "controller (GRU) size H"},
    {"prod", K::flag, "off", "add the product operation (on for the multiplication task)"},
    {"cond", K::flag, "off", "add the conditional operation (on for the conditional task)"},
    {"neutral_one", K::choice, "code",
     "argument form of neutral-one ops: published code or eq. 4.16", "code|text"},
};
constexpr SwitchInfo kRecurrentSwitches[] = {
    {"hidden", K::integer, "100", "hidden size"},
};
constexpr SwitchInfo kCnnSwitches[] = {
    {"d", K::integer, "300", "word embedding size"},
    {"pos_dim", K::integer, "25", "size of each of the two relative-position embeddings"},
    {"char_dim", K::integer, "25", "character embedding size"},
    {"char_filters", K::integer, "50", "character-CNN filters"},
    {"filters", K::integer, "300", "sequence convolution filters m"},
    {"kernel", K::integer, "3", "width k of both convolutions (odd)"},
    {"dropout", K::number, "0.15", "dropout before the output layer"},
};
// bran's switches, then utre's additions (one array, utre's span is all of it).
constexpr SwitchInfo kAttentionSwitches[] = {
    {"d", K::integer, "300", "model width (embeddings, blocks, heads)"},
    {"heads", K::integer, "4", "attention heads (d must be divisible by heads)"},
    {"iterations", K::integer, "3", "blocks (bran) or shared-weight iterations (utre)"},
    {"dropout", K::number, "0.15", "internal (attention, transition) and final (heads) dropout"},
    {"ner_prob", K::number, "0.5", "probability that a training step trains NER instead of RE"},
    {"multitask", K::choice, "sample", "sample: one task per step; sum: both losses every step",
     "sample|sum"},
    {"embed_scale", K::choice, "sqrt_d for bran, 1 for utre and ntcre",
     "factor of the token embeddings before the position signal is added: sqrt_d (Vaswani et "
     "al.'s √d over tables drawn with standard deviation 1/√d, so that words are not drowned "
     "by the unit-amplitude signal), or 1 (tables drawn from U(−0.05, 0.05); utre's input "
     "BatchNorm sets the scale)",
     "1|sqrt_d"},
    {"biaffine_init", K::choice, "zeros",
     "the bi-affine scorer's L at the start: zeros (Dozat and Manning; every class of a pair "
     "starts with the same score), or glorot (uniform: scores of about ±10 at the start)",
     "glorot|zeros"},
    {"ngram", K::flag, "off", "character n-gram input embedding (n = 3)"},
    {"transition", K::flag, "off", "inverted-residual transition instead of C1-C5-C1"},
    {"cpd", K::flag, "off", "dynamic halting (adaptive computation time)"},
    {"norm", K::choice, "batch", "normalisation of the blocks, input and heads", "batch|layer"},
    {"max_steps", K::integer, "3", "halting's T_max (defaults to iterations)"},
    {"transition_init", K::choice, "ones",
     "the inverted-residual transition's last norm γ at the start: ones, or zeros (the "
     "branch starts at zero: Goyal et al.'s zero-γ; a probe, reports/learning/findings.md)",
     "ones|zeros"},
    {"alloc", K::choice, "sorted", "allocation kernel of the memory (SPEC 3 step 4)",
     "sorted|parallel|parallel-eps|rank|parallel-block|network"},
    {"slots", K::integer, "4", "memory slots N per token"},
    {"word", K::integer, "d", "memory word size W"},
    {"read_heads", K::integer, "2", "memory read heads R"},
    {"memory_step", K::choice, "auto",
     "the memory step as one fused op or as the ops of SPEC 3 one by one (the same equations, "
     "equal to rounding); auto: fused on the CPU, composed on the GPU (the fused CUDA step "
     "awaits its first GPU run)",
     "auto|composed|fused"},
};
constexpr size_t kBranSwitchCount = 8;
constexpr size_t kUtreSwitchCount = 14;  // then ntcre's memory switches

constexpr std::array kModels = {
    ModelInfo{"mlp", "classification", "multi-layer perceptron", kMlpSwitches},
    ModelInfo{"grpu", "sequence", "Gated Recurrent Programmer Unit (SPEC 4.6)", kGrpuSwitches},
    ModelInfo{"gru", "sequence", "GRU over (value, control), linear output", kRecurrentSwitches},
    ModelInfo{"bigru", "sequence", "bidirectional GRU, linear output on both ends",
              kRecurrentSwitches},
    ModelInfo{"lstm", "sequence", "LSTM over (value, control), linear output", kRecurrentSwitches},
    ModelInfo{"cnn", "relation", "per-pair CNN with position and character-CNN inputs (SPEC 4.1)",
              kCnnSwitches},
    ModelInfo{"bran", "relation", "BRAN: transformer blocks, bi-affine pair scores (SPEC 4.2)",
              std::span<const SwitchInfo>(kAttentionSwitches, kBranSwitchCount)},
    ModelInfo{"utre", "relation", "Universal Transformer for RE, shared blocks (SPEC 4.3-4.4)",
              std::span<const SwitchInfo>(kAttentionSwitches, kUtreSwitchCount)},
    ModelInfo{"ntcre", "relation",
              "utre with a DNC memory per token after the attention (SPEC 4.5)",
              kAttentionSwitches},
};

constexpr std::array kAliases = {
    AliasInfo{"UTRE-CPD", "utre+ngram+transition+cpd"},
    AliasInfo{"UTRE", "utre+ngram+transition"},
    AliasInfo{"NTCRE-CPD", "ntcre+ngram+transition+cpd"},
    AliasInfo{"NTCRE", "ntcre+ngram+transition"},
};

// Thesis Table 4.6: memory, char n-grams, transition, halting (1 = on).
constexpr GridRow kTable46[] = {
    {"1", "utre", false},
    {"2", "utre+cpd", false},
    {"3", "utre+transition", false},
    {"4", "utre+transition+cpd", false},
    {"5", "utre+ngram", false},
    {"6", "utre+ngram+cpd", false},
    {"7", "utre+ngram+transition", false},
    {"UTRE-CPD", "utre+ngram+transition+cpd", false},
    {"9", "ntcre+cpd", true},
    {"10", "ntcre+transition+cpd", true},
    {"11", "ntcre+ngram+cpd", true},
    {"NTCRE-CPD", "ntcre+ngram+transition+cpd", true},
};
constexpr std::array kGrids = {
    GridInfo{"table4.6", "thesis Table 4.6: the ablation grid on CDR (memory rows are ntcre)",
             kTable46},
};

std::string known_switches(const ModelInfo& m) {
  std::string s;
  for (const SwitchInfo& sw : m.switches) s += (s.empty() ? "" : ", ") + std::string(sw.name);
  return s.empty() ? "none" : s;
}

// The valid values of every integer and number switch, by name (the same name
// means the same thing in every model): sizes and counts are whole numbers from
// 1 to kMaxExtent (a tensor extent the kernels index with 32-bit ints), the
// convolution width is odd, rates are probabilities. Checked when a model is
// resolved, so a bad value is refused before anything is built or trained.
constexpr int64_t kMaxExtent = 1 << 20;
struct SwitchRange {
  double lo, hi;
  bool hi_open;      // [lo, hi) rather than [lo, hi]
  bool odd;          // integers: odd values only
  const char* text;  // what the error says is valid
};
SwitchRange range_of(std::string_view key, K kind) {
  if (key == "dropout") return {0.0, 1.0, true, false, "a rate from 0 (included) to 1 (excluded)"};
  if (key == "ner_prob") return {0.0, 1.0, false, false, "a probability from 0 to 1"};
  if (key == "kernel") return {1.0, 31.0, false, true, "an odd whole number from 1 to 31"};
  if (kind == K::integer)
    return {1.0, double(kMaxExtent), false, false, "a whole number from 1 to 1048576"};
  return {-1e300, 1e300, false, false, "a number"};
}

void check_switch(const ModelSpec& spec, const ModelInfo& m, const std::string& key,
                  const std::string& value) {
  for (const SwitchInfo& sw : m.switches) {
    if (sw.name != key) continue;
    const std::string where = "model " + spec.canonical() + ": switch " + key;
    switch (sw.kind) {
      case K::flag:
        if (value != "on")
          throw std::invalid_argument(where + " is a flag: write +" + key + ", not +" + key + "=" +
                                      value);
        return;
      case K::integer:
      case K::number: {
        const double v = sw.kind == K::integer ? static_cast<double>(spec.get_int(key, 0))
                                               : spec.get_double(key, 0);
        const SwitchRange r = range_of(key, sw.kind);
        const bool inside = std::isfinite(v) && v >= r.lo && (r.hi_open ? v < r.hi : v <= r.hi) &&
                            (!r.odd || static_cast<int64_t>(v) % 2 == 1);
        if (!inside) throw std::invalid_argument(where + "=" + value + ": expected " + r.text);
        return;
      }
      case K::choice: {
        std::stringstream in{std::string(sw.choices)};
        std::string c;
        while (std::getline(in, c, '|'))
          if (c == value) return;
        throw std::invalid_argument(where + "=" + value + ": expected one of " +
                                    std::string(sw.choices));
      }
    }
  }
  throw std::invalid_argument("model " + std::string(m.name) + ": unknown switch '" + key +
                              "' (known: " + known_switches(m) + ")");
}

}  // namespace

std::span<const ModelInfo> model_registry() {
  return kModels;
}

const ModelInfo* find_model(std::string_view base) {
  for (const ModelInfo& m : kModels)
    if (m.name == base) return &m;
  return nullptr;
}

std::vector<std::string> switch_choices(std::string_view model, std::string_view key) {
  if (const ModelInfo* m = find_model(model))
    for (const SwitchInfo& sw : m->switches)
      if (sw.name == key && sw.kind == SwitchInfo::Kind::choice) {
        std::vector<std::string> out;
        std::stringstream in{std::string(sw.choices)};
        for (std::string c; std::getline(in, c, '|');) out.push_back(c);
        return out;
      }
  throw std::logic_error("model " + std::string(model) + " has no choice switch " +
                         std::string(key));
}

std::span<const AliasInfo> model_aliases() {
  return kAliases;
}

std::span<const GridInfo> model_grids() {
  return kGrids;
}

ModelSpec resolve_model(const std::string& name) {
  ModelSpec spec = ModelSpec::parse(name);
  for (const AliasInfo& a : kAliases)
    if (a.alias == spec.base) {
      ModelSpec expanded = ModelSpec::parse(std::string(a.expansion));
      for (const auto& [k, v] : spec.switches) expanded.switches[k] = v;
      spec = expanded;
      break;
    }
  const ModelInfo* m = find_model(spec.base);
  if (!m) {
    std::string known;
    for (const ModelInfo& info : kModels)
      known += (known.empty() ? "" : ", ") + std::string(info.name);
    for (const AliasInfo& a : kAliases) known += ", " + std::string(a.alias);
    throw std::invalid_argument("unknown model '" + spec.base + "' (known: " + known + ")");
  }
  for (const auto& [k, v] : spec.switches) check_switch(spec, *m, k, v);
  return spec;
}

ModelSpec validate_model(const std::string& name) {
  ModelSpec spec = resolve_model(name);
  if (spec.base == "bran" || spec.base == "utre" || spec.base == "ntcre") {
    const int64_t d = spec.get_int("d", 300), heads = spec.get_int("heads", 4);
    if (d % heads != 0) {
      std::string divisors;
      for (int64_t h = 1; h <= d && divisors.size() < 60; ++h)
        if (d % h == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(h);
      throw std::invalid_argument(
          "model " + spec.canonical() + ": switch heads=" + std::to_string(heads) +
          ": d = " + std::to_string(d) + " is not divisible by heads = " + std::to_string(heads) +
          "; expected a divisor of d (" + divisors + ")");
    }
  }
  return spec;
}

std::unique_ptr<Classifier> build_classifier(const ModelSpec& spec, int64_t features,
                                             int64_t classes, uint64_t seed) {
  validate_model(spec.canonical());  // unknown switches, bad values and combinations
  if (spec.base == "mlp") return std::make_unique<Mlp>(spec, features, classes, seed);
  std::string known;
  for (const ModelInfo& m : model_registry())
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw std::invalid_argument("unknown model '" + spec.base + "' (known: " + known + ")");
}

std::unique_ptr<SequenceModel> build_sequence_model(const ModelSpec& spec,
                                                    const SequenceTaskShape& task, uint64_t seed) {
  if (find_model(spec.base)) validate_model(spec.canonical());
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
