// `mare sweep SPEC --out DIR`: runs every run of an experiment spec (SPEC §7) as a
// child `mare` process, one directory per run under DIR; an interrupted sweep resumes
// where it stopped (experiments/sweep/runner.h). SPEC is a YAML spec or the sweep.json
// an earlier sweep wrote.
//
// Exit status: 0 when every run of the shard is done (completed or diverged); 1 when a
// run failed or crashed; 130/143 when stopped by SIGINT/SIGTERM (the interrupted runs
// resume on the next sweep); 75 when --time-limit left runs paused or not started (the
// same command goes on); 2 for errors (bad spec, lock held, data generation failed).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "experiments/run_lifecycle.h"
#include "experiments/sweep/runner.h"
#include "kernels/tensor.h"

namespace mare::cli {

namespace {

struct SweepArgs {
  std::string spec;
  std::string out;
  std::string profile;
  int jobs = 1;
  std::string shard = "1/1";
  bool dry_run = false;
  std::string emit;
  bool retry_failed = false;
  std::string time_limit;  // else MARE_TIME_LIMIT
  int slurm_tasks = 0;
  int slurm_cpus = 1;
  std::vector<std::string> slurm_args;
};

void run(const SweepArgs& a, bool profile_given) {
  namespace sw = mare::sweep;
  const sw::Shard shard = sw::parse_shard(a.shard);
  // A YAML spec defaults to the default profile; a sweep.json plan carries its own.
  const bool is_plan = std::filesystem::path(a.spec).extension() == ".json";
  const std::string profile = profile_given ? a.profile : is_plan ? "" : "default";
  const sw::SweepPlan plan = sw::load_plan(a.spec, profile);

  sw::RunnerOptions o;
  o.root = a.out;
  o.jobs = a.jobs;
  o.shard = shard;
  o.retry_failed = a.retry_failed;
  o.log = &std::cerr;
  o.tty = ::isatty(STDERR_FILENO);
  if (!a.time_limit.empty())
    o.time_limit = parse_duration(a.time_limit, "sweep: --time-limit");
  else if (const char* env = std::getenv("MARE_TIME_LIMIT"); env && *env)
    o.time_limit = parse_duration(env, "MARE_TIME_LIMIT");

  // TF32 GEMMs on the CPU: each run would be refused by mare train; the spec is, first
  // (a dry run included: it is the spec's mistake, not the machine's).
  for (const sw::RunPlan& r : plan.runs) {
    const auto flag = [&r](const char* name) {
      const auto at = std::find(r.command.begin(), r.command.end(), name);
      return at == r.command.end() || at + 1 == r.command.end() ? std::string() : *(at + 1);
    };
    if (flag("--matmul-precision") == "high" && flag("--device") != "cuda")
      throw std::invalid_argument("sweep: " + a.spec + ", profile " + plan.profile +
                                  ": matmul_precision: high needs device: cuda (TF32 runs on a "
                                  "GPU's tensor cores; the CPU's GEMMs are fp32)");
  }
  if (a.dry_run) {
    sw::print_plan(plan, o, std::cout);
    return;
  }
  // Runs on the GPU where none can run would each fail after the sweep wrote its root:
  // refused before anything is written, as `mare train --device cuda` is (a dry run and
  // --emit slurm, often on a login node without the GPUs, still go on).
  if (a.emit.empty())
    for (const sw::RunPlan& r : plan.runs) {
      const auto at = std::find(r.command.begin(), r.command.end(), "--device");
      if (at == r.command.end() || at + 1 == r.command.end()) continue;
      const Device device = parse_device(*(at + 1));
      if (std::string why = device_unavailable(device); !why.empty())
        throw std::invalid_argument("sweep: --device " + std::string(to_string(device)) + ": " +
                                    why + " (the runs of " + a.spec + ", profile " + plan.profile +
                                    ")");
    }
  if (a.emit == "slurm") {
    if (!shard.whole())
      throw std::invalid_argument("--emit slurm writes every shard itself: leave --shard out");
    sw::SlurmOptions so;
    so.spec = std::filesystem::absolute(a.spec).lexically_normal().string();
    so.profile = plan.profile;
    so.tasks = a.slurm_tasks;
    so.cpus_per_task = a.slurm_cpus;
    so.retry_failed = a.retry_failed;
    so.extra = a.slurm_args;
    const auto script = sw::emit_slurm(plan, a.out, sw::self_executable(), so);
    std::cout << "wrote " << script.string() << " (" << plan.runs.size() << " runs)\n"
              << "submit it with:\n  sbatch " << script.string() << "\n"
              << "then collect the shards: mare collect "
              << std::filesystem::absolute(a.out).lexically_normal().string()
              << " --out results.csv\n";
    return;
  }
  const sw::SweepSummary s = sw::run_sweep(plan, o);
  const int status = s.exit_status();
  if (status != 0) {
    std::cout.flush();
    std::cerr.flush();
    std::exit(status);
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto [cmd, a] = add_command<SweepArgs>(
      app, "sweep",
      "Run every run of an experiment spec (one directory each under --out); resumes an "
      "interrupted sweep",
      [](const SweepArgs& args, const CLI::App& c) { run(args, c.count("--profile") > 0); });
  cmd->add_option("spec", a->spec, "Experiment spec (YAML), or a sweep.json written by a sweep")
      ->required();
  cmd->add_option("--out", a->out, "Sweep root directory")->required();
  cmd->add_option(
      "--profile", a->profile,
      "smoke | default | paper | gpu (a YAML spec: default; a sweep.json: its own; gpu: "
      "the paper's sizes on one GPU, where the spec defines it)");
  cmd->add_option("--jobs", a->jobs, "Runs at once; each gets MARE_THREADS = max(1, cores / jobs)")
      ->capture_default_str()
      ->check(whole_number(1, 1024));
  cmd->add_option("--shard", a->shard,
                  "Run only shard i of n (1-based): the runs with plan index k, k % n == i - 1")
      ->capture_default_str();
  cmd->add_flag("--dry-run", a->dry_run,
                "Print the plan (cell, seed, dir, state, command) and run nothing");
  cmd->add_option("--emit", a->emit,
                  "slurm: write DIR/sweep.sbatch, an array job whose task i runs shard i/n, "
                  "print the sbatch command and exit")
      ->check(CLI::IsMember({"slurm"}));
  cmd->add_flag("--retry-failed", a->retry_failed,
                "Run failed and crashed runs again (by default they are kept and reported)");
  cmd->add_option("--time-limit", a->time_limit,
                  "Time the sweep may take (90s, 10m, 1.5h; default: MARE_TIME_LIMIT, else "
                  "none): no run starts after it, and each run gets the time left, stopping at "
                  "an evaluation with its checkpoint (paused); exits 75 while runs are left, "
                  "and the same command goes on");
  cmd->add_option("--slurm-tasks", a->slurm_tasks,
                  "--emit slurm: array tasks n (default: one per run)")
      ->check(whole_number(1));
  add_count(cmd, "--slurm-cpus", a->slurm_cpus, "--emit slurm: cpus-per-task", 1);
  cmd->add_option("--slurm-arg", a->slurm_args,
                  "--emit slurm: another '#SBATCH ARG' line, e.g. --slurm-arg=--partition=gpu "
                  "(repeatable)");
}

}  // namespace mare::cli
