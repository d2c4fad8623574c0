// What `mare report` reads (SPEC §9): run trees, `mare collect` tables, benchmark JSON and
// memory inspections, gathered into one in-memory view that the tables and figures use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::report {

// A malformed or unreadable input: what() starts with the file (and line, for text).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One training run (from a run directory or a row of a collect CSV).
struct RunRecord {
  std::filesystem::path dir;  // empty for CSV rows
  std::string sweep, table, profile, cell;
  std::string status;                   // the rule `mare collect` applies (stats::RunFiles::status)
  int64_t seed = 0;                     // legacy dirs: manifest.json's, else result.json's
  nlohmann::json params;                // run.json "params" (model, switches, ...)
  nlohmann::json manifest;              // manifest.json (null for CSV rows)
  nlohmann::json result;                // result.json (null when missing)
  std::vector<nlohmann::json> metrics;  // metrics.jsonl, one object per evaluation
  std::map<std::string, double> values;  // flattened numeric results (collect's metric columns)
  // Added for the tables and the index:
  std::filesystem::path source;  // the run directory, or the collect CSV the row came from
  std::string id;                // run.json "id" (collect's id column; "" for legacy dirs)
  std::string kind;              // run.json "kind" ("train" | "bench"; "train" for legacy)
  bool legacy = false;           // a run dir without run.json (manifest.json + result.json)
  nlohmann::json run;            // run.json (null for legacy dirs and CSV rows)
  nlohmann::json timing;         // timing.json (null when absent)
  nlohmann::json status_json;    // status.json (null when absent)
};

struct BenchFile {
  std::filesystem::path path;
  std::string kind;  // "allocation" | "iteration" | "gbench"
  nlohmann::json json;
  nlohmann::json run;  // run.json when the file is a sweep's bench run (its bench.json), else null
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
  // What the walk left out, one line each (runs of a sweep root not in its sweep.json).
  std::vector<std::string> notes;
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
//
// A directory is walked (entries in byte order, not into a run): a directory with run.json
// is a run (its bench.json, if any, also a BenchFile); one with manifest.json and
// result.json but no run.json a legacy run (cell: the parent's name for <cell>/seed<k>/,
// else the directory's name less a trailing -seed<k>; both read by stats::read_run_files,
// the reader `mare collect` uses, so the two count the same runs as completed; table
// inferred from the configuration: see infer_table); one with memory.json an inspection.
// Other *.json files found in a walk are read when they are a benchmark or corpus
// statistics and skipped otherwise, *.csv files read when their header is collect's.
// A file given by name must be one of: collect CSV, benchmark JSON, corpus statistics,
// memory.json, run.json/manifest.json/result.json (its directory is the run) — anything
// else is an InputError. The same run found twice (same sweep, cell, seed and id, e.g.
// in a tree and in a collect CSV) is kept once, the run directory's copy first.
ReportInputs load_inputs(const std::vector<std::filesystem::path>& paths);

// The thesis table a run belongs to: run.json's "table" when set, else from its
// configuration: a sequence task (addition, multiplication, conditional) or a GRPU/GRU/
// LSTM model -> "5.1"; CDR data (synth-cdr, pubtator) -> "4.5"; CTD (synth-ctd, bran-tsv)
// -> "4.10"; SemEval -> "4.12"; "" otherwise. A run directory whose run.json has "table":
// "" (a sweep whose spec names no table) is not inferred: it belongs to no thesis table.
std::string infer_table(const RunRecord& run);

// A run's parameter as text ("" when absent): params, then manifest.json's config.
std::string param(const RunRecord& run, const std::string& key);

// A run of a relation model: its result.json has a test F1, or it was given relation data
// (a run that has not finished). The learning curves and the ceiling table show such runs
// whatever their table.
bool relation_run(const RunRecord& run);

// Kind of the run's corpus ("synth-cdr", "bran-tsv", ...; "" when unknown): the "data"
// parameter or the command's --data argument, before the ':'.
std::string data_kind(const RunRecord& run);
// The whole data argument ("semeval:data/subtask1.2"; "" when unknown).
std::string data_source(const RunRecord& run);

// Which benchmark a JSON document is ("allocation" | "iteration" | "gbench"), "" if none.
std::string benchmark_kind(const nlohmann::json& j);
// Whether a JSON document is `mare data stats --json` output.
bool is_corpus_stats(const nlohmann::json& j);

}  // namespace mare::report
