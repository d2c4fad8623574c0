// Reading samples from text and CSV files (see io.h).
#include "stats/io.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

namespace mare::stats {
namespace {

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void fail(const std::string& source, std::size_t line, const std::string& what) {
  throw InputError(source + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

bool parse_number(const std::string& raw, double& value, std::string& why) {
  const std::string text = trim(raw);
  if (text.empty()) {
    why = "expected a number, got an empty value";
    return false;
  }
  const std::string l = lower(text);
  const std::string unsigned_l = (l[0] == '+' || l[0] == '-') ? l.substr(1) : l;
  if (unsigned_l == "nan" || l == "na" || l == "null" || l == "none") {
    why = "expected a finite number, got '" + text + "' (missing values are not allowed)";
    return false;
  }
  if (unsigned_l == "inf" || unsigned_l == "infinity") {
    why = "expected a finite number, got '" + text + "'";
    return false;
  }
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (*first == '+') ++first;  // from_chars does not take a leading '+'
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    why = "number '" + text + "' is out of the range of a double";
    return false;
  }
  if (ec != std::errc() || ptr != last || first == last) {
    why = "expected a number, got '" + text + "'";
    return false;
  }
  if (!std::isfinite(v)) {
    why = "expected a finite number, got '" + text + "'";
    return false;
  }
  value = v;
  return true;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  fields.push_back(cur);
  return fields;
}

Sample parse_sample(std::istream& in, const std::string& source, const std::string& column) {
  Sample sample;
  sample.source = source;
  std::vector<double>& out = sample.values;
  std::string line, why;
  std::size_t line_no = 0;
  std::size_t col = 0;
  bool have_header = column.empty();
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (!have_header) {
      const std::vector<std::string> names = split_csv_line(line);
      std::string listed;
      bool found = false;
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (trim(names[i]) == column && !found) {
          col = i;
          found = true;
        }
        listed += (i ? ", " : "") + trim(names[i]);
      }
      if (!found) {
        fail(source, line_no,
             "expected a CSV header with a column '" + column + "', got: " + listed);
      }
      have_header = true;
      continue;
    }
    double v = 0.0;
    if (column.empty()) {
      if (!parse_number(t, v, why)) {
        if (t.find(',') != std::string::npos) why += " (for CSV input give --column NAME)";
        fail(source, line_no, why);
      }
    } else {
      const std::vector<std::string> fields = split_csv_line(line);
      if (fields.size() <= col) {
        fail(source, line_no,
             "expected at least " + std::to_string(col + 1) + " fields (column '" + column +
                 "'), got " + std::to_string(fields.size()));
      }
      if (!parse_number(fields[col], v, why))
        fail(source, line_no, "column '" + column + "': " + why);
    }
    out.push_back(v);
    sample.lines.push_back(line_no);
  }
  if (in.bad()) throw InputError(source + ": read error");
  if (!have_header)
    throw InputError(source + ": expected a CSV header with a column '" + column +
                     "', got an empty file");
  if (out.empty())
    throw InputError(source + ":" + std::to_string(line_no + 1) +
                     ": expected at least one number, got none (empty input)");
  return sample;
}

std::vector<double> parse_numbers(std::istream& in, const std::string& source,
                                  const std::string& column) {
  return parse_sample(in, source, column).values;
}

Sample read_sample(const std::string& path, const std::string& column) {
  if (path == "-") return parse_sample(std::cin, "<stdin>", column);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": a directory; expected a file of numbers, one a line");
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open file for reading");
  return parse_sample(f, path, column);
}

std::vector<double> read_numbers(const std::string& path, const std::string& column) {
  return read_sample(path, column).values;
}

}  // namespace mare::stats
