// word2vec embeddings in text and binary form, and the embedding matrix for a vocabulary.
//
//   text:   "V D\n" then V lines "word v_1 ... v_D" (one space between fields; a
//           trailing space, as the original C tool writes, is accepted)
//   binary: "V D\n" then V records "word" ' ' D little-endian float32, each optionally
//           preceded by '\n' (the C tool writes one after every vector)
//
// Rule: the header must agree with the rows (V rows, D values each), every value is a
// finite number, words are non-empty UTF-8 without spaces and appear once. Writers
// print floats in shortest round-trip form, so loader → writer gives identical bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mare::data {

class Vocabulary;

struct Embeddings {
  int dim = 0;                     // D
  std::vector<std::string> words;  // (V)
  std::vector<float> values;       // (V, D) row-major
  std::unordered_map<std::string, int> index;

  int skipped_rows = 0;  // rows dropped under Word2vecOptions::skip_bad_words

  int size() const { return static_cast<int>(words.size()); }
  int find(const std::string& word) const;  // row index or -1
  const float* row(int i) const { return values.data() + static_cast<std::size_t>(i) * dim; }
  void add(const std::string& word, const float* vec);  // appends; no duplicate check
};

struct Word2vecOptions {
  // Large public files (e.g. GoogleNews) hold some words that are not valid UTF-8 or
  // that repeat. Off (default): such a row is an error. On: the row is skipped and
  // counted in Embeddings::skipped_rows (it still counts towards the header's V);
  // every other problem stays an error.
  bool skip_bad_words = false;
};

Embeddings parse_word2vec_text(std::string_view content, std::string_view file,
                               const Word2vecOptions& options = {});
Embeddings parse_word2vec_binary(std::string_view content, std::string_view file,
                                 const Word2vecOptions& options = {});
// Reads a file; binary when the name ends in ".bin", text otherwise.
Embeddings load_word2vec(const std::string& path, const Word2vecOptions& options = {});
bool is_word2vec_binary_path(const std::string& path);
std::string write_word2vec_text(const Embeddings& emb);
std::string write_word2vec_binary(const Embeddings& emb);

// Throws DataError naming the file when the vectors' dimension D is not the model's.
void require_dimension(const Embeddings& emb, int expected, std::string_view file);

// What a vocabulary word without a vector gets.
enum class OovPolicy {
  kZero,    // a zero row
  kRandom,  // uniform in [-scale, scale], from the seeded generator (same seed, same rows)
  kError,   // throw std::runtime_error naming the first missing word
};

struct EmbeddingMatrixReport {
  int found = 0;            // exact matches
  int found_lowercase = 0;  // matched after lowercasing (ASCII)
  int missing = 0;          // rows filled by the policy (the padding row excluded)
};

// Matrix (|vocab|, D) whose row i is the vector of vocab.word(i); the padding row is 0.
std::vector<float> embedding_matrix(const Embeddings& emb, const Vocabulary& vocab,
                                    OovPolicy policy, std::uint64_t seed, float scale = 0.1f,
                                    EmbeddingMatrixReport* report = nullptr);

}  // namespace mare::data
