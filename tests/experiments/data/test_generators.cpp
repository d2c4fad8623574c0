// Generators: same seed → same bytes, generated files → loader → writer → same bytes,
// class frequencies and distances as documented, and the oracles on hand-made text.
//
// Rule: properties are checked against the documented rules (generators.h, synth_*.cpp);
// no expected value is copied from a generator's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/examples.h"
#include "experiments/data/generators.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/data/word2vec.h"

namespace mare::data {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  // one folder per test process and name: ctest may run test processes in parallel
  const fs::path p =
      fs::temp_directory_path() / ("mare_test_data_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

std::map<std::string, std::string> read_all(const GenerateReport& r, const std::string& root) {
  std::map<std::string, std::string> out;
  for (const std::string& f : r.files) out[fs::relative(f, root).string()] = read_file(f);
  return out;
}

class EachGenerator : public ::testing::TestWithParam<std::string> {};

TEST_P(EachGenerator, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string a = temp_dir(GetParam() + "_a"), b = temp_dir(GetParam() + "_b"),
                    c = temp_dir(GetParam() + "_c");
  const auto ra = generate_corpus(GetParam(), a, {11, 12});
  const auto rb = generate_corpus(GetParam(), b, {11, 12});
  const auto rc = generate_corpus(GetParam(), c, {12, 12});
  const auto fa = read_all(ra, a), fb = read_all(rb, b), fc = read_all(rc, c);
  ASSERT_GE(fa.size(), 5u);
  EXPECT_EQ(fa, fb);
  for (const auto& [name, bytes] : fa) {
    EXPECT_FALSE(bytes.empty()) << name;
    if (name.find("vectors") == std::string::npos) {
      EXPECT_NE(bytes, fc.at(name)) << name;
    }
  }
  for (const std::string& d : {a, b, c}) fs::remove_all(d);
}

TEST_P(EachGenerator, FilesRoundTripThroughLoaderAndWriter) {
  const std::string dir = temp_dir(GetParam() + "_rt");
  const auto r = generate_corpus(GetParam(), dir, {5, 10});
  int checked = 0;
  for (const std::string& f : r.files) {
    const std::string bytes = read_file(f);
    if (f.ends_with(".pubtator")) {
      EXPECT_EQ(write_pubtator(load_pubtator(f)), bytes) << f;
    } else if (f.ends_with(".tsv")) {
      EXPECT_EQ(write_bran_tsv(load_bran_tsv(f)), bytes) << f;
    } else if (f.ends_with(".text.xml")) {
      const auto docs = load_semeval(f, semeval_relations_path(f));
      EXPECT_EQ(write_semeval_xml(docs), bytes) << f;
      EXPECT_EQ(write_semeval_relations(docs), read_file(semeval_relations_path(f))) << f;
    } else if (f.ends_with(".bin")) {
      EXPECT_EQ(write_word2vec_binary(load_word2vec(f)), bytes) << f;
    } else if (f.ends_with("vectors.txt")) {
      EXPECT_EQ(write_word2vec_text(load_word2vec(f)), bytes) << f;
    } else {
      continue;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5);
  fs::remove_all(dir);
}

TEST_P(EachGenerator, OracleIsGoodButNotPerfectOnTest) {
  const std::string dir = temp_dir(GetParam() + "_or");
  const auto r = generate_corpus(GetParam(), dir, {3, 60});
  int tests = 0;
  for (const auto& [split, s] : r.oracle) {
    if (!split.ends_with("test")) continue;
    ++tests;
    EXPECT_GT(s.gold, 30) << split;
    // the evidence is readable (oracle well above chance) but label noise keeps it < 1
    EXPECT_GT(s.f1(), 0.75) << split;
    EXPECT_LT(s.f1(), 1.0) << split;
  }
  EXPECT_GE(tests, 1);
  fs::remove_all(dir);
}

// generator.json names the generator in the corpus folder and in every folder a loader
// reads as a corpus (synth-semeval's subtasks), with the oracle's F1 of the splits there.
TEST_P(EachGenerator, MarkerNamesTheGeneratorWhereALoaderLooks) {
  const std::string dir = temp_dir(GetParam() + "_mk");
  const auto r = generate_corpus(GetParam(), dir, {3, 6});
  std::vector<std::string> folders = {dir};
  if (GetParam() == "synth-semeval")
    folders = {(fs::path(dir) / "subtask1.1").string(), (fs::path(dir) / "subtask1.2").string()};
  for (const std::string& f : folders) {
    EXPECT_EQ(generator_of(f), GetParam()) << f;
    const auto marker = nlohmann::json::parse(read_file((fs::path(f) / kGeneratorFile).string()));
    const std::string prefix =
        f == dir ? "" : fs::path(f).filename().string() + "/";  // the report's split label
    EXPECT_DOUBLE_EQ(marker["oracle_f1"]["test"].get<double>(), r.oracle.at(prefix + "test").f1())
        << f;
  }
  fs::remove_all(dir);
}

// --docs is the number of training documents; synth-ctd and synth-semeval write
// max(10, docs/4) to validate and as many to test (experiments/data/README.md).
TEST(Generators, CtdAndSemevalSplitSizesFollowDocs) {
  for (const int docs : {20, 60}) {
    const size_t held = static_cast<size_t>(std::max(10, docs / 4));
    const std::string ctd = temp_dir("ctd_split" + std::to_string(docs));
    generate_corpus("synth-ctd", ctd, {1, docs});
    EXPECT_EQ(load_bran_tsv(ctd + "/train.tsv").size(), static_cast<size_t>(docs));
    for (const char* split : {"valid", "test"})
      EXPECT_EQ(load_bran_tsv(ctd + "/" + split + ".tsv").size(), held) << split << ", " << docs;
    const std::string sem = temp_dir("sem_split" + std::to_string(docs));
    generate_corpus("synth-semeval", sem, {1, docs});
    for (const char* split : {"train", "valid", "test"}) {
      const std::string base = sem + "/subtask1.1/" + split;
      EXPECT_EQ(load_semeval(base + ".text.xml", base + ".relations.txt").size(),
                std::string(split) == "train" ? static_cast<size_t>(docs) : held)
          << split << ", " << docs;
    }
    fs::remove_all(ctd);
    fs::remove_all(sem);
  }
}

TEST(Generators, AFolderWithoutAMarkerIsNoGeneratorsAndABadOneIsAnError) {
  const std::string dir = temp_dir("marker");
  fs::create_directories(dir);
  EXPECT_EQ(generator_of(dir), "");
  const std::string path = (fs::path(dir) / kGeneratorFile).string();
  for (const char* bad : {"{", "[]", "{\"generator\": \"synth-foo\"}"}) {
    write_file(path, bad);
    try {
      generator_of(dir);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Data, EachGenerator,
                         ::testing::Values("synth-cdr", "synth-ctd", "synth-semeval"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(Generators, UnknownNameIsRejected) {
  EXPECT_THROW(generate_corpus("synth-foo", temp_dir("foo"), {}), std::invalid_argument);
}

TEST(SynthCtd, FourteenClassesInTableOrderAndDistancesUpTo500) {
  const std::string dir = temp_dir("ctd_classes");
  generate_corpus("synth-ctd", dir, {1, 200});
  const auto docs = load_bran_tsv((fs::path(dir) / "train.tsv").string());
  std::map<std::string, int> counts;
  std::map<std::string, int> types;
  for (const Document& d : docs) {
    for (const Relation& rel : d.relations) ++counts[rel.type];
    for (const Entity& e : d.entities) ++types[e.type];
  }
  EXPECT_EQ(counts.size(), 14u);
  EXPECT_EQ(types.size(), 7u);
  // Table 4.9: chemical-disease marker/mechanism is the largest class, then therapeutic,
  // then chemical-gene increase_expression; gene-disease therapeutic is among the rarest.
  for (const std::string& c : ctd_relation_classes()) EXPECT_TRUE(counts.count(c)) << c;
  const int cd_mm = counts["chem_disease_marker/mechanism"];
  const int cd_th = counts["chem_disease_therapeutic"];
  const int cg_ie = counts["chem_gene_increases_expression"];
  const int gd_th = counts["gene_disease_therapeutic"];
  EXPECT_GT(cd_mm, cd_th);
  EXPECT_GT(cd_th, cg_ie);
  EXPECT_GT(cg_ie, gd_th);
  ExampleOptions opt;
  opt.allowed = ctd_type_pairs();
  const ExampleSet set = build_examples(docs, opt);
  int longest = 0, over_200 = 0;
  for (const Example& e : set.examples)
    if (e.label != kNullLabel) {
      longest = std::max(longest, e.distance);
      over_200 += e.distance > 200;
    }
  EXPECT_LE(longest, 500);
  EXPECT_GT(over_200, 0);  // the long tail exists
  fs::remove_all(dir);
}

TEST(SynthSemeval, DirectionFlagsAndBothSubtasks) {
  const std::string dir = temp_dir("sem");
  const auto r = generate_corpus("synth-semeval", dir, {2, 40});
  EXPECT_TRUE(r.oracle.count("subtask1.1/test"));
  EXPECT_TRUE(r.oracle.count("subtask1.2/test"));
  // noisy entity boundaries make the noisy subtask harder for the same reader
  EXPECT_LT(r.oracle.at("subtask1.2/test").f1(), r.oracle.at("subtask1.1/test").f1());
  const std::string xml = (fs::path(dir) / "subtask1.1" / "train.text.xml").string();
  const auto docs = load_semeval(xml, semeval_relations_path(xml));
  int reverse = 0, forward = 0, compare_reverse = 0;
  std::map<std::string, int> classes;
  for (const Document& d : docs)
    for (const Relation& rel : d.relations) {
      (rel.reverse ? reverse : forward) += 1;
      compare_reverse += rel.type == "COMPARE" && rel.reverse;
      ++classes[rel.type];
    }
  EXPECT_EQ(classes.size(), 6u);
  EXPECT_GT(reverse, 0);
  EXPECT_GT(forward, 0);
  EXPECT_EQ(compare_reverse, 0);
  fs::remove_all(dir);
}

TEST(SynthCdr, DistantSupervisionLabelsDifferFromGold) {
  const std::string dir = temp_dir("cdr_ds");
  const auto r = generate_corpus("synth-cdr", dir, {4, 30});
  // the oracle reads the text; distant labels include unstated pairs, so recall drops
  EXPECT_LT(r.oracle.at("train_ds").recall(), r.oracle.at("train").recall());
  fs::remove_all(dir);
}

// Oracles on hand-written documents: the evidence rules of the generators' headers.
TEST(Oracles, CdrReadsTriggersNegationAndTheNextSentence) {
  const std::string text =
      "1|t|Title\n"
      "1|a|alpha induced beta. gamma never caused delta. 5 patients received gamma. "
      "Subsequently, 2 of them developed beta.\n";
  // offsets: title "Title " (6) then abstract
  auto off = [&](const std::string& s, int nth = 0) {
    const std::string full =
        "Title alpha induced beta. gamma never caused delta. 5 patients "
        "received gamma. Subsequently, 2 of them developed beta.";
    std::size_t p = full.find(s);
    for (int k = 0; k < nth; ++k) p = full.find(s, p + 1);
    return std::to_string(p) + "\t" + std::to_string(p + s.size());
  };
  const std::string file =
      text + "1\t" + off("alpha") + "\talpha\tChemical\tA\n" + "1\t" + off("beta") +
      "\tbeta\tDisease\tB\n" + "1\t" + off("gamma") + "\tgamma\tChemical\tG\n" + "1\t" +
      off("delta") + "\tdelta\tDisease\tD\n" + "1\t" + off("gamma", 1) + "\tgamma\tChemical\tG\n" +
      "1\t" + off("beta", 1) + "\tbeta\tDisease\tB\n\n";
  const auto docs = parse_pubtator(file, "oracle.pubtator");
  const auto rels = cdr_oracle(docs[0]);
  std::set<std::pair<std::string, std::string>> got;
  for (const Relation& r : rels)
    got.insert({docs[0].entities[r.head].id, docs[0].entities[r.tail].id});
  EXPECT_EQ(got, (std::set<std::pair<std::string, std::string>>{{"A", "B"}, {"G", "B"}}));
}

TEST(Oracles, SemevalReadsPhraseAndDirection) {
  const std::string xml =
      "<doc><text id=\"X\"><title>t</title><abstract><entity id=\"X.1\">parser</entity> based on "
      "<entity id=\"X.2\">grammar</entity> and <entity id=\"X.3\">lexicon</entity>. <entity "
      "id=\"X.4\">model</entity> is not used for <entity id=\"X.5\">translation</entity>."
      "</abstract></text></doc>";
  const auto docs = parse_semeval_xml(xml, "o.xml");
  const auto rels = semeval_oracle(docs[0]);
  ASSERT_EQ(rels.size(), 1u);
  EXPECT_EQ(rels[0].type, "USAGE");
  EXPECT_TRUE(rels[0].reverse);
  EXPECT_EQ(docs[0].entities[rels[0].head].id, "X.1");
}

TEST(Oracles, CtdReadsPhrasesAnaphorAndIgnoresNegation) {
  // tokens: Effects of aspirin on pain . The compound significantly increases the expression of
  // CYP 1 . aspirin does not increase the activity of CYP 1 .
  const std::string text =
      "Effects of aspirin on pain . The compound significantly increases the expression of CYP 1 "
      ". aspirin does not increase the activity of CYP 1 .";
  const std::string line_a = "C1\tChemical\taspirin\t2:16\t3:17\tG1\tGene\tCYP 1\t13\t15\td\t";
  const std::string tsv =
      line_a + "chem_gene_increases_expression\t" + text + "\n" +
      "C1\tChemical\taspirin\t2:16\t3:17\tP1\tDisease\tpain\t4\t5\td\tNull\t" + text + "\n" +
      "C1\tChemical\taspirin\t2:16\t3:17\tG2\tGene\tCYP 1\t23\t25\td\tNull\t" + text + "\n";
  // G2 follows a negated phrase: no relation
  const auto docs = parse_bran_tsv(tsv, "o.tsv");
  const auto rels = ctd_oracle(docs[0]);
  ASSERT_EQ(rels.size(), 1u);
  EXPECT_EQ(rels[0].type, "chem_gene_increases_expression");
  EXPECT_EQ(docs[0].entities[rels[0].head].id, "C1");
  EXPECT_EQ(docs[0].entities[rels[0].tail].id, "G1");
}

}  // namespace
}  // namespace mare::data
