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

}  // namespace mare::stats
