// `mare compare results.csv --metric M [--baseline CELL] [--alternative A] [--out PREFIX]`:
// Wilcoxon comparisons between the cells of a `mare collect` table (SPEC §7, §8;
// thesis Table 4.7's shape: one row per pair of configurations).
//
// Rules:
//   - Rows are grouped by (sweep, table), in the order the table first names them; the
//     cells of a group in the order they first appear. Each group is one family of
//     comparisons: every pair (a, b) of its cells in that order, or with a baseline each
//     other cell a against b = the baseline. A group without the baseline is skipped
//     with a warning.
//   - A run enters a cell's sample when its status is "completed" and M has a value;
//     the others are counted, by status ("no value" for a completed run without M).
//     Two such runs of one cell with the same seed are an error (pairing would be
//     ambiguous). A cell without any such run is listed and left out of the pairs.
//   - Per pair: n_a, n_b; mean ± sd of each sample; the Wilcoxon signed-rank test of
//     a − b paired by seed, over the seeds that both cells have (n paired), with the
//     Hodges–Lehmann estimate of a − b (pseudo-median of the paired differences) and its
//     confidence interval; the rank-sum (Mann–Whitney) test of a against b over all of
//     both samples; Vargha–Delaney A = P(a > b) + ½ P(a = b). Tests: stats/wilcoxon.h
//     with R's defaults (method auto, continuity correction, zeros dropped), the given
//     alternative and confidence level. dropped = runs of a and b that are not in the
//     paired test (not completed, no value, or a seed the other cell lacks).
//   - Holm's correction over the pairs of a group that have a p-value, separately for
//     the signed-rank and the rank-sum p-values.
//   - A test that cannot run (no common seed, every difference zero) leaves its columns
//     empty and says why in the pair's notes; R's warnings (ties, zeros) are notes too.
//   - Errors (CompareError): the metric column missing (the message lists the metric
//     columns there are), a column of the collect table missing, no completed run with
//     a value, an unknown baseline cell (the message lists the cells), a seed that is
//     not an integer or a value that is not a number (file:line).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep/csv.h"
#include "stats/wilcoxon.h"

namespace mare::sweep {

struct CompareError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CompareOptions {
  std::string metric;
  std::string baseline;  // empty: every pair
  stats::Alternative alternative = stats::Alternative::two_sided;
  double conf_level = 0.95;
};

struct CellSample {
  std::string cell;
  int runs = 0;                         // rows of the cell
  std::map<int64_t, double> values;     // seed -> M, completed runs with a value
  std::map<std::string, int> excluded;  // status (or "no value") -> runs left out
  double mean = 0, sd = 0;              // NaN where undefined (sd of one value)
};

struct Comparison {
  std::string a, b;
  int n_a = 0, n_b = 0, n_paired = 0, dropped = 0;
  double mean_a = 0, sd_a = 0, mean_b = 0, sd_b = 0;
  std::optional<stats::TestResult> signed_rank;  // absent when it could not run
  std::optional<stats::TestResult> rank_sum;
  double p_signed_rank_holm = 0, p_rank_sum_holm = 0;  // NaN without the test
  double vargha_delaney_a = 0;
  std::vector<std::string> notes;
};

struct CompareGroup {
  std::string sweep, table;
  std::vector<CellSample> cells;
  std::vector<Comparison> comparisons;
};

struct CompareReport {
  std::string source;  // the CSV file
  CompareOptions options;
  std::vector<CompareGroup> groups;
  std::vector<std::string> warnings;
};

CompareReport compare_cells(const CsvTable& table, const CompareOptions& options);

std::string compare_markdown(const CompareReport& report);
std::string compare_csv(const CompareReport& report);
nlohmann::json compare_json(const CompareReport& report);
// PREFIX.md, PREFIX.csv and PREFIX.json, each written atomically.
void write_compare(const CompareReport& report, const std::string& prefix);

}  // namespace mare::sweep
