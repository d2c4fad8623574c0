// Relation and NER metrics (see re_metrics.h).
#include "experiments/re_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace mare {

PrfCounts prf(double gold, double predicted, double correct) {
  PrfCounts s;
  s.gold = gold;
  s.predicted = predicted;
  s.correct = correct;
  s.precision = predicted > 0 ? correct / predicted : 0.0;
  s.recall = gold > 0 ? correct / gold : 0.0;
  s.f1 = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  return s;
}

std::vector<PairDecision> pair_decisions(const float* logits, int64_t n, int64_t classes) {
  if (classes < 2) throw std::invalid_argument("pair_decisions: expected NULL and a relation");
  std::vector<PairDecision> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * classes;
    int64_t best = 1;
    for (int64_t j = 2; j < classes; ++j)
      if (z[j] > z[best]) best = j;
    out[i] = {static_cast<int>(best), static_cast<double>(z[best]) - static_cast<double>(z[0])};
  }
  return out;
}

TunedMargin tune_null_margin(const std::vector<int>& gold, const std::vector<PairDecision>& pairs) {
  if (gold.size() != pairs.size())
    throw std::invalid_argument("tune_null_margin: " + std::to_string(gold.size()) +
                                " gold labels for " + std::to_string(pairs.size()) + " pairs");
  std::vector<size_t> order;  // the pairs a margin can make a relation (best ≠ NULL)
  for (size_t i = 0; i < pairs.size(); ++i)
    if (pairs[i].best != 0) order.push_back(i);
  const size_t n = order.size();
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pairs[a].margin > pairs[b].margin; });
  double positives = 0;
  for (int g : gold) positives += g != 0;
  // Predicting the first j of `order` (every pair whose distance is above m) is what
  // any m in [margin of the j-th, margin of the (j−1)-th) decides.
  TunedMargin best{0, -1};
  double correct = 0;
  for (size_t j = 0; j <= n; ++j) {
    if (j > 0) correct += gold[order[j - 1]] != 0 && gold[order[j - 1]] == pairs[order[j - 1]].best;
    if (j > 0 && j < n && pairs[order[j]].margin == pairs[order[j - 1]].margin) continue;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const double lo = j < n ? pairs[order[j]].margin : -kInf;
    const double hi = j > 0 ? pairs[order[j - 1]].margin : kInf;
    const double m = lo <= 0 && 0 < hi ? 0.0 : j == 0 ? lo + 1 : j == n ? hi - 1 : (lo + hi) / 2;
    const double f1 = prf(positives, static_cast<double>(j), correct).f1;
    if (f1 > best.f1 || (f1 == best.f1 && std::abs(m) < std::abs(best.margin))) best = {m, f1};
  }
  return best;
}

RelationScores relation_scores(const std::vector<int>& gold, const std::vector<int>& predicted,
                               const std::vector<int>& distance,
                               const std::vector<std::string>& class_names,
                               const std::vector<int>& buckets) {
  const std::size_t n = gold.size();
  const int C = static_cast<int>(class_names.size());
  if (predicted.size() != n)
    throw std::invalid_argument("relation_scores: " + std::to_string(n) + " gold labels but " +
                                std::to_string(predicted.size()) + " predictions");
  if (!distance.empty() && distance.size() != n)
    throw std::invalid_argument("relation_scores: " + std::to_string(n) + " examples but " +
                                std::to_string(distance.size()) + " distances");
  if (C < 1) throw std::invalid_argument("relation_scores: no class names (expected NULL first)");
  for (std::size_t i = 0; i < n; ++i)
    if (gold[i] < 0 || gold[i] >= C || predicted[i] < 0 || predicted[i] >= C)
      throw std::invalid_argument("relation_scores: example " + std::to_string(i) +
                                  " has class ids (gold " + std::to_string(gold[i]) +
                                  ", predicted " + std::to_string(predicted[i]) +
                                  "), expected ids in [0, " + std::to_string(C) + ")");
  RelationScores s;
  s.class_names = class_names;
  s.examples = static_cast<double>(n);
  std::vector<double> g(C, 0), p(C, 0), c(C, 0);
  for (std::size_t i = 0; i < n; ++i) {
    ++g[gold[i]];
    ++p[predicted[i]];
    if (gold[i] == predicted[i]) ++c[gold[i]];
  }
  double mg = 0, mp = 0, mc = 0, macro = 0;
  int averaged = 0;
  for (int k = 0; k < C; ++k) {
    s.per_class.push_back(prf(g[k], p[k], c[k]));
    if (k == 0) continue;
    mg += g[k];
    mp += p[k];
    mc += c[k];
    if (g[k] > 0 || p[k] > 0) {
      macro += s.per_class.back().f1;
      ++averaged;
    }
  }
  s.micro = prf(mg, mp, mc);
  s.macro_f1 = averaged ? macro / averaged : 0.0;
  if (!distance.empty())
    for (int m : buckets) {
      DistanceBucket b;
      b.max_distance = m;
      double bg = 0, bp = 0, bc = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (distance[i] > m) continue;
        ++b.examples;
        bg += gold[i] != 0;
        bp += predicted[i] != 0;
        bc += gold[i] != 0 && gold[i] == predicted[i];
      }
      b.micro = prf(bg, bp, bc);
      s.by_distance.push_back(b);
    }
  return s;
}

bool TagSpan::operator<(const TagSpan& o) const {
  return std::tie(type, begin, end) < std::tie(o.type, o.begin, o.end);
}

