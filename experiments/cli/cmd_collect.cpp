// `mare collect DIR... --out results.csv`: one row per run of the given sweep trees
// (shards merged), as experiments/sweep/collect.h describes. This file only parses
// arguments and prints; errors propagate as exceptions naming the file.
#include <iostream>
#include <map>

#include "experiments/cli/commands.h"
#include "experiments/run_dir.h"
#include "experiments/sweep/collect.h"

namespace mare::cli {
namespace {

struct CollectArgs {
  std::vector<std::string> dirs;
  std::string out;
  bool all = false;
};

void run_collect(const CollectArgs& a) {
  check_writable_file(a.out, "--out", /*creates_parents=*/true);
  std::vector<std::filesystem::path> roots(a.dirs.begin(), a.dirs.end());
  const sweep::Collection c = sweep::collect_runs(roots, a.all);
  for (const std::string& w : c.warnings) std::cerr << "mare: warning: " << w << "\n";
  if (c.runs.empty()) throw std::runtime_error("no runs found under the given directories");
  sweep::write_collect_csv(a.out, c.runs);
  std::map<std::string, int> by_status;
  for (const sweep::CollectedRun& r : c.runs) ++by_status[r.status];
  std::cout << a.out << ": " << c.runs.size() << " runs (";
  bool first = true;
  for (const auto& [status, n] : by_status) {
    std::cout << (first ? "" : ", ") << n << " " << status;
    first = false;
  }
  std::cout << "), " << sweep::collect_columns(c.runs).size() << " columns\n";
}

}  // namespace

void add_collect_command(CLI::App& app) {
  auto [cmd, args] = add_command<CollectArgs>(
      app, "collect",
      "Merge sweep trees (shards) into one CSV, one row per run: cell, seed, status, params, "
      "metrics",
      run_collect);
  cmd->add_option("DIR", args->dirs, "Sweep roots, shard roots or run directories")->required();
  cmd->add_option("--out", args->out, "CSV file to write (atomically)")->required();
  cmd->add_flag("--all", args->all,
                "Also take run directories that a sweep root's sweep.json does not list (runs of "
                "an earlier version of the spec or of another profile)");
}

}  // namespace mare::cli
