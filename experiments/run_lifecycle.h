// The life of one training run (SPEC §6–7), for every trainer:
//
//   finished  DIR/result.json exists and DIR/manifest.json holds the same
//             configuration: the run is done, its result is returned as it is.
//             A finished run of ANOTHER configuration is refused (it would
//             silently report the old result); --force reruns it.
//   resumed   DIR/last.ckpt exists (written every checkpoint_every steps) and the
//             manifest holds the same configuration: parameters, optimizer state,
//             buffers (batch-norm statistics) and the trainer's own state come back
//             from it, and metrics.jsonl is cut back to the lines it had then, so the
//             run ends with the same result.json and metrics.jsonl bytes as an
//             uninterrupted one.
//   fresh     anything else (or --force): the directory's earlier run files are
//             removed and the manifest is written.
//
// The best-on-validation parameters go to DIR/checkpoint.bin (every time the
// validation score improves); finish() writes result.json last, by atomic rename,
// and removes last.ckpt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/run_dir.h"
#include "kernels/tensor.h"
#include "models/optim.h"
#include "models/parameters.h"

namespace mare {

class RunLifecycle {
 public:
  enum class Start { finished, resumed, fresh };

  // `config` is what makes two runs the same run (model, data, seed, steps, …;
  // never timings, paths of outputs or the thread count, which changes no byte), and
  // the device it runs on: recorded as config's "device" where it is not the CPU (the
  // manifests of earlier runs did not record it, and a CPU run's still match), so that
  // a run is never resumed, nor a finished one taken, on another device; likewise the
  // GEMM precision (kernels/ops/linalg.h: matmul_precision()), as "matmul_precision"
  // where it is not the default fp32.
  RunLifecycle(std::filesystem::path out, nlohmann::json config, bool force, Device device);

  // Decides how the run starts; for fresh runs writes the manifest
  // ({"config"} + manifest_extra), for resumed ones adds to its "resumed" list the date and
  // manifest_extra's threads and build. A finished run is announced on `progress`.
  Start begin(const nlohmann::json& manifest_extra, std::ostream* progress = nullptr);
  const nlohmann::json& finished_result() const { return finished_; }

  RunDir& dir() { return dir_; }
  const std::filesystem::path& path() const { return dir_.path(); }
  std::filesystem::path last_checkpoint() const { return dir_.path() / "last.ckpt"; }
  std::filesystem::path best_checkpoint() const { return dir_.path() / "checkpoint.bin"; }

  // Writes last.ckpt: parameters, Adam, the buffers, and `state` (a JSON object
  // of the trainer's counters) with the metrics.jsonl line count of now.
  void save_state(const ParameterSet& params, Adam& adam,
                  const std::map<std::string, Tensor>& buffers, const nlohmann::json& state);
  // Loads last.ckpt into params, adam and buffers (by name), cuts metrics.jsonl
  // back, and returns the trainer's state.
  nlohmann::json load_state(ParameterSet& params, Adam& adam,
                            std::map<std::string, Tensor>& buffers);

  void append_metrics(const nlohmann::json& line);
  // result.json (atomic, last), then last.ckpt is removed.
  void finish(const nlohmann::json& result);

 private:
  void record_resume(nlohmann::json manifest, const nlohmann::json& manifest_extra);

  RunDir dir_;
  nlohmann::json config_;
  bool force_;
  nlohmann::json finished_;
  int64_t metrics_lines_ = 0;
};

// The first top-level key whose value differs between two configurations
// (for the refusal message), or "" when they are equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b);

// A run that stopped at its time limit (--time-limit, MARE_TIME_LIMIT) after writing
// last.ckpt, to be continued by the same command: `mare train` exits with this status
// (EX_TEMPFAIL) and the sweep runner records the run as paused, not failed.
inline constexpr int kExitPaused = 75;

// A duration in seconds from "90", "90s", "10m" or "1.5h" (> 0); throws
// std::invalid_argument naming `what` and the text otherwise.
double parse_duration(const std::string& text, const std::string& what);

}  // namespace mare
