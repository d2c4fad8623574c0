#include "stats/run_files.h"

#include <regex>

#include "stats/result_metrics.h"

namespace mare::stats {

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::map<std::string, double>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      flatten(j[i], prefix.empty() ? std::to_string(i) : prefix + "." + std::to_string(i), out);
  } else if (j.is_number()) {  // booleans are not numbers to nlohmann::json
    out[prefix] = j.get<double>();
  }
}

}  // namespace

std::map<std::string, double> numeric_leaves(const nlohmann::json& j) {
  std::map<std::string, double> out;
  flatten(j, "", out);
  return out;
}

bool is_run_dir(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "run.json") ||
         (std::filesystem::exists(dir / "manifest.json") &&
          std::filesystem::exists(dir / "result.json"));
}

std::string planned_run_gap(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return "no such directory";
  if (!std::filesystem::is_directory(dir, ec)) return "not a directory";
  if (!std::filesystem::exists(dir / "run.json", ec)) return "no run.json";
  return "";
}

std::string planned_runs_warning(const std::filesystem::path& root,
                                 const std::set<std::filesystem::path>& planned) {
  std::vector<std::string> gaps;
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::weakly_canonical(root, ec);
  for (const std::filesystem::path& dir : planned)
    if (const std::string why = planned_run_gap(dir); !why.empty())
      gaps.push_back(dir.lexically_relative(base).string() + " (" + why + ")");
  if (gaps.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < gaps.size() && i < 3; ++i) list += (i ? ", " : "") + gaps[i];
  if (gaps.size() > 3) list += ", ...";
  return root.string() + ": " + std::to_string(gaps.size()) + " of " +
         std::to_string(planned.size()) + " planned runs " + (gaps.size() == 1 ? "is" : "are") +
         " not there and left out: " + list + " (`mare sweep` on its spec makes them again)";
}

std::string legacy_cell(const std::filesystem::path& dir) {
  std::filesystem::path abs = std::filesystem::absolute(dir).lexically_normal();  // links kept
  if (abs.filename().empty()) abs = abs.parent_path();
  const std::string name = abs.filename().string();
  static const std::regex seed_dir("^seed[0-9]+([^0-9].*)?$");
  if (std::regex_match(name, seed_dir)) return abs.parent_path().filename().string();
  static const std::regex seed_suffix("^(.+)-seed[0-9]+$");
  std::smatch m;
  if (std::regex_match(name, m, seed_suffix)) return m[1].str();
  return name;
}

std::optional<int64_t> legacy_seed(const RunFiles& f) {
  for (const nlohmann::json* j : {&f.manifest, &f.result})
    if (j->is_object() && j->contains("seed") && j->at("seed").is_number_integer())
      return j->at("seed").get<int64_t>();
  return std::nullopt;
}

nlohmann::json legacy_config(const RunFiles& f) {
  if (f.manifest.is_object() && f.manifest.contains("config") &&
      f.manifest.at("config").is_object())
    return f.manifest.at("config");
  return nlohmann::json::object();
}

std::string resolve_status(RunFiles& f) {
  f.status.clear();
  if (f.result.is_object()) {
    const auto it = f.result.find("status");
    f.status = it != f.result.end() && it->is_string() ? it->get<std::string>() : "completed";
    if (f.status == "completed")
      if (const std::string why = completed_result_problem(f.result); !why.empty())
        return (f.dir / "result.json").string() + ": " + why;
  }
  if (f.status_file.is_object()) {
    const std::string where = (f.dir / "status.json").string();
    const auto it = f.status_file.find("status");
    if (it == f.status_file.end() || !it->is_string())
      return where + ": expected \"status\" (a string)";
    const std::string from_result = f.status;  // "" without result.json
    f.status = it->get<std::string>();
    if (f.status.empty()) return where + ": expected a non-empty \"status\"";
    const bool finished = f.status == "completed" || f.status == "diverged";
    if (finished && f.result.is_null() && !std::filesystem::exists(f.dir / "bench.json"))
      f.status = "missing";
    // An attempt the sweep recorded as stopped (interrupted, running), whose run then
    // finished (resumed by hand, or the sweep died before it wrote status.json): the
    // run's own result.json says so, as `mare sweep` reads it (inspect_run).
    if (!finished && f.status != "failed" && f.status != "crashed" &&
        (from_result == "completed" || from_result == "diverged"))
      f.status = from_result;
  }
  if (f.status.empty()) f.status = "missing";
  return "";
}

std::string series_problem(const RunFiles& f) {
  if (f.timing.is_object())
    if (const std::string why = impossible_value(f.timing); !why.empty())
      return (f.dir / "timing.json").string() + ": " + why;
  int64_t last_step = -1;
  if (f.status == "completed" && f.result.is_object()) {
    const auto it = f.result.find("steps");
    if (it != f.result.end() && it->is_number_integer()) last_step = it->get<int64_t>();
  }
  if (const std::string why = stats::series_problem(f.metrics, last_step); !why.empty())
    return (f.dir / "metrics.jsonl").string() + ": " + why;
  return "";
}

}  // namespace mare::stats
