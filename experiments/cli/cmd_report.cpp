// `mare report RESULTS... --out DIR`: tables, figures and an index page from results
// (SPEC §9; reports/src/report.h). RESULTS are sweep trees, run directories, `mare collect`
// CSVs, benchmark JSON, `mare data stats --json` files and `mare inspect memory` directories,
// in any mix. Malformed input stops the report with an error naming the file.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"
#include "reports/src/report.h"

namespace mare::cli {

void add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string out, paper;
    bool no_figures = false;
    std::vector<std::string> only;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Tables (Markdown, CSV, LaTeX), figures and an index page from results");
  cmd->add_option("RESULTS", args->inputs,
                  "Sweep trees, run directories, collect CSVs, benchmark JSON, data stats "
                  "JSON, memory inspection directories")
      ->required();
  cmd->add_option("--out", args->out, "Report directory (tables/, figures/, index.md, index.html)")
      ->required();
  cmd->add_option("--paper", args->paper,
                  "Folder of the published tables (default: reports/paper/, compiled in)");
  cmd->add_flag("--no-figures", args->no_figures, "Tables and index only (no gnuplot)");
  cmd->add_option("--only", args->only,
                  "Only these tables and figures (ids: table5.1,fig5.1,...); default: all")
      ->delimiter(',');
  cmd->callback([args] {
    report::ReportOptions o;
    for (const std::string& i : args->inputs) o.inputs.emplace_back(i);
    o.out = args->out;
    if (!args->paper.empty()) o.paper_dir = std::filesystem::path(args->paper);
    o.figures = !args->no_figures;
    o.only = args->only;
    const report::ReportSummary s = report::write_report(o);
    for (const std::string& n : s.notes) std::cerr << "mare: note: " << n << "\n";
    int tables = 0, figures = 0;
    for (const auto& a : s.tables) tables += a.missing.empty();
    for (const auto& a : s.figures) figures += a.missing.empty();
    std::cout << "mare report: " << s.runs << " runs, " << s.benchmarks << " benchmarks, "
              << s.corpora << " corpus statistics, " << s.inspections << " inspections -> "
              << tables << " of " << s.tables.size() << " tables, " << figures << " of "
              << s.figures.size()
              << " figures; index: " << (std::filesystem::path(args->out) / "index.html").string()
              << "\n";
    for (const auto& a : s.tables)
      if (!a.missing.empty()) std::cout << "  " << a.id << ": not made: " << a.missing << "\n";
  });
}

}  // namespace mare::cli
