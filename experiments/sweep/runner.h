// The sweep runner (SPEC §7): executes a SweepPlan (experiments/sweep/spec.h) under a
// sweep root DIR, each run as a child process of the `mare` binary itself, and makes
// an interrupted sweep resume without repeating or losing a finished run.
//
// On disk (/work/notes/contracts.md, README "Sweeps"):
//   DIR/sweep.json              the plan (spec, profile, data, runs), atomically
//   DIR/.sweep.lock             flock: a sweep holds it exclusively, shards shared
//   DIR/.sweep-<i>of<n>.lock    flock of shard i/n (exclusively)
//   DIR/data/<name>/            data a run needs, generated once (temp dir + rename)
//   DIR/<cell>/seed<s>-<id8>/   one run: run.json (before the child starts),
//                               stdout.log, stderr.log (appended, one header line per
//                               attempt), attempts.jsonl (one line per start),
//                               status.json (atomically, when the child exits), and
//                               what the command writes (manifest.json, result.json …)
//
// A run is done iff status.json says completed or diverged (or, when a sweep was
// killed between the child's end and status.json, result.json says so: status.json is
// then written from it). failed and crashed runs are kept as they are unless
// retry_failed; interrupted and paused runs (a run that stopped at its time limit exits
// with kExitPaused) and runs without status.json start again with the same command
// (`mare train` resumes from its last.ckpt by itself).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep/spec.h"

namespace mare::sweep {

// Another sweep holds the lock: what() names the lock file and the holder's pid.
struct SweepLocked : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Shard i of n (1-based): the runs whose 0-based plan index k has k % n == i - 1.
struct Shard {
  int index = 1;
  int count = 1;
  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};
// Parses "i/n" with 1 <= i <= n; throws std::invalid_argument naming what was expected.
Shard parse_shard(const std::string& text);
// Plan indices of the shard's runs, in plan order.
std::vector<size_t> shard_runs(size_t runs, Shard shard);

// sweep.json: the plan as JSON, and back (a sweep.json is accepted as SPEC too).
nlohmann::json plan_json(const SweepPlan& plan);
SweepPlan plan_from_json(const nlohmann::json& j, const std::string& file);
// A YAML spec (load_sweep) or a sweep.json plan (by its .json extension). For a plan,
// `profile` must be empty or equal to the plan's.
SweepPlan load_plan(const std::string& path, const std::string& profile);

// `arg` with every "{run}", "{root}" and (in a data command) "{out}" replaced.
std::string substitute(std::string arg, const std::string& run, const std::string& root,
                       const std::string& out = "");

// What the sweep root holds for one run.
enum class RunState { todo, done, failed };
struct RunOnDisk {
  RunState state = RunState::todo;
  std::string status;  // status.json's (or result.json's) status, "" when none
  nlohmann::json status_json;
  std::string damaged;  // why a finished run's output is no run's (it runs again), or ""
};
RunOnDisk inspect_run(const std::filesystem::path& run_dir, const RunPlan& run, bool retry_failed);

struct RunnerOptions {
  std::filesystem::path root;  // the sweep root DIR
  int jobs = 1;
  Shard shard;
  bool retry_failed = false;
  std::string mare_binary;      // the executable of the runs; "" = this process's (/proc/self/exe)
  int cores = 0;                // 0: detected (see available_cores)
  std::ostream* log = nullptr;  // progress and the summary; nullptr: silent
  bool tty = false;             // one live progress line instead of log lines
  // Seconds the sweep may take (0: no limit): no run starts after it, and each run starts
  // with MARE_TIME_LIMIT = the time left, so that `mare train` stops at an evaluation
  // with its last.ckpt (exit 75: paused) rather than be killed; the same command goes on.
  double time_limit = 0;
};

// Cores a sweep may use: MARE_THREADS when set, else SLURM_CPUS_PER_TASK, else the
// CPUs this process may run on. Each child gets MARE_THREADS = max(1, cores / jobs).
int available_cores();

struct RunRecord {
  std::string dir;  // absolute
  std::string status;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string stderr_tail;
};

struct SweepSummary {
  size_t total = 0;      // runs of the shard
  size_t skipped = 0;    // done before this sweep started
  size_t completed = 0;  // finished now: completed
  size_t diverged = 0;   // finished now: diverged
  size_t interrupted = 0;
  size_t paused = 0;              // stopped at their time limit (exit 75), to go on next time
  size_t not_started = 0;         // left when the sweep was stopped or ran out of time
  bool out_of_time = false;       // the time limit left runs not started
  std::vector<RunRecord> failed;  // failed or crashed (now, or kept from before)
  int stop_signal = 0;            // SIGINT or SIGTERM that stopped the sweep, else 0
  // 128 + signal when stopped; 1 when a run failed; 75 (kExitPaused) when runs were
  // paused or not started at the time limit (the same command goes on); else 0.
  int exit_status() const;
};

// Holds DIR's sweep lock for the lifetime of the object (flock, released on close,
// also when the process is killed). Throws SweepLocked when another sweep holds it.
class SweepLock {
 public:
  SweepLock(const std::filesystem::path& root, Shard shard);
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int root_fd_ = -1;
  int shard_fd_ = -1;
};

// A sweep directory belongs to one spec and profile (its sweep.json): run_sweep,
// print_plan and emit_slurm refuse another (std::invalid_argument naming
// DIR/sweep.json and the sweep it holds) before they write anything.
//
// Takes the lock, writes sweep.json, generates the data the shard's pending runs need,
// runs them (jobs at once), and writes the summary to options.log. SIGINT and SIGTERM
// are forwarded to the children (a second one sends SIGKILL), which are then recorded
// as interrupted. Throws on a lock held elsewhere or failed data generation.
SweepSummary run_sweep(const SweepPlan& plan, const RunnerOptions& options);

// --dry-run: one line per run of the shard (cell, seed, dir, state, command); runs nothing.
void print_plan(const SweepPlan& plan, const RunnerOptions& options, std::ostream& out);

struct SlurmOptions {
  std::string spec;  // absolute path of SPEC
  std::string profile;
  int tasks = 0;  // array size n; 0: one task per run
  int cpus_per_task = 1;
  bool retry_failed = false;
  std::vector<std::string> extra;  // more "#SBATCH <arg>" lines (partition, time, gres)
};
// Writes DIR/sweep.sbatch (and DIR/sweep.json, DIR/slurm/); returns the script's path.
std::filesystem::path emit_slurm(const SweepPlan& plan, const std::filesystem::path& root,
                                 const std::string& mare_binary, const SlurmOptions& slurm);

// The absolute path of this process's executable (/proc/self/exe).
std::string self_executable();

}  // namespace mare::sweep
