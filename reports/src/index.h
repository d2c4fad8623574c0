// The report's index: DIR/index.md and a static DIR/index.html (no script, no server) that
// list every expected table and figure in order, each with a link to its files and its
// provenance (spec, profile, seeds, device, commit, date), or the reason it is missing.
// The HTML page shows the tables inline and the figures as <img> of their SVG (PNG when
// there is no SVG).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "reports/src/inputs.h"
#include "reports/src/tables.h"

namespace mare::report {

struct IndexContent {
  std::string title = "Report";       // the heading (and the HTML page's title)
  std::vector<Table> tables;          // as built (the HTML inlines them)
  std::vector<Artifact> table_files;  // write_table's result, same order as tables
  std::vector<Artifact> figures;
  std::vector<std::string> inputs;  // one line per input given
  std::vector<std::string> notes;   // e.g. runs that belong to no table
};

std::string index_markdown(const IndexContent& c);
std::string index_html(const IndexContent& c);

// Writes both files atomically into dir.
void write_index(const IndexContent& c, const std::filesystem::path& dir);

}  // namespace mare::report
