// The shipped real corpora (experiments/corpora/), read whole: BioCreative V CDR, SemEval
// 2018 Task 7 and the MeSH 2017 tree; their checksums; the official scorers on
// hand-worked files; SHA-256 on the FIPS 180-4 examples.
//
// Rule: every count below was taken from the files with other tools (awk, grep, Python's
// xml.etree), not from mare; each quirk of the release is checked on the line that has it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "experiments/data/error.h"
#include "experiments/data/examples.h"
#include "experiments/data/mesh.h"
#include "experiments/data/official_scores.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/releases.h"
#include "experiments/data/semeval.h"
#include "experiments/data/sha256.h"
#include "tests/temp_dir.h"

namespace mare::data {
namespace {

namespace fs = std::filesystem;

fs::path corpora() {
  return shipped_corpora_dir();
}

long relation_count(const std::vector<Document>& docs) {
  long n = 0;
  for (const Document& d : docs) n += static_cast<long>(d.relations.size());
  return n;
}

long mention_count(const std::vector<Document>& docs) {
  long n = 0;
  for (const Document& d : docs) n += static_cast<long>(d.mentions.size());
  return n;
}

const Document& document(const std::vector<Document>& docs, const std::string& id) {
  for (const Document& d : docs)
    if (d.id == id) return d;
  throw std::runtime_error("no document " + id);
}

const Entity& entity(const Document& d, const std::string& id) {
  const int e = d.find_entity(id);
  if (e < 0) throw std::runtime_error("no entity " + id + " in " + d.id);
  return d.entities[e];
}

// ---------------------------------------------------------------- SHA-256

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', fed in uneven pieces (the block buffer's edges).
  Sha256 h;
  const std::string piece(997, 'a');
  std::size_t left = 1000000;
  while (left > 0) {
    const std::size_t n = std::min(left, piece.size());
    h.update(std::string_view(piece).substr(0, n));
    left -= n;
  }
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// ---------------------------------------------------------------- releases

TEST(Releases, EveryShippedFileIsThePublishedOne) {
  for (const ReleaseFile& f : release_files())
    EXPECT_NO_THROW(read_release_file(corpora() / std::string(f.folder), f.name)) << f.name;
}

TEST(Releases, AChangedCopyIsRefusedNamingBothChecksums) {
  test::TempDir dir("release");
  std::string bytes = read_file((corpora() / "cdr" / "CDR_TestSet.PubTator.txt").string());
  bytes[100] = bytes[100] == 'a' ? 'b' : 'a';
  std::ofstream(dir / "CDR_TestSet.PubTator.txt", std::ios::binary) << bytes;
  try {
    read_release_file(dir.path(), "CDR_TestSet.PubTator.txt");
    FAIL() << "a changed copy was read";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CDR_TestSet.PubTator.txt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a3c48d5f35bdfce20c2371778abedc9fd24d1da092207072e5181ad53c8d0e2f"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(sha256_hex(bytes)), std::string::npos) << msg;
  }
  try {
    read_release_file(dir.path(), "CDR_TrainingSet.PubTator.txt");
    FAIL() << "a missing file was read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- CDR

TEST(RealCdr, EveryDocumentOfEverySplitLoads) {
  const ReleaseSplits r = load_cdr_release(corpora() / "cdr");
  // awk over the files: documents (|t| lines), mention lines, CID lines.
  EXPECT_EQ(r.train.size(), 500u);
  EXPECT_EQ(r.valid.size(), 500u);
  EXPECT_EQ(r.test.size(), 500u);
  EXPECT_EQ(mention_count(r.train), 9385);
  EXPECT_EQ(mention_count(r.valid), 9591);
  EXPECT_EQ(mention_count(r.test), 9809);
  // thesis Table 4.4's positives
  EXPECT_EQ(relation_count(r.train), 1038);
  EXPECT_EQ(relation_count(r.valid), 1012);
  EXPECT_EQ(relation_count(r.test), 1066);
  EXPECT_EQ(cid_triples(r.test).size(), 1066u);
}

TEST(RealCdr, LoaderThenWriterGivesTheFilesBackByteForByte) {
  for (const char* name : {"CDR_TrainingSet.PubTator.txt", "CDR_DevelopmentSet.PubTator.txt",
                           "CDR_TestSet.PubTator.txt"}) {
    std::string bytes = read_file((corpora() / "cdr" / name).string());
    const std::string written = write_pubtator(parse_pubtator(bytes, name));
    // The training file alone ends without the blank line after its last document.
    if (bytes.substr(bytes.size() - 2) != "\n\n") bytes += "\n";
    EXPECT_TRUE(written == bytes) << name;
  }
}

TEST(RealCdr, CompositeMentionsRepeatedIdsUnknownPartsAndTheSeventhColumn) {
  const ReleaseSplits r = load_cdr_release(corpora() / "cdr");
  // Training line 3165: D020258|D020258|D020258, one mention of one entity.
  const Document& a = document(r.train, "11587867");
  const Mention* m = nullptr;
  for (const Mention& x : a.mentions)
    if (x.text == "opistothonus, sensory and motor dysfunction") m = &x;
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->entities.size(), 1u);
  EXPECT_EQ(a.entities[m->entities[0]].id, "D020258");
  EXPECT_EQ(m->extra, "opistothonus dysfunction|sensory dysfunction|motor dysfunction");
  EXPECT_EQ(m->ids_as_written, "D020258|D020258|D020258");
  // Development line 5294: D002544|-1, a mention of D002544 alone.
  const Document& b = document(r.valid, "8638876");
  m = nullptr;
  for (const Mention& x : b.mentions)
    if (x.text == "cerebral artery and the venous sinus occlusion") m = &x;
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->entities.size(), 1u);
  EXPECT_EQ(b.entities[m->entities[0]].id, "D002544");
  // A composite of two concepts (development set): one mention of both entities.
  const Document& c = document(r.valid, "3115150");
  EXPECT_EQ(b.find_entity("-1"), -1);  // "-1" is never an entity
  const Entity& cardio = entity(c, "D002318");
  const Entity& resp = entity(c, "D012131");
  EXPECT_TRUE(std::find_first_of(cardio.mentions.begin(), cardio.mentions.end(),
                                 resp.mentions.begin(),
                                 resp.mentions.end()) != cardio.mentions.end());
}

TEST(RealCdr, HypernymFilterDropsWhatBranDrops) {
  const ReleaseSplits r = load_cdr_release(corpora() / "cdr");
  const MeshTree tree = MeshTree::parse(read_release_file(corpora() / "mesh", "2017MeshTree.txt"),
                                        "2017MeshTree.txt");
  ExampleOptions o;
  o.allowed = cdr_type_pairs();
  // Negatives before and after the filter; with BRAN's "-1" pairs (78 / 61 / 132, counted
  // separately) these give thesis Table 4.4's 4280 / 4136 / 4270.
  const std::vector<Document>* splits[] = {&r.train, &r.valid, &r.test};
  const long unfiltered[] = {4394, 4249, 4339}, dropped[] = {192, 174, 201};
  for (int k = 0; k < 3; ++k) {
    std::vector<Example> ex = build_examples(*splits[k], o).examples;
    const long nulls =
        std::count_if(ex.begin(), ex.end(), [](const Example& e) { return e.label == kNullLabel; });
    EXPECT_EQ(nulls, unfiltered[k]) << k;
    EXPECT_EQ(filter_hypernym_negatives(ex, *splits[k], tree), dropped[k]) << k;
    EXPECT_EQ(
        std::count_if(ex.begin(), ex.end(), [](const Example& e) { return e.label == "CID"; }),
        relation_count(*splits[k]));
  }
}

// ---------------------------------------------------------------- MeSH

TEST(Mesh, TreeNumbersAndHypernyms) {
  const MeshTree tree = MeshTree::parse(read_release_file(corpora() / "mesh", "2017MeshTree.txt"),
                                        "2017MeshTree.txt");
  EXPECT_EQ(tree.tree_number_count(), 57840u);
  EXPECT_EQ(tree.descriptors(), 28470u);
  // C10.228 Central Nervous System Diseases (D002493) above C10.228.140 Brain Diseases
  // (D001927), and not the other way round; nothing is its own hypernym.
  EXPECT_TRUE(tree.is_hypernym("D002493", "D001927"));
  EXPECT_FALSE(tree.is_hypernym("D001927", "D002493"));
  EXPECT_FALSE(tree.is_hypernym("D002493", "D002493"));
  EXPECT_FALSE(tree.is_hypernym("C000001", "D001927"));  // not in the tree
}

TEST(Mesh, APrefixThatIsNotAnAncestorIsNot) {
  const std::string file =
      "\xEF\xBB\xBFTree Number\tDesc Ui\tTerm\nC10.228\tD1\tA\nC10.2289\tD2\tB\nC10.228.1\tD3\tC\n";
  const MeshTree tree = MeshTree::parse(file, "t.txt");
  EXPECT_FALSE(tree.is_hypernym("D1", "D2"));
  EXPECT_TRUE(tree.is_hypernym("D1", "D3"));
  EXPECT_THROW(MeshTree::parse("Tree\tx\n", "t.txt"), DataError);
  EXPECT_THROW(MeshTree::parse("Tree Number\tDesc Ui\tTerm\nC10\tD1\n", "t.txt"), DataError);
}

// ---------------------------------------------------------------- SemEval 2018 Task 7

TEST(RealSemeval, EveryAbstractOfEveryFileLoads) {
  const fs::path dir = corpora() / "semeval2018-task7";
  // grep -c '<entity' and xml.etree: every entity of every file becomes one.
  const ReleaseSplits a = load_semeval2018_release(dir, "1.1");
  EXPECT_EQ(a.train.size() + a.valid.size(), 350u);
  EXPECT_EQ(a.valid.size(), 50u);  // training-eval.txt's 1.1 lines
  EXPECT_EQ(a.test.size(), 150u);
  EXPECT_EQ(mention_count(a.train) + mention_count(a.valid), 5259);
  EXPECT_EQ(mention_count(a.test), 2246);
  EXPECT_EQ(relation_count(a.train) + relation_count(a.valid), 1228);
  EXPECT_EQ(relation_count(a.test), 355);
  const ReleaseSplits b = load_semeval2018_release(dir, "1.2");
  EXPECT_EQ(b.train.size() + b.valid.size(), 350u);
  EXPECT_EQ(b.valid.size(), 49u);
  EXPECT_EQ(b.test.size(), 150u);
  EXPECT_EQ(mention_count(b.train) + mention_count(b.valid), 12125);
  EXPECT_EQ(mention_count(b.test), 4705);
  EXPECT_EQ(relation_count(b.train) + relation_count(b.valid), 1248);
  EXPECT_EQ(relation_count(b.test), 355);
  const std::vector<Document> two =
      parse_semeval_xml(read_release_file(dir, "2.test.text.xml"), "2.test.text.xml");
  EXPECT_EQ(two.size(), 152u);
  EXPECT_EQ(mention_count(two), 2699);
}

TEST(RealSemeval, NestedEntitiesSectionTitlesAndTextsWithoutAbstract) {
  const fs::path dir = corpora() / "semeval2018-task7";
  const ReleaseSplits b = load_semeval2018_release(dir, "1.2");
  std::vector<Document> all = b.train;
  all.insert(all.end(), b.valid.begin(), b.valid.end());
  // 1.2.text.xml line 672: <entity L08-1220.16>signal <entity
  // L08-1220.17>processing</entity></entity>
  const Document& d = document(all, "L08-1220");
  const Mention& outer = d.mentions[entity(d, "L08-1220.16").mentions[0]];
  const Mention& inner = d.mentions[entity(d, "L08-1220.17").mentions[0]];
  EXPECT_EQ(outer.text, "signal processing");
  EXPECT_EQ(inner.text, "processing");
  EXPECT_EQ(inner.char_end, outer.char_end);
  EXPECT_EQ(outer.tokens.end, inner.tokens.end);
  EXPECT_EQ(outer.tokens.end - outer.tokens.begin, 2);
  // Two texts of 1.2.text.xml have a title and no abstract.
  const Document& t = document(all, "A92-1035");
  EXPECT_EQ(t.segments[1].begin, t.segments[1].end);
  // 1.1.text.xml's one <SectionTitle> (empty) sits in J05-4003's abstract.
  const ReleaseSplits a = load_semeval2018_release(dir, "1.1");
  std::vector<Document> all11 = a.train;
  all11.insert(all11.end(), a.valid.begin(), a.valid.end());
  const Document& j = document(all11, "J05-4003");
  EXPECT_EQ(j.relations.size(), 3u);
  EXPECT_EQ(d.mentions[entity(d, "L08-1220.16").mentions[0]].entities.size(), 1u);
}

TEST(RealSemeval, WriterThenReaderKeepsEveryDocument) {
  const fs::path dir = corpora() / "semeval2018-task7";
  for (const char* name : {"1.1.text.xml", "1.2.text.xml", "1.1.test.text.xml", "1.2.test.text.xml",
                           "2.test.text.xml"}) {
    const std::vector<Document> docs = parse_semeval_xml(read_release_file(dir, name), name);
    const std::vector<Document> again = parse_semeval_xml(write_semeval_xml(docs), name);
    ASSERT_EQ(again.size(), docs.size()) << name;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      ASSERT_EQ(again[i].text, docs[i].text) << name << " " << docs[i].id;
      ASSERT_EQ(again[i].entities.size(), docs[i].entities.size()) << name << " " << docs[i].id;
      for (std::size_t e = 0; e < docs[i].entities.size(); ++e) {
        const Mention& x = docs[i].mentions[docs[i].entities[e].mentions[0]];
        const Mention& y = again[i].mentions[again[i].entities[e].mentions[0]];
        EXPECT_EQ(again[i].entities[e].id, docs[i].entities[e].id);
        EXPECT_EQ(y.char_begin, x.char_begin);
        EXPECT_EQ(y.char_end, x.char_end);
      }
    }
  }
}

