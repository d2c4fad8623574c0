#include "reports/src/inputs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "reports/src/util.h"
#include "stats/result_metrics.h"
#include "stats/run_files.h"

namespace mare::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The JSON reader shared with `mare collect` (stats/run_files.h), throwing InputError.
json read_json_file(const fs::path& p) {
  return stats::read_json_file<InputError>(p);
}

void fill_values(RunRecord& r) {
  r.values.clear();
  if (r.result.is_object()) r.values = stats::numeric_leaves(r.result);
  std::set<std::string> found;  // an alias takes the first of its paths that is there
  for (const auto& [alias, path] : stats::metric_aliases()) {
    auto it = r.values.find(path);
    if (it != r.values.end() && found.insert(alias).second) r.values[alias] = it->second;
  }
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return format_shortest(v.get<double>());
  return "";
}

// A run directory through the reader shared with `mare collect` (stats/run_files.h).
RunRecord read_run_dir(const fs::path& dir) {
  stats::RunFiles f = stats::read_run_files<InputError>(dir, /*with_series=*/true);
  RunRecord r;
  r.dir = dir;
  r.source = dir;
  r.legacy = f.legacy;
  if (r.legacy) {  // from manifest.json and result.json, before they move into r
    r.kind = "train";
    r.cell = stats::legacy_cell(dir);
    r.params = json::object();
    const json config = stats::legacy_config(f);  // a named object: items() refers to it
    for (const auto& [k, v] : config.items())
      if (k != "seed" && v.is_primitive() && !v.is_null()) r.params[k] = v;
    r.seed = stats::legacy_seed(f).value_or(r.seed);
  }
  r.run = std::move(f.run);
  r.manifest = std::move(f.manifest);
  r.result = std::move(f.result);
  r.timing = std::move(f.timing);
  r.metrics = std::move(f.metrics);
  r.status_json = std::move(f.status_file);
  r.status = f.status;
  if (!r.legacy) {
    const fs::path run_json = dir / "run.json";
    auto str = [&](const char* key) {
      if (!r.run.contains(key)) return std::string();
      const json& v = r.run[key];
      if (!v.is_string())
        throw InputError(run_json.string() + ": \"" + key + "\" must be a string");
      return v.get<std::string>();
    };
    r.sweep = str("sweep");
    r.table = str("table");
    r.profile = str("profile");
    r.cell = str("cell");
    r.id = str("id");
    r.kind = str("kind");
    if (r.run.contains("seed")) {
      if (!r.run["seed"].is_number_integer())
        throw InputError(run_json.string() + ": \"seed\" must be an integer");
      r.seed = r.run["seed"].get<int64_t>();
    }
    r.params = r.run.value("params", json::object());
    if (!r.params.is_object())
      throw InputError(run_json.string() + ": \"params\" must be an object");
  }
  fill_values(r);
  // A sweep's run.json says its table; "" (a spec with no `table:`, e.g.
  // reports/learning/curves.yaml) is a run of no thesis table. Runs without run.json
  // (`mare train --out`, legacy) are placed by their configuration.
  if (r.table.empty() && !(r.run.is_object() && r.run.contains("table"))) r.table = infer_table(r);
  return r;
}

bool is_collect_header(const std::vector<std::string>& h) {
  static const std::vector<std::string> first{"sweep", "table", "profile", "cell",
                                              "seed",  "id",    "status"};
  if (h.size() < first.size()) return false;
  return std::equal(first.begin(), first.end(), h.begin());
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void read_collect_csv(const fs::path& p, const CsvTable& t, ReportInputs& out) {
  const auto& h = t.header;
  std::size_t dir_col = h.size();
  for (std::size_t c = 0; c < h.size(); ++c)
    if (h[c] == "dir") dir_col = c;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    const std::string where = p.string() + ":" + std::to_string(t.lines[i]);
    if (row.size() != h.size())
      throw InputError(where + ": expected " + std::to_string(h.size()) + " fields, found " +
                       std::to_string(row.size()));
    RunRecord r;
    r.source = p;
    r.sweep = row[0];
    r.table = row[1];
    r.profile = row[2];
    r.cell = row[3];
    double seed = 0;
    if (!parse_double(row[4], seed) || seed != std::floor(seed))
      throw InputError(where + ": column seed: expected an integer, found '" + row[4] + "'");
    r.seed = static_cast<int64_t>(seed);
    r.id = row[5];
    r.status = row[6];
    r.kind = "train";
    r.params = json::object();
    for (std::size_t c = 7; c < h.size(); ++c) {
      if (c == dir_col || row[c].empty()) continue;
      if (h[c].rfind("param.", 0) == 0) {
        r.params[h[c].substr(6)] = row[c];
      } else {
        double v = 0;
        if (!parse_double(row[c], v))
          throw InputError(where + ": column " + h[c] + ": expected a number, found '" + row[c] +
                           "'");
        r.values[h[c]] = v;
      }
    }
    if (dir_col < h.size() && !row[dir_col].empty()) r.params["_dir"] = row[dir_col];
    if (r.table.empty()) r.table = infer_table(r);
    out.runs.push_back(std::move(r));
  }
}

