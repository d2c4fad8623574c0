// word2vec reader and writer (see word2vec.h).
//
// Rule: nothing is allocated from the header alone beyond what the file can hold, so a
// lying header cannot exhaust memory; every row is checked against the header.
#include "experiments/data/word2vec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "experiments/data/error.h"
#include "experiments/data/rng.h"
#include "experiments/data/vocab.h"

namespace mare::data {

namespace {

constexpr std::int64_t kMaxDim = 100'000;
constexpr std::int64_t kMaxRows = 100'000'000;

// Parses the header line "V D"; returns the offset just past its '\n'.
std::size_t parse_header(std::string_view content, std::string_view file, std::int64_t* rows,
                         std::int64_t* dim) {
  if (content.empty()) fail(file, 0, 0, "expected a word2vec file, found an empty file");
  const std::size_t nl = content.find('\n');
  if (nl == std::string_view::npos)
    fail(file, 1, 1, "expected a header line 'V D' ending in a newline (truncated file?)");
  const std::string_view header = content.substr(0, nl);
  const std::vector<std::string_view> f = split(header, ' ');
  if (f.size() != 2)
    fail(file, 1, 1,
         "expected a header 'V D' (vocabulary size and dimension, one space apart), found " +
             quote(header));
  *rows = parse_int(f[0], 1, kMaxRows, "the vocabulary size V", file, 1, 1);
  *dim = parse_int(f[1], 1, kMaxDim, "the dimension D", file, 1, f[0].size() + 2);
  return nl + 1;
}

// Returns false when the row is to be skipped (only with skip_bad_words).
bool check_word(std::string_view word, std::string_view file, std::size_t line, std::size_t column,
                const Embeddings& emb, const std::string& where, bool skip_bad_words) {
  if (word.empty()) fail(file, line, column, "expected a word at the start of " + where);
  for (char c : word)
    if (c == '\t' || c == '\n' || c == '\r' || c == ' ')
      fail(file, line, column, "expected a word without whitespace in " + where);
  if (skip_bad_words) {
    try {
      check_utf8_field(word, file, line, column);
    } catch (const DataError&) {
      return false;
    }
    return emb.index.count(std::string(word)) == 0;
  }
  check_utf8_field(word, file, line, column);
  if (emb.index.count(std::string(word)))
    fail(file, line, column,
         "the word " + quote(word) + " appears twice (" + where + ", first as row " +
             std::to_string(emb.index.at(std::string(word)) + 1) + ")");
  return true;
}

}  // namespace

int Embeddings::find(const std::string& word) const {
  auto it = index.find(word);
  return it == index.end() ? -1 : it->second;
}

void Embeddings::add(const std::string& word, const float* vec) {
  index.emplace(word, size());
  words.push_back(word);
  values.insert(values.end(), vec, vec + dim);
}

Embeddings parse_word2vec_text(std::string_view content, std::string_view file,
                               const Word2vecOptions& options) {
  std::int64_t rows = 0, dim = 0;
  std::size_t pos = parse_header(content, file, &rows, &dim);
  if (!options.skip_bad_words) check_utf8(content, file);
  Embeddings emb;
  emb.dim = static_cast<int>(dim);
  // each row needs at least a word and D values of one byte, each after a space
  emb.values.reserve(std::min<std::size_t>(rows, content.size() / (2 * dim + 2)) * dim);
  std::vector<float> vec(static_cast<std::size_t>(dim));
  std::size_t line = 2;
  for (std::int64_t r = 0; r < rows; ++r, ++line) {
    if (pos >= content.size())
      fail(file, line, 1,
           "the header says " + std::to_string(rows) + " rows but the file ends after " +
               std::to_string(r) + " (truncated file?)");
    std::size_t nl = content.find('\n', pos);
    if (nl == std::string_view::npos)
      fail(file, line, content.size() - pos + 1,
           "expected a newline at the end of row " + std::to_string(r + 1) + " (truncated file?)");
    std::string_view text = content.substr(pos, nl - pos);
    if (text.find('\r') != std::string_view::npos)
      fail(file, line, text.find('\r') + 1, "expected '\\n' line endings, found '\\r'");
    if (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    const std::vector<std::string_view> f = split(text, ' ');
    const std::string where = "row " + std::to_string(r + 1);
    const bool keep = check_word(f[0], file, line, 1, emb, where, options.skip_bad_words);
    if (static_cast<std::int64_t>(f.size()) - 1 != dim)
      fail(file, line, 1,
           "expected " + std::to_string(dim) + " values after the word (the header's D), found " +
               std::to_string(f.size() - 1));
    std::size_t col = f[0].size() + 2;
    for (std::int64_t k = 0; k < dim; ++k) {
      const std::string_view v = f[k + 1];
      float x = 0;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || !std::isfinite(x))
        fail(file, line, col, "expected a finite number, found " + quote(v));
      vec[k] = x;
      col += v.size() + 1;
    }
    if (keep) {
      emb.add(std::string(f[0]), vec.data());
    } else {
      ++emb.skipped_rows;
    }
    pos = nl + 1;
  }
  if (pos < content.size())
    fail(file, line, 1, "the header says " + std::to_string(rows) + " rows but more lines follow");
  return emb;
}

Embeddings parse_word2vec_binary(std::string_view content, std::string_view file,
                                 const Word2vecOptions& options) {
  std::int64_t rows = 0, dim = 0;
  std::size_t pos = parse_header(content, file, &rows, &dim);
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * 4;
  // Each record needs at least a 1-byte word, a space and D floats.
  if (static_cast<std::uint64_t>(rows) * (row_bytes + 2) > content.size() - pos)
    fail(file, 0, 0,
         "the header says " + std::to_string(rows) + " rows of " + std::to_string(dim) +
             " floats, more than the " + std::to_string(content.size() - pos) +
             " bytes after the header can hold (truncated file?)");
  Embeddings emb;
  emb.dim = static_cast<int>(dim);
  emb.values.reserve(static_cast<std::size_t>(rows) * dim);  // bounded by the check above
  std::vector<float> vec(static_cast<std::size_t>(dim));
  for (std::int64_t r = 0; r < rows; ++r) {
    if (pos < content.size() && content[pos] == '\n') ++pos;
    const std::size_t space = content.find(' ', pos);
    const std::string where = "row " + std::to_string(r + 1) + " at byte " + std::to_string(pos);
    if (space == std::string_view::npos)
      fail(file, 0, 0,
           where +
               ": expected a word followed by a space, found the end of the file "
               "(truncated file, or the header's V is larger than the rows)");
    const std::string_view word = content.substr(pos, space - pos);
    if (word.size() > 1000)
      fail(file, 0, 0, where + ": expected a word of at most 1000 bytes followed by a space");
    const bool keep = check_word(word, file, 0, 0, emb, where, options.skip_bad_words);
    pos = space + 1;
    if (content.size() - pos < row_bytes)
      fail(file, 0, 0,
           where + ": expected " + std::to_string(dim) + " float32 values for " + quote(word) +
               ", found only " + std::to_string(content.size() - pos) + " bytes (truncated file?)");
    for (std::int64_t k = 0; k < dim; ++k) {
      unsigned char b[4];
      std::memcpy(b, content.data() + pos + 4 * k, 4);
      const std::uint32_t u = std::uint32_t{b[0]} | (std::uint32_t{b[1]} << 8) |
                              (std::uint32_t{b[2]} << 16) | (std::uint32_t{b[3]} << 24);
      float x;
      std::memcpy(&x, &u, 4);
      if (!std::isfinite(x))
        fail(file, 0, 0,
             where + ": value " + std::to_string(k + 1) + " of " + quote(word) +
                 " is not a finite number");
      vec[k] = x;
    }
    pos += row_bytes;
    if (keep) {
      emb.add(std::string(word), vec.data());
    } else {
      ++emb.skipped_rows;
    }
  }
  if (pos < content.size() && content[pos] == '\n') ++pos;
  if (pos != content.size())
    fail(file, 0, 0,
         "the header says " + std::to_string(rows) + " rows but " +
             std::to_string(content.size() - pos) + " more bytes follow at byte " +
             std::to_string(pos));
  return emb;
}

bool is_word2vec_binary_path(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
}

Embeddings load_word2vec(const std::string& path, const Word2vecOptions& options) {
  const std::string content = read_file(path);
  return is_word2vec_binary_path(path) ? parse_word2vec_binary(content, path, options)
                                       : parse_word2vec_text(content, path, options);
}

std::string write_word2vec_text(const Embeddings& emb) {
  std::string out = std::to_string(emb.size()) + " " + std::to_string(emb.dim) + "\n";
  char buf[64];
  for (int i = 0; i < emb.size(); ++i) {
    out += emb.words[i];
    const float* row = emb.row(i);
    for (int k = 0; k < emb.dim; ++k) {
      const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, row[k]);
      out += ' ';
      out.append(buf, ptr);
    }
    out += '\n';
  }
  return out;
}

