// Relation and NER metrics (SPEC §6, thesis eq. 4-1, Fig. 4.5, Table B.1): pure
// functions of gold and predicted labels.
//
// Rules:
//   - Relations: one gold and one predicted class id per example, class 0 = NULL.
//     Per class c: P = correct_c / predicted_c, R = correct_c / gold_c,
//     F1 = 2PR / (P + R), each 0 when its denominator is 0 (eq. 4-1). Micro counts
//     every non-NULL class: gold = examples with gold ≠ NULL, predicted = examples
//     predicted ≠ NULL, correct = examples with gold = predicted ≠ NULL. Macro F1 is
//     the mean of the per-class F1 over the non-NULL classes that occur in gold or in
//     the predictions (as scikit-learn's average='macro'); 0 when there is none.
//   - F1 by distance: for each cumulative bucket m (50, 100, 200, 300, 500 tokens),
//     micro P/R/F1 over the examples whose distance is ≤ m (thesis Fig. 4.5).
//   - NER: exact span match per entity type over BIO sequences, conlleval's chunking:
//     B-X starts a span; I-X continues a span of type X, and starts one after O, after
//     the end of the sequence or after a span of another type; O ends a span. Micro
//     over all types; types are those of gold or predicted spans, in byte order.
//   - JSON: objects (nlohmann::json's sorted key order), every number a double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare {

struct PrfCounts {
  double gold = 0, predicted = 0, correct = 0;
  double precision = 0, recall = 0, f1 = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PrfCounts, gold, predicted, correct, precision, recall, f1)
// Fills precision/recall/f1 from the counts (0 for a zero denominator).
PrfCounts prf(double gold, double predicted, double correct);

struct DistanceBucket {
  int max_distance = 0;
  double examples = 0;  // examples with distance ≤ max_distance
  PrfCounts micro;
};

struct RelationScores {
  std::vector<std::string> class_names;  // [C], class 0 = NULL
  std::vector<PrfCounts> per_class;      // [C], NULL included (reported, not averaged)
  PrfCounts micro;                       // over non-NULL classes
  double macro_f1 = 0;
  double examples = 0;
  std::vector<DistanceBucket> by_distance;  // empty when no distances were given
};

inline const std::vector<int>& default_distance_buckets() {
  static const std::vector<int> b{50, 100, 200, 300, 500};
  return b;
}

// gold/predicted: class ids in [0, class_names.size()); distance: per example, or empty
// (then by_distance stays empty). Throws std::invalid_argument on a size mismatch or an
// id out of range.
RelationScores relation_scores(const std::vector<int>& gold, const std::vector<int>& predicted,
                               const std::vector<int>& distance,
                               const std::vector<std::string>& class_names,
                               const std::vector<int>& buckets = default_distance_buckets());

// ---- Relation decisions with a NULL margin -------------------------------------------
// SPEC §6: decisions are argmax; threshold tuning on dev is an option. A pair's
// decision is its best relation class (never NULL) and how far that class's logit
// lies above NULL's; with NULL margin m the pair is predicted as that class when the
// distance is more than m, else NULL. m = 0 is the argmax exactly (a tie with NULL
// goes to NULL, as argmax takes the first of equal logits). m > 0 asks more evidence
// than the training batches' prior gave: balanced batches are half positive, so on a
// corpus with one positive pair in q + 1 the prior-corrected margin is log q.
struct PairDecision {
  int best = 0;       // the best non-NULL class (the first of equal logits); 0: none (NULL)
  double margin = 0;  // its logit minus NULL's
};
// logits: [n, classes] row-major, classes ≥ 2, class 0 = NULL.
std::vector<PairDecision> pair_decisions(const float* logits, int64_t n, int64_t classes);
inline int decide(const PairDecision& d, double null_margin) {
  return d.margin > null_margin ? d.best : 0;
}
// The NULL margin whose decisions give the highest micro F1 (over non-NULL classes,
// as relation_scores) against gold: exact, one sorted sweep over every distinct
// distance. Among margins of equal F1 the one nearest 0 (argmax when it ties); inside
// the interval of margins that make the same decisions: 0 when it lies there, else
// the interval's midpoint (one logit unit beyond the last distance at either end).
struct TunedMargin {
  double margin = 0;
  double f1 = 0;
};
TunedMargin tune_null_margin(const std::vector<int>& gold, const std::vector<PairDecision>& pairs);

// A typed token span [begin, end) of one sequence.
struct TagSpan {
  std::string type;
  int begin = 0, end = 0;
  bool operator==(const TagSpan&) const = default;
  bool operator<(const TagSpan& o) const;
};
// Spans of a BIO sequence (conlleval chunking, see the rules above). Tags are "O",
// "B-type" or "I-type"; anything else throws std::invalid_argument.
std::vector<TagSpan> bio_spans(const std::vector<std::string>& tags);

struct NerScores {
  std::vector<std::string> types;   // byte order
  std::vector<PrfCounts> per_type;  // [types]
  PrfCounts micro;
  double sequences = 0, tokens = 0;
};

// Sequences of BIO tags; gold[s] and predicted[s] must have the same length.
NerScores ner_scores(const std::vector<std::vector<std::string>>& gold,
                     const std::vector<std::vector<std::string>>& predicted);
// The same with tag ids into tag_names (ReCorpus::ner_tag_names); a gold id −1 (padding)
// ends the sequence: the tokens from there on are not scored.
NerScores ner_scores(const std::vector<std::vector<int>>& gold,
                     const std::vector<std::vector<int>>& predicted,
                     const std::vector<std::string>& tag_names);

nlohmann::json to_json(const PrfCounts& s);
nlohmann::json to_json(const RelationScores& s);
nlohmann::json to_json(const NerScores& s);

}  // namespace mare
