// Building blocks shared by the synthetic corpus generators (synth_*.cpp).
//
// Rule: a generated document is built from sentences of pieces (words, punctuation,
// entity mentions); rendering joins pieces with single spaces (punctuation and
// glued pieces attach to the left) and records every mention's byte offsets, so the
// text and the annotations can never disagree. Every random draw comes from Rng.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "experiments/data/document.h"
#include "experiments/data/rng.h"
#include "experiments/data/word2vec.h"

namespace mare::data::synth {

struct Piece {
  std::string text;
  int entity = -1;    // local entity index for a mention, -1 for plain words
  bool glue = false;  // attach to the previous piece without a space
};
using Sentence = std::vector<Piece>;

// Splits "a b c" into word pieces; "." "," ";" ":" ")" attach to the left.
void words(Sentence& s, const std::string& text);
inline void mention(Sentence& s, int entity, const std::string& name) {
  s.push_back({name, entity, false});
}
inline void punct(Sentence& s, const std::string& p) {
  s.push_back({p, -1, true});
}

struct LocalEntity {
  std::string id;
  std::string type;
  std::string name;
};

// Renders sentences into doc.text (appending, separated by single spaces) and adds
// mentions and entities (entities in order of first mention, keyed by local index).
// local_to_doc maps local entity indices to document entity indices (filled here).
void render(Document& doc, const std::vector<Sentence>& sentences,
            const std::vector<LocalEntity>& entities, std::map<int, int>& local_to_doc);

// Approximate token count of a sentence (the tokenizer's count of its rendered text).
int token_count(const Sentence& s);

// Deals class labels in proportion to weights: total labels, each class at least once
// when total >= classes, rounding by largest remainder; then shuffled.
std::vector<int> class_plan(const std::vector<double>& weights, int total, Rng& rng);

// Small word2vec vectors for every token of the documents: words of one group (e.g.
// all triggers of a relation) share half of their direction, so the vectors carry
// some of the evidence, as pre-trained vectors would. Values keep 4 decimals.
Embeddings make_vectors(const std::vector<Document>& docs,
                        const std::map<std::string, std::string>& groups, int dim, Rng rng);

// Writes `emb` as out_dir/vectors.txt and out_dir/vectors.bin (word2vec text and
// binary); returns the two paths.
std::vector<std::string> write_vectors(const std::string& out_dir, const Embeddings& emb);

// Pronounceable names from syllables, unique within one generator run.
std::string syllable_name(Rng& rng, const std::vector<std::string>& heads,
                          const std::vector<std::string>& middles,
                          const std::vector<std::string>& tails);

}  // namespace mare::data::synth
