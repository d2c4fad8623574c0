// Tokenizer, sentence splitting, BIO/BILOU tags, character n-grams and vocabularies.
//
// Rule: expected values are written out by hand from the rules in tokenizer.h.
#include <gtest/gtest.h>

#include "experiments/data/document.h"
#include "experiments/data/tokenizer.h"
#include "experiments/data/vocab.h"

namespace mare::data {
namespace {

std::vector<std::string> texts(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const Token& t : tokens) out.push_back(t.text);
  return out;
}

TEST(Tokenizer, SplitsLettersDigitsAndPunctuationWithOffsets) {
  const std::string s = "IL-6 rose 12.5%, (n=40).";
  const auto toks = tokenize(s);
  EXPECT_EQ(texts(toks), (std::vector<std::string>{"IL", "-", "6", "rose", "12", ".", "5", "%", ",",
                                                   "(", "n", "=", "40", ")", "."}));
  for (const Token& t : toks) EXPECT_EQ(s.substr(t.begin, t.end - t.begin), t.text);
  EXPECT_EQ(toks[3].begin, 5);
  EXPECT_EQ(toks[3].end, 9);
}

TEST(Tokenizer, NonAsciiLettersStayInOneToken) {
  const std::string s = "café α-helix";
  EXPECT_EQ(texts(tokenize(s)), (std::vector<std::string>{"café", "α", "-", "helix"}));
}

TEST(Tokenizer, BoundariesCutATokenInTwo) {
  // "NaClinduced": a mention "NaCl" ends inside the letter run.
  const std::string s = "NaClinduced toxicity";
  const auto toks = tokenize(s, {0, 4});
  EXPECT_EQ(texts(toks), (std::vector<std::string>{"NaCl", "induced", "toxicity"}));
  EXPECT_EQ(char_span_to_tokens(toks, 0, 4), (Span{0, 1}));
  EXPECT_THROW(char_span_to_tokens(tokenize(s), 0, 4), std::invalid_argument);
}

TEST(Tokenizer, MentionCuttingATokenIsKeptByAnnotateTokens) {
  Document doc;
  doc.id = "1";
  doc.text = "Cocaineinduced myocardial infarction.";
  doc.entities.push_back({"D1", "Chemical", {0}});
  doc.entities.push_back({"D2", "Disease", {1}});
  doc.mentions.push_back({0, 7, "Cocaine", "Chemical", {0}, {}, "", false, ""});
  doc.mentions.push_back({15, 36, "myocardial infarction", "Disease", {1}, {}, "", false, ""});
  annotate_tokens(doc);
  EXPECT_EQ(doc.mentions[0].tokens, (Span{0, 1}));
  EXPECT_EQ(doc.tokens[0].text, "Cocaine");
  EXPECT_EQ(doc.tokens[1].text, "induced");
  EXPECT_EQ(doc.mentions[1].tokens, (Span{2, 4}));
  const auto bio = entity_tags(doc, TagScheme::kBio);
  EXPECT_EQ(bio, (std::vector<std::string>{"B-Chemical", "O", "B-Disease", "I-Disease", "O"}));
  const auto bilou = entity_tags(doc, TagScheme::kBilou);
  EXPECT_EQ(bilou, (std::vector<std::string>{"U-Chemical", "O", "B-Disease", "L-Disease", "O"}));
}

TEST(Tokenizer, BilouInsideTagsAndOverlapSkipping) {
  Document doc;
  doc.text = "acute renal failure syndrome";
  doc.mentions.push_back({0, 28, doc.text, "Disease", {}, {}, "", false, ""});
  doc.mentions.push_back({6, 19, "renal failure", "Disease", {}, {}, "", false, ""});
  annotate_tokens(doc);
  int skipped = -1;
  const auto tags = entity_tags(doc, TagScheme::kBilou, &skipped);
  EXPECT_EQ(tags, (std::vector<std::string>{"B-Disease", "I-Disease", "I-Disease", "L-Disease"}));
  EXPECT_EQ(skipped, 1);
}

TEST(Sentences, SplitAtFinalPunctuationButNotInsideMentionsOrNumbers) {
  const std::string s = "Dose was 2.5 mg. It rose! Why? No";
  const auto toks = tokenize(s);
  const auto sents = split_sentences(s, toks);
  ASSERT_EQ(sents.size(), 4u);
  EXPECT_EQ(toks[sents[0].end - 1].text, ".");
  EXPECT_EQ(toks[sents[1].begin].text, "It");
  EXPECT_EQ(toks[sents[3].begin].text, "No");
  // a protected range (mention "St. John") keeps its period inside the sentence
  const std::string m = "St. John wort helps.";
  const auto mt = tokenize(m);
  EXPECT_EQ(split_sentences(m, mt, {{0, 8}}).size(), 1u);
  EXPECT_EQ(split_sentences(m, mt).size(), 2u);
}

TEST(Sentences, ForcedBreakAtSegmentStart) {
  Document doc;
  doc.text = "Title without period Abstract starts here.";
  doc.segments = {{"title", 0, 20}, {"abstract", 21, static_cast<int>(doc.text.size())}};
  annotate_tokens(doc);
  ASSERT_EQ(doc.sentences.size(), 2u);
  EXPECT_EQ(doc.sentences[0], (Span{0, 3}));
}

TEST(CharNgrams, SuperstarWithThree) {
  EXPECT_EQ(
      char_ngrams("superstar", 3),
      (std::vector<std::string>{"<su", "sup", "upe", "per", "ers", "rst", "sta", "tar", "ar>"}));
}

TEST(CharNgrams, ShortWordsAndUtf8) {
  EXPECT_EQ(char_ngrams("a", 3), (std::vector<std::string>{"<a>"}));
  EXPECT_EQ(char_ngrams("ab", 3), (std::vector<std::string>{"<ab", "ab>"}));
  EXPECT_EQ(char_ngrams("αβ", 2), (std::vector<std::string>{"<α", "αβ", "β>"}));
  EXPECT_THROW(char_ngrams("x", 0), std::invalid_argument);
}

TEST(Vocabulary, CutOffAndDeterministicOrder) {
  std::map<std::string, long> counts{{"the", 5}, {"b", 2}, {"a", 2}, {"rare", 1}};
  const Vocabulary v = Vocabulary::from_counts(counts, 2);
  ASSERT_EQ(v.size(), 5);
  EXPECT_EQ(v.word(0), "<pad>");
  EXPECT_EQ(v.word(1), "<unk>");
  EXPECT_EQ(v.word(2), "the");
  EXPECT_EQ(v.word(3), "a");
  EXPECT_EQ(v.word(4), "b");
  EXPECT_EQ(v.id("rare"), Vocabulary::kUnk);
  EXPECT_EQ(v.count(Vocabulary::kUnk), 1);
  const Vocabulary capped = Vocabulary::from_counts(counts, 1, 3);
  EXPECT_EQ(capped.size(), 3);
  EXPECT_EQ(capped.id("a"), Vocabulary::kUnk);
}

TEST(Vocabulary, BuiltFromDocumentsWithLowercasing) {
  Document d;
  d.text = "The the THE cat";
  annotate_tokens(d);
  const Vocabulary v = build_vocabulary({d}, {2, 0, true});
  EXPECT_EQ(v.size(), 3);
  EXPECT_EQ(v.id("the"), 2);
  EXPECT_EQ(v.id("cat"), Vocabulary::kUnk);
}

}  // namespace
}  // namespace mare::data
