// Vocabularies (see vocab.h).
//
// Rule: deterministic ids: count descending, then byte order.
#include "experiments/data/vocab.h"

#include <algorithm>
#include <stdexcept>

namespace mare::data {

Vocabulary::Vocabulary() {
  words_ = {"<pad>", "<unk>"};
  counts_ = {0, 0};
  ids_ = {{"<pad>", kPad}, {"<unk>", kUnk}};
}

Vocabulary Vocabulary::from_counts(const std::map<std::string, long>& counts, long min_count,
                                   int max_size) {
  std::vector<std::pair<std::string, long>> kept;
  for (const auto& [w, c] : counts)
    if (c >= min_count && w != "<pad>" && w != "<unk>") kept.emplace_back(w, c);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  Vocabulary v;
  long unk = 0;
  for (const auto& [w, c] : counts)
    if (c < min_count) unk += c;
  for (const auto& [w, c] : kept) {
    if (max_size > 0 && v.size() >= max_size) {
      unk += c;
      continue;
    }
    v.ids_[w] = v.size();
    v.words_.push_back(w);
    v.counts_.push_back(c);
  }
  v.counts_[kUnk] = unk;
  return v;
}

int Vocabulary::id(const std::string& word) const {
  auto it = ids_.find(word);
  return it == ids_.end() ? kUnk : it->second;
}

bool Vocabulary::contains(const std::string& word) const {
  return ids_.count(word) > 0;
}

const std::string& Vocabulary::word(int id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range("Vocabulary::word: id " + std::to_string(id) + " not in [0, " +
                            std::to_string(size()) + ")");
  return words_[id];
}

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

Vocabulary build_vocabulary(const std::vector<Document>& docs, const VocabularyOptions& options) {
  std::map<std::string, long> counts;
  for (const Document& d : docs)
    for (const Token& t : d.tokens) ++counts[options.lowercase ? ascii_lower(t.text) : t.text];
  return Vocabulary::from_counts(counts, options.min_count, options.max_size);
}

}  // namespace mare::data
