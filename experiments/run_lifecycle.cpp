#include "experiments/run_lifecycle.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/ops/linalg.h"
#include "models/checkpoint.h"

namespace mare {

namespace {

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error(p.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(p.string() + ": not valid JSON: " + e.what());
  }
}

// A JSON text as an i32 tensor of its bytes, so it travels inside a checkpoint.
Tensor text_tensor(const std::string& s) {
  std::vector<int32_t> bytes(s.begin(), s.end());
  if (bytes.empty()) bytes.push_back(' ');
  return Tensor::from_indices(bytes, {static_cast<int64_t>(bytes.size())});
}

std::string tensor_text(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.numel(); ++i) s.push_back(static_cast<char>(t.i32()[i]));
  return s;
}

int64_t count_lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// Keeps the first `lines` lines of a file (atomically).
void cut_lines(const std::filesystem::path& p, int64_t lines) {
  std::ifstream in(p);
  std::ostringstream kept;
  std::string line;
  for (int64_t n = 0; n < lines && std::getline(in, line); ++n) kept << line << '\n';
  in.close();
  atomic_write(p, kept.str());
}

constexpr const char* kStateKey = "trainer_state";
constexpr const char* kBufferPrefix = "buffer/";

}  // namespace

std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  if (a == b) return "";
  if (!a.is_object() || !b.is_object()) return "(the whole configuration)";
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v) return k;
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) return k;
  return "(the whole configuration)";
}

RunLifecycle::RunLifecycle(std::filesystem::path out, nlohmann::json config, bool force,
                           Device device)
    : dir_(std::move(out)), config_(std::move(config)), force_(force) {
  if (device != Device::cpu) config_["device"] = to_string(device);
  if (matmul_precision() != MatmulPrecision::highest)
    config_["matmul_precision"] = to_string(matmul_precision());
}

RunLifecycle::Start RunLifecycle::begin(const nlohmann::json& manifest_extra,
                                        std::ostream* progress) {
  const auto manifest_path = dir_.path() / "manifest.json";
  const bool have_manifest = std::filesystem::exists(manifest_path);
  if (!force_ && have_manifest && (dir_.finished() || std::filesystem::exists(last_checkpoint()))) {
    const nlohmann::json manifest = read_json(manifest_path);
    const nlohmann::json old = manifest.value("config", nlohmann::json());
    // A manifest written before runs recorded their data's digest names the data by its
    // path alone: such a run is matched as it was then.
    nlohmann::json now = config_;
    if (old.is_object() && !old.contains("data_sha256")) now.erase("data_sha256");
    const std::string diff = first_difference(old, now);
    // A key recorded only where it is not the default (the device, the batching, …).
    auto value = [&diff](const nlohmann::json& c) {
      return c.is_object() && c.contains(diff) ? c[diff].dump() : std::string("the default");
    };
    if (!diff.empty())
      throw std::invalid_argument(
          dir_.path().string() + " holds a " + (dir_.finished() ? "finished" : "started") +
          " run of another configuration (" + diff + ": " + value(old) + " there, " +
          value(config_) + " now); use --force to replace it, or another --out");
    if (dir_.finished()) {
      finished_ = read_json(dir_.path() / "result.json");
      if (progress)
        *progress << "run already finished: " << (dir_.path() / "result.json").string()
                  << " (use --force to run it again)\n";
      return Start::finished;
    }
    record_resume(manifest, manifest_extra);
    return Start::resumed;
  }
  dir_.reset();
  std::filesystem::remove(last_checkpoint());
  std::filesystem::remove(best_checkpoint());
  nlohmann::json manifest = {{"config", config_}};
  for (const auto& [k, v] : manifest_extra.items()) manifest[k] = v;
  // When the run started (UTC, ISO 8601), for the reports' provenance; a resumed run keeps
  // its first start's. Only the manifest carries it: result.json stays free of clocks.
  manifest["date"] = utc_now_iso8601();
  dir_.write_manifest(manifest);
  metrics_lines_ = 0;
  return Start::fresh;
}

// A resumed run may go on at another thread count or with another build: the manifest
// keeps its first start's and lists each resumption's, so that the last entry says what
// finished the run (as result.json's threads does).
void RunLifecycle::record_resume(nlohmann::json manifest, const nlohmann::json& manifest_extra) {
  nlohmann::json resumed = {{"date", utc_now_iso8601()}};
  for (const char* key : {"threads", "build"})
    if (manifest_extra.contains(key)) resumed[key] = manifest_extra[key];
  if (!manifest["resumed"].is_array()) manifest["resumed"] = nlohmann::json::array();
  manifest["resumed"].push_back(std::move(resumed));
  dir_.write_manifest(manifest);
}

void RunLifecycle::save_state(const ParameterSet& params, Adam& adam,
                              const std::map<std::string, Tensor>& buffers,
                              const nlohmann::json& state) {
  std::map<std::string, Tensor> extra;
  for (const auto& [name, t] : buffers) extra[kBufferPrefix + name] = t;
  nlohmann::json s = state;
  s["metrics_lines"] = metrics_lines_;
  extra[kStateKey] = text_tensor(s.dump());
  save_checkpoint(last_checkpoint().string(), params, &adam, &extra);
}

nlohmann::json RunLifecycle::load_state(ParameterSet& params, Adam& adam,
                                        std::map<std::string, Tensor>& buffers) {
  std::map<std::string, Tensor> extra;
  for (const auto& [name, t] : buffers) extra[kBufferPrefix + name] = t;
  extra[kStateKey] = Tensor();
  load_checkpoint(last_checkpoint().string(), params, &adam, &extra);
  for (auto& [name, t] : buffers) t.copy_from(extra.at(kBufferPrefix + name));
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(tensor_text(extra.at(kStateKey)));
  } catch (const std::exception& e) {
    throw std::runtime_error(last_checkpoint().string() +
                             ": the trainer state is not readable: " + e.what());
  }
  metrics_lines_ = state.value("metrics_lines", int64_t{0});
  const auto metrics = dir_.path() / "metrics.jsonl";
  if (count_lines(metrics) < metrics_lines_)
    throw std::runtime_error(metrics.string() + ": holds fewer lines than " +
                             last_checkpoint().string() + " recorded (" +
                             std::to_string(metrics_lines_) + ")");
  cut_lines(metrics, metrics_lines_);
  return state;
}

void RunLifecycle::append_metrics(const nlohmann::json& line) {
  dir_.append_metrics(line);
  ++metrics_lines_;
}

void RunLifecycle::finish(const nlohmann::json& result) {
  dir_.write_result(result);
  std::filesystem::remove(last_checkpoint());
}

double parse_duration(const std::string& text, const std::string& what) {
  const auto refuse = [&] {
    return std::invalid_argument(
        what + ": expected a duration such as 90, 90s, 10m or 1.5h, got '" + text + "'");
  };
  if (text.empty()) throw refuse();
  double unit = 1;
  std::string number = text;
  switch (text.back()) {
    case 's':
      unit = 1, number.pop_back();
      break;
    case 'm':
      unit = 60, number.pop_back();
      break;
    case 'h':
      unit = 3600, number.pop_back();
      break;
    default:
      break;
  }
  if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number[0])) || number[0] == '.'))
    throw refuse();
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v <= 0) throw refuse();
  return v * unit;
}

}  // namespace mare
