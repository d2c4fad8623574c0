#include "stats/result_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

enum class Kind { unchecked, fraction, count, nonnegative };

Kind kind_of(const std::string& key) {
  static const char* const fractions[] = {"f1", "precision", "recall", "accuracy", "macro_f1"};
  static const char* const counts[] = {
      "correct",      "gold",       "predicted",   "examples",        "steps",    "best_step",
      "epochs",       "epoch",      "step",        "parameters",      "samples",  "batch",
      "threads",      "keys",       "predictions", "wrong_direction", "re_steps", "ner_steps",
      "max_distance", "min_length", "max_length",  "documents",       "phase",    "mentions",
      "entities",     "sentences",  "tokens",      "total",           "positive", "negative",
      "iterations"};
  for (const char* f : fractions)
    if (key == f) return Kind::fraction;
  for (const char* f : {"_f1", "_precision", "_recall", "_accuracy"})
    if (ends_with(key, f)) return Kind::fraction;
  for (const char* c : counts)
    if (key == c) return Kind::count;
  if (key == "loss" || key == "mse" || key == "seconds") return Kind::nonnegative;
  for (const char* f : {"_loss", "_mse", "_halting_steps", "_seconds", "_s", "_time"})
    if (ends_with(key, f)) return Kind::nonnegative;
  return Kind::unchecked;
}

// Strings that a writer of JSON puts where it had a number it could not write.
bool number_in_disguise(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!l.empty() && (l[0] == '-' || l[0] == '+')) l.erase(0, 1);
  return l == "nan" || l == "inf" || l == "infinity";
}

std::string value_problem(const std::string& path, const std::string& key,
                          const nlohmann::json& v) {
  const std::string at = "\"" + path + "\": expected ";
  const Kind kind = kind_of(key);
  if (v.is_string() || v.is_boolean()) {
    // A named number ("real_time": "fast") or text where a writer had no number ("NaN").
    // Names that hold a measurement and never text: a score, a loss, a time. Other names
    // of a known kind may ("step": a description, "matmul_precision": "highest").
    const bool measured = kind == Kind::fraction
                              ? !ends_with(key, "_precision") && !ends_with(key, "_recall") &&
                                    !ends_with(key, "_accuracy")
                          : kind == Kind::nonnegative ? !ends_with(key, "_halting_steps")
                                                      : false;
    if (measured || (v.is_string() && number_in_disguise(v.get<std::string>())))
      return at + "a number, found " + v.dump();
    return "";
  }
  if (!v.is_number()) return "";
  const double x = v.get<double>();
  if (!std::isfinite(x)) return at + "a finite number, found " + v.dump();
  switch (kind) {
    case Kind::fraction:
      if (x < 0 || x > 1) return at + "a value in [0, 1], found " + v.dump();
      break;
    case Kind::count:
      // A whole number below 2^53, where a double still counts one by one.
      if (x < 0 || x != std::floor(x) || x > 9007199254740992.0)
        return at + "a whole number >= 0 (a count), found " + v.dump();
      break;
    case Kind::nonnegative:
      if (x < 0) return at + "a value >= 0, found " + v.dump();
      break;
    case Kind::unchecked:
      break;
  }
  return "";
}

std::string walk(const nlohmann::json& j, const std::string& path, const std::string& key) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (std::string why = walk(it.value(), p, it.key()); !why.empty()) return why;
    }
    // Correct predictions are among the predicted and among the gold.
    const auto correct = j.find("correct");
    if (correct != j.end() && correct->is_number())
      for (const char* of : {"gold", "predicted"}) {
        const auto n = j.find(of);
        if (n != j.end() && n->is_number() && correct->get<double>() > n->get<double>())
          return "\"" + (path.empty() ? "" : path + ".") + "correct\": expected at most \"" + of +
                 "\" (" + n->dump() + "), found " + correct->dump();
      }
    return "";
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      if (std::string why = walk(j[i], path + "." + std::to_string(i), key); !why.empty())
        return why;
    return "";
  }
  return value_problem(path, key, j);
}

}  // namespace

std::string impossible_value(const nlohmann::json& j) {
  return walk(j, "", "");
}

std::string completed_result_problem(const nlohmann::json& result) {
  if (std::string why = non_finite_metric(result); !why.empty()) return why;
  if (std::string why = impossible_value(result); !why.empty()) return why;
  static const char* const scores[] = {"test.official.f1", "test.relations.micro.f1",
                                       "final.test_mse", "final.test_accuracy"};
  if (std::none_of(std::begin(scores), std::end(scores),
                   [&](const char* p) { return at_dotted(result, p) != nullptr; }))
    return "expected a test score of a completed run (test.official.f1, "
           "test.relations.micro.f1, final.test_mse or final.test_accuracy), found none";
  const nlohmann::json* best = at_dotted(result, "best_step");
  const nlohmann::json* steps = at_dotted(result, "steps");
  if (best && steps && best->is_number() && steps->is_number() &&
      best->get<double>() > steps->get<double>())
    return "\"best_step\": expected at most \"steps\" (" + steps->dump() + "), found " +
           best->dump();
  return "";
}

std::string series_problem(const std::vector<nlohmann::json>& lines, int64_t last_step) {
  const nlohmann::json* previous = nullptr;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = "line " + std::to_string(i + 1) + ": ";
    if (std::string why = impossible_value(lines[i]); !why.empty()) return line + why;
    if (!lines[i].is_object()) continue;
    const char* key = lines[i].contains("step") ? "step" : "epoch";
    const auto it = lines[i].find(key);
    if (it == lines[i].end()) continue;
    if (!it->is_number())
      return line + "\"" + key + "\": expected a whole number, found " + it->dump();
    const double s = it->get<double>();
    if (previous && s <= previous->get<double>())
      return line + "\"" + key + "\": expected more than the line before's (" + previous->dump() +
             "), found " + it->dump() + " (a repeated or reordered line)";
    if (last_step >= 0 && std::string(key) == "step" && s > static_cast<double>(last_step))
      return line + "\"step\": expected at most the run's steps (" + std::to_string(last_step) +
             "), found " + it->dump();
    previous = &*it;
  }
  return "";
}

}  // namespace mare::stats
