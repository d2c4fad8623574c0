// Relation runs on the shipped real corpora (experiments/corpora): the sources' grammar,
// the protocol of each task (CDR's candidate pairs and hypernym filter, SemEval's given
// pairs and the organisers' held-out abstracts), and a short training run on each that
// writes the task's prediction file, whose independent re-scoring by the official
// scorer gives the number result.json reports and `mare collect` takes as test_f1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "experiments/data/error.h"
#include "experiments/data/official_scores.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/releases.h"
#include "experiments/data/semeval.h"
#include "experiments/re_data.h"
#include "experiments/re_trainer.h"
#include "experiments/sweep/collect.h"
#include "experiments/sweep/corpus_stats.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RealSources, Grammar) {
  const fs::path shipped = data::shipped_corpora_dir();
  ReSource s = parse_re_source("cdr");
  EXPECT_EQ(s.kind, ReSourceKind::cdr);
  EXPECT_EQ(fs::path(s.directory), shipped / "cdr");
  EXPECT_EQ(parse_re_source("cdr:/some/where").directory, "/some/where");
  s = parse_re_source("semeval2018:1.2");
  EXPECT_EQ(s.kind, ReSourceKind::semeval2018);
  EXPECT_EQ(s.subtask, "1.2");
  EXPECT_EQ(fs::path(s.directory), shipped / "semeval2018-task7");
  s = parse_re_source("semeval2018:1.1:/a:b");
  EXPECT_EQ(s.subtask, "1.1");
  EXPECT_EQ(s.directory, "/a:b");
  s = parse_re_source("semeval2018:1.1+1.2");
  EXPECT_EQ(s.subtask, "1.1");
  EXPECT_EQ(s.also_train, "1.2");
  EXPECT_THROW(parse_re_source("semeval2018:1.1+1.1"), std::invalid_argument);
  EXPECT_THROW(parse_re_source("semeval2018:1.1+2"), std::invalid_argument);
  EXPECT_THROW(parse_re_source("semeval2018:2"), std::invalid_argument);
  EXPECT_THROW(parse_re_source("semeval2018"), std::invalid_argument);
  EXPECT_THROW(parse_re_source("pubtator"), std::invalid_argument);
  EXPECT_THROW(parse_re_source("cdx:dir"), std::invalid_argument);
}

TEST(RealCorpora, CdrCandidatesAndTheHypernymFilter) {
  ReCorpusOptions o;
  o.source = "cdr";
  const ReCorpus c = ReCorpus::load(o);
  EXPECT_EQ(c.official, OfficialScore::cdr);
  EXPECT_EQ(c.hypernym_filter, "train");
  EXPECT_EQ(c.files.size(), 3u);
  // Every gold CID relation is a candidate pair (nothing cut: no max_tokens for CDR).
  EXPECT_EQ(c.train.positives.size(), 1038u);
  EXPECT_EQ(c.valid.positives.size(), 1012u);
  EXPECT_EQ(c.test.positives.size(), 1066u);
  // The filter drops 192 training negatives and leaves validation and test alone.
  EXPECT_EQ(c.train.filtered_negatives, 192);
  EXPECT_EQ(c.train.negatives.size(), 4394u - 192u);
  EXPECT_EQ(c.valid.negatives.size(), 4249u);
  EXPECT_EQ(c.test.negatives.size(), 4339u);
  o.hypernym_filter = "all";
  const ReCorpus all = ReCorpus::load(o);
  EXPECT_EQ(all.valid.filtered_negatives, 174);
  EXPECT_EQ(all.test.filtered_negatives, 201);
  o.hypernym_filter = "none";
  EXPECT_EQ(ReCorpus::load(o).train.negatives.size(), 4394u);
  // cdr+dev, BRAN's protocol: 850 of the 1 000 training and development documents to
  // train, the same 150 to validate whatever the run's seed, the test split unchanged.
  o.source = "cdr+dev";
  o.hypernym_filter = "";
  o.seed = 7;
  const ReCorpus bran = ReCorpus::load(o);
  EXPECT_EQ(bran.train.documents.size(), 850u);
  EXPECT_EQ(bran.valid.documents.size(), 150u);
  EXPECT_EQ(bran.test.positives.size(), 1066u);
  EXPECT_EQ(bran.train.positives.size() + bran.valid.positives.size(), 1038u + 1012u);
  o.seed = 1;
  EXPECT_EQ(ReCorpus::load(o).valid.documents[0].id, bran.valid.documents[0].id);
  o.hypernym_filter = "none";
  o.source = "semeval2018:1.1";
  o.hypernym_filter = "train";
  EXPECT_THROW(ReCorpus::load(o), std::invalid_argument);
}