std::string write_word2vec_binary(const Embeddings& emb) {
  std::string out = std::to_string(emb.size()) + " " + std::to_string(emb.dim) + "\n";
  for (int i = 0; i < emb.size(); ++i) {
    out += emb.words[i];
    out += ' ';
    const float* row = emb.row(i);
    for (int k = 0; k < emb.dim; ++k) {
      std::uint32_t u;
      std::memcpy(&u, &row[k], 4);
      for (int b = 0; b < 4; ++b) out += static_cast<char>((u >> (8 * b)) & 0xFF);
    }
    out += '\n';
  }
  return out;
}

void require_dimension(const Embeddings& emb, int expected, std::string_view file) {
  if (emb.dim != expected)
    fail(file, 1, 1,
         "the vectors have dimension " + std::to_string(emb.dim) +
             " (header D) but the model "
             "expects " +
             std::to_string(expected) +
             "; use vectors of that size or set the "
             "model's embedding size to " +
             std::to_string(emb.dim));
}

std::vector<float> embedding_matrix(const Embeddings& emb, const Vocabulary& vocab,
                                    OovPolicy policy, std::uint64_t seed, float scale,
                                    EmbeddingMatrixReport* report) {
  const std::size_t d = static_cast<std::size_t>(emb.dim);
  std::vector<float> m(static_cast<std::size_t>(vocab.size()) * d, 0.0f);
  EmbeddingMatrixReport rep;
  Rng rng(seed);
  for (int i = 0; i < vocab.size(); ++i) {
    if (i == Vocabulary::kPad) continue;
    const std::string& w = vocab.word(i);
    int row = emb.find(w);
    if (row >= 0) {
      ++rep.found;
    } else if ((row = emb.find(ascii_lower(w))) >= 0) {
      ++rep.found_lowercase;
    }
    float* out = m.data() + static_cast<std::size_t>(i) * d;
    if (row >= 0) {
      std::memcpy(out, emb.row(row), d * sizeof(float));
      continue;
    }
    ++rep.missing;
    if (policy == OovPolicy::kError)
      throw std::runtime_error("word2vec: no vector for the vocabulary word '" + w +
                               "' (OOV policy 'error')");
    if (policy == OovPolicy::kRandom)
      for (std::size_t k = 0; k < d; ++k)
        out[k] = static_cast<float>((2.0 * rng.uniform() - 1.0) * scale);
  }
  if (report) *report = rep;
  return m;
}

}  // namespace mare::data
