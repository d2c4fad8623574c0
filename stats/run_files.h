// Reading run directories, one place for `mare collect` (experiments/sweep/collect.cpp) and
// `mare report` (reports/src/inputs.cpp), which may not include each other: what a run
// directory holds and its status (read_run_files), JSON and JSON-lines files with errors
// that name the file (and line), the numeric leaves of a result.json under their dotted
// paths (the metric aliases of result_metrics.h beside them), and the run directories a
// sweep root's sweep.json plans.
//
// Each reader throws the caller's error type (Error, constructible from a string), so
// that `mare collect` keeps throwing CollectError and `mare report` InputError.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::stats {

// "<path>: cannot be read" or "<path>: not valid JSON (<why>)".
template <class Error>
nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  try {
    return nlohmann::json::parse(s.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, out_of_range (1e999), …
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// read_json_file, and "<path>: expected a JSON object" when it holds something else.
template <class Error>
nlohmann::json read_json_object(const std::filesystem::path& path) {
  nlohmann::json j = read_json_file<Error>(path);
  if (!j.is_object()) throw Error(path.string() + ": expected a JSON object");
  return j;
}

// One JSON object a line (metrics.jsonl); blank lines are skipped, a CR before the
// newline is dropped; errors name "<path>:<line>".
template <class Error>
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot be read");
  std::vector<nlohmann::json> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(n);
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": not a JSON object (" + e.what() + ")");
    }
    if (!out.back().is_object()) throw Error(where + ": expected a JSON object");
  }
  return out;
}

// Every numeric leaf of `j` under its path: object keys joined by '.', array elements by
// their index ("test.relations.by_distance.0.f1"); booleans and strings are left out.
std::map<std::string, double> numeric_leaves(const nlohmann::json& j);

// The run directories (weakly canonical) that the sweep.json of a sweep root plans:
// `mare sweep` rewrites it with the whole plan on every start, so runs of an earlier
// version of the spec or of another profile are not in it.
template <class Error>
std::set<std::filesystem::path> planned_runs(const std::filesystem::path& root) {
  const std::filesystem::path p = root / "sweep.json";
  const nlohmann::json j = read_json_file<Error>(p);
  const nlohmann::json* runs = j.is_object() && j.contains("runs") ? &j.at("runs") : nullptr;
  if (!runs || !runs->is_array())
    throw Error(p.string() + ": expected \"runs\": [{\"dir\": ...}, ...] (a sweep plan)");
  std::set<std::filesystem::path> planned;
  for (const nlohmann::json& r : *runs) {
    if (!r.is_object() || !r.contains("dir") || !r.at("dir").is_string())
      throw Error(p.string() + ": expected every run of \"runs\" to have a \"dir\" string");
    std::error_code ec;
    const std::filesystem::path d =
        std::filesystem::weakly_canonical(root / r.at("dir").get<std::string>(), ec);
    if (!ec) planned.insert(d);
  }
  return planned;
}

// What keeps a planned run directory from holding its run: "no such directory", "not a
// directory", "no run.json" (`mare sweep` writes it first); "" when it holds one.
std::string planned_run_gap(const std::filesystem::path& dir);

// "" when every run directory a sweep root's sweep.json plans holds its run; otherwise one
// line that counts those that do not and names a few with why (planned_run_gap), so that a
// table with a seed less says so.
std::string planned_runs_warning(const std::filesystem::path& root,
                                 const std::set<std::filesystem::path>& planned);

// ---- run directories --------------------------------------------------------------------

// A run directory: one holding run.json (a run of `mare sweep`), or a legacy one holding
// manifest.json and result.json but no run.json (what `mare train --out` writes, e.g. the
// committed reports/grpu/runs/<cell>/seed<k>/).
bool is_run_dir(const std::filesystem::path& dir);

// The cell of a legacy run directory: its parent's name when it is named seed<k>[...]
// (<cell>/seed<k>/), else its name without a trailing "-seed<k>" (bran-synth-cdr-seed1 ->
// bran-synth-cdr). The path is made absolute first ("." and a trailing '/' name the
// directory itself).
std::string legacy_cell(const std::filesystem::path& dir);

// What a run directory holds. JSON files are null when absent.
struct RunFiles {
  std::filesystem::path dir;
  bool legacy = false;  // no run.json
  nlohmann::json run, manifest, result, status_file;
  nlohmann::json timing;                // with_series only
  std::vector<nlohmann::json> metrics;  // metrics.jsonl, with_series only
  // status.json's "status"; without status.json, result.json's "status" ("completed" for
  // a result.json without one: it is written last); without either, "missing". A run
  // whose status.json says completed but whose output (result.json, bench.json) is gone
  // is "missing" too: not a completed run with no values. A run whose status.json says
  // it stopped (interrupted, running: anything but completed, diverged, failed, crashed)
  // but whose result.json says completed or diverged finished afterwards (resumed by
  // hand, or the sweep died first): result.json's status, as `mare sweep` reads it.
  std::string status;
};

// The seed of a legacy run: manifest.json's, else result.json's (integers only).
std::optional<int64_t> legacy_seed(const RunFiles& f);
// A legacy run's configuration: manifest.json's "config" object ({} when it has none).
nlohmann::json legacy_config(const RunFiles& f);

// Sets f.status by the rule above; returns "" or the error (naming status.json) when
// status.json has no non-empty "status" string, or (naming result.json) when a completed
// run's result.json has a metric alias that is not a finite number (result_metrics.h).
std::string resolve_status(RunFiles& f);

// "" or what makes a run's timing.json or metrics.jsonl (read) no run's, naming the file
// (and line): stats::impossible_value, stats::series_problem with a completed run's steps.
std::string series_problem(const RunFiles& f);

// Reads run.json, manifest.json, result.json and status.json of `dir` (with_series:
// timing.json and metrics.jsonl too, checked by series_problem) and resolves its status. Every
// error is an Error naming the file (and line): unreadable, not JSON, not a JSON object.
template <class Error>
RunFiles read_run_files(const std::filesystem::path& dir, bool with_series) {
  RunFiles f;
  f.dir = dir;
  auto object = [&](const char* name, nlohmann::json& into) {
    if (std::filesystem::exists(dir / name)) into = read_json_object<Error>(dir / name);
  };
  object("run.json", f.run);
  f.legacy = f.run.is_null();
  object("manifest.json", f.manifest);
  object("result.json", f.result);
  object("status.json", f.status_file);
  if (with_series) {
    object("timing.json", f.timing);
    if (std::filesystem::exists(dir / "metrics.jsonl"))
      f.metrics = read_jsonl<Error>(dir / "metrics.jsonl");
  }
  if (const std::string why = resolve_status(f); !why.empty()) throw Error(why);
  if (with_series) {
    if (const std::string why = series_problem(f); !why.empty()) throw Error(why);
  }
  return f;
}

}  // namespace mare::stats
