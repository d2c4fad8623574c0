#include "stats/result_metrics.h"

#include <cmath>
#include <sstream>

namespace mare::stats {

const std::vector<std::pair<std::string, std::string>>& metric_aliases() {
  static const std::vector<std::pair<std::string, std::string>> a{
      // A corpus with an official score (re_official.h) is reported by it.
      {"test_f1", "test.official.f1"},
      {"test_f1", "test.relations.micro.f1"},
      {"test_precision", "test.official.precision"},
      {"test_precision", "test.relations.micro.precision"},
      {"test_recall", "test.official.recall"},
      {"test_recall", "test.relations.micro.recall"},
      {"test_macro_f1", "test.relations.macro_f1"},
      {"valid_f1", "valid.official.f1"},
      {"valid_f1", "valid.relations.micro.f1"},
      {"train_f1", "train.official.f1"},
      {"train_f1", "train.relations.micro.f1"},
      {"best_step", "best_step"},
      {"steps", "steps"},
      {"train_mse", "final.train_mse"},
      {"test_mse", "final.test_mse"},
      {"epochs", "epochs"},
      {"parameters", "parameters"},
  };
  return a;
}

const nlohmann::json* at_dotted(const nlohmann::json& j, const std::string& dotted) {
  const nlohmann::json* at = &j;
  std::stringstream parts(dotted);
  std::string part;
  while (at && std::getline(parts, part, '.')) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(part);
    at = it == at->end() ? nullptr : &*it;
  }
  return at;
}

std::string non_finite_metric(const nlohmann::json& result) {
  for (const auto& [alias, dotted] : metric_aliases()) {
    const nlohmann::json* at = at_dotted(result, dotted);
    if (!at) continue;  // not reported by this kind of run
    if (!at->is_number() || !std::isfinite(at->get<double>()))
      return "expected a finite number at \"" + dotted + "\" (" + alias +
             ") of a completed run, found " + at->dump();
  }
  return "";
}

}  // namespace mare::stats
