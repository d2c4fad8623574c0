// Relation and NER metrics on hand-computed cases (the arithmetic is in the comments).
#include <gtest/gtest.h>

#include "experiments/re_metrics.h"

namespace mare {
namespace {

void expect_prf(const PrfCounts& s, double g, double p, double c, double precision, double recall,
                double f1) {
  EXPECT_EQ(s.gold, g);
  EXPECT_EQ(s.predicted, p);
  EXPECT_EQ(s.correct, c);
  EXPECT_NEAR(s.precision, precision, 1e-12);
  EXPECT_NEAR(s.recall, recall, 1e-12);
  EXPECT_NEAR(s.f1, f1, 1e-12);
}

TEST(RelationScores, PerClassMicroMacroAndDistance) {
  //            idx  0    1    2    3    4    5    6
  const std::vector<int> gold{1, 1, 2, 0, 0, 2, 1};
  const std::vector<int> pred{1, 2, 2, 1, 0, 0, 0};
  const std::vector<int> dist{10, 60, 120, 40, 600, 250, 310};
  const RelationScores s = relation_scores(gold, pred, dist, {"NULL", "A", "B"});
  EXPECT_EQ(s.examples, 7);
  ASSERT_EQ(s.per_class.size(), 3u);
  // NULL: gold {3,4}, predicted {4,5,6}, correct {4}
  expect_prf(s.per_class[0], 2, 3, 1, 1.0 / 3, 0.5, 0.4);
  // A: gold {0,1,6}, predicted {0,3}, correct {0}: P 1/2, R 1/3, F1 (1/3)/(5/6)
  expect_prf(s.per_class[1], 3, 2, 1, 0.5, 1.0 / 3, 0.4);
  // B: gold {2,5}, predicted {1,2}, correct {2}
  expect_prf(s.per_class[2], 2, 2, 1, 0.5, 0.5, 0.5);
  // micro over A and B: gold 5, predicted 4 (0,1,2,3), correct 2 (0,2)
  expect_prf(s.micro, 5, 4, 2, 0.5, 0.4, 4.0 / 9);
  EXPECT_NEAR(s.macro_f1, 0.45, 1e-12);
  // cumulative buckets: ≤50 {0,3}; ≤100 +1; ≤200 +2; ≤300 +5; ≤500 +6 (4 is at 600)
  ASSERT_EQ(s.by_distance.size(), 5u);
  const std::vector<int> max{50, 100, 200, 300, 500};
  const std::vector<double> examples{2, 3, 4, 5, 6};
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(s.by_distance[k].max_distance, max[k]);
    EXPECT_EQ(s.by_distance[k].examples, examples[k]);
  }
  expect_prf(s.by_distance[0].micro, 1, 2, 1, 0.5, 1.0, 2.0 / 3);
  expect_prf(s.by_distance[1].micro, 2, 3, 1, 1.0 / 3, 0.5, 0.4);
  expect_prf(s.by_distance[2].micro, 3, 4, 2, 0.5, 2.0 / 3, 4.0 / 7);
  expect_prf(s.by_distance[3].micro, 4, 4, 2, 0.5, 0.5, 0.5);
  expect_prf(s.by_distance[4].micro, 5, 4, 2, 0.5, 0.4, 4.0 / 9);
  // custom buckets, and none without distances
  EXPECT_EQ(relation_scores(gold, pred, dist, {"NULL", "A", "B"}, {1000}).by_distance[0].examples,
            7);
  EXPECT_TRUE(relation_scores(gold, pred, {}, {"NULL", "A", "B"}).by_distance.empty());
}

TEST(RelationScores, ClassNeverPredictedAndClassAbsent) {
  // C is gold once and never predicted: F1 0, averaged; B is neither: left out of macro
  const RelationScores s = relation_scores({1, 3, 0}, {1, 0, 0}, {}, {"NULL", "A", "B", "C"});
  expect_prf(s.per_class[3], 1, 0, 0, 0, 0, 0);
  expect_prf(s.per_class[2], 0, 0, 0, 0, 0, 0);
  expect_prf(s.micro, 2, 1, 1, 1.0, 0.5, 2.0 / 3);
  EXPECT_NEAR(s.macro_f1, 0.5, 1e-12);  // (1 + 0) / 2
  // a class only predicted counts too: B predicted once, wrongly
  EXPECT_NEAR(relation_scores({1, 3, 0}, {1, 0, 2}, {}, {"NULL", "A", "B", "C"}).macro_f1, 1.0 / 3,
              1e-12);
}

TEST(RelationScores, EmptyPredictionsAndEmptyInput) {
  const RelationScores s = relation_scores({1, 2, 0}, {0, 0, 0}, {5, 5, 5}, {"NULL", "A", "B"});
  expect_prf(s.micro, 2, 0, 0, 0, 0, 0);
  EXPECT_EQ(s.macro_f1, 0.0);
  expect_prf(s.per_class[0], 1, 3, 1, 1.0 / 3, 1.0, 0.5);
  expect_prf(s.by_distance[0].micro, 2, 0, 0, 0, 0, 0);
  const RelationScores e = relation_scores({}, {}, {}, {"NULL", "A"});
  EXPECT_EQ(e.examples, 0);
  expect_prf(e.micro, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(e.macro_f1, 0.0);
  // all NULL predicted for all-NULL gold: nothing to score among the relations
  expect_prf(relation_scores({0, 0}, {0, 0}, {}, {"NULL", "A"}).micro, 0, 0, 0, 0, 0, 0);
}

TEST(RelationScores, BadInput) {
  EXPECT_THROW(relation_scores({1, 0}, {1}, {}, {"NULL", "A"}), std::invalid_argument);
  EXPECT_THROW(relation_scores({1, 0}, {1, 0}, {3}, {"NULL", "A"}), std::invalid_argument);
  EXPECT_THROW(relation_scores({2}, {1}, {}, {"NULL", "A"}), std::invalid_argument);
  EXPECT_THROW(relation_scores({1}, {-1}, {}, {"NULL", "A"}), std::invalid_argument);
  EXPECT_THROW(relation_scores({}, {}, {}, {}), std::invalid_argument);
}

TEST(BioSpans, ConllevalChunking) {
  EXPECT_EQ(bio_spans({"B-C", "I-C", "O", "I-D", "I-D", "B-D", "I-C"}),
            (std::vector<TagSpan>{{"C", 0, 2}, {"D", 3, 5}, {"D", 5, 6}, {"C", 6, 7}}));
  // I- of another type starts a span; a span open at the end is closed there
  EXPECT_EQ(bio_spans({"B-C", "I-D", "I-D"}), (std::vector<TagSpan>{{"C", 0, 1}, {"D", 1, 3}}));
  EXPECT_TRUE(bio_spans({"O", "O"}).empty());
  EXPECT_TRUE(bio_spans({}).empty());
  EXPECT_THROW(bio_spans({"O", "X"}), std::invalid_argument);
  EXPECT_THROW(bio_spans({"B-"}), std::invalid_argument);
  EXPECT_THROW(bio_spans({"E-C"}), std::invalid_argument);
}

TEST(NerScores, ExactSpanMatchPerType) {
  const std::vector<std::vector<std::string>> gold{
      {"B-C", "I-C", "O", "B-D", "O"}, {"B-D", "O", "B-C"}, {"O", "O"}};
  const std::vector<std::vector<std::string>> pred{
      {"B-C", "I-C", "O", "B-D", "I-D"}, {"B-D", "O", "O"}, {"B-X", "I-X"}};
  const NerScores s = ner_scores(gold, pred);
  EXPECT_EQ(s.types, (std::vector<std::string>{"C", "D", "X"}));
  // C: gold [0,2) [2,3), predicted [0,2); D: gold [3,4) [0,1), predicted [3,5) [0,1);
  // X: predicted only
  expect_prf(s.per_type[0], 2, 1, 1, 1.0, 0.5, 2.0 / 3);
  expect_prf(s.per_type[1], 2, 2, 1, 0.5, 0.5, 0.5);
  expect_prf(s.per_type[2], 0, 1, 0, 0, 0, 0);
  expect_prf(s.micro, 4, 4, 2, 0.5, 0.5, 0.5);
  EXPECT_EQ(s.sequences, 3);
  EXPECT_EQ(s.tokens, 10);
  EXPECT_THROW(ner_scores(gold, {pred[0], pred[1]}), std::invalid_argument);
  EXPECT_THROW(ner_scores({{"O"}}, {{"O", "O"}}), std::invalid_argument);
}

TEST(NerScores, TagIdsWithPadding) {
  const std::vector<std::string> names{"O", "B-C", "I-C", "B-D", "I-D"};
  // gold padding (−1) ends the sequence: the predicted I-D on padding is not scored
  const NerScores s = ner_scores(std::vector<std::vector<int>>{{1, 2, 0, 3, -1, -1}},
                                 std::vector<std::vector<int>>{{1, 2, 0, 3, 4, 4}}, names);
  expect_prf(s.micro, 2, 2, 2, 1, 1, 1);
  EXPECT_EQ(s.tokens, 4);
  EXPECT_THROW(
      ner_scores(std::vector<std::vector<int>>{{5}}, std::vector<std::vector<int>>{{0}}, names),
      std::invalid_argument);
}

// ---- NULL margin ------------------------------------------------------------------

// Logits of n pairs over C classes with many exact ties (values on a coarse grid).
std::vector<float> grid_logits(int n, int C, uint32_t seed) {
  std::vector<float> z(static_cast<size_t>(n) * C);
  for (float& v : z) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int>(seed >> 24) % 9 - 4) * 0.5f;
  }
  return z;
}

