// What `mare report` reads (SPEC §9): run trees, `mare collect` tables, benchmark JSON and
// memory inspections, gathered into one in-memory view that the tables and figures use.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::report {

// One training run (from a run directory or a row of a collect CSV).
struct RunRecord {
  std::filesystem::path dir;  // empty for CSV rows
  std::string sweep, table, profile, cell, status;
  int64_t seed = 0;
  nlohmann::json params;                 // run.json "params" (model, switches, ...)
  nlohmann::json manifest;               // manifest.json (null for CSV rows)
  nlohmann::json result;                 // result.json (null when missing)
  std::vector<nlohmann::json> metrics;   // metrics.jsonl, one object per evaluation
  std::map<std::string, double> values;  // flattened numeric results (collect's metric columns)
};

struct BenchFile {
  std::filesystem::path path;
  std::string kind;  // "allocation" | "iteration" | "gbench"
  nlohmann::json json;
};

struct CorpusStats {  // `mare data stats --json` output
  std::filesystem::path path;
  nlohmann::json json;
};

struct Inspection {  // `mare inspect memory` output directory
  std::filesystem::path dir;
  nlohmann::json json;  // memory.json
};

struct ReportInputs {
  std::vector<RunRecord> runs;
  std::vector<BenchFile> benchmarks;
  std::vector<CorpusStats> corpora;
  std::vector<Inspection> inspections;
};

// One table or figure of the report.
struct Artifact {
  std::string id;     // "table4.6", "fig4.9"
  std::string title;  // "Table 4.6: ablation on CDR (test F1, mean of n runs)"
  std::vector<std::filesystem::path> files;  // relative to the report directory
  std::string missing;                       // why it could not be made ("" when made)
  nlohmann::json provenance;                 // spec, profile, seeds, device, commit, date
};

// Reads every path (kind detected from content); throws naming the file on malformed input.
ReportInputs load_inputs(const std::vector<std::filesystem::path>& paths);

}  // namespace mare::report
