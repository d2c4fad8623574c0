#include "reports/src/report.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "reports/src/figures.h"
#include "reports/src/index.h"
#include "reports/src/tables.h"

namespace mare::report {

namespace fs = std::filesystem;

ReportSummary write_report(const ReportOptions& options) {
  return write_report(load_inputs(options.inputs), options);
}

ReportSummary write_report(const ReportInputs& in, const ReportOptions& options) {
  // The ids of contracts.md, checked before anything is written: a misspelt --only would
  // otherwise give an empty report.
  static const std::set<std::string> known{
      "table4.4",  "table4.5",   "table4.6",   "table4.7",   "table4.9", "table4.10", "table4.11",
      "table4.12", "table4.13",  "table4.14",  "table4.15",  "tableB.1", "tableC.1",  "table5.1",
      "fig4.2",    "fig4.3",     "fig4.4",     "fig4.5",     "fig4.6",   "fig4.9",    "fig4.10",
      "fig4.11",   "fig5.1",     "fig5.2",     "fig5.3",     "fig5.4",   "fig5.5",    "curves4.5",
      "curves4.6", "curves4.10", "curves4.12", "curves4.13", "curves",   "ceiling",   "ops"};
  for (const std::string& id : options.only)
    if (!known.count(id)) {
      std::string all;
      for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
      throw std::invalid_argument("report: unknown table or figure id '" + id + "' (known: " + all +
                                  ")");
    }
  // Nothing found is an error, as `mare collect` says it (an empty report with status 0
  // read as a report of nothing missing).
  if (in.runs.empty() && in.benchmarks.empty() && in.corpora.empty() && in.inspections.empty()) {
    std::string where;
    for (const fs::path& p : options.inputs) where += (where.empty() ? "" : ", ") + p.string();
    throw std::invalid_argument(
        "report: nothing to report in " + (where.empty() ? std::string("(no inputs)") : where) +
        ": expected runs (run.json, or manifest.json with result.json), a collect CSV, "
        "benchmark JSON, corpus statistics or memory inspections");
  }
  const Paper paper = load_paper(options.paper_dir);
  std::vector<Table> tables = build_tables(in, paper);
  auto wanted = [&](const std::string& id) {
    return options.only.empty() ||
           std::find(options.only.begin(), options.only.end(), id) != options.only.end();
  };
  std::erase_if(tables, [&](const Table& t) { return !wanted(t.id); });

  ReportSummary sum;
  sum.runs = in.runs.size();
  sum.benchmarks = in.benchmarks.size();
  sum.corpora = in.corpora.size();
  sum.inspections = in.inspections.size();
  sum.notes = in.notes;
  for (const Table& t : tables) {
    sum.tables.push_back(write_table(t, options.out));
    // A table made by an earlier report into the same directory but not now: its files go,
    // so that the directory holds what the index lists.
    if (!t.missing.empty())
      for (const char* ext : {".md", ".csv", ".tex"}) {
        std::error_code ec;
        fs::remove(options.out / "tables" / (t.id + ext), ec);
      }
  }
  if (options.figures) {
    sum.figures = write_figures(in, options.out, wanted);
  }

  IndexContent c;
  c.title = options.title;
  c.tables = tables;
  c.table_files = sum.tables;
  c.figures = sum.figures;
  std::map<std::string, int> status;
  std::set<std::string> sources;
  std::vector<std::string> no_table;
  for (const RunRecord& r : in.runs) {
    ++status[r.status];
    // A relation run of no table is in the learning curves and the ceiling table.
    if (r.table.empty() && !relation_run(r))
      no_table.push_back(r.cell.empty() ? r.source.string() : r.cell);
  }
  std::string runs = std::to_string(in.runs.size()) + " runs";
  if (!status.empty()) {
    runs += " (";
    bool first = true;
    for (const auto& [s, n] : status) {
      runs += (first ? "" : ", ") + std::to_string(n) + " " + s;
      first = false;
    }
    runs += ")";
  }
  c.inputs.push_back(runs);
  for (const BenchFile& b : in.benchmarks)
    c.inputs.push_back("benchmark (" + b.kind + "): " + b.path.string());
  for (const CorpusStats& s : in.corpora)
    c.inputs.push_back("corpus statistics: " + s.path.string());
  for (const Inspection& i : in.inspections)
    c.inputs.push_back("memory inspection: " + i.dir.string());
  if (!no_table.empty()) {
    std::string n = std::to_string(no_table.size()) +
                    " run(s) belong to no table of the report and are not shown:";
    for (std::size_t i = 0; i < no_table.size(); ++i) n += (i ? ", " : " ") + no_table[i];
    c.notes.push_back(n + ".");
  }
  write_index(c, options.out);
  return sum;
}

}  // namespace mare::report