TEST(RealCorpora, SemevalClassifiesTheGivenPairs) {
  ReCorpusOptions o;
  o.source = "semeval2018:1.1";
  const ReCorpus c = ReCorpus::load(o);
  EXPECT_TRUE(c.given_pairs);
  EXPECT_EQ(c.official, OfficialScore::semeval2018);
  EXPECT_TRUE(c.weighted_by_default);
  // One example per listed pair, none NULL; valid = the organisers' 50 held-out abstracts.
  EXPECT_EQ(c.valid.documents.size(), 50u);
  EXPECT_EQ(c.train.examples.size() + c.valid.examples.size(), 1228u);
  EXPECT_EQ(c.test.examples.size(), 355u);
  EXPECT_TRUE(c.train.negatives.empty() && c.test.negatives.empty());
  // The test examples are the keys' pairs in the keys' order, with their directions.
  const fs::path dir = data::shipped_corpora_dir() / "semeval2018-task7";
  const auto keys = data::parse_semeval_pair_lines(
      data::read_release_file(dir, "keys.test.1.1.txt"), "keys", data::LabelRule::required,
      data::SemevalOptions{}.relation_types);
  ASSERT_EQ(keys.size(), c.test.examples.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const data::Example& e = c.test.examples[i];
    const data::Document& d = c.test.documents[e.doc];
    EXPECT_EQ(d.entities[e.head].id, keys[i].e1);
    EXPECT_EQ(d.entities[e.tail].id, keys[i].e2);
    EXPECT_EQ(e.reverse, keys[i].reverse);
    EXPECT_EQ(c.relation_names[c.test.labels[i]], keys[i].label);
  }
  // Trained on both subtasks: 1.2's 350 training abstracts less the six that 1.1 holds
  // under the same ids join the 300; validation and test stay 1.1's.
  o.source = "semeval2018:1.1+1.2";
  const ReCorpus both = ReCorpus::load(o);
  EXPECT_EQ(both.train.documents.size(), 300u + 344u);
  EXPECT_EQ(both.valid.examples.size(), c.valid.examples.size());
  EXPECT_EQ(both.test.examples.size(), 355u);
}

// `mare data stats` beside thesis Tables 4.4 and 4.11: the counts, and what makes them
// differ, reproduced to the pair.
TEST(RealCorpora, StatisticsBesideTablesFourFourAndFourEleven) {
  const sweep::CorpusStatistics cdr = sweep::corpus_statistics("cdr");
  const long table44[] = {4280, 4136, 4270};
  for (int k = 0; k < 3; ++k) {
    const sweep::SplitStats& s = cdr.splits[k];
    EXPECT_EQ(s.unfiltered_negative + s.bran_unknown_id_pairs - s.hypernym_filtered, table44[k])
        << s.name;
  }
  EXPECT_EQ(cdr.splits[0].bran_unknown_id_pairs, 78);
  const std::string text = sweep::describe(cdr);
  EXPECT_NE(text.find("beside thesis Table 4.4"), std::string::npos) << text;
  EXPECT_NE(text.find("4394             78                192    4280     4280"), std::string::npos)
      << text;
  // Subtask 1.2: the file's relations less those in the six abstracts 1.1 also holds are
  // thesis Table 4.11's column.
  const sweep::CorpusStatistics noisy = sweep::corpus_statistics("semeval2018:1.2");
  const std::map<std::string, long> table411{{"USAGE", 464},      {"MODEL-FEATURE", 172},
                                             {"RESULT", 121},     {"TOPIC", 240},
                                             {"PART_WHOLE", 192}, {"COMPARE", 41}};
  for (std::size_t k = 1; k < noisy.relation_classes.size(); ++k) {
    long ours = 0;
    for (int split = 0; split < 2; ++split)  // train and the held-out abstracts
      ours += noisy.splits[split].relations[k] - noisy.splits[split].shared_with_subtask_1_1[k];
    EXPECT_EQ(ours, table411.at(noisy.relation_classes[k])) << noisy.relation_classes[k];
  }
  EXPECT_NE(sweep::describe(noisy).find("beside thesis Table 4.11"), std::string::npos);
}

ReTrainOptions tiny_run(const std::string& data, const fs::path& out) {
  ReTrainOptions o;
  o.model = "bran+d=8+heads=2+iterations=1+ner_prob=0";
  o.data = data;
  o.steps = 4;
  o.batch = 4;
  o.eval_every = 2;
  o.eval_batch = 16;
  o.out = out;
  return o;
}

