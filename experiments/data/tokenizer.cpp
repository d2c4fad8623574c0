// Tokenizer, sentences, tags and n-grams (see tokenizer.h).
//
// Rule: tokens never overlap, never contain whitespace, and keep exact byte offsets.
#include "experiments/data/tokenizer.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace mare::data {

namespace {

enum class CharClass { kSpace, kLetter, kDigit, kPunct };

CharClass classify(unsigned char c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
    return CharClass::kSpace;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kDigit;
  return CharClass::kPunct;
}

bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::vector<int>& boundaries) {
  std::vector<int> cuts(boundaries);
  std::sort(cuts.begin(), cuts.end());
  std::vector<Token> tokens;
  std::size_t cut = 0;
  const int n = static_cast<int>(text.size());
  int i = 0;
  while (i < n) {
    const CharClass cls = classify(static_cast<unsigned char>(text[i]));
    if (cls == CharClass::kSpace) {
      ++i;
      continue;
    }
    int j = i + 1;
    if (cls == CharClass::kPunct) {
      // one character; never split a UTF-8 sequence (non-ASCII is a letter anyway)
    } else {
      while (j < n) {
        const auto c = static_cast<unsigned char>(text[j]);
        if (is_continuation(c) && cls == CharClass::kLetter) {
          ++j;
          continue;
        }
        if (classify(c) != cls) break;
        ++j;
      }
    }
    // Cut at forced boundaries strictly inside (i, j), never inside a UTF-8 sequence.
    while (cut < cuts.size() && cuts[cut] <= i) ++cut;
    int start = i;
    for (std::size_t k = cut; k < cuts.size() && cuts[k] < j; ++k) {
      const int b = cuts[k];
      if (b <= start || is_continuation(static_cast<unsigned char>(text[b]))) continue;
      tokens.push_back({std::string(text.substr(start, b - start)), start, b});
      start = b;
    }
    tokens.push_back({std::string(text.substr(start, j - start)), start, j});
    i = j;
  }
  return tokens;
}

std::vector<Span> split_sentences(std::string_view text, const std::vector<Token>& tokens,
                                  const std::vector<Span>& protected_chars,
                                  const std::vector<int>& forced_breaks) {
  std::vector<Span> sentences;
  const int n = static_cast<int>(tokens.size());
  if (n == 0) return sentences;
  std::set<int> breaks(forced_breaks.begin(), forced_breaks.end());
  auto is_protected = [&](int begin, int end) {
    for (const Span& p : protected_chars)
      if (begin >= p.begin && end <= p.end && !(begin == p.begin && end == p.end)) return true;
    return false;
  };
  int start = 0;
  for (int t = 0; t < n; ++t) {
    bool end_here = false;
    const Token& tok = tokens[t];
    if (t + 1 < n) {
      // a forced break between this token and the next one
      auto it = breaks.upper_bound(tok.end - 1);
      if (it != breaks.end() && *it <= tokens[t + 1].begin) end_here = true;
    }
    if (!end_here && (tok.text == "." || tok.text == "!" || tok.text == "?")) {
      const bool followed_by_space =
          tok.end >= static_cast<int>(text.size()) || classify(text[tok.end]) == CharClass::kSpace;
      if (followed_by_space && !is_protected(tok.begin, tok.end)) end_here = true;
    }
    if (end_here || t + 1 == n) {
      sentences.push_back({start, t + 1});
      start = t + 1;
    }
  }
  return sentences;
}

Span char_span_to_tokens(const std::vector<Token>& tokens, int char_begin, int char_end) {
  // first token ending after char_begin
  auto first = std::lower_bound(tokens.begin(), tokens.end(), char_begin,
                                [](const Token& t, int c) { return t.end <= c; });
  Span span{static_cast<int>(first - tokens.begin()), static_cast<int>(first - tokens.begin())};
  for (auto it = first; it != tokens.end() && it->begin < char_end; ++it) {
    if (it->begin < char_begin || it->end > char_end)
      throw std::invalid_argument("a mention edge falls inside the token '" + it->text + "'");
    span.end = static_cast<int>(it - tokens.begin()) + 1;
  }
  if (span.end == span.begin)
    throw std::invalid_argument("the character range [" + std::to_string(char_begin) + ", " +
                                std::to_string(char_end) + ") covers no token");
  return span;
}

std::vector<std::string> entity_tags(const Document& doc, TagScheme scheme, int* skipped) {
  std::vector<std::string> tags(doc.tokens.size(), "O");
  std::vector<int> order(doc.mentions.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Span& x = doc.mentions[a].tokens;
    const Span& y = doc.mentions[b].tokens;
    if (x.begin != y.begin) return x.begin < y.begin;
    return x.end > y.end;
  });
  std::vector<bool> used(doc.tokens.size(), false);
  int n_skipped = 0;
  for (int m : order) {
    const Mention& men = doc.mentions[m];
    const Span s = men.tokens;
    bool free = s.begin < s.end && s.end <= static_cast<int>(doc.tokens.size());
    for (int t = s.begin; free && t < s.end; ++t) free = !used[t];
    if (!free) {
      ++n_skipped;
      continue;
    }
    for (int t = s.begin; t < s.end; ++t) {
      used[t] = true;
      std::string prefix = t == s.begin ? "B-" : "I-";
      if (scheme == TagScheme::kBilou) {
        if (s.end - s.begin == 1) {
          prefix = "U-";
        } else if (t == s.end - 1) {
          prefix = "L-";
        }
      }
      tags[t] = prefix + men.type;
    }
  }
  if (skipped) *skipped = n_skipped;
  return tags;
}

std::vector<std::string> char_ngrams(std::string_view word, int n) {
  if (n <= 0) throw std::invalid_argument("char_ngrams: n must be positive");
  std::vector<std::string> chars{"<"};
  for (std::size_t i = 0; i < word.size();) {
    std::size_t j = i + 1;
    while (j < word.size() && is_continuation(static_cast<unsigned char>(word[j]))) ++j;
    chars.emplace_back(word.substr(i, j - i));
    i = j;
  }
  chars.emplace_back(">");
  std::vector<std::string> grams;
  const int len = static_cast<int>(chars.size());
  if (len <= n) {
    std::string all;
    for (const auto& c : chars) all += c;
    grams.push_back(all);
    return grams;
  }
  for (int i = 0; i + n <= len; ++i) {
    std::string g;
    for (int k = 0; k < n; ++k) g += chars[i + k];
    grams.push_back(g);
  }
  return grams;
}

}  // namespace mare::data