std::vector<TagSpan> bio_spans(const std::vector<std::string>& tags) {
  std::vector<TagSpan> out;
  bool open = false;
  TagSpan cur;
  auto close = [&](int at) {
    if (open) {
      cur.end = at;
      out.push_back(cur);
      open = false;
    }
  };
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const std::string& t = tags[i];
    const int at = static_cast<int>(i);
    if (t == "O") {
      close(at);
      continue;
    }
    if (t.size() < 3 || (t[0] != 'B' && t[0] != 'I') || t[1] != '-')
      throw std::invalid_argument("bio_spans: tag " + std::to_string(i) + " is '" + t +
                                  "', expected O, B-type or I-type");
    const std::string type = t.substr(2);
    if (t[0] == 'I' && open && cur.type == type) continue;
    close(at);
    cur = {type, at, at};
    open = true;
  }
  close(static_cast<int>(tags.size()));
  return out;
}

NerScores ner_scores(const std::vector<std::vector<std::string>>& gold,
                     const std::vector<std::vector<std::string>>& predicted) {
  if (gold.size() != predicted.size())
    throw std::invalid_argument("ner_scores: " + std::to_string(gold.size()) +
                                " gold sequences but " + std::to_string(predicted.size()) +
                                " predicted");
  std::map<std::string, std::array<double, 3>> counts;  // type -> gold, predicted, correct
  NerScores s;
  for (std::size_t q = 0; q < gold.size(); ++q) {
    if (gold[q].size() != predicted[q].size())
      throw std::invalid_argument("ner_scores: sequence " + std::to_string(q) + " has " +
                                  std::to_string(gold[q].size()) + " gold tags but " +
                                  std::to_string(predicted[q].size()) + " predicted");
    s.tokens += static_cast<double>(gold[q].size());
    const std::vector<TagSpan> g = bio_spans(gold[q]), p = bio_spans(predicted[q]);
    const std::set<TagSpan> gs(g.begin(), g.end());
    for (const TagSpan& x : g) ++counts[x.type][0];
    for (const TagSpan& x : p) {
      ++counts[x.type][1];
      if (gs.count(x)) ++counts[x.type][2];
    }
  }
  s.sequences = static_cast<double>(gold.size());
  double mg = 0, mp = 0, mc = 0;
  for (const auto& [type, k] : counts) {
    s.types.push_back(type);
    s.per_type.push_back(prf(k[0], k[1], k[2]));
    mg += k[0];
    mp += k[1];
    mc += k[2];
  }
  s.micro = prf(mg, mp, mc);
  return s;
}

NerScores ner_scores(const std::vector<std::vector<int>>& gold,
                     const std::vector<std::vector<int>>& predicted,
                     const std::vector<std::string>& tag_names) {
  if (gold.size() != predicted.size())
    throw std::invalid_argument("ner_scores: " + std::to_string(gold.size()) +
                                " gold sequences but " + std::to_string(predicted.size()) +
                                " predicted");
  const int n = static_cast<int>(tag_names.size());
  auto name = [&](int id, std::size_t q, std::size_t i) -> const std::string& {
    if (id < 0 || id >= n)
      throw std::invalid_argument("ner_scores: sequence " + std::to_string(q) + " token " +
                                  std::to_string(i) + " has tag id " + std::to_string(id) +
                                  ", expected an id in [0, " + std::to_string(n) + ")");
    return tag_names[id];
  };
  std::vector<std::vector<std::string>> g(gold.size()), p(gold.size());
  for (std::size_t q = 0; q < gold.size(); ++q) {
    if (predicted[q].size() < gold[q].size())
      throw std::invalid_argument("ner_scores: sequence " + std::to_string(q) + " has " +
                                  std::to_string(gold[q].size()) + " gold tags but " +
                                  std::to_string(predicted[q].size()) + " predicted");
    for (std::size_t i = 0; i < gold[q].size() && gold[q][i] != -1; ++i) {
      g[q].push_back(name(gold[q][i], q, i));
      p[q].push_back(name(predicted[q][i], q, i));
    }
  }
  return ner_scores(g, p);
}

nlohmann::json to_json(const PrfCounts& s) {
  return s;  // the field list: NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE beside the struct
}

nlohmann::json to_json(const RelationScores& s) {
  nlohmann::json j = nlohmann::json::object();
  j["examples"] = s.examples;
  j["micro"] = to_json(s.micro);
  j["macro_f1"] = s.macro_f1;
  nlohmann::json per = nlohmann::json::object();
  for (std::size_t k = 0; k < s.per_class.size(); ++k)
    per[s.class_names[k]] = to_json(s.per_class[k]);
  j["per_class"] = per;
  nlohmann::json dist = nlohmann::json::array();
  for (const DistanceBucket& b : s.by_distance) {
    nlohmann::json x = to_json(b.micro);
    x["max_distance"] = static_cast<double>(b.max_distance);
    x["examples"] = b.examples;
    dist.push_back(x);
  }
  j["by_distance"] = dist;
  return j;
}

nlohmann::json to_json(const NerScores& s) {
  nlohmann::json j = nlohmann::json::object();
  j["sequences"] = s.sequences;
  j["tokens"] = s.tokens;
  j["micro"] = to_json(s.micro);
  nlohmann::json per = nlohmann::json::object();
  for (std::size_t k = 0; k < s.types.size(); ++k) per[s.types[k]] = to_json(s.per_type[k]);
  j["per_type"] = per;
  return j;
}

}  // namespace mare