TEST(NullMargin, ZeroIsTheArgmaxTiesToNull) {
  const int n = 500, C = 4;
  const std::vector<float> z = grid_logits(n, C, 7);
  const std::vector<PairDecision> d = pair_decisions(z.data(), n, C);
  for (int i = 0; i < n; ++i) {
    int argmax = 0;  // the first of equal logits, as the trainer always decided
    for (int j = 1; j < C; ++j)
      if (z[i * C + j] > z[i * C + argmax]) argmax = j;
    EXPECT_EQ(decide(d[i], 0.0), argmax) << i;
    EXPECT_NE(d[i].best, 0);
    EXPECT_EQ(d[i].margin, double(z[i * C + d[i].best]) - double(z[i * C]));
  }
  EXPECT_THROW(pair_decisions(z.data(), 1, 1), std::invalid_argument);
}

// The tuned margin's decisions score what tune_null_margin says, and no threshold
// (every distance, every midpoint, beyond both ends) scores more.
TEST(NullMargin, TunedMarginIsTheBestThresholdAndScoresWhatItSays) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const int n = 300, C = 3;
    const std::vector<float> z = grid_logits(n, C, seed);
    const std::vector<PairDecision> d = pair_decisions(z.data(), n, C);
    std::vector<int> gold(n);
    for (int i = 0; i < n; ++i) gold[i] = (i * 7 + static_cast<int>(seed)) % 5 < 2 ? 1 + i % 2 : 0;
    const std::vector<std::string> names{"NULL", "A", "B"};
    auto f1_at = [&](double m) {
      std::vector<int> pred(n);
      for (int i = 0; i < n; ++i) pred[i] = decide(d[i], m);
      return relation_scores(gold, pred, {}, names).micro.f1;
    };
    const TunedMargin t = tune_null_margin(gold, d);
    EXPECT_EQ(f1_at(t.margin), t.f1) << seed;
    std::vector<double> ms{0.0};
    for (const PairDecision& p : d)
      for (double e : {-1.0, -0.25, 0.0, 0.25, 1.0}) ms.push_back(p.margin + e);
    for (double m : ms) EXPECT_LE(f1_at(m), t.f1) << "seed " << seed << " margin " << m;
  }
}

