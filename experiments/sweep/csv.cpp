#include "experiments/sweep/csv.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace mare::sweep {

std::string csv_field(const std::string& text) {
  const bool needs = text.find_first_of(",\"\n\r") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!needs) return text;
  std::string q = "\"";
  for (char c : text) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string csv_record(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  return line + "\n";
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

int CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable t;
  t.source = source;
  std::size_t i = 0, line = 1;
  const std::size_t n = text.size();
  auto fail = [&](std::size_t at, const std::string& what) {
    throw CsvError(source + ":" + std::to_string(at) + ": " + what);
  };
  while (i < n) {
    // One record from here.
    const std::size_t start_line = line;
    std::vector<std::string> fields;
    std::string field;
    bool record_done = false;
    // A record that is nothing but a line break is a blank line: skipped.
    if (text[i] == '\n' || (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n')) {
      i += text[i] == '\r' ? 2 : 1;
      ++line;
      continue;
    }
    while (!record_done) {
      field.clear();
      if (i < n && text[i] == '"') {
        ++i;
        for (;;) {
          if (i >= n) fail(start_line, "unterminated quoted field (expected a closing '\"')");
          const char c = text[i++];
          if (c == '"') {
            if (i < n && text[i] == '"') {
              field += '"';
              ++i;
              continue;
            }
            break;
          }
          if (c == '\n') ++line;
          field += c;
        }
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          fail(line, "expected ',' or the end of the line after a quoted field");
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          if (text[i] == '"') fail(line, "a '\"' inside an unquoted field (quote the field)");
          field += text[i++];
        }
      }
      fields.push_back(field);
      if (i >= n) {
        record_done = true;
      } else if (text[i] == ',') {
        ++i;
      } else if (text[i] == '\n') {
        ++i;
        ++line;
        record_done = true;
      } else {  // '\r'
        if (i + 1 < n && text[i + 1] == '\n') {
          i += 2;
          ++line;
          record_done = true;
        } else {
          fail(line, "a bare carriage return outside a quoted field");
        }
      }
    }
    if (t.header.empty()) {
      t.header = std::move(fields);
      continue;
    }
    if (fields.size() != t.header.size())
      fail(start_line, "expected " + std::to_string(t.header.size()) +
                           " fields as the header has, got " + std::to_string(fields.size()));
    t.rows.push_back(std::move(fields));
    t.lines.push_back(start_line);
  }
  if (t.header.empty()) fail(1, "empty file (expected a header row)");
  return t;
}

CsvTable read_csv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CsvError(path.string() + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_csv(s.str(), path.string());
}

}  // namespace mare::sweep
