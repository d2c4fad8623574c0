// Tokenizer, sentence splitter, BIO/BILOU tags and character n-grams (SPEC §4.3, §5).
//
// Rule: a token is a maximal run of letters (ASCII letters and every non-ASCII code
// point), a maximal run of ASCII digits, or one punctuation/symbol character;
// whitespace separates and is never part of a token. Offsets are byte offsets into
// the input. Extra split points ("boundaries") cut a token in two, so that a mention
// whose edge falls inside a word ("NaCl-induced" with the mention "NaCl") still
// covers whole tokens: the mention is never dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

// Tokens of text; every offset in boundaries (sorted or not) becomes a token edge.
std::vector<Token> tokenize(std::string_view text, const std::vector<int>& boundaries = {});

// Sentence spans over tokens: a sentence ends after a token ".", "!" or "?" that is
// followed by whitespace (or the end), unless that token lies inside a protected
// character range (a mention); it also ends at every forced break offset (segment
// starts). Every token belongs to exactly one sentence.
std::vector<Span> split_sentences(std::string_view text, const std::vector<Token>& tokens,
                                  const std::vector<Span>& protected_chars = {},
                                  const std::vector<int>& forced_breaks = {});

// Token span [b, e) of the tokens that lie inside [char_begin, char_end); throws
// std::invalid_argument if an edge falls inside a token or no token is covered.
Span char_span_to_tokens(const std::vector<Token>& tokens, int char_begin, int char_end);

enum class TagScheme { kBio, kBilou };
// One tag per token ("O", "B-Chemical", "I-Chemical", BILOU adds "L-" and "U-").
// Overlapping mentions: mentions are taken by start, longer first; a mention that
// overlaps an already tagged token is skipped (counted in *skipped when given).
std::vector<std::string> entity_tags(const Document& doc, TagScheme scheme, int* skipped = nullptr);

// Character n-grams of a word padded with '<' and '>' (code points, not bytes):
// char_ngrams("superstar", 3) = {"<su","sup","upe","per","ers","rst","sta","tar","ar>"}.
// A padded word shorter than n gives itself as the only gram.
std::vector<std::string> char_ngrams(std::string_view word, int n);

}  // namespace mare::data