TEST(RealSemeval, KeysMustLabelTheGivenPairs) {
  test::TempDir dir("semeval_keys");
  const fs::path src = corpora() / "semeval2018-task7";
  for (const ReleaseFile& f : release_files())
    if (f.folder == "semeval2018-task7")
      fs::copy_file(src / std::string(f.name), dir / std::string(f.name));
  // A copy is checked like the shipped one ...
  EXPECT_NO_THROW(load_semeval2018_release(dir.path(), "1.1"));
  // ... and a changed key file is refused before its pairs are compared.
  std::ofstream(dir / "keys.test.1.1.txt", std::ios::app) << "USAGE(C08-1105.2,C08-1105.3)\n";
  EXPECT_THROW(load_semeval2018_release(dir.path(), "1.1"), DataError);
  EXPECT_THROW(load_semeval2018_release(dir.path(), "2"), std::invalid_argument);
}

// ---------------------------------------------------------------- official scores

// Two documents; gold CID: (1, C1, D1), (1, C1, D2), (2, C2, D3).
std::vector<Document> cdr_gold() {
  const std::string f =
      "1|t|C1 gives D1\n1|a|and D2.\n"
      "1\t0\t2\tC1\tChemical\tC1\n1\t9\t11\tD1\tDisease\tD1\n1\t16\t18\tD2\tDisease\tD2\n"
      "1\tCID\tC1\tD1\n1\tCID\tC1\tD2\n\n"
      "2|t|C2 gives D3\n2|a|x.\n"
      "2\t0\t2\tC2\tChemical\tC2\n2\t9\t11\tD3\tDisease\tD3\n2\tCID\tC2\tD3\n\n";
  return parse_pubtator(f, "gold.pubtator");
}