// `mare data stats --json`: {"command": "data stats", ...} or an object with "splits".
bool corpus_stats_shape(const json& j) {
  if (!j.is_object()) return false;
  if (j.value("command", std::string()) == "data stats") return true;
  return j.contains("splits") && (j["splits"].is_object() || j["splits"].is_array());
}

// The run directories a sweep root's sweep.json plans (the same rule as `mare collect`).
std::set<fs::path> planned_runs(const fs::path& root) {
  return stats::planned_runs<InputError>(root);
}

struct Walker {
  ReportInputs& out;
  // Below a sweep root, only its plan's run directories are runs of the report; the
  // others (an earlier version of the spec, another profile) are counted in a note.
  const std::set<fs::path>* planned = nullptr;
  fs::path plan_root;
  std::map<fs::path, std::pair<std::size_t, fs::path>> superseded;  // root -> count, example
  std::vector<std::string> gaps;  // planned runs that are not there (planned_runs_warning)

  // A JSON file met on a walk or given by name. Returns false when it is none of ours.
  bool json_file(const fs::path& p, const json& run) {
    json j = read_json_file(p);
    const std::string kind = benchmark_kind(j);
    // A time below zero, a count of -8 documents: values no benchmark or corpus has.
    if (!kind.empty() || is_corpus_stats(j))
      if (const std::string why = stats::impossible_value(j); !why.empty())
        throw InputError(p.string() + ": " + why);
    if (!kind.empty()) {
      out.benchmarks.push_back({p, kind, std::move(j), run});
      return true;
    }
    if (is_corpus_stats(j)) {
      out.corpora.push_back({p, std::move(j)});
      return true;
    }
    return false;
  }

  void dir(const fs::path& d, int depth) {
    if (depth > 64) throw InputError(d.string() + ": directories nested too deep (a link loop?)");
    const bool is_run = stats::is_run_dir(d);
    if (is_run && planned) {
      std::error_code ec;
      if (!planned->count(fs::weakly_canonical(d, ec))) {
        auto& [count, example] = superseded[plan_root];
        if (count++ == 0) example = d;
        return;
      }
    }
    // A planned run that lost its run.json is no loose run: planned_runs_warning names it.
    if (is_run && planned && !fs::exists(d / "run.json")) return;
    if (is_run) {
      RunRecord r = read_run_dir(d);
      if (fs::exists(d / "bench.json")) {
        if (!json_file(d / "bench.json", r.run))
          throw InputError((d / "bench.json").string() +
                           ": not a benchmark JSON (expected `mare bench allocation|iteration "
                           "--json` or Google Benchmark output)");
      }
      out.runs.push_back(std::move(r));
      return;
    }
    if (fs::exists(d / "memory.json")) {
      out.inspections.push_back({d, read_json_file(d / "memory.json")});
      return;
    }
    // A sweep root: its plan holds for everything below it (restored on the way out).
    std::set<fs::path> own;
    const std::set<fs::path>* outer = planned;
    const fs::path outer_root = plan_root;
    if (fs::exists(d / "sweep.json")) {
      own = planned_runs(d);
      planned = &own;
      plan_root = d;
    }
    struct Restore {
      Walker& w;
      const std::set<fs::path>* p;
      fs::path r;
      ~Restore() {
        w.planned = p;
        w.plan_root = r;
      }
    } restore{*this, outer, outer_root};
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      entries.push_back(it->path());
    if (ec) throw InputError(d.string() + ": cannot be listed (" + ec.message() + ")");
    std::sort(entries.begin(), entries.end());
    if (planned == &own)
      if (std::string gap = stats::planned_runs_warning(d, own); !gap.empty())
        gaps.push_back(std::move(gap));
    for (const fs::path& e : entries) {
      const std::string name = e.filename().string();
      if (name.empty() || name[0] == '.') continue;  // temporaries of atomic writes, .git
      if (fs::is_directory(e)) {
        dir(e, depth + 1);
      } else if (e.extension() == ".json") {
        json_file(e, json());
      } else if (e.extension() == ".csv") {
        const CsvTable t = parse_csv(read_text(e), e.string());
        if (is_collect_header(t.header)) read_collect_csv(e, t, out);
      }
    }
  }

