// `mare compare results.csv --metric M [--baseline CELL] [--alternative A] [--out PREFIX]`:
// Wilcoxon comparisons between the cells of a `mare collect` table, as
// experiments/sweep/compare.h describes. Prints the Markdown table; --out also writes
// PREFIX.md, PREFIX.csv and PREFIX.json. This file only parses arguments and prints.
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/run_dir.h"
#include "experiments/sweep/compare.h"

namespace mare::cli {
namespace {

struct CompareArgs {
  std::string csv, metric, baseline, alternative = "two-sided", out;
  double conf_level = 0.95;
};

void run_compare(const CompareArgs& a) {
  if (!a.out.empty()) {
    if (a.out.back() == '/' || std::filesystem::is_directory(a.out))
      throw std::invalid_argument("--out " + a.out +
                                  ": a directory; expected a file prefix (PREFIX.md, .csv, .json)");
    check_writable_file(a.out + ".md", "--out", /*creates_parents=*/true);
  }
  sweep::CompareOptions o;
  o.metric = a.metric;
  o.baseline = a.baseline;
  o.conf_level = a.conf_level;
  try {
    o.alternative = stats::parse_alternative(a.alternative);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("--alternative: ") + e.what());
  }
  const sweep::CompareReport rep = sweep::compare_cells(sweep::read_csv(a.csv), o);
  for (const std::string& w : rep.warnings) std::cerr << "mare: warning: " << w << "\n";
  std::cout << sweep::compare_markdown(rep);
  if (!a.out.empty()) {
    sweep::write_compare(rep, a.out);
    std::cerr << "wrote " << a.out << ".md, " << a.out << ".csv, " << a.out << ".json\n";
  }
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto [cmd, args] = add_command<CompareArgs>(
      app, "compare",
      "Wilcoxon signed-rank (paired by seed) and rank-sum tests between the cells of a "
      "mare collect table, Holm-corrected per table (thesis Table 4.7's shape)",
      run_compare);
  cmd->add_option("CSV", args->csv, "Table written by mare collect")->required();
  cmd->add_option("--metric", args->metric, "Metric column, e.g. test_f1 or test_mse")->required();
  cmd->add_option("--baseline", args->baseline,
                  "Compare each cell against this one (default: every pair of cells)");
  cmd->add_option("--alternative", args->alternative, "two-sided, less or greater (a − b)")
      ->capture_default_str();
  cmd->add_option("--conf-level", args->conf_level,
                  "Level of the Hodges-Lehmann confidence interval")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Also write PREFIX.md, PREFIX.csv and PREFIX.json");
}

}  // namespace mare::cli