TEST(OfficialScores, CdrCountsDocumentLevelTriples) {
  const std::vector<Document> gold = cdr_gold();
  // Predicted: (1, C1, D1) and (2, C2, D3), both right; (1, C1, D2) missed: P 1, R 2/3,
  // F1 0.8.
  Prf s = score_cdr(gold, {{"1", "C1", "D1"}, {"2", "C2", "D3"}});
  EXPECT_EQ(s.gold, 3);
  EXPECT_EQ(s.correct, 2);
  EXPECT_DOUBLE_EQ(s.precision(), 1.0);
  EXPECT_DOUBLE_EQ(s.recall(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(s.f1(), 0.8);
  // One right, one wrong (D2 from C1 in document 2 is no gold triple): P 1/2, R 1/3,
  // F1 = 2 (1/6) / (5/6) = 0.4.
  s = score_cdr(gold, {{"1", "C1", "D1"}, {"2", "C1", "D2"}});
  EXPECT_DOUBLE_EQ(s.f1(), 0.4);
  EXPECT_THROW(score_cdr(gold, {{"9", "C1", "D1"}}), std::invalid_argument);
  // The prediction file is PubTator: read back, it gives the same triples.
  const std::set<CidTriple> p{{"1", "C1", "D2"}};
  const std::vector<Document> back =
      parse_pubtator(write_cdr_predictions(gold, p), "pred.pubtator");
  EXPECT_EQ(cid_triples(back), p);
}

std::vector<SemevalPairLine> lines(const std::string& text, const std::string& file) {
  return parse_semeval_pair_lines(text, file, LabelRule::required, SemevalOptions{}.relation_types);
}

TEST(OfficialScores, SemevalMacroF1OverTheSixTypes) {
  // Keys: four pairs. Predictions: a right USAGE, a right TOPIC, USAGE with the wrong
  // direction (wrong), COMPARE for a RESULT pair (wrong).
  const auto keys = lines(
      "USAGE(A.1,A.2)\nUSAGE(A.3,A.4,REVERSE)\nTOPIC(B.1,B.2)\nRESULT(B.3,B.4)\n", "keys.txt");
  const auto pred =
      lines("USAGE(A.1,A.2)\nUSAGE(A.3,A.4)\nTOPIC(B.1,B.2)\nCOMPARE(B.3,B.4)\n", "pred.txt");
  const SemevalScore s = score_semeval2018(keys, pred, "keys.txt", "pred.txt");
  // USAGE: keyed 2, predicted 2, correct 1 -> P 1/2, R 1/2. TOPIC: 1, 1, 1 -> P 1, R 1.
  // RESULT: keyed 1, predicted 0 -> P 0, R 0. COMPARE is predicted but keyed nowhere: it
  // is not averaged. Macro P = (1/2 + 1 + 0) / 3 = 1/2, macro R = 1/2, F1 = 1/2.
  EXPECT_EQ(s.correct, 2);
  EXPECT_EQ(s.wrong_direction, 1);
  EXPECT_EQ(s.averaged_labels, 3);
  EXPECT_DOUBLE_EQ(s.per_label.at("USAGE").f1(), 0.5);
  EXPECT_DOUBLE_EQ(s.per_label.at("TOPIC").f1(), 1.0);
  EXPECT_DOUBLE_EQ(s.macro_precision, 0.5);
  EXPECT_DOUBLE_EQ(s.macro_recall, 0.5);
  EXPECT_DOUBLE_EQ(s.macro_f1, 0.5);
  // Every pair USAGE: USAGE P 2/4, R 1; TOPIC and RESULT 0, 0. Macro P 1/6, R 1/3:
  // F1 = 2 (1/18) / (1/2) = 2/9.
  const auto all_usage =
      lines("USAGE(A.1,A.2)\nUSAGE(A.3,A.4,REVERSE)\nUSAGE(B.1,B.2)\nUSAGE(B.3,B.4)\n", "u.txt");
  EXPECT_DOUBLE_EQ(score_semeval2018(keys, all_usage, "k", "u").macro_f1, 2.0 / 9);
  // Where the two readings of "macro F1" part: keys USAGE, USAGE, TOPIC; predicted USAGE
  // (right), TOPIC for the second USAGE pair (wrong), TOPIC (right). USAGE P 1, R 1/2;
  // TOPIC P 1/2, R 1: each type's F1 is 2/3 (their mean 2/3), but macro P = macro R =
  // 3/4, and the official F1 is 3/4.
  const auto k3 = lines("USAGE(A.1,A.2)\nUSAGE(A.3,A.4,REVERSE)\nTOPIC(B.1,B.2)\n", "k3.txt");
  const auto p3 = lines("USAGE(A.1,A.2)\nTOPIC(A.3,A.4,REVERSE)\nTOPIC(B.1,B.2)\n", "p3.txt");
  EXPECT_DOUBLE_EQ(score_semeval2018(k3, p3, "k3", "p3").macro_f1, 0.75);
  // Both directions of one pair are two predictions (the scorer's ids differ); the
  // reverse one matches no key.
  const SemevalScore both =
      score_semeval2018(keys, lines("USAGE(A.1,A.2)\nUSAGE(A.1,A.2,REVERSE)\n", "b.txt"), "k", "b");
  EXPECT_EQ(both.per_label.at("USAGE").predicted, 2);
  EXPECT_EQ(both.correct, 1);
  // A pair predicted twice is refused with its line.
  try {
    score_semeval2018(keys, lines("USAGE(A.1,A.2)\nTOPIC(A.1,A.2)\n", "dup.txt"), "k", "dup.txt");
    FAIL() << "a pair predicted twice was scored";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("dup.txt:2:", 0), 0u) << e.what();
  }
}

TEST(OfficialScores, EveryTestPairUsageScoresWhatTheReleaseNotesSay) {
  // The corpus notes: labelling every 1.1 test pair USAGE scores 11.01.
  const fs::path dir = corpora() / "semeval2018-task7";
  const auto keys = lines(read_release_file(dir, "keys.test.1.1.txt"), "keys.test.1.1.txt");
  std::vector<SemevalPairLine> usage = keys;
  for (SemevalPairLine& p : usage) p.label = "USAGE";
  const SemevalScore s = score_semeval2018(keys, usage, "keys", "usage");
  EXPECT_NEAR(s.macro_f1 * 100, 11.01, 0.005);
  EXPECT_EQ(write_semeval_predictions(keys), read_release_file(dir, "keys.test.1.1.txt"));
}

}  // namespace
}  // namespace mare::data
