// Loaders and writers of the real formats on small hand-written files, round trips, the
// word2vec embedding matrix and example building.
//
// Rule: each input is written out here in full and every expected value is derived by
// hand from the format's definition.
#include <gtest/gtest.h>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/examples.h"
#include "experiments/data/inspect.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/data/vocab.h"
#include "experiments/data/word2vec.h"

namespace mare::data {
namespace {

// A CDR-style document: composite id, -1 id, a mention cutting a word, 2 relations.
const std::string kPubtator =
    "101|t|Naloxone reverses clonidine-induced hypotension\n"
    "101|a|Clonidine and naloxone: hypertensive and hypotensive crises.\n"
    "101\t0\t8\tNaloxone\tChemical\tD009270\n"
    "101\t18\t27\tclonidine\tChemical\tD003000\n"
    "101\t36\t47\thypotension\tDisease\tD007022\n"
    "101\t48\t57\tClonidine\tChemical\tD003000\n"
    "101\t72\t107\thypertensive and hypotensive crises\tDisease\tD006973|D007022\thypertensive "
    "crises|hypotensive crises\n"
    "101\t62\t70\tnaloxone\tChemical\t-1\n"
    "101\tCID\tD003000\tD007022\n"
    "101\tCID\tD003000\tD006973\n"
    "\n"
    "102|t|Ünïcode title\n"
    "102|a|Lithium toxicity.\n"
    "102\t14\t21\tLithium\tChemical\tD008094\n"
    "102\t22\t30\ttoxicity\tDisease\tD064420\n"
    "\n";

TEST(Pubtator, ParsesMentionsEntitiesAndRelations) {
  const auto docs = parse_pubtator(kPubtator, "mem.pubtator");
  ASSERT_EQ(docs.size(), 2u);
  const Document& d = docs[0];
  EXPECT_EQ(d.id, "101");
  EXPECT_EQ(d.text.substr(0, 8), "Naloxone");
  ASSERT_EQ(d.mentions.size(), 6u);
  ASSERT_EQ(d.entities.size(), 4u);  // D009270 D003000 D007022 D006973; "-1" makes none
  EXPECT_EQ(d.entities[d.find_entity("D003000")].mentions.size(), 2u);
  // composite mention belongs to two entities
  EXPECT_EQ(d.mentions[4].entities.size(), 2u);
  EXPECT_EQ(d.entities[d.find_entity("D007022")].mentions.size(), 2u);
  // -1 mention belongs to none
  EXPECT_TRUE(d.mentions[5].entities.empty());
  ASSERT_EQ(d.relations.size(), 2u);
  EXPECT_EQ(d.entities[d.relations[0].head].id, "D003000");
  EXPECT_EQ(d.entities[d.relations[0].tail].id, "D007022");
  // "clonidine-induced": the mention covers exactly the token "clonidine"
  const Span s = d.mentions[1].tokens;
  EXPECT_EQ(s.end - s.begin, 1);
  EXPECT_EQ(d.tokens[s.begin].text, "clonidine");
  // title and abstract are separate sentences
  EXPECT_EQ(d.tokens[d.sentences[1].begin].text, "Clonidine");
  // code point offsets: "Ünïcode title " is 14 code points but 16 bytes
  const Document& u = docs[1];
  EXPECT_EQ(u.mentions[0].text, "Lithium");
  EXPECT_EQ(u.mentions[0].char_begin, 16);
}

TEST(Inspect, CountsMentionsEntitiesRelationsAndDistances) {
  const auto docs = parse_pubtator(kPubtator, "mem.pubtator");
  const std::string r = describe_documents(docs, "title");
  // mentions: Chemical 4 + 1 (the "-1" naloxone counts as a mention), Disease 2 + 1
  for (const char* want :
       {"documents: 2\n", "    Chemical: 5\n", "    Disease: 3\n", "relations: 2 in 1 classes",
        "Chemical -> Disease : CID: 2\n", "candidate pairs (related type pairs): 5, NULL 3"})
    EXPECT_NE(r.find(want), std::string::npos) << want << "\n" << r;
}

TEST(Pubtator, RoundTripIsByteIdentical) {
  const auto docs = parse_pubtator(kPubtator, "mem.pubtator");
  EXPECT_EQ(write_pubtator(docs), kPubtator);
}

TEST(Pubtator, EntityDefinedByAnUnsortedLaterMentionIsFine) {
  const std::string s =
      "7|t|A B\n7|a|C\n7\tCID\tX\tY\n7\t0\t1\tA\tChemical\tX\n7\t4\t5\tC\tDisease\tY\n\n";
  const auto docs = parse_pubtator(s, "m");
  ASSERT_EQ(docs[0].relations.size(), 1u);
}

const std::string kSemevalXml =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<doc>\n"
    "<text id=\"H01-1001\">\n"
    "<title>Using <entity id=\"H01-1001.1\">parsers</entity> for &amp; <entity "
    "id=\"H01-1001.2\">translation</entity></title>\n"
    "<abstract>We compare <entity id=\"H01-1001.3\">statistical models</entity> to <entity "
    "id=\"H01-1001.4\">rules</entity>. The <entity id=\"H01-1001.5\">accuracy</entity> of the "
    "<entity id=\"H01-1001.6\">system</entity> is high.</abstract>\n"
    "</text>\n</doc>\n";
const std::string kSemevalRelations =
    "USAGE(H01-1001.1,H01-1001.2)\nCOMPARE(H01-1001.3,H01-1001.4)\n"
    "MODEL-FEATURE(H01-1001.5,H01-1001.6,REVERSE)\n";

TEST(Semeval, ParsesEntitiesAndRelationsWithDirection) {
  auto docs = parse_semeval_xml(kSemevalXml, "t.xml");
  parse_semeval_relations(docs, kSemevalRelations, "t.relations.txt");
  ASSERT_EQ(docs.size(), 1u);
  const Document& d = docs[0];
  EXPECT_EQ(d.id, "H01-1001");
  ASSERT_EQ(d.entities.size(), 6u);
  EXPECT_EQ(d.mentions[2].text, "statistical models");
  EXPECT_EQ(d.text.substr(d.mentions[2].char_begin, 18), "statistical models");
  EXPECT_NE(d.text.find("for & translation"), std::string::npos);
  ASSERT_EQ(d.relations.size(), 3u);
  EXPECT_EQ(d.relations[2].type, "MODEL-FEATURE");
  EXPECT_TRUE(d.relations[2].reverse);
  EXPECT_FALSE(d.relations[0].reverse);
  EXPECT_EQ(d.segments[1].name, "abstract");
  EXPECT_EQ(d.sentences.size(), 3u);  // title, two abstract sentences
}

TEST(Semeval, RoundTripIsByteIdentical) {
  auto docs = parse_semeval_xml(kSemevalXml, "t.xml");
  parse_semeval_relations(docs, kSemevalRelations, "t.relations.txt");
  EXPECT_EQ(write_semeval_xml(docs), kSemevalXml);
  EXPECT_EQ(write_semeval_relations(docs), kSemevalRelations);
}

TEST(Semeval, RelationsPathFollowsTheTaskNaming) {
  EXPECT_EQ(semeval_relations_path("d/1.1.text.xml"), "d/1.1.relations.txt");
  EXPECT_EQ(semeval_relations_path("train.xml"), "train.relations.txt");
}

const std::string kBran =
    "D1\tChemical\taspirin\t0:5\t1:6\tG1\tGene\tCOX 2\t3\t5\tdoc1\tchem_gene_decreases_activity\t"
    "aspirin blocks the COX 2 ; aspirin .\n"
    "D1\tChemical\taspirin\t0:5\t1:6\tC2\tDisease\tpain\t8\t9\tdoc1\tNull\t"
    "aspirin blocks the COX 2 ; aspirin . pain\n";

TEST(BranTsv, ParsesPairsAndRejectsADifferentTextForTheSameDocument) {
  EXPECT_THROW(parse_bran_tsv(kBran, "b.tsv"), DataError);
  const std::string ok =
      "D1\tChemical\taspirin\t0:5\t1:6\tG1\tGene\tCOX 2\t3\t5\tdoc1\tchem_gene_decreases_activity\t"
      "aspirin blocks the COX 2 ; aspirin . pain\n"
      "D1\tChemical\taspirin\t0:5\t1:6\tC2\tDisease\tpain\t8\t9\tdoc1\tNull\t"
      "aspirin blocks the COX 2 ; aspirin . pain\n";
  const auto docs = parse_bran_tsv(ok, "b.tsv");
  ASSERT_EQ(docs.size(), 1u);
  const Document& d = docs[0];
  EXPECT_EQ(d.tokens.size(), 9u);
  ASSERT_EQ(d.entities.size(), 3u);
  EXPECT_EQ(d.entities[0].mentions.size(), 2u);
  EXPECT_EQ(d.mentions[2].text, "COX 2");
  EXPECT_EQ(d.mentions[2].tokens, (Span{3, 5}));
  ASSERT_EQ(d.relations.size(), 1u);
  EXPECT_EQ(d.relations[0].type, "chem_gene_decreases_activity");
  EXPECT_EQ(d.pairs.size(), 2u);
  EXPECT_EQ(write_bran_tsv(docs), ok);
}

TEST(Word2vec, TextAndBinaryRoundTripAndAgree) {
  const std::string text = "3 2\nthe 0.5 -1.25\ncat 3 1e-05\nα 0.1 0.2\n";
  const Embeddings e = parse_word2vec_text(text, "v.txt");
  ASSERT_EQ(e.size(), 3);
  EXPECT_EQ(e.dim, 2);
  EXPECT_FLOAT_EQ(e.row(1)[1], 1e-5f);
  EXPECT_EQ(e.find("α"), 2);
  EXPECT_EQ(write_word2vec_text(e), text);
  const std::string bin = write_word2vec_binary(e);
  const Embeddings b = parse_word2vec_binary(bin, "v.bin");
  EXPECT_EQ(b.words, e.words);
  EXPECT_EQ(b.values, e.values);
  EXPECT_EQ(write_word2vec_binary(b), bin);
  // the C tool's trailing space is accepted
  EXPECT_EQ(parse_word2vec_text("1 2\nx 1 2 \n", "v.txt").values, (std::vector<float>{1, 2}));
}

TEST(Word2vec, SkipBadWordsDropsOnlyInvalidOrRepeatedWords) {
  const std::string text = "4 1\nthe 1\nth\xE9 2\nthe 3\ncat 4\n";
  EXPECT_THROW(parse_word2vec_text(text, "v.txt"), DataError);
  const Embeddings e = parse_word2vec_text(text, "v.txt", {true});
  EXPECT_EQ(e.words, (std::vector<std::string>{"the", "cat"}));
  EXPECT_EQ(e.values, (std::vector<float>{1, 4}));
  EXPECT_EQ(e.skipped_rows, 2);
  // the binary form of the same rows
  Embeddings raw;
  raw.dim = 1;
  const float v[4] = {1, 2, 3, 4};
  raw.words = {"the", "th\xE9", "the", "cat"};
  raw.values.assign(v, v + 4);
  const std::string bin = write_word2vec_binary(raw);
  EXPECT_THROW(parse_word2vec_binary(bin, "v.bin"), DataError);
  const Embeddings b = parse_word2vec_binary(bin, "v.bin", {true});
  EXPECT_EQ(b.words, e.words);
  EXPECT_EQ(b.skipped_rows, 2);
  // other errors stay errors
  EXPECT_THROW(parse_word2vec_text("2 1\nthe 1\n", "v.txt", {true}), DataError);
}

TEST(Word2vec, DimensionCheckNamesBothSizes) {
  const Embeddings e = parse_word2vec_text("1 2\nthe 1 2\n", "v.txt");
  EXPECT_NO_THROW(require_dimension(e, 2, "v.txt"));
  try {
    require_dimension(e, 300, "v.txt");
    FAIL();
  } catch (const DataError& err) {
    const std::string msg = err.what();
    EXPECT_EQ(msg.rfind("v.txt:1:1: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("dimension 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expects 300"), std::string::npos) << msg;
  }
}

TEST(Word2vec, EmbeddingMatrixAppliesTheOovPolicy) {
  const Embeddings e = parse_word2vec_text("2 2\nthe 1 2\ncat 3 4\n", "v.txt");
  const Vocabulary v = Vocabulary::from_counts({{"the", 3}, {"Cat", 2}, {"dog", 1}}, 1);
  // ids: <pad> <unk> the Cat dog
  EmbeddingMatrixReport rep;
  const auto z = embedding_matrix(e, v, OovPolicy::kZero, 1, 0.1f, &rep);
  ASSERT_EQ(z.size(), 10u);
  EXPECT_EQ(z[4], 1);
  EXPECT_EQ(z[6], 3);  // "Cat" found lowercased
  EXPECT_EQ(z[8], 0);
  EXPECT_EQ(rep.found, 1);
  EXPECT_EQ(rep.found_lowercase, 1);
  EXPECT_EQ(rep.missing, 2);  // <unk> and dog
  const auto r1 = embedding_matrix(e, v, OovPolicy::kRandom, 7);
  const auto r2 = embedding_matrix(e, v, OovPolicy::kRandom, 7);
  EXPECT_EQ(r1, r2);
  EXPECT_NE(r1[8], 0.0f);
  EXPECT_LE(std::abs(r1[8]), 0.1f);
  EXPECT_EQ(r1[0], 0.0f);  // padding stays zero
  EXPECT_THROW(embedding_matrix(e, v, OovPolicy::kError, 1), std::runtime_error);
}

TEST(Examples, PairsNullLabelsDistanceAndTruncation) {
  const auto docs = parse_pubtator(kPubtator, "mem.pubtator");
  ExampleOptions opt;
  opt.allowed = cdr_type_pairs();
  const ExampleSet all = build_examples({docs[0]}, opt);
  // chemicals: D009270, D003000; diseases: D007022, D006973 -> 4 pairs
  ASSERT_EQ(all.examples.size(), 4u);
  int positives = 0;
  for (const Example& ex : all.examples) {
    positives += ex.label != kNullLabel;
    if (docs[0].entities[ex.head].id == "D003000" && docs[0].entities[ex.tail].id == "D007022") {
      EXPECT_EQ(ex.label, "CID");
      // closest mentions: hypotension (token 5) and the abstract's Clonidine (token 6)
      EXPECT_EQ(ex.distance, 1);
    }
  }
  EXPECT_EQ(positives, 2);
  EXPECT_EQ(all.unmatched_relations, 0);
  opt.max_tokens = 6;  // keeps "Naloxone reverses clonidine - induced hypotension"
  const ExampleSet cut = build_examples({docs[0]}, opt);
  EXPECT_EQ(cut.truncated_documents, 1);
  // within the first 6 tokens: Naloxone, clonidine; hypotension is token 5 -> kept
  EXPECT_EQ(cut.examples.size(), 2u);
  EXPECT_EQ(cut.dropped_pairs, 2);
  EXPECT_EQ(cut.dropped_positives, 1);
}

TEST(Examples, UnorderedPairsCarryTheDirection) {
  auto docs = parse_semeval_xml(kSemevalXml, "t.xml");
  parse_semeval_relations(docs, kSemevalRelations, "t.relations.txt");
  ExampleOptions opt;
  opt.unordered = true;
  opt.same_sentence = true;
  const ExampleSet set = build_examples(docs, opt);
  // sentences: {1,2}, {3,4}, {5,6} -> 3 pairs
  ASSERT_EQ(set.examples.size(), 3u);
  EXPECT_EQ(set.examples[2].label, "MODEL-FEATURE");
  EXPECT_TRUE(set.examples[2].reverse);
}

}  // namespace
}  // namespace mare::data
