// A run directory (SPEC §7):
//   manifest.json   what ran: spec, resolved config, seed, commit, device, versions
//   metrics.jsonl   one JSON object per evaluation, appended and flushed
//   timing.json     wall and per-step times (kept out of result.json)
//   result.json     final metrics and status, written last by atomic rename
// A run whose result.json exists is finished; nothing rewrites it unless asked.
// Every whole-file write goes to a temporary file in the same directory, is
// flushed to disk, and renamed over the target, so a reader sees the old file
// or the new one, never a part.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare {

void atomic_write(const std::filesystem::path& path, const std::string& content);
// Throws std::invalid_argument "<option> <path>: cannot be written: <why>" unless
// `path` could be written by atomic_write: not a directory, in a writable directory
// that exists (or, with `creates_parents`, whose nearest existing ancestor is one:
// the command makes the rest). Commands call it before their work, so that a
// mistyped output path fails at once rather than after it.
void check_writable_file(const std::filesystem::path& path, const std::string& option,
                         bool creates_parents = false);
// JSON as the run files hold it: 2-space indent, trailing newline.
std::string json_text(const nlohmann::json& j);
// A float as the double with the same shortest decimal form, so that JSON
// shows 0.01 rather than 0.009999999776482582 for a float 0.01.
double decimal(float v);
// v with `digits` digits after the point, for progress lines ("0.125").
std::string fixed(double v, int digits);

class RunDir {
 public:
  explicit RunDir(std::filesystem::path dir);
  const std::filesystem::path& path() const { return dir_; }
  bool finished() const { return std::filesystem::exists(dir_ / "result.json"); }
  // Starts a fresh attempt: removes a previous result and metrics.
  void reset();
  void write_manifest(const nlohmann::json& j);
  void append_metrics(const nlohmann::json& j);
  void write_timing(const nlohmann::json& j);
  // timing.json of a training run: wall time, steps, seconds per step and per epoch.
  void write_training_timing(double wall_seconds, int64_t steps,
                             const std::vector<double>& seconds_per_epoch);
  void write_result(const nlohmann::json& j);

 private:
  std::filesystem::path dir_;
  std::ofstream metrics_;
};

}  // namespace mare
