// Example building (see examples.h).
//
// Rule: every annotated relation becomes an example or is counted as dropped/unmatched.
#include "experiments/data/examples.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>

namespace mare::data {

namespace {

bool allowed(const std::vector<TypePair>& pairs, const std::string& h, const std::string& t) {
  if (pairs.empty()) return true;
  for (const TypePair& p : pairs)
    if (p.head == h && p.tail == t) return true;
  return false;
}

}  // namespace

std::vector<TypePair> cdr_type_pairs() {
  return {{"Chemical", "Disease"}};
}
std::vector<TypePair> ctd_type_pairs() {
  return {{"Chemical", "Disease"}, {"Gene", "Disease"}, {"Chemical", "Gene"}};
}

ExampleSet build_examples(const std::vector<Document>& docs, const ExampleOptions& options) {
  ExampleSet set;
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const Document& doc = docs[d];
    const int limit = options.max_tokens > 0 ? options.max_tokens : INT_MAX;
    if (static_cast<int>(doc.tokens.size()) > limit) ++set.truncated_documents;
    // sentence of each token (for same_sentence)
    std::vector<int> sentence_of(doc.tokens.size(), 0);
    for (std::size_t s = 0; s < doc.sentences.size(); ++s)
      for (int t = doc.sentences[s].begin; t < doc.sentences[s].end; ++t) sentence_of[t] = s;
    // kept mentions per entity
    std::vector<std::vector<Span>> kept(doc.entities.size());
    for (std::size_t e = 0; e < doc.entities.size(); ++e)
      for (int m : doc.entities[e].mentions)
        if (doc.mentions[m].tokens.end <= limit) kept[e].push_back(doc.mentions[m].tokens);
    auto first_begin = [&](int e) {
      int b = INT_MAX;
      for (int m : doc.entities[e].mentions) b = std::min(b, doc.mentions[m].tokens.begin);
      return b;
    };
    std::vector<bool> used(doc.relations.size(), false);
    const int n = static_cast<int>(doc.entities.size());
    for (int h = 0; h < n; ++h) {
      for (int t = 0; t < n; ++t) {
        if (h == t) continue;
        const Entity& eh = doc.entities[h];
        const Entity& et = doc.entities[t];
        if (options.unordered) {
          const int bh = first_begin(h), bt = first_begin(t);
          if (bh > bt || (bh == bt && h > t)) continue;
          if (!allowed(options.allowed, eh.type, et.type) &&
              !allowed(options.allowed, et.type, eh.type))
            continue;
        } else if (!allowed(options.allowed, eh.type, et.type)) {
          continue;
        }
        std::vector<std::pair<std::string, bool>> labels;
        for (std::size_t r = 0; r < doc.relations.size(); ++r) {
          const Relation& rel = doc.relations[r];
          if (rel.head == h && rel.tail == t) {
            labels.emplace_back(rel.type, rel.reverse);
            used[r] = true;
          } else if (options.unordered && rel.head == t && rel.tail == h) {
            labels.emplace_back(rel.type, !rel.reverse);
            used[r] = true;
          }
        }
        if (kept[h].empty() || kept[t].empty()) {
          ++set.dropped_pairs;
          set.dropped_positives += static_cast<int>(labels.size());
          continue;
        }
        int distance = INT_MAX;
        bool same_sentence = false;
        for (const Span& a : kept[h])
          for (const Span& b : kept[t]) {
            distance = std::min(distance, std::abs(a.begin - b.begin));
            same_sentence = same_sentence || sentence_of[a.begin] == sentence_of[b.begin];
          }
        if (options.same_sentence && !same_sentence) {
          set.dropped_positives += static_cast<int>(labels.size());
          ++set.dropped_pairs;
          continue;
        }
        if (labels.empty()) labels.emplace_back(kNullLabel, false);
        for (const auto& [label, reverse] : labels)
          set.examples.push_back({static_cast<int>(d), h, t, label, reverse, distance});
      }
    }
    for (bool u : used) set.unmatched_relations += u ? 0 : 1;
  }
  return set;
}

ExampleSet listed_examples(const std::vector<Document>& docs, int max_tokens) {
  ExampleSet set;
  const int limit = max_tokens > 0 ? max_tokens : INT_MAX;
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const Document& doc = docs[d];
    if (static_cast<int>(doc.tokens.size()) > limit) ++set.truncated_documents;
    auto kept = [&](int e) {
      std::vector<Span> spans;
      for (int m : doc.entities[e].mentions)
        if (doc.mentions[m].tokens.end <= limit) spans.push_back(doc.mentions[m].tokens);
      return spans;
    };
    for (const Relation& r : doc.relations) {
      const std::vector<Span> h = kept(r.head), t = kept(r.tail);
      if (h.empty() || t.empty()) {
        ++set.dropped_pairs, ++set.dropped_positives;
        continue;
      }
      int distance = INT_MAX;
      for (const Span& a : h)
        for (const Span& b : t) distance = std::min(distance, std::abs(a.begin - b.begin));
      set.examples.push_back({static_cast<int>(d), r.head, r.tail, r.type, r.reverse, distance});
    }
  }
  return set;
}

int filter_hypernym_negatives(std::vector<Example>& examples, const std::vector<Document>& docs,
                              const MeshTree& tree, const std::string& positive) {
  // (document, head entity) -> the ids of its positive tails
  std::map<std::pair<int, int>, std::vector<std::string>> positives;
  for (const Example& e : examples)
    if (e.label == positive) positives[{e.doc, e.head}].push_back(docs[e.doc].entities[e.tail].id);
  const std::size_t before = examples.size();
  std::erase_if(examples, [&](const Example& e) {
    if (e.label != kNullLabel) return false;
    auto it = positives.find({e.doc, e.head});
    if (it == positives.end()) return false;
    const std::string& disease = docs[e.doc].entities[e.tail].id;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const std::string& d) { return tree.is_hypernym(disease, d); });
  });
  return static_cast<int>(before - examples.size());
}

}  // namespace mare::data