  void given(const fs::path& p) {
    if (!fs::exists(p)) throw InputError(p.string() + ": no such file or directory");
    if (fs::is_directory(p)) return dir(p, 0);
    const std::string name = p.filename().string();
    if (name == "run.json" || name == "manifest.json" || name == "result.json")
      return dir(p.parent_path().empty() ? fs::path(".") : p.parent_path(), 0);
    if (name == "memory.json") {
      out.inspections.push_back({p.parent_path(), read_json_file(p)});
      return;
    }
    if (p.extension() == ".csv") {
      const CsvTable t = parse_csv(read_text(p), p.string());
      if (!is_collect_header(t.header))
        throw InputError(p.string() +
                         ":1: not a `mare collect` table (expected the header to begin with "
                         "sweep,table,profile,cell,seed,id,status)");
      return read_collect_csv(p, t, out);
    }
    if (!json_file(p, json()))
      throw InputError(p.string() +
                       ": not a report input (expected a run or sweep directory, a `mare "
                       "collect` CSV, `mare bench allocation|iteration --json` or Google "
                       "Benchmark JSON, `mare data stats --json` output, or memory.json)");
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string param(const RunRecord& run, const std::string& key) {
  if (run.params.is_object() && run.params.contains(key)) return scalar_text(run.params[key]);
  if (run.manifest.is_object() && run.manifest.contains("config") &&
      run.manifest["config"].is_object() && run.manifest["config"].contains(key))
    return scalar_text(run.manifest["config"][key]);
  return "";
}

bool relation_run(const RunRecord& run) {
  return run.values.count("test_f1") || !param(run, "data").empty();
}

std::string data_source(const RunRecord& run) {
  std::string d = param(run, "data");
  if (d.empty() && run.run.is_object() && run.run.contains("command") &&
      run.run["command"].is_array()) {
    const json& c = run.run["command"];
    for (std::size_t i = 0; i + 1 < c.size(); ++i)
      if (c[i] == "--data" && c[i + 1].is_string()) d = c[i + 1].get<std::string>();
  }
  return d;
}

std::string data_kind(const RunRecord& run) {
  const std::string d = data_source(run);
  return d.substr(0, d.find(':'));
}

std::string infer_table(const RunRecord& run) {
  if (!run.table.empty()) return run.table;
  const std::string task = param(run, "task");
  std::string model = lower(param(run, "model"));
  model = model.substr(0, model.find('+'));
  if (task == "addition" || task == "multiplication" || task == "conditional" || model == "grpu" ||
      model == "gru" || model == "bigru" || model == "lstm")
    return "5.1";
  const std::string d = data_kind(run);
  if (d == "cdr" || d == "cdr+dev" || d == "synth-cdr" || d == "pubtator") return "4.5";
  if (d == "synth-ctd" || d == "bran-tsv") return "4.10";
  if (d == "semeval2018" || d == "synth-semeval" || d == "semeval") return "4.12";
  return "";
}

std::string benchmark_kind(const json& j) {
  if (!j.is_object()) return "";
  if (j.contains("benchmarks") && j["benchmarks"].is_array() && j.contains("context"))
    return "gbench";
  const std::string b = j.value("benchmark", std::string());
  if (b == "allocation" || b == "iteration") return b;
  if (!j.contains("rows") || !j["rows"].is_array() || j["rows"].empty()) return "";
  const json& r = j["rows"][0];
  if (!r.is_object()) return "";
  if (r.contains("variant") && r.contains("seq") && r.contains("mem")) return "allocation";
  if (r.contains("model") && (r.contains("mean_s") || r.contains("times_s"))) return "iteration";
  return "";
}

bool is_corpus_stats(const json& j) {
  return corpus_stats_shape(j);
}

ReportInputs load_inputs(const std::vector<fs::path>& paths) {
  ReportInputs in;
  Walker w{in, nullptr, {}, {}, {}};
  for (const fs::path& p : paths) w.given(p);
  for (const auto& [root, c] : w.superseded)
    in.notes.push_back(root.string() + ": " + std::to_string(c.first) + " run director" +
                       (c.first == 1 ? "y" : "ies") +
                       " not in its sweep.json (an earlier version of the spec, or another "
                       "profile) left out, e.g. " +
                       c.second.string());
  in.notes.insert(in.notes.end(), w.gaps.begin(), w.gaps.end());

  // One run found twice (a tree and a collect CSV of it): keep the first run-directory copy.
  // A collect row also names its directory (column dir): a legacy run, which has no id in
  // its directory, is matched by that path.
  std::vector<RunRecord> kept;
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, std::size_t> seen;
  std::set<fs::path> dirs;
  std::stable_partition(in.runs.begin(), in.runs.end(),
                        [](const RunRecord& r) { return !r.dir.empty(); });
  auto canonical = [](const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.lexically_normal() : c;
  };
  for (RunRecord& r : in.runs) {
    if (!r.dir.empty()) {
      dirs.insert(canonical(r.dir));
    } else if (r.params.is_object() && r.params.contains("_dir") &&
               dirs.count(canonical(r.params["_dir"].get<std::string>()))) {
      continue;
    }
    if (!r.id.empty()) {
      auto key = std::make_tuple(r.sweep, r.cell, r.seed, r.id);
      if (seen.count(key)) continue;
      seen[key] = kept.size();
    }
    kept.push_back(std::move(r));
  }
  in.runs = std::move(kept);
  // Keyed by content, not by the order the paths were given in.
  std::stable_sort(in.runs.begin(), in.runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.table, a.sweep, a.cell, a.seed, a.source) <
           std::tie(b.table, b.sweep, b.cell, b.seed, b.source);
  });
  return in;
}

}  // namespace mare::report
