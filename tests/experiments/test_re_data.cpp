// Relation corpora as batches: a hand-written PubTator corpus whose ids, masks, CSR
// rows, labels, truncation, tags, n-grams and class weights are worked out by hand
// below; the synthetic corpora for pools, shapes and determinism; bad sources.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/tokenizer.h"
#include "experiments/re_data.h"

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "mare_re_data_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

// Three train documents (worked out in the comments), one valid, one test.
//   PMID 1 tokens: Aspirin induced asthma . Asthma was severe after aspirin use .
//          entities: Aspirin {0, 8}, asthma {2, 4}; CID(Aspirin, asthma), distance 2
//   PMID 2 tokens: Caffeine and cluster headache . No relation in Zürich .
//          entities: Caffeine {0}, cluster headache {2-3}; NULL, distance 2
//   PMID 3 tokens: Lithium and cocaine . Lithium caused tremor but cocaine did not cause fever .
//          entities: Lithium {0, 4}, cocaine {2, 8}, tremor {6}, fever {12}
//          pairs: (Li, tremor) CID d 2, (Li, fever) NULL d 8, (co, tremor) NULL d 2,
//                 (co, fever) NULL d 4
const char* kTrain =
    "1|t|Aspirin induced asthma.\n"
    "1|a|Asthma was severe after aspirin use.\n"
    "1\t0\t7\tAspirin\tChemical\tD001241\n"
    "1\t16\t22\tasthma\tDisease\tD001249\n"
    "1\t24\t30\tAsthma\tDisease\tD001249\n"
    "1\t48\t55\taspirin\tChemical\tD001241\n"
    "1\tCID\tD001241\tD001249\n"
    "\n"
    "2|t|Caffeine and cluster headache.\n"
    "2|a|No relation in Zürich.\n"
    "2\t0\t8\tCaffeine\tChemical\tD002110\n"
    "2\t13\t29\tcluster headache\tDisease\tD003027\n"
    "\n"
    "3|t|Lithium and cocaine.\n"
    "3|a|Lithium caused tremor but cocaine did not cause fever.\n"
    "3\t0\t7\tLithium\tChemical\tD008094\n"
    "3\t12\t19\tcocaine\tChemical\tD003042\n"
    "3\t21\t28\tLithium\tChemical\tD008094\n"
    "3\t36\t42\ttremor\tDisease\tD014202\n"
    "3\t47\t54\tcocaine\tChemical\tD003042\n"
    "3\t69\t74\tfever\tDisease\tD005334\n"
    "3\tCID\tD008094\tD014202\n"
    "\n";
const char* kValid =
    "4|t|Aspirin induced migraine.\n"
    "4|a|Rare.\n"
    "4\t0\t7\tAspirin\tChemical\tD001241\n"
    "4\t16\t24\tmigraine\tDisease\tD008881\n"
    "4\tCID\tD001241\tD008881\n"
    "\n";
// PMID 5 (test): Lithium {0, 4} and fever {2} tie at distance 2: the first mention pair wins
const char* kTest =
    "5|t|Lithium and fever and Lithium.\n"
    "5|a|Fine.\n"
    "5\t0\t7\tLithium\tChemical\tD008094\n"
    "5\t12\t17\tfever\tDisease\tD005334\n"
    "5\t22\t29\tLithium\tChemical\tD008094\n"
    "\n";

class TinyCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = make_temp_dir();
    data::write_file(dir + "/train.pubtator", kTrain);
    data::write_file(dir + "/valid.pubtator", kValid);
    data::write_file(dir + "/test.pubtator", kTest);
  }
  void TearDown() override { fs::remove_all(dir); }
  ReCorpus load(ReCorpusOptions o = {}) {
    o.source = "pubtator:" + dir;
    return ReCorpus::load(o);
  }
  std::string dir;
};

std::vector<int32_t> ints(const Tensor& t) {
  return t.to_index_vector();
}

