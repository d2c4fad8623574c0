// Corpus statistics for `mare data inspect`: counts and distributions as plain text.
//
// Rule: the report is computed from the loaded documents only (what a model would see),
// and lists keys in sorted order so that the same input prints the same text.
#pragma once

#include <string>
#include <vector>

#include "experiments/data/document.h"
#include "experiments/data/word2vec.h"

namespace mare::data {

// Documents, sentences, tokens, mentions and entities per type, relations per class
// (head type -> tail type : label), document-length and pair-distance distributions
// (pairs of the type pairs that carry at least one relation; distance buckets
// 50/100/200/300/500 as in SPEC §6).
std::string describe_documents(const std::vector<Document>& docs, const std::string& title);
// Vocabulary size, dimension, vector norms.
std::string describe_embeddings(const Embeddings& emb, const std::string& title);

}  // namespace mare::data
