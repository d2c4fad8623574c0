// Experiment specs (SPEC §7): a YAML file in experiments/specs/ names a task or corpus,
// models or a named grid, switches, hyper-parameters, seeds and profiles; load_sweep()
// validates it and expands it into runs, each a `mare` command line with a stable id.
// The runner (experiments/sweep/runner.h) executes them; the on-disk layout of a sweep
// is described in the README ("Sweeps").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::sweep {

// A malformed spec: what() reads "<file>:<line>: <what was expected>".
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Synthetic data a run needs, generated once per sweep before the runs that use it.
struct DataNeed {
  std::string generator;  // synth-cdr | synth-ctd | synth-semeval
  int64_t seed = 1;
  int64_t docs = 0;                  // 0: the generator's default
  std::string dir;                   // relative to the sweep root, e.g. "data/synth-cdr-seed1"
  std::vector<std::string> command;  // `mare` arguments that generate it into "{out}"
};

// One run: a cell of the grid at one seed.
struct RunPlan {
  std::string cell;  // cell name, [A-Za-z0-9._+=-]
  int64_t seed = 0;
  std::string id;         // 16 hex digits: FNV-1a of the resolved configuration
  std::string dir;        // relative to the sweep root: "<cell>/seed<seed>-<id first 8>"
  std::string kind;       // "train" | "bench"
  nlohmann::json params;  // flat object: model, switches, hyper-parameters of the cell
  // `mare` arguments; "{run}" stands for the run directory, "{root}" for the sweep root.
  std::vector<std::string> command;
  std::string done_file;  // "result.json" (train) or "bench.json" (bench)
};

struct SweepPlan {
  std::string spec_path;  // as given
  std::string name;       // spec name
  std::string table;      // thesis table it regenerates ("4.6"), or ""
  std::string profile;    // smoke | default | paper
  std::string description;
  std::vector<DataNeed> data;
  std::vector<RunPlan> runs;  // in a fixed order: cells in spec order, then seeds

  // The run.json object of /work/notes/contracts.md for one run.
  nlohmann::json run_json(const RunPlan& run) const;
};

// Reads, validates and expands a spec for a profile; throws SpecError before anything
// runs on an unknown key, model or switch, an empty grid or a bad seed range.
SweepPlan load_sweep(const std::string& path, const std::string& profile);

// The profiles a spec may define: smoke, default and paper, which every spec defines,
// then gpu (the paper's sizes on one GPU, `device: cuda`), which a spec may leave out.
const std::vector<std::string>& profiles();
// smoke, default and paper
const std::vector<std::string>& required_profiles();

// A run's id: FNV-1a 64 of `s` (its configuration's JSON), 16 lower-case hex digits.
// `mare collect` names legacy runs the same way.
std::string fnv1a_hex(const std::string& s);

}  // namespace mare::sweep