TEST_F(TinyCorpus, VocabulariesAndLabelSets) {
  const ReCorpus c = load();
  // count 6: "."; count 2: Lithium, and, cocaine; then count 1; ties in byte order
  const std::vector<std::string> expected{
      "<pad>",    "<unk>",   ".",      "Lithium", "and",      "cocaine", "Aspirin", "Asthma",
      "Caffeine", "No",      "Zürich", "after",   "aspirin",  "asthma",  "but",     "cause",
      "caused",   "cluster", "did",    "fever",   "headache", "in",      "induced", "not",
      "relation", "severe",  "tremor", "use",     "was"};
  ASSERT_EQ(c.words.size(), static_cast<int>(expected.size()));
  for (int i = 0; i < c.words.size(); ++i) EXPECT_EQ(c.words.word(i), expected[i]) << i;
  EXPECT_EQ(c.entity_types, (std::vector<std::string>{"Chemical", "Disease"}));
  EXPECT_EQ(c.ner_tag_names,
            (std::vector<std::string>{"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}));
  EXPECT_EQ(c.entity_tag_names.front(), "<pad>");
  EXPECT_EQ(c.entity_tag_names.size(), 6u);
  EXPECT_EQ(c.relation_names, (std::vector<std::string>{"NULL", "CID"}));
  EXPECT_EQ(c.sizes.words, 29);
  EXPECT_EQ(c.sizes.relations, 2);
  EXPECT_EQ(c.sizes.ner_tags, 5);
  EXPECT_EQ(c.sizes.entity_tags, 6);
  EXPECT_EQ(c.sizes.pos_tags, 0);
  EXPECT_EQ(c.sizes.max_distance, 13);  // the longest document has 14 tokens
  EXPECT_EQ(c.sizes.ngrams, c.ngrams.size());
  EXPECT_EQ(c.sizes.chars, c.chars.size());
  EXPECT_EQ(c.ngrams.word(2), "<.>");  // six times, more than any other gram
  EXPECT_TRUE(c.chars.contains("ü"));  // code points, not bytes
  EXPECT_FALSE(c.chars.contains("\xc3"));
  EXPECT_FALSE(c.weighted_by_default);
  EXPECT_FALSE(c.word_init.defined());

  ReCorpusOptions o;
  o.lowercase = true;
  EXPECT_EQ(load(o).words.size(), 27);  // Aspirin/aspirin and Asthma/asthma merge
  o.lowercase = false;
  o.min_count = 2;
  EXPECT_EQ(load(o).words.size(), 6);
}

TEST_F(TinyCorpus, ExamplesPoolsAndClassWeights) {
  const ReCorpus c = load();
  const ReSplit& s = c.train;
  ASSERT_EQ(s.examples.size(), 6u);
  EXPECT_EQ(s.labels, (std::vector<int>{1, 0, 1, 0, 0, 0}));
  std::vector<int> distance;
  for (const auto& e : s.examples) distance.push_back(e.distance);
  EXPECT_EQ(distance, (std::vector<int>{2, 2, 2, 8, 2, 4}));
  EXPECT_EQ(s.positives, (std::vector<int>{0, 2}));
  EXPECT_EQ(s.negatives, (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(s.document_examples, (std::vector<std::vector<int>>{{0}, {1}, {2, 3, 4, 5}}));
  // total 6, C = 2: NULL 6 / (2·4), CID 6 / (2·2)
  EXPECT_EQ(c.class_weights, (std::vector<float>{0.75f, 1.5f}));
  EXPECT_EQ(c.valid.labels, (std::vector<int>{1}));
  EXPECT_EQ(c.test.labels, (std::vector<int>{0}));
  EXPECT_EQ(c.test.positives.size(), 0u);
  EXPECT_EQ(&c.split("valid"), &c.valid);
  EXPECT_THROW(c.split("dev"), std::invalid_argument);
  EXPECT_EQ(c.relation_id("CID"), 1);
  EXPECT_EQ(c.relation_id("nope"), -1);
}

TEST_F(TinyCorpus, BatchTensors) {
  const ReCorpus c = load();
  const ReBatch b = make_batch(c.train, {{0, {0}}, {1, {1}}});
  ASSERT_EQ(b.B, 2);
  ASSERT_EQ(b.T, 11);  // PMID 1 has 11 tokens, PMID 2 has 10
  ASSERT_EQ(b.P, 2);
  auto w = [&](const char* s) { return c.words.id(s); };
  std::vector<int32_t> words{
      w("Aspirin"), w("induced"), w("asthma"),   w("."),   w("Asthma"), w("was"),
      w("severe"),  w("after"),   w("aspirin"),  w("use"), w("."),      w("Caffeine"),
      w("and"),     w("cluster"), w("headache"), w("."),   w("No"),     w("relation"),
      w("in"),      w("Zürich"),  w("."),        0};
  EXPECT_EQ(ints(b.words), words);
  EXPECT_EQ(w("Aspirin"), 6);
  EXPECT_EQ(w("."), 2);
  for (int32_t id : words) EXPECT_NE(id, 1);  // every train word is known
  std::vector<float> mask(22, 1.0f);
  mask[21] = 0.0f;
  EXPECT_EQ(b.mask.to_vector(), mask);
  // NER: O=0, B-Chemical=1, I-Chemical=2, B-Disease=3, I-Disease=4; tags = NER + 1
  const std::vector<int32_t> ner{1, 0, 3, 0, 3, 0, 0, 0, 1, 0, 0,  //
                                 1, 0, 3, 4, 0, 0, 0, 0, 0, 0, -1};
  EXPECT_EQ(ints(b.ner_targets), ner);
  std::vector<int32_t> tags;
  for (int32_t x : ner) tags.push_back(x + 1);
  EXPECT_EQ(ints(b.entity_tags), tags);
  EXPECT_EQ(b.entity_tags.shape(), Shape({2, 11}));
  // pairs: PMID 1 Aspirin {0, 8} -> asthma {2, 4}; PMID 2 Caffeine {0} -> cluster headache {2, 3}
  EXPECT_EQ(ints(b.pair_doc), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ints(b.labels), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(ints(b.head_offsets), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(ints(b.head_rows), (std::vector<int32_t>{0, 8, 11}));
  EXPECT_EQ(ints(b.tail_offsets), (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(ints(b.tail_rows), (std::vector<int32_t>{2, 4, 13, 14}));
  EXPECT_EQ(ints(b.head_pos), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(ints(b.tail_pos), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(b.distance, (std::vector<int>{2, 2}));
  EXPECT_EQ(b.example_index, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(b.pos_tags.defined());

  // n-grams and characters: the longest tokens (Caffeine, headache, relation) have 8
  // grams and 8 characters
  ASSERT_EQ(b.ngrams.shape(), Shape({22, 8}));
  ASSERT_EQ(b.chars.shape(), Shape({22, 8}));
  const std::vector<int32_t> g = ints(b.ngrams), ch = ints(b.chars);
  const std::vector<std::string> aspirin{"<As", "Asp", "spi", "pir", "iri", "rin", "in>"};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(g[k], k < 7 ? c.ngrams.id(aspirin[k]) : 0) << k;
  for (int k = 0; k < 7; ++k) EXPECT_GT(g[k], 1) << k;
  EXPECT_EQ(g[3 * 8], c.ngrams.id("<.>"));
  EXPECT_EQ(g[3 * 8 + 1], 0);
  const int zurich = 11 + 8;
  const std::vector<std::string> zc{"Z", "ü", "r", "i", "c", "h"};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(ch[zurich * 8 + k], k < 6 ? c.chars.id(zc[k]) : 0) << k;
  for (int k = 0; k < 8; ++k) EXPECT_EQ(g[21 * 8 + k], 0);  // the padding row
  for (int k = 0; k < 8; ++k) EXPECT_EQ(ch[21 * 8 + k], 0);
}

TEST_F(TinyCorpus, PairsOfOneDocumentAndUnknownWords) {
  const ReCorpus c = load();
  const ReBatch b = make_batch(c.train, {{2, {2, 3, 4, 5}}});
  EXPECT_EQ(b.T, 14);
  // Lithium {0, 4}, cocaine {2, 8}, tremor {6}, fever {12}
  EXPECT_EQ(ints(b.head_rows), (std::vector<int32_t>{0, 4, 0, 4, 2, 8, 2, 8}));
  EXPECT_EQ(ints(b.tail_rows), (std::vector<int32_t>{6, 12, 6, 12}));
  EXPECT_EQ(ints(b.head_offsets), (std::vector<int32_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(ints(b.tail_offsets), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ints(b.head_pos), (std::vector<int32_t>{4, 4, 8, 8}));
  EXPECT_EQ(ints(b.tail_pos), (std::vector<int32_t>{6, 12, 6, 12}));
  EXPECT_EQ(b.distance, (std::vector<int>{2, 8, 2, 4}));
  EXPECT_EQ(ints(b.labels), (std::vector<int32_t>{1, 0, 0, 0}));

  // valid: "migraine" and "Rare" are not train words; "<mi" is no train gram, "ine" is
  const ReBatch v = make_batch(c.valid, {{0, {0}}});
  EXPECT_EQ(ints(v.words), (std::vector<int32_t>{6, c.words.id("induced"), 1, 2, 1, 2}));
  const std::vector<int32_t> g = ints(v.ngrams);
  const int64_t G = v.ngrams.dim(1);
  EXPECT_EQ(g[2 * G + 0], 1);
  EXPECT_EQ(g[2 * G + 6], c.ngrams.id("ine"));
  EXPECT_GT(g[2 * G + 6], 1);

  // a tie between mention pairs: the first in mention order gives the positions
  const ReBatch t = make_batch(c.test, {{0, {0}}});
  EXPECT_EQ(ints(t.head_rows), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(ints(t.head_pos), (std::vector<int32_t>{0}));
  EXPECT_EQ(ints(t.tail_pos), (std::vector<int32_t>{2}));
  EXPECT_EQ(t.distance, (std::vector<int>{2}));

  // NER batches have no pairs
  const ReBatch n = make_batch(c.train, {{1, {}}});
  EXPECT_EQ(n.P, 0);
  EXPECT_EQ(n.labels.numel(), 0);
  EXPECT_EQ(ints(n.head_offsets), (std::vector<int32_t>{0}));

  EXPECT_THROW(make_batch(c.train, {}), std::invalid_argument);
  EXPECT_THROW(make_batch(c.train, {{3, {}}}), std::out_of_range);
  EXPECT_THROW(make_batch(c.train, {{0, {6}}}), std::out_of_range);
  EXPECT_THROW(make_batch(c.train, {{0, {1}}}), std::invalid_argument);  // PMID 2's pair
}

TEST_F(TinyCorpus, Truncation) {
  ReCorpusOptions o;
  o.max_tokens = 5;
  const ReCorpus c = load(o);
  EXPECT_EQ(c.max_tokens, 5);
  EXPECT_EQ(c.sizes.max_distance, 4);
  // PMID 1 keeps Aspirin {0} (aspirin at 8 is cut) and asthma {2, 4}; PMID 2 keeps its
  // pair; PMID 3 keeps Lithium and cocaine only: its four pairs are dropped, one of them
  // the CID.
  EXPECT_EQ(c.train.truncated_documents, 3);
  EXPECT_EQ(c.train.dropped_pairs, 4);
  EXPECT_EQ(c.train.dropped_positives, 1);
  EXPECT_EQ(c.train.labels, (std::vector<int>{1, 0}));
  EXPECT_EQ(c.class_weights, (std::vector<float>{1.0f, 1.0f}));
  const ReBatch b = make_batch(c.train, {{0, {0}}, {2, {}}});
  EXPECT_EQ(b.T, 5);
  EXPECT_EQ(ints(b.head_rows), (std::vector<int32_t>{0}));
  EXPECT_EQ(ints(b.tail_rows), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(b.mask.to_vector(), std::vector<float>(10, 1.0f));
  // PMID 2 cut inside its disease mention: the B- tag stays
  ReCorpusOptions o3;
  o3.max_tokens = 3;
  const ReCorpus c3 = load(o3);
  EXPECT_EQ(ints(make_batch(c3.train, {{1, {}}}).ner_targets), (std::vector<int32_t>{1, 0, 3}));
  // the default for PubTator is no cut; a negative value means none too
  o.max_tokens = -1;
  EXPECT_EQ(load(o).max_tokens, 0);
  EXPECT_EQ(load().max_tokens, 0);
}

TEST_F(TinyCorpus, Samplers) {
  const ReCorpus c = load();
  PhiloxStream a(5, kStreamData), a2(5, kStreamData);
  int positive = 0, negative = 0;
  for (int i = 0; i < 40; ++i) {
    const std::vector<BatchItem> items = sample_re_batch(c.train, 4, a);
    const std::vector<BatchItem> again = sample_re_batch(c.train, 4, a2);
    ASSERT_EQ(items.size(), 4u);
    std::set<int> labels;
    for (std::size_t k = 0; k < items.size(); ++k) {
      ASSERT_EQ(items[k].examples.size(), 1u);
      const int x = items[k].examples[0];
      EXPECT_EQ(items[k].document, c.train.examples[x].doc);
      EXPECT_EQ(again[k].document, items[k].document);
      EXPECT_EQ(again[k].examples, items[k].examples);
      labels.insert(c.train.labels[x]);
    }
    ASSERT_EQ(labels.size(), 1u);  // one pool per batch
    (*labels.begin() ? positive : negative)++;
  }
  EXPECT_GT(positive, 5);
  EXPECT_GT(negative, 5);

  std::set<int> docs;
  for (int i = 0; i < 20; ++i)
    for (const BatchItem& it : sample_ner_batch(c.train, 3, a)) {
      EXPECT_TRUE(it.examples.empty());
      docs.insert(it.document);
    }
  EXPECT_EQ(docs, (std::set<int>{0, 1, 2}));

  const auto eval = evaluation_batches(c.train, 2);
  ASSERT_EQ(eval.size(), 2u);
  ASSERT_EQ(eval[0].size(), 2u);
  ASSERT_EQ(eval[1].size(), 1u);
  EXPECT_EQ(eval[1][0].document, 2);
  EXPECT_EQ(eval[1][0].examples, (std::vector<int>{2, 3, 4, 5}));
  // --batching balanced: every batch holds ⌈B/2⌉ positives, then negatives, each drawn
  // from its pool (a sampler that fell back to whole-pool batches fails here)
  PhiloxStream bal(7, kStreamData), bal2(7, kStreamData);
  std::set<int> drawn;
  for (int i = 0; i < 30; ++i) {
    for (int B : {4, 5}) {
      const std::vector<BatchItem> items = sample_balanced_re_batch(c.train, B, bal);
      ASSERT_EQ(items.size(), static_cast<std::size_t>(B));
      for (int k = 0; k < B; ++k) {
        ASSERT_EQ(items[k].examples.size(), 1u);
        const int x = items[k].examples[0];
        EXPECT_EQ(items[k].document, c.train.examples[x].doc);
        EXPECT_EQ(c.train.labels[x] != 0, k < (B + 1) / 2) << "batch " << i << " item " << k;
        drawn.insert(x);
      }
      const std::vector<BatchItem> again = sample_balanced_re_batch(c.train, B, bal2);
      for (int k = 0; k < B; ++k) EXPECT_EQ(again[k].examples, items[k].examples);
    }
  }
  EXPECT_EQ(drawn.size(), c.train.examples.size());  // both pools, every example, in time
  // --batching natural: examples from all of the split, in its proportions: over many
  // draws the positive share is the split's, and the dispatcher draws what each names
  PhiloxStream nat(7, kStreamData), nat2(7, kStreamData);
  long positives = 0, total = 0;
  for (int i = 0; i < 2000; ++i)
    for (const BatchItem& it : sample_natural_re_batch(c.train, 4, nat)) {
      ASSERT_EQ(it.examples.size(), 1u);
      EXPECT_EQ(it.document, c.train.examples[it.examples[0]].doc);
      positives += c.train.labels[it.examples[0]] != 0;
      ++total;
    }
  const double share = static_cast<double>(c.train.positives.size()) / c.train.examples.size();
  EXPECT_NEAR(static_cast<double>(positives) / total, share, 0.02);
  PhiloxStream nat3(7, kStreamData);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(sample_re_batch(ReBatching::natural, c.train, 4, nat2)[0].examples,
              sample_natural_re_batch(c.train, 4, nat3)[0].examples);
  EXPECT_EQ(parse_re_batching("natural"), ReBatching::natural);
  EXPECT_THROW(parse_re_batching("random"), std::invalid_argument);
  // a pool left empty: the test split has only negatives
  PhiloxStream t(1, kStreamData);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sample_re_batch(c.test, 2, t)[0].examples[0], 0);
  EXPECT_THROW(sample_re_batch(c.train, 0, t), std::invalid_argument);
}

TEST_F(TinyCorpus, Word2vecInit) {
  data::write_file(dir + "/vectors.txt", "3 2\n. 1 2\nAspirin 0.5 -0.5\nasthma 3 4\n");
  ReCorpusOptions o;
  o.word2vec = dir + "/vectors.txt";
  const ReCorpus c = load(o);
  ASSERT_TRUE(c.word_init.defined());
  ASSERT_EQ(c.word_init.shape(), Shape({29, 2}));
  const std::vector<float> m = c.word_init.to_vector();
  auto row = [&](const char* w) {
    const int i = c.words.id(w);
    return std::vector<float>{m[2 * i], m[2 * i + 1]};
  };
  EXPECT_EQ(row("<pad>"), (std::vector<float>{0, 0}));
  EXPECT_EQ(row("."), (std::vector<float>{1, 2}));
  EXPECT_EQ(row("Aspirin"), (std::vector<float>{0.5f, -0.5f}));
  EXPECT_EQ(row("asthma"), (std::vector<float>{3, 4}));
  EXPECT_EQ(row("Asthma"), (std::vector<float>{3, 4}));  // found after lowercasing
  const std::vector<float> unk = row("<unk>");
  EXPECT_TRUE(std::abs(unk[0]) <= 0.1f && std::abs(unk[1]) <= 0.1f && unk != row("<pad>"));
  EXPECT_EQ(c.word_init_report.found, 3);
  EXPECT_EQ(c.word_init_report.found_lowercase, 1);
  EXPECT_EQ(c.word_init_report.missing, 24);
  o.word2vec_dim = 50;
  EXPECT_THROW(load(o), data::DataError);
}

std::string error_of(const ReCorpusOptions& o) {
  try {
    ReCorpus::load(o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(TinyCorpus, BadSources) {
  ReCorpusOptions o;
  o.source = "nothing";
  EXPECT_NE(error_of(o).find("expected a source KIND:DIR"), std::string::npos) << error_of(o);
  o.source = "conll:" + dir;
  EXPECT_NE(error_of(o).find("unknown source kind 'conll'"), std::string::npos) << error_of(o);
  o.source = "pubtator:" + dir + "/absent";
  EXPECT_NE(error_of(o).find("no directory " + dir + "/absent"), std::string::npos) << error_of(o);
  o.source = "bran-tsv:" + dir;
  EXPECT_NE(error_of(o).find("missing file " + dir + "/train.tsv"), std::string::npos)
      << error_of(o);
  o.source = "semeval:" + dir;
  EXPECT_NE(error_of(o).find("train.text.xml"), std::string::npos) << error_of(o);
  fs::remove(dir + "/test.pubtator");
  o.source = "synth-cdr:" + dir;
  EXPECT_NE(error_of(o).find("missing file " + dir + "/test.pubtator"), std::string::npos)
      << error_of(o);
  data::write_file(dir + "/test.pubtator", kTest);
  // a train split without relations
  data::write_file(dir + "/train.pubtator", kTest);
  EXPECT_NE(error_of(o).find(dir + "/train.pubtator has no annotated relations"), std::string::npos)
      << error_of(o);
  // malformed files: the loader's error names file and line
  data::write_file(dir + "/train.pubtator", "1|t|x\n1|a|y\n1\t0\t9\tx\tChemical\tD1\n\n");
  try {
    ReCorpus::load(o);
    ADD_FAILURE() << "loaded a malformed file";
  } catch (const data::DataError& e) {
    EXPECT_EQ(e.file(), dir + "/train.pubtator");
    EXPECT_EQ(e.line(), 3u);
  }
  o.source = "pubtator:" + dir;
  data::write_file(dir + "/train.pubtator", kTrain);
  o.ngram = 0;
  EXPECT_THROW(ReCorpus::load(o), std::invalid_argument);
}

// ---- the synthetic corpora through the real loaders

class SynthCorpus : public ::testing::Test {
 protected:
  void SetUp() override { dir = make_temp_dir(); }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir;
};

void check_batch(const ReCorpus& c, const ReSplit& s, const ReBatch& b,
                 const std::vector<BatchItem>& items) {
  ASSERT_EQ(b.B, static_cast<int64_t>(items.size()));
  EXPECT_EQ(b.words.shape(), Shape({b.B, b.T}));
  EXPECT_EQ(b.mask.shape(), Shape({b.B, b.T}));
  EXPECT_EQ(b.ngrams.dim(0), b.B * b.T);
  EXPECT_EQ(b.chars.dim(0), b.B * b.T);
  EXPECT_EQ(b.ner_targets.shape(), Shape({b.B * b.T}));
  EXPECT_LE(b.T, c.max_tokens > 0 ? c.max_tokens : 1 << 30);
  const std::vector<float> mask = b.mask.to_vector();
  const std::vector<int32_t> words = ints(b.words), ner = ints(b.ner_targets),
                             tags = ints(b.entity_tags);
  for (int64_t r = 0; r < b.B * b.T; ++r) {
    EXPECT_EQ(mask[r] == 0.0f, words[r] == 0);
    EXPECT_EQ(mask[r] == 0.0f, ner[r] == -1);
    EXPECT_EQ(mask[r] == 0.0f, tags[r] == 0);
    EXPECT_LT(words[r], c.sizes.words);
    EXPECT_LT(ner[r], c.sizes.ner_tags);
  }
  const std::vector<int32_t> ho = ints(b.head_offsets), hr = ints(b.head_rows),
                             to = ints(b.tail_offsets), tr = ints(b.tail_rows),
                             pd = ints(b.pair_doc), lab = ints(b.labels);
  ASSERT_EQ(static_cast<int64_t>(ho.size()), b.P + 1);
  int64_t expected_pairs = 0;
  for (const BatchItem& it : items) expected_pairs += it.examples.size();
  EXPECT_EQ(b.P, expected_pairs);
  for (int64_t p = 0; p < b.P; ++p) {
    EXPECT_LT(ho[p], ho[p + 1]);
    EXPECT_LT(to[p], to[p + 1]);
    for (int32_t k = ho[p]; k < ho[p + 1]; ++k) {
      EXPECT_EQ(hr[k] / b.T, pd[p]);
      EXPECT_EQ(mask[hr[k]], 1.0f);
      EXPECT_GT(ner[hr[k]], 0);  // a mention token carries an entity tag
    }
    for (int32_t k = to[p]; k < to[p + 1]; ++k) {
      EXPECT_EQ(tr[k] / b.T, pd[p]);
      EXPECT_GT(ner[tr[k]], 0);
    }
    EXPECT_EQ(lab[p], s.labels[b.example_index[p]]);
    EXPECT_LE(b.distance[p], c.sizes.max_distance);
  }
}

TEST_F(SynthCorpus, SynthCdr) {
  data::generate_synth_cdr(dir, {3, 8});
  ReCorpusOptions o;
  o.source = "synth-cdr:" + dir;
  const ReCorpus c = ReCorpus::load(o);
  EXPECT_EQ(c.relation_names, (std::vector<std::string>{"NULL", "CID"}));
  EXPECT_EQ(c.train.documents.size(), 8u);
  for (const ReSplit* s : {&c.train, &c.valid, &c.test}) {
    EXPECT_EQ(s->positives.size() + s->negatives.size(), s->examples.size());
    for (int x : s->positives) EXPECT_NE(s->labels[x], 0);
    for (int x : s->negatives) EXPECT_EQ(s->labels[x], 0);
    std::size_t listed = 0;
    for (std::size_t d = 0; d < s->documents.size(); ++d)
      for (int x : s->document_examples[d]) {
        EXPECT_EQ(s->examples[x].doc, static_cast<int>(d));
        ++listed;
      }
    EXPECT_EQ(listed, s->examples.size());
    const auto batches = evaluation_batches(*s, 3);
    EXPECT_EQ(batches.size(), (s->documents.size() + 2) / 3);
    for (const auto& items : batches) check_batch(c, *s, make_batch(*s, items), items);
  }
  EXPECT_FALSE(c.train.positives.empty());
  EXPECT_FALSE(c.train.negatives.empty());
  PhiloxStream rng(1, kStreamData);
  for (int i = 0; i < 6; ++i) {
    const auto items = sample_re_batch(c.train, 4, rng);
    check_batch(c, c.train, make_batch(c.train, items), items);
  }
  // same files and options: the same bytes
  const ReCorpus again = ReCorpus::load(o);
  const auto items = evaluation_batches(c.valid, 4)[0];
  const ReBatch a = make_batch(c.valid, items), b = make_batch(again.valid, items);
  EXPECT_EQ(ints(a.words), ints(b.words));
  EXPECT_EQ(ints(a.ngrams), ints(b.ngrams));
  EXPECT_EQ(ints(a.head_rows), ints(b.head_rows));
  EXPECT_EQ(c.class_weights, again.class_weights);
}

TEST_F(SynthCorpus, SynthCtdAsBranTsv) {
  data::generate_synth_ctd(dir, {4, 8});
  ReCorpusOptions o;
  o.source = "bran-tsv:" + dir;
  const ReCorpus c = ReCorpus::load(o);
  ASSERT_EQ(c.relation_names.size(), 15u);
  EXPECT_EQ(c.relation_names[1], data::ctd_relation_classes()[0]);
  EXPECT_EQ(c.max_tokens, 500);  // the thesis's cut for CTD
  EXPECT_TRUE(c.weighted_by_default);
  double weighted = 0;
  for (int l : c.train.labels) weighted += c.class_weights[l];
  // Σ_c count_c · w_c = (classes present / C) · total
  std::set<int> present(c.train.labels.begin(), c.train.labels.end());
  EXPECT_NEAR(weighted, c.train.labels.size() * double(present.size()) / 15.0, 1e-3);
  const auto items = evaluation_batches(c.test, 4)[0];
  check_batch(c, c.test, make_batch(c.test, items), items);
}

TEST_F(SynthCorpus, SynthSemevalHoldOut) {
  data::generate_synth_semeval(dir, {5, 20});
  ReCorpusOptions o;
  // The root holds both subtasks: refused, naming both (it took subtask1.1 silently).
  o.source = "semeval:" + dir;
  try {
    ReCorpus::load(o);
    ADD_FAILURE() << "semeval:ROOT with two subtasks was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds subtask1.1 and subtask1.2; expected one of them: "
                                         "semeval:" +
                                         dir + "/subtask1.1"),
              std::string::npos)
        << e.what();
  }
  o.source = "semeval:" + dir + "/subtask1.1";
  const ReCorpus c = ReCorpus::load(o);
  EXPECT_EQ(c.relation_names, (std::vector<std::string>{"NULL", "USAGE", "MODEL-FEATURE", "RESULT",
                                                        "TOPIC", "PART_WHOLE", "COMPARE"}));
  EXPECT_EQ(c.valid.documents.size(), 3u);  // 15 % of 20
  EXPECT_EQ(c.train.documents.size(), 17u);
  EXPECT_TRUE(c.unordered);
  EXPECT_EQ(c.train.reverse.size(), c.train.examples.size());
  // a relation and its REVERSE form are one class by default
  bool any_reverse = false;
  for (std::size_t i = 0; i < c.train.examples.size(); ++i)
    any_reverse = any_reverse || (c.train.reverse[i] && c.train.labels[i] != 0);
  EXPECT_TRUE(any_reverse);
  // the hold-out follows the seed
  std::set<std::string> held;
  for (const auto& d : c.valid.documents) held.insert(d.id);
  const ReCorpus same = ReCorpus::load(o);
  std::set<std::string> held_same;
  for (const auto& d : same.valid.documents) held_same.insert(d.id);
  EXPECT_EQ(held, held_same);
  o.seed = 6;
  std::set<std::string> held_other;
  for (const auto& d : ReCorpus::load(o).valid.documents) held_other.insert(d.id);
  EXPECT_NE(held, held_other);
  // directed classes
  o.semeval_directed = true;
  const ReCorpus d = ReCorpus::load(o);
  ASSERT_EQ(d.relation_names.size(), 13u);
  EXPECT_EQ(d.relation_names[2], "USAGE-REVERSE");
  for (std::size_t i = 0; i < d.train.examples.size(); ++i)
    if (d.train.labels[i] != 0) {
      EXPECT_EQ(d.relation_names[d.train.labels[i]],
                d.train.examples[i].label + (d.train.reverse[i] ? "-REVERSE" : ""));
    }
  // the task's protocol: only the annotated pairs, no NULL examples
  o.semeval_directed = false;
  o.annotated_pairs_only = true;
  const ReCorpus given = ReCorpus::load(o);
  EXPECT_TRUE(given.test.negatives.empty());
  EXPECT_EQ(given.test.positives.size(), given.test.examples.size());
  EXPECT_EQ(given.test.examples.size(), c.test.positives.size());
  for (std::size_t i = 0; i < given.test.examples.size(); ++i) {
    EXPECT_NE(given.test.labels[i], 0);
    EXPECT_EQ(given.test.labels[i], c.test.labels[c.test.positives[i]]);
  }
  EXPECT_EQ(given.class_weights[0], 0.0f);  // NULL never occurs in train
  // the noisy subtask, read from its own folder
  o.source = "semeval:" + dir + "/subtask1.2";
  EXPECT_EQ(ReCorpus::load(o).directory, dir + "/subtask1.2");
  // a root with one subtask folder reads it
  fs::remove_all(dir + "/subtask1.2");
  o.source = "semeval:" + dir;
  EXPECT_EQ(ReCorpus::load(o).train.documents.size(), c.train.documents.size());
  const auto items = evaluation_batches(c.valid, 4)[0];
  check_batch(c, c.valid, make_batch(c.valid, items), items);
}

}  // namespace
}  // namespace mare
