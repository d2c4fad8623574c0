#include "experiments/sweep/collect.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "experiments/run_dir.h"
#include "experiments/sweep/csv.h"
#include "experiments/sweep/spec.h"
#include "stats/result_metrics.h"
#include "stats/run_files.h"

namespace fs = std::filesystem;

namespace mare::sweep {
namespace {

const std::vector<std::string>& fixed_columns() {
  static const std::vector<std::string> c{"sweep", "table", "profile", "cell",
                                          "seed",  "id",    "status"};
  return c;
}

const nlohmann::json& field(const nlohmann::json& j, const fs::path& path, const std::string& key,
                            nlohmann::json::value_t type, const char* what) {
  if (!j.is_object()) throw CollectError(path.string() + ": expected a JSON object");
  auto it = j.find(key);
  bool ok = it != j.end();
  if (ok) {
    if (type == nlohmann::json::value_t::number_integer)
      ok = it->is_number_integer();
    else
      ok = it->type() == type;
  }
  if (!ok) throw CollectError(path.string() + ": expected \"" + key + "\" (" + what + ")");
  return *it;
}

std::string param_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return csv_number(v.get<double>());
  if (v.is_null()) return "";
  return v.dump();
}

// The metric columns of one result.json: aliases, then the other numeric leaves.
std::map<std::string, double> result_metrics(const nlohmann::json& result) {
  const std::map<std::string, double> leaves = stats::numeric_leaves(result);
  std::map<std::string, double> m;
  for (const auto& [alias, path] : stats::metric_aliases()) {
    auto it = leaves.find(path);
    if (it != leaves.end()) m.emplace(alias, it->second);  // the first path found
  }
  std::set<std::string> taken(fixed_columns().begin(), fixed_columns().end());
  taken.insert("dir");
  for (const auto& a : stats::metric_aliases()) taken.insert(a.first);
  for (const auto& [k, v] : leaves)
    if (!taken.count(k) && k.rfind("param.", 0) != 0) m[k] = v;
  return m;
}

// The run-directory reader shared with `mare report`: its files and status.
stats::RunFiles read_files(const fs::path& dir) {
  return stats::read_run_files<CollectError>(dir, /*with_series=*/false);
}

void set_outcome(const stats::RunFiles& f, CollectedRun& run) {
  run.dir = f.dir.string();
  run.status = f.status;
  run.has_status = !f.status_file.is_null();
  run.result = f.result;
  if (run.result.is_object()) run.metrics = result_metrics(run.result);
}

CollectedRun read_sweep_run(const fs::path& dir) {
  const stats::RunFiles f = read_files(dir);
  const fs::path p = dir / "run.json";
  const nlohmann::json& j = f.run;
  using V = nlohmann::json::value_t;
  CollectedRun run;
  run.sweep = field(j, p, "sweep", V::string, "a string").get<std::string>();
  run.table = field(j, p, "table", V::string, "a string").get<std::string>();
  run.profile = field(j, p, "profile", V::string, "a string").get<std::string>();
  run.cell = field(j, p, "cell", V::string, "a string").get<std::string>();
  run.seed = field(j, p, "seed", V::number_integer, "an integer").get<int64_t>();
  run.id = field(j, p, "id", V::string, "a string").get<std::string>();
  const nlohmann::json& params = field(j, p, "params", V::object, "an object");
  for (auto it = params.begin(); it != params.end(); ++it)
    run.params[it.key()] = param_text(it.value());
  set_outcome(f, run);
  return run;
}

CollectedRun read_legacy_run(const fs::path& dir) {
  const stats::RunFiles f = read_files(dir);
  CollectedRun run;
  run.legacy = true;
  run.cell = stats::legacy_cell(dir);
  set_outcome(f, run);
  const auto seed = stats::legacy_seed(f);
  if (!seed)
    throw CollectError((dir / "manifest.json").string() +
                       ": expected \"seed\" (an integer; legacy run without run.json)");
  run.seed = *seed;
  const nlohmann::json config = stats::legacy_config(f);
  for (auto it = config.begin(); it != config.end(); ++it)
    if (it.key() != "seed" && !it.value().is_structured())
      run.params[it.key()] = param_text(it.value());
  const nlohmann::json key = {{"cell", run.cell}, {"config", config}, {"seed", run.seed}};
  run.id = fnv1a_hex(key.dump());
  return run;
}

struct Found {
  fs::path dir;
  bool legacy = false;
};

// The run directories (canonical) that a sweep root's sweep.json plans.
std::set<fs::path> planned_runs(const fs::path& root) {
  return stats::planned_runs<CollectError>(root);
}

struct Walk {
  bool all = false;  // take runs their sweep.json does not plan
  std::set<fs::path> visited;
  std::vector<Found> found;
  std::map<fs::path, std::vector<fs::path>> superseded;  // sweep root -> runs not in its plan
  std::vector<std::string> gaps;                         // planned runs that are not there
};

void walk(const fs::path& dir, Walk& w, const std::set<fs::path>* planned,
          const fs::path& plan_root) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(dir, ec);
  if (ec) throw CollectError(dir.string() + ": cannot resolve (" + ec.message() + ")");
  if (!w.visited.insert(canonical).second) return;  // reached twice (symlink, overlapping DIRs)
  if (stats::is_run_dir(dir)) {
    if (planned && !planned->count(canonical)) {
      w.superseded[plan_root].push_back(dir);
      return;
    }
    // A planned run that lost its run.json is no loose run: planned_runs_warning names it.
    if (planned && !fs::exists(dir / "run.json")) return;
    w.found.push_back({dir, !fs::exists(dir / "run.json")});
    return;
  }
  // A sweep root: below it, only the runs of its current plan (sweep.json) count.
  std::set<fs::path> own;
  fs::path own_root = plan_root;
  if (!w.all && fs::exists(dir / "sweep.json")) {
    own = planned_runs(dir);
    planned = &own;
    own_root = dir;
  }
  std::vector<std::string> subdirs;
  fs::directory_iterator it(dir, ec);
  if (ec) throw CollectError(dir.string() + ": cannot list (" + ec.message() + ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw CollectError(dir.string() + ": cannot list (" + ec.message() + ")");
    std::error_code e2;
    if (it->is_directory(e2)) subdirs.push_back(it->path().filename().string());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const std::string& s : subdirs) walk(dir / s, w, planned, own_root);
  if (planned == &own)
    if (std::string gap = stats::planned_runs_warning(dir, own); !gap.empty())
      w.gaps.push_back(std::move(gap));
}

