// Document helpers: tokenization of a loaded document and mention → token mapping.
//
// Rule: after annotate_tokens every mention covers whole tokens (tokens are split at
// mention edges), and sentences partition the tokens.
#include "experiments/data/document.h"

#include <stdexcept>

#include "experiments/data/tokenizer.h"

namespace mare::data {

int Document::find_entity(const std::string& entity_id) const {
  for (std::size_t i = 0; i < entities.size(); ++i)
    if (entities[i].id == entity_id) return static_cast<int>(i);
  return -1;
}

void annotate_tokens(Document& doc) {
  std::vector<int> boundaries;
  std::vector<Span> protected_chars;
  for (const Mention& m : doc.mentions) {
    boundaries.push_back(m.char_begin);
    boundaries.push_back(m.char_end);
    protected_chars.push_back({m.char_begin, m.char_end});
  }
  std::vector<int> breaks;
  for (const Segment& s : doc.segments) {
    boundaries.push_back(s.begin);
    boundaries.push_back(s.end);
    breaks.push_back(s.begin);
  }
  doc.tokens = tokenize(doc.text, boundaries);
  map_mentions_to_tokens(doc);
  doc.sentences = split_sentences(doc.text, doc.tokens, protected_chars, breaks);
}

void map_mentions_to_tokens(Document& doc) {
  for (Mention& m : doc.mentions) {
    try {
      m.tokens = char_span_to_tokens(doc.tokens, m.char_begin, m.char_end);
    } catch (const std::invalid_argument& e) {
      throw std::logic_error("document " + doc.id + ": mention '" + m.text + "': " + e.what());
    }
  }
}

}  // namespace mare::data
