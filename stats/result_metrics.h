// The metrics of a run's result.json as `mare collect` and `mare report` read them: the
// short aliases of the contract (test_f1 = test.relations.micro.f1, …), a dotted-path
// lookup, and the rule that a completed run's metrics are finite numbers. One place for
// both readers (experiments/sweep/collect.cpp and reports/src/inputs.cpp), which may not
// include each other; a new metric is taught here once.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::stats {

// (alias, dotted result.json path), in the column order of collect's CSV. An alias may
// have several paths: the first that a result.json holds is its value (test_f1 is the
// task's official score where the corpus has one, test.official.f1, else the micro F1
// over pairs).
const std::vector<std::pair<std::string, std::string>>& metric_aliases();

// The value at a dotted path ("test.relations.micro.f1"), or nullptr when any part is
// missing or a parent is not an object.
const nlohmann::json* at_dotted(const nlohmann::json& j, const std::string& dotted);

// "" when every alias present in `result` is a finite number; otherwise what is wrong
// with the first one that is not: `expected a finite number at "<path>" (<alias>) of a
// completed run, found <value>` (null, a string such as "NaN", or a non-finite value).
// Callers prefix the file and throw their own error type.
std::string non_finite_metric(const nlohmann::json& result);

// "" when every value in `j` can be what its name says; otherwise the first that cannot,
// as `"<dotted path>": expected <what>, found <value>`. Names are read by their last part:
// f1, precision, recall, accuracy and *_f1, *_precision, *_recall, *_accuracy lie in
// [0, 1]; counts (correct, gold, predicted, examples, steps, best_step, epochs, step,
// parameters, documents, ...) are whole numbers >= 0; loss, mse, seconds and *_loss, *_mse,
// *_halting_steps, *_seconds, *_s, *_time (a benchmark's times) are >= 0; `correct` is at most its
// object's `gold` and `predicted`; a score, loss or time holds a number, not text or a boolean
// ("real_time": "fast"); and no string anywhere reads as a number that is not one ("NaN",
// "inf", ...). Other keys are not checked.
std::string impossible_value(const nlohmann::json& j);

// What makes a completed run's result.json one that no run can have written, or "":
// non_finite_metric, impossible_value, no test score (test_f1, or final.test_mse or
// final.test_accuracy of a sequence task), a best_step after its steps.
std::string completed_result_problem(const nlohmann::json& result);

// What makes metrics.jsonl (one object a line) a series no run writes, or "": a line's
// impossible_value, a "step" (or "epoch" without one) that is not a whole number, or not
// after the line before (a duplicated or reordered line), or past `last_step` (>= 0: the
// completed run's steps). Prefixed with "line <n>: ".
std::string series_problem(const std::vector<nlohmann::json>& lines, int64_t last_step);

}  // namespace mare::stats