TEST(RealCorpora, CdrRunWritesPubtatorPredictionsThatScoreAsReported) {
  test::TempDir dir("real_cdr");
  const nlohmann::json r = train_re_model(tiny_run("cdr", dir / "run"), nullptr);
  ASSERT_EQ(r["status"], "completed");
  const nlohmann::json& off = r["test"]["official"];
  ASSERT_EQ(off["predictions_file"], "test_predictions.pubtator");
  const std::vector<data::Document> predicted = data::parse_pubtator(
      slurp(dir / "run" / "test_predictions.pubtator"), "test_predictions.pubtator");
  const fs::path cdr = data::shipped_corpora_dir() / "cdr";
  const std::vector<data::Document> gold = data::parse_pubtator(
      data::read_release_file(cdr, "CDR_TestSet.PubTator.txt"), "CDR_TestSet.PubTator.txt");
  ASSERT_EQ(predicted.size(), 500u);
  const data::Prf s = data::score_cdr(gold, data::cid_triples(predicted));
  EXPECT_EQ(s.gold, 1066);
  EXPECT_EQ(off["gold"].get<long>(), s.gold);
  EXPECT_EQ(off["predicted"].get<long>(), s.predicted);
  EXPECT_EQ(off["correct"].get<long>(), s.correct);
  EXPECT_DOUBLE_EQ(off["f1"].get<double>(), s.f1());
  // collect's test_f1 is the official score.
  const sweep::Collection col = sweep::collect_runs({dir / "run"});
  ASSERT_EQ(col.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(col.runs[0].metrics.at("test_f1"), s.f1());
  EXPECT_DOUBLE_EQ(col.runs[0].metrics.at("valid_f1"), r["valid"]["official"]["f1"].get<double>());
  // Every metrics line's valid_f1 is the official score too (the best one picks the
  // checkpoint).
  EXPECT_DOUBLE_EQ(r["test_references"]["majority_f1"].get<double>(), 0.0);
  // Every pair CID, by hand from Table 4.4's test counts: 1 066 gold triples among the
  // 1 066 + 4 339 candidates, recall 1.
  EXPECT_EQ(r["test_references"]["constant_positive_class"], "CID");
  EXPECT_NEAR(r["test_references"]["constant_positive_f1"].get<double>(),
              2.0 * 1066 / (1066 + 5405), 1e-12);
}

TEST(RealCorpora, SemevalRunWritesKeyFormatPredictionsThatScoreAsReported) {
  test::TempDir dir("real_semeval");
  const nlohmann::json r = train_re_model(tiny_run("semeval2018:1.2", dir / "run"), nullptr);
  ASSERT_EQ(r["status"], "completed");
  const nlohmann::json& off = r["test"]["official"];
  ASSERT_EQ(off["predictions_file"], "test_predictions.txt");
  const fs::path sem = data::shipped_corpora_dir() / "semeval2018-task7";
  const auto keys = data::parse_semeval_pair_lines(
      data::read_release_file(sem, "keys.test.1.2.txt"), "keys", data::LabelRule::required,
      data::SemevalOptions{}.relation_types);
  const auto pred = data::parse_semeval_pair_lines(slurp(dir / "run" / "test_predictions.txt"),
                                                   "pred", data::LabelRule::required,
                                                   data::SemevalOptions{}.relation_types);
  ASSERT_EQ(pred.size(), 355u);  // a type for every given pair, in the keys' order
  for (std::size_t i = 0; i < pred.size(); ++i) {
    EXPECT_EQ(pred[i].e1, keys[i].e1);
    EXPECT_EQ(pred[i].reverse, keys[i].reverse);
  }
  const data::SemevalScore s = data::score_semeval2018(keys, pred, "keys", "pred");
  EXPECT_DOUBLE_EQ(off["f1"].get<double>(), s.macro_f1);
  EXPECT_EQ(off["wrong_direction"].get<long>(), 0);
  const sweep::Collection col = sweep::collect_runs({dir / "run"});
  ASSERT_EQ(col.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(col.runs[0].metrics.at("test_f1"), s.macro_f1);
  // The trivial baseline, scored officially: every pair the commonest training type.
  EXPECT_EQ(r["test_references"]["majority_class"], "USAGE");
  std::vector<data::SemevalPairLine> usage = keys;
  for (auto& p : usage) p.label = "USAGE";
  EXPECT_DOUBLE_EQ(r["test_references"]["majority_f1"].get<double>(),
                   data::score_semeval2018(keys, usage, "k", "u").macro_f1);
}

}  // namespace
}  // namespace mare
