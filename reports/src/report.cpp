#include "reports/src/report.h"

#include <map>
#include <set>

#include "reports/src/figures.h"
#include "reports/src/index.h"
#include "reports/src/tables.h"

namespace mare::report {

namespace fs = std::filesystem;

ReportSummary write_report(const ReportOptions& options) {
  return write_report(load_inputs(options.inputs), options);
}

ReportSummary write_report(const ReportInputs& in, const ReportOptions& options) {
  const Paper paper = load_paper(options.paper_dir);
  std::vector<Table> tables = build_tables(in, paper);

  ReportSummary sum;
  sum.runs = in.runs.size();
  sum.benchmarks = in.benchmarks.size();
  sum.corpora = in.corpora.size();
  sum.inspections = in.inspections.size();
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
  if (options.figures) sum.figures = write_figures(in, options.out);

  IndexContent c;
  c.tables = tables;
  c.table_files = sum.tables;
  c.figures = sum.figures;
  std::map<std::string, int> status;
  std::set<std::string> sources;
  std::vector<std::string> no_table;
  for (const RunRecord& r : in.runs) {
    ++status[r.status];
    if (r.table.empty()) no_table.push_back(r.cell.empty() ? r.source.string() : r.cell);
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
