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

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string out, paper;
  bool no_figures = false;
  std::vector<std::string> only;
  std::string title = "Report";
};

void run_report(const ReportArgs& a) {
  report::ReportOptions o;
  for (const std::string& i : a.inputs) o.inputs.emplace_back(i);
  o.out = a.out;
  if (!a.paper.empty()) o.paper_dir = std::filesystem::path(a.paper);
  o.figures = !a.no_figures;
  o.only = a.only;
  o.title = a.title;
  const report::ReportSummary s = report::write_report(o);
  for (const std::string& n : s.notes) std::cerr << "mare: note: " << n << "\n";
  int tables = 0, figures = 0;
  for (const auto& t : s.tables) tables += t.missing.empty();
  for (const auto& f : s.figures) figures += f.missing.empty();
  std::cout << "mare report: " << s.runs << " runs, " << s.benchmarks << " benchmarks, "
            << s.corpora << " corpus statistics, " << s.inspections << " inspections -> " << tables
            << " of " << s.tables.size() << " tables, " << figures << " of " << s.figures.size()
            << " figures; index: " << (std::filesystem::path(a.out) / "index.html").string()
            << "\n";
  for (const auto& t : s.tables)
    if (!t.missing.empty()) std::cout << "  " << t.id << ": not made: " << t.missing << "\n";
  for (const auto& f : s.figures)
    if (!f.missing.empty()) std::cout << "  " << f.id << ": not drawn: " << f.missing << "\n";
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto [cmd, args] = add_command<ReportArgs>(
      app, "report", "Tables (Markdown, CSV, LaTeX), figures and an index page from results",
      run_report);
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
  cmd->add_option("--title", args->title,
                  "The index's heading and the HTML page's title: what the report is about")
      ->capture_default_str();
}

}  // namespace mare::cli
