#include "reports/src/util.h"

#include <unistd.h>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "reports/src/inputs.h"

namespace mare::report {

namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      throw std::runtime_error(path.parent_path().string() + ": cannot create (" + ec.message() +
                               ")");
  }
  // The pid keeps two writers of the same file apart; the name starts with '.' so that a
  // walk of the output directory never takes a temporary for a result.
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp" +
                                             std::to_string(static_cast<long>(::getpid())));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot be written");
    out << content;
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      throw std::runtime_error(tmp.string() + ": write failed");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error(path.string() + ": cannot be written (" + ec.message() + ")");
  }
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable t;
  std::vector<std::string> row;
  std::string field;
  bool in_quotes = false, field_started = false, quoted = false;
  std::size_t line = 1, row_line = 1;
  auto end_field = [&] {
    row.push_back(field);
    field.clear();
    field_started = quoted = false;
  };
  auto end_row = [&] {
    end_field();
    const bool blank = row.size() == 1 && row[0].empty();
    const bool comment = t.header.empty() && !row.empty() && !row[0].empty() && row[0][0] == '#';
    if (!blank && !comment) {
      if (t.header.empty()) {
        t.header = row;
      } else {
        t.rows.push_back(row);
        t.lines.push_back(row_line);
      }
    }
    row.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      in_quotes = quoted = field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      continue;
    } else if (c == '\n') {
      end_row();
      ++line;
      row_line = line;
    } else {
      if (quoted)
        throw InputError(source + ":" + std::to_string(line) +
                         ": text after a closing quote (expected ',' or the line end)");
      field += c;
      field_started = true;
    }
  }
  if (in_quotes) throw InputError(source + ":" + std::to_string(row_line) + ": unterminated quote");
  if (field_started || !row.empty()) end_row();
  if (t.header.empty()) throw InputError(source + ": empty (expected a header row)");
  return t;
}

bool parse_double(const std::string& text, double& value) {
  if (text.empty()) return false;
  const char* b = text.data();
  const char* e = b + text.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, value);
  return ec == std::errc() && p == e && std::isfinite(value);
}

std::string format_shortest(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, p);
}

std::string format_sig(double x, int digits) {
  if (!std::isfinite(x)) return format_shortest(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string format_fixed(double x, int decimals) {
  if (!std::isfinite(x)) return format_shortest(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  std::string s = buf;
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.0"
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string tex_escape(const std::string& s) {
  static const std::pair<const char*, const char*> utf8[] = {
      {"\xC2\xB1", "$\\pm$"},          // ±
      {"\xC3\x97", "$\\times$"},       // ×
      {"\xE2\x88\x92", "$-$"},         // −
      {"\xE2\x89\x88", "$\\approx$"},  // ≈
      {"\xE2\x86\x92", "$\\to$"},      // →
      {"\xC2\xB5", "$\\mu$"},          // µ
      {"\xE2\x80\x93", "--"},          // –
      {"\xE2\x80\x94", "---"},         // —
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool done = false;
    for (const auto& [from, to] : utf8) {
      const std::size_t n = std::char_traits<char>::length(from);
      if (s.compare(i, n, from) == 0) {
        out += to;
        i += n - 1;
        done = true;
        break;
      }
    }
    if (done) continue;
    switch (const char c = s[i]) {
      case '&':
      case '%':
      case '$':
      case '#':
      case '_':
      case '{':
      case '}':
        out += '\\';
        out += c;
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      case '<':
        out += "\\textless{}";
        break;
      case '>':
        out += "\\textgreater{}";
        break;
      case '|':
        out += "\\textbar{}";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      const std::string_view x = std::string_view(a).substr(i, ie - i),
                             y = std::string_view(b).substr(j, je - j);
      const auto nx = x.substr(std::min(x.find_first_not_of('0'), x.size())),
                 ny = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (nx.size() != ny.size()) return nx.size() < ny.size();
      if (nx != ny) return nx < ny;
      if (x.size() != y.size()) return x.size() < y.size();  // "01" after "1"
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace mare::report
