// Vocabularies built from training documents with a frequency cut-off.
//
// Rule: id 0 is the padding token "<pad>", id 1 the unknown token "<unk>"; the other
// words are ordered by count (descending), ties by byte order, so the same documents
// always give the same ids. Words below min_count map to <unk>.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

class Vocabulary {
 public:
  static constexpr int kPad = 0;
  static constexpr int kUnk = 1;

  Vocabulary();
  // counts: word -> occurrences; keeps words with count >= min_count, at most max_size
  // words in all (0: no limit), specials included.
  static Vocabulary from_counts(const std::map<std::string, long>& counts, long min_count,
                                int max_size = 0);
  int id(const std::string& word) const;  // kUnk when absent
  bool contains(const std::string& word) const;
  const std::string& word(int id) const;
  int size() const { return static_cast<int>(words_.size()); }
  long count(int id) const { return counts_[id]; }

 private:
  std::vector<std::string> words_;
  std::vector<long> counts_;
  std::unordered_map<std::string, int> ids_;
};

struct VocabularyOptions {
  long min_count = 1;
  int max_size = 0;
  bool lowercase = false;  // ASCII lowercasing of tokens before counting
};

// Token vocabulary of documents (use the training split only).
Vocabulary build_vocabulary(const std::vector<Document>& docs, const VocabularyOptions& options);
// ASCII lowercasing (other bytes unchanged).
std::string ascii_lower(std::string s);

}  // namespace mare::data