TEST(NullMargin, SeparatedScoresGetTheGapsMidpointAndArgmaxStaysWhenItIsBest) {
  // Positives 1.0 and 2.0 above NULL, negatives 0.2 and 0.6: argmax predicts all four;
  // the gap (0.6, 1.0] separates them, its midpoint 0.8 scores F1 1.
  const std::vector<float> z{0, 1.0f, 0, 2.0f, 0, 0.2f, 0, 0.6f};
  const std::vector<PairDecision> d = pair_decisions(z.data(), 4, 2);
  const TunedMargin t = tune_null_margin({1, 1, 0, 0}, d);
  EXPECT_NEAR(t.margin, 0.8, 1e-6);
  EXPECT_EQ(t.f1, 1.0);
  // Negatives below NULL: argmax is already perfect, and 0 lies in the best interval.
  const std::vector<float> w{0, 1.0f, 0, 2.0f, 0, -0.2f, 0, -0.6f};
  EXPECT_EQ(tune_null_margin({1, 1, 0, 0}, pair_decisions(w.data(), 4, 2)).margin, 0.0);
  // No gold relation: every margin scores 0, and 0 (argmax) is kept.
  EXPECT_EQ(tune_null_margin({0, 0, 0, 0}, d).margin, 0.0);
  EXPECT_EQ(tune_null_margin({}, {}).margin, 0.0);
  // A pair never scored (best 0) is never a relation, whatever the margin.
  EXPECT_EQ(decide(PairDecision{}, -100.0), 0);
  EXPECT_THROW(tune_null_margin({1}, {}), std::invalid_argument);
}

TEST(MetricsJson, StableKeysAndDoubles) {
  EXPECT_EQ(to_json(prf(2, 4, 1)).dump(),
            "{\"correct\":1.0,\"f1\":0.3333333333333333,\"gold\":2.0,\"precision\":0.25,"
            "\"predicted\":4.0,\"recall\":0.5}");
  const RelationScores s = relation_scores({1, 0}, {1, 1}, {3, 70}, {"NULL", "CID"});
  const nlohmann::json j = to_json(s);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"by_distance", "examples", "macro_f1", "micro",
                                            "per_class"}));
  EXPECT_TRUE(j["examples"].is_number_float());
  EXPECT_EQ(j["per_class"]["CID"]["precision"].get<double>(), 0.5);
  EXPECT_TRUE(j["per_class"]["NULL"]["gold"].is_number_float());
  ASSERT_EQ(j["by_distance"].size(), 5u);
  EXPECT_EQ(j["by_distance"][0]["max_distance"].get<double>(), 50.0);
  EXPECT_EQ(j["by_distance"][0]["examples"].get<double>(), 1.0);
  EXPECT_EQ(j["by_distance"][0]["precision"].get<double>(), 1.0);
  EXPECT_EQ(j["by_distance"][1]["precision"].get<double>(), 0.5);
  const nlohmann::json n = to_json(ner_scores({{"B-C"}}, {{"B-C"}}));
  EXPECT_EQ(n["per_type"]["C"]["f1"].get<double>(), 1.0);
  EXPECT_EQ(n["micro"]["f1"].get<double>(), 1.0);
  EXPECT_TRUE(n["tokens"].is_number_float());
}

}  // namespace
}  // namespace mare
