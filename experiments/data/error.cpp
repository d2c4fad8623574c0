// Errors and small text utilities shared by every loader (see error.h).
//
// Rule: every check reports where (file, line, column) and what was expected.
#include "experiments/data/error.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mare::data {

namespace {

std::string location(const std::string& file, std::size_t line, std::size_t column) {
  std::string s = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    s.append(":").append(std::to_string(line));
    if (column > 0) s.append(":").append(std::to_string(column));
  }
  return s;
}

// Length of the valid UTF-8 sequence starting at text[i], or 0 when invalid.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

}  // namespace

DataError::DataError(std::string file, std::size_t line, std::size_t column,
                     const std::string& what)
    : std::runtime_error(location(file, line, column) + ": " + what),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

void fail(std::string_view file, std::size_t line, std::size_t column, const std::string& what) {
  throw DataError(std::string(file), line, column, what);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, 0, 0, "expected a file, found a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, 0, 0, "cannot open the file for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, 0, 0, "read error");
  return ss.str();
}

void write_file(const std::string& path, std::string_view bytes) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open the file for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(path + ": write error");
}

void check_utf8_field(std::string_view text, std::string_view file, std::size_t line,
                      std::size_t column) {
  std::size_t col = column;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[i]));
      fail(file, line, col, std::string("expected UTF-8 text, found the invalid byte ") + hex);
    }
    // Invisible characters would otherwise become data: a byte-order mark before an id
    // makes a phantom entity, a NUL or another control character hides inside a field.
    const auto b = static_cast<unsigned char>(text[i]);
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) {
      char cp[8];
      std::snprintf(cp, sizeof cp, "U+%04X", b);
      fail(file, line, col,
           std::string("expected text, found the invisible control character ") + cp +
               (b == 0 ? " (NUL)" : ""));
    }
    if (n == 3 && text.compare(i, 3, "\xEF\xBB\xBF") == 0)
      fail(file, line, col,
           "expected text, found the invisible character U+FEFF (a byte-order mark; save the "
           "file as UTF-8 without one)");
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += n;
  }
}

void check_utf8(std::string_view text, std::string_view file) {
  check_utf8_field(text, file, 1, 1);
}

std::size_t utf8_length(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<std::size_t> utf8_offsets(std::string_view text) {
  std::vector<std::size_t> out;
  out.reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) out.push_back(i);
  out.push_back(text.size());
  return out;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<Line> split_lines(std::string_view content, std::string_view file) {
  std::vector<Line> lines;
  std::size_t start = 0;
  std::size_t number = 1;
  while (start < content.size()) {
    std::size_t end = content.find('\n', start);
    const bool terminated = end != std::string_view::npos;
    if (!terminated) end = content.size();
    const std::string_view text = content.substr(start, end - start);
    const std::size_t cr = text.find('\r');
    if (cr != std::string_view::npos)
      fail(file, number, cr + 1,
           "expected '\\n' line endings, found a carriage return ('\\r'); convert the file "
           "to Unix line endings");
    if (!terminated)
      fail(file, number, text.size() + 1,
           "expected a newline at the end of the file (truncated file?)");
    lines.push_back({text, number});
    start = end + 1;
    ++number;
  }
  return lines;
}

std::int64_t parse_int(std::string_view field, std::int64_t min, std::int64_t max,
                       std::string_view what, std::string_view file, std::size_t line,
                       std::size_t column) {
  std::int64_t value = 0;
  const char* first = field.data();
  const char* last = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (field.empty() || ec != std::errc() || ptr != last || value < min || value > max ||
      (field.size() > 1 && field[0] == '0')) {
    fail(file, line, column,
         "expected " + std::string(what) + " (an integer in [" + std::to_string(min) + ", " +
             std::to_string(max) + "]), found " + quote(field));
  }
  return value;
}

std::string quote(std::string_view field) {
  std::string out = "'";
  const std::size_t limit = 40;
  for (std::size_t i = 0; i < field.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (field.size() > limit) out += "...";
  out += "'";
  return out;
}

}  // namespace mare::data
