// `mare collect DIR... --out results.csv`: one tidy row per run of one or more sweep
// trees (shards merged), following /work/notes/contracts.md.
//
// Finding runs: each DIR is walked (entries in byte order, directory symlinks followed
// once); a directory holding run.json is a run, and so is a legacy run directory
// holding manifest.json and result.json but no run.json (what `mare train --out` wrote
// before sweeps, e.g. the committed reports/grpu/runs/<cell>/seed<k>/). The walk does not
// descend into a run. Below a sweep root (a directory holding sweep.json, which `mare
// sweep` rewrites with the whole plan on every start), a run directory that the plan does
// not list is left out with a warning: it was made by an earlier version of the spec or
// by another profile (its id differs), and would otherwise sit beside the current runs.
// `--all` takes them too.
//
// A row:
//   sweep, table, profile, cell, seed, id   run.json's fields. Legacy runs: sweep, table
//       and profile empty; cell = the parent directory's name when the run directory is
//       named seed<k>[...] (<cell>/seed<k>/), else the run directory's name without a
//       trailing "-seed<k>" (bran-synth-cdr-seed1 -> bran-synth-cdr); seed from
//       manifest.json; id = FNV-1a 64 of {"cell", "config", "seed"} (manifest's config);
//       params = manifest's scalar config entries except seed.
//   status   status.json's "status"; without status.json, result.json's "status"
//       ("completed" when it has none: it is written last); without either, "missing"; a
//       run completed by status.json whose result.json (bench.json) is gone, "missing"
//       too; a run interrupted by status.json whose result.json says completed (or
//       diverged) finished afterwards: that status, as `mare sweep` counts it done.
//       The rule is stats::read_run_files's, the reader `mare report` uses as well.
//   param.<key>   run.json's params (strings as they are, booleans true/false, numbers
//       %.17g); the union over all runs, sorted; empty where a run lacks the key.
//   metrics  result.json only: first the aliases that any run has, in this order:
//       test_f1 (test.official.f1 on a corpus with an official score, else
//       test.relations.micro.f1), test_precision, test_recall (the same way),
//       test_macro_f1 (test.relations.macro_f1), valid_f1 (valid.official.f1, else
//       valid.relations.micro.f1), train_f1 (the same way),
//       best_step, steps, train_mse (final.train_mse), test_mse (final.test_mse), epochs,
//       parameters; then every other numeric leaf of result.json, its path joined with
//       '.' (array elements by index: test.relations.by_distance.0.f1), sorted. A leaf
//       whose path is an alias or a fixed column (seed) is that column, not repeated.
//       Booleans, strings and nulls are not metrics.
//   dir      the run directory as found (DIR as given, then the path below it).
// Rows are sorted by (table, sweep, cell, seed), then id and dir.
//
// Merging shards: runs with the same (sweep, table, cell, id) are one run found twice
// (the same directory reached twice, or a copy in another shard). Both with result.json:
// equal results (as JSON values) give one row, different results are a CollectError
// naming both directories. Otherwise the copy with result.json, else the one with
// status.json, else the first found is kept.
//
// Malformed run.json, status.json, result.json or manifest.json is a CollectError naming
// the file; a DIR that is not a directory too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::sweep {

struct CollectError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CollectedRun {
  std::string sweep, table, profile, cell;
  int64_t seed = 0;
  std::string id;
  std::string status;  // completed | diverged | crashed | failed | interrupted | missing
  std::map<std::string, std::string> params;  // key -> CSV text
  std::map<std::string, double> metrics;      // column name -> value (aliases included)
  std::string dir;                            // as found
  bool legacy = false;
  bool has_status = false;  // status.json was read
  nlohmann::json result;    // result.json, null when absent
};

struct Collection {
  std::vector<CollectedRun> runs;     // sorted as the rows
  std::vector<std::string> warnings;  // e.g. a DIR without runs
};

// Finds, reads and merges every run under the roots. Throws CollectError. Below a
// directory holding sweep.json (a sweep root), only the run directories its plan lists
// are taken: others are runs of an earlier version of the spec or of another profile,
// left out with one warning per sweep root, unless `all`.
Collection collect_runs(const std::vector<std::filesystem::path>& roots, bool all = false);

// The metric aliases of the contract, in column order, with the result.json path each
// one reads: stats::metric_aliases() (stats/result_metrics.h, shared with mare report).

// The table: header and rows as text.
std::vector<std::string> collect_columns(const std::vector<CollectedRun>& runs);
std::string collect_csv(const std::vector<CollectedRun>& runs);

// Writes collect_csv atomically (temporary file in the same directory, then rename).
void write_collect_csv(const std::filesystem::path& out, const std::vector<CollectedRun>& runs);

}  // namespace mare::sweep
