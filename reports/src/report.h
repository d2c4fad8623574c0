// `mare report RESULTS... --out DIR` (SPEC §9): reads every input, writes every table
// (DIR/tables/), every figure (DIR/figures/, reports/src/figures.h) and the index
// (DIR/index.md, DIR/index.html) that lists them with their provenance, or says why one
// could not be made.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reports/src/inputs.h"

namespace mare::report {

struct ReportOptions {
  std::vector<std::filesystem::path> inputs;
  std::filesystem::path out;
  std::optional<std::filesystem::path> paper_dir;  // published tables; default: compiled in
  bool figures = true;                             // false: tables and index only
  // Ids of the tables and figures the report is about ("table5.1", "fig5.1"); empty: all.
  // The others are neither written nor listed (a GRPU-only report need not say why it has
  // no CDR table).
  std::vector<std::string> only;
  // The index's heading and the HTML page's title: what the report is about.
  std::string title = "Report";
};

struct ReportSummary {
  std::vector<Artifact> tables, figures;
  std::size_t runs = 0, benchmarks = 0, corpora = 0, inspections = 0;
  std::vector<std::string> notes;  // ReportInputs::notes: what the walk left out
};

// Loads the inputs (InputError naming the file on malformed input) and writes the report.
ReportSummary write_report(const ReportOptions& options);

// The same from inputs already loaded.
ReportSummary write_report(const ReportInputs& inputs, const ReportOptions& options);

}  // namespace mare::report
