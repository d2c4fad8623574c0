#include "stats/run_files.h"

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

}  // namespace mare::stats