int outcome_rank(const CollectedRun& r) {
  return !r.result.is_null() ? 2 : r.has_status ? 1 : 0;
}

}  // namespace

Collection collect_runs(const std::vector<fs::path>& roots, bool all) {
  if (roots.empty()) throw CollectError("no directory given (expected one or more sweep trees)");
  Collection c;
  Walk w;
  w.all = all;
  std::vector<CollectedRun> runs;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::size_t> index;
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      throw CollectError(root.string() +
                         ": not a directory (expected a sweep tree or run directory)");
    const bool seen = w.visited.count(fs::canonical(root, ec)) > 0;
    w.found.clear();
    w.superseded.clear();
    walk(root, w, nullptr, fs::path());
    for (const auto& [plan_root, dirs] : w.superseded)
      c.warnings.push_back(
          plan_root.string() + ": " + std::to_string(dirs.size()) + " run director" +
          (dirs.size() == 1 ? "y" : "ies") +
          " not in its sweep.json (an earlier version of the spec, or another profile) left "
          "out, e.g. " +
          dirs.front().string() + " (`mare collect --all` takes them)");
    c.warnings.insert(c.warnings.end(), w.gaps.begin(), w.gaps.end());
    w.gaps.clear();
    if (w.found.empty() && w.superseded.empty() && !seen)
      c.warnings.push_back(root.string() +
                           ": no runs found (no run.json, nor manifest.json with result.json)");
    for (const Found& f : w.found) {
      CollectedRun run = f.legacy ? read_legacy_run(f.dir) : read_sweep_run(f.dir);
      const auto key = std::make_tuple(run.sweep, run.table, run.cell, run.id);
      auto [it, fresh] = index.emplace(key, runs.size());
      if (fresh) {
        runs.push_back(std::move(run));
        continue;
      }
      CollectedRun& kept = runs[it->second];
      if (!kept.result.is_null() && !run.result.is_null()) {
        if (kept.result != run.result)
          throw CollectError(
              "run " + run.id + " (cell " + run.cell + ", seed " + std::to_string(run.seed) +
              ") found twice with different result.json: " + kept.dir + " and " + run.dir);
        continue;
      }
      if (outcome_rank(run) > outcome_rank(kept)) kept = std::move(run);
    }
  }
  std::sort(runs.begin(), runs.end(), [](const CollectedRun& a, const CollectedRun& b) {
    return std::tie(a.table, a.sweep, a.cell, a.seed, a.id, a.dir) <
           std::tie(b.table, b.sweep, b.cell, b.seed, b.id, b.dir);
  });
  c.runs = std::move(runs);
  return c;
}

std::vector<std::string> collect_columns(const std::vector<CollectedRun>& runs) {
  std::vector<std::string> cols = fixed_columns();
  std::set<std::string> params, metrics;
  for (const CollectedRun& r : runs) {
    for (const auto& kv : r.params) params.insert(kv.first);
    for (const auto& kv : r.metrics) metrics.insert(kv.first);
  }
  for (const std::string& p : params) cols.push_back("param." + p);
  for (const auto& a : stats::metric_aliases())
    if (metrics.erase(a.first)) cols.push_back(a.first);
  cols.insert(cols.end(), metrics.begin(), metrics.end());
  cols.push_back("dir");
  return cols;
}

std::string collect_csv(const std::vector<CollectedRun>& runs) {
  const std::vector<std::string> cols = collect_columns(runs);
  std::string out = csv_record(cols);
  const std::size_t first_param = fixed_columns().size();
  for (const CollectedRun& r : runs) {
    std::vector<std::string> row{r.sweep, r.table, r.profile, r.cell, std::to_string(r.seed),
                                 r.id,    r.status};
    for (std::size_t i = first_param; i + 1 < cols.size(); ++i) {
      const std::string& c = cols[i];
      if (c.rfind("param.", 0) == 0) {
        auto it = r.params.find(c.substr(6));
        row.push_back(it == r.params.end() ? "" : it->second);
      } else {
        auto it = r.metrics.find(c);
        row.push_back(it == r.metrics.end() ? "" : csv_number(it->second));
      }
    }
    row.push_back(r.dir);
    out += csv_record(row);
  }
  return out;
}

void write_collect_csv(const fs::path& out, const std::vector<CollectedRun>& runs) {
  const std::string text = collect_csv(runs);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  atomic_write(out, text);
}

}  // namespace mare::sweep
