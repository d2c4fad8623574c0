// The report's tables (SPEC §9): each a grid of text cells built from the inputs, our value
// beside the published one (reports/paper/) and their difference, written as Markdown,
// CSV and LaTeX (booktabs).
//
// Cell conventions: "mean ± sd (n)" over the completed runs (n = 1: "mean (1)"); median
// [min, max] (n) where the table's published values are single runs of a quantity that
// spans orders of magnitude (Table 5.1's MSE); "—" for a value we do not have. F1, P and
// R are in percent as the thesis prints them. The difference is ours (mean, or median)
// minus published, signed. Only runs with status "completed" enter a value; the notes
// under a table count the others.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/src/inputs.h"
#include "reports/src/util.h"

namespace mare::report {

struct Table {
  std::string id;     // "table4.6"
  std::string title;  // "Table 4.6: ..."
  std::vector<std::string> columns{};
  std::vector<std::vector<std::string>> rows{};
  std::vector<std::string> notes{};  // printed under the table
  std::string missing{};             // why the table could not be made ("" when made)
  nlohmann::json provenance{};       // see provenance_of
};

// The published tables by file name (table_4_6_ablation.csv, ...): the compiled-in copies
// of reports/paper/, or the *.csv files of `dir` when given.
struct Paper {
  std::map<std::string, CsvTable> files;
  std::string folder = "reports/paper";  // where they came from (--paper DIR, or compiled in)
  // The table of a file; throws InputError naming it when absent.
  const CsvTable& at(const std::string& file) const;
};
Paper load_paper(const std::optional<std::filesystem::path>& dir = std::nullopt);

// Every table of the report, in the index's order (4.4, 4.5, 4.6, 4.7, 4.9, 4.10, 4.11,
// 4.12, 4.13, 4.14, 4.15, B.1, C.1, 5.1, "ops": the op benchmarks of a Google Benchmark
// file, then "ceiling": what each relation cell reaches beside its corpus's oracle and the
// every-pair baseline), made or with the reason it was not.
std::vector<Table> build_tables(const ReportInputs& inputs, const Paper& paper);

// What produced a set of runs: {"specs", "profiles", "seeds", "devices", "commits",
// "dates", "sources"} (sorted, distinct) and "runs" (their number). Dates come from the
// manifests ("date", "started" or "created") and are "not recorded" where they have none.
nlohmann::json provenance_of(const std::vector<const RunRecord*>& runs);
nlohmann::json provenance_of(const BenchFile& bench);
// One line: "spec …; profile …; seeds …; device …; commit …; date …".
std::string provenance_line(const nlohmann::json& provenance);

// The model a run trained, as the thesis names it: "BRAN", "CNN", "UTRE", "UTRE-CPD",
// "NTCRE", "NTCRE-CPD" (aliases and their expansions alike), else the registry name with
// its structural switches ("utre+cpd"); " +Data" for runs with the extra data.
std::string model_label(const RunRecord& run);

std::string table_markdown(const Table& t);
std::string table_csv(const Table& t);
std::string table_latex(const Table& t);  // a complete table environment (booktabs)
std::string table_html(const Table& t);   // a <table> element with caption

// Writes DIR/tables/<id>.{md,csv,tex} atomically; the Artifact's files are relative to DIR.
// A missing table writes nothing and returns its reason.
Artifact write_table(const Table& t, const std::filesystem::path& dir);

}  // namespace mare::report
