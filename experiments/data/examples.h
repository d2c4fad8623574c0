// Relation examples: document-level entity pairs with a label, NULL when unannotated.
//
// Rule: for every ordered pair of distinct entities (h, t) whose types form an allowed
// pair, one example per annotated relation type of (h, t), or one NULL example when
// there is none. With `unordered` (SemEval), only pairs whose head's first mention
// precedes the tail's are built, a relation in either order matches, and `reverse`
// says the relation runs tail -> head. distance is the smallest |begin_h - begin_t| in
// tokens over all mention pairs (the quantity of the distance buckets, SPEC §6).
//
// Truncation policy (max_tokens > 0): a longer document keeps its first max_tokens
// tokens; mentions that do not end inside them are dropped; a pair with an entity left
// without mentions is dropped and counted (positives separately), never relabelled.
#pragma once

#include <string>
#include <vector>

#include "experiments/data/document.h"
#include "experiments/data/mesh.h"

namespace mare::data {

inline constexpr const char* kNullLabel = "NULL";

struct TypePair {
  std::string head;
  std::string tail;
};

struct ExampleOptions {
  std::vector<TypePair> allowed;  // empty: every pair of types
  int max_tokens = 0;             // 0: no limit
  bool unordered = false;
  bool same_sentence = false;  // only pairs with two mentions in one sentence
};

struct Example {
  int doc = 0;        // index into the documents
  int head = 0;       // entity index
  int tail = 0;       // entity index
  std::string label;  // relation type or kNullLabel
  bool reverse = false;
  int distance = 0;  // tokens between the closest mentions
};

struct ExampleSet {
  std::vector<Example> examples;
  int truncated_documents = 0;
  int dropped_pairs = 0;        // pairs lost to truncation
  int dropped_positives = 0;    // annotated relations among them
  int unmatched_relations = 0;  // annotated relations whose types are not an allowed pair
};

ExampleSet build_examples(const std::vector<Document>& docs, const ExampleOptions& options);

// The examples of a task that gives its pairs (SemEval 2018 Task 7 subtask 1): one per
// annotated relation, in document and file order, head = its first argument, tail = its
// second, with its type and direction flag; a pair left without mentions by max_tokens
// is dropped and counted as there.
ExampleSet listed_examples(const std::vector<Document>& docs, int max_tokens);

// BRAN's hypernym filter (filter_hypernyms.py) on CDR examples: drops each NULL example
// (c, d) whose disease d is a MeSH hypernym of the disease d' of an example (c, d')
// labelled `positive` in the same document; returns how many it dropped. Entities
// without tree numbers (supplementary concepts) are never dropped.
int filter_hypernym_negatives(std::vector<Example>& examples, const std::vector<Document>& docs,
                              const MeshTree& tree, const std::string& positive = "CID");

// The allowed pairs of the three corpora.
std::vector<TypePair> cdr_type_pairs();  // Chemical -> Disease
std::vector<TypePair> ctd_type_pairs();  // Chemical->Disease, Gene->Disease, Chemical->Gene

}  // namespace mare::data
