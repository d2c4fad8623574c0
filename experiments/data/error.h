// Errors and small text utilities shared by every loader in mare::data.
//
// Rule: a loader never crashes and never loads silently wrong data. Every problem
// is reported by throwing DataError whose message reads
//   "<file>:<line>:<column>: <what was expected, and what was found>"
// (line and column are 1-based; a 0 leaves that part out, e.g. binary files say
// "byte N" in the text instead). Helpers here never read past the input.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mare::data {

class DataError : public std::runtime_error {
 public:
  DataError(std::string file, std::size_t line, std::size_t column, const std::string& what);
  const std::string& file() const { return file_; }
  std::size_t line() const { return line_; }
  std::size_t column() const { return column_; }

 private:
  std::string file_;
  std::size_t line_;
  std::size_t column_;
};

// Throws DataError(file, line, column, what).
[[noreturn]] void fail(std::string_view file, std::size_t line, std::size_t column,
                       const std::string& what);

// Reads a whole file as bytes; throws DataError naming the file when it cannot.
std::string read_file(const std::string& path);
// Writes bytes to a file (creating parent folders); throws std::runtime_error on failure.
void write_file(const std::string& path, std::string_view bytes);

// Throws DataError at the line and column of the first byte that is not valid UTF-8
// (overlong forms, surrogates and code points past U+10FFFF are invalid too), or of the
// first invisible character that would otherwise become data: a control character other
// than tab, newline and carriage return (split_lines refuses '\r' by name), DEL, or
// U+FEFF (a byte-order mark, anywhere).
void check_utf8(std::string_view text, std::string_view file);
// Same check for one field; line/column locate its first byte in the file.
void check_utf8_field(std::string_view text, std::string_view file, std::size_t line,
                      std::size_t column);

// Number of code points in valid UTF-8 text (continuation bytes are not counted).
std::size_t utf8_length(std::string_view text);
// byte offset of each code point, plus text.size() at the end: size utf8_length + 1.
std::vector<std::size_t> utf8_offsets(std::string_view text);

// Splits on every occurrence of sep (no trimming; "a\t\tb" gives an empty middle field).
std::vector<std::string_view> split(std::string_view text, char sep);

// One line of a line-oriented file: its text (without '\n') and 1-based number.
struct Line {
  std::string_view text;
  std::size_t number = 0;
};
// Splits content into lines on '\n'. A '\r' anywhere is an error (the formats use '\n'
// only), and so is a last line without its '\n', at that line: the file was probably cut
// short, which is said before any parse trips over the cut line.
std::vector<Line> split_lines(std::string_view content, std::string_view file);

// Parses a base-10 integer in [min, max] that fills the whole field; otherwise
// throws "expected <what> (an integer in [min, max]), found '<field>'".
std::int64_t parse_int(std::string_view field, std::int64_t min, std::int64_t max,
                       std::string_view what, std::string_view file, std::size_t line,
                       std::size_t column);

// Shows a field in an error message: quoted, cut to 40 bytes, control bytes escaped.
std::string quote(std::string_view field);

}  // namespace mare::data
