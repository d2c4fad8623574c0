// CSV as `mare collect` writes and `mare compare` reads it (RFC 4180).
//
// Writing: fields are separated by ',', records end with '\n' (as pandas' and R's
// writers do; readers accept "\r\n" too); a field holding ',', '"', '\n' or '\r', or
// starting or ending with a space, is enclosed in double quotes with every '"' doubled.
// Numbers are printed with %.17g (17 significant digits) so that every double
// round-trips; a non-finite number is an empty (missing) cell.
// Reading: the first record is the header; a quoted field may hold separators and
// line breaks; blank lines are skipped; every record must have the header's field
// count. Errors are CsvError "<source>:<line>: <what was expected>".
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace mare::sweep {

struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One field, quoted when RFC 4180 requires it (and around leading/trailing spaces,
// which some readers strip).
std::string csv_field(const std::string& text);
// One record: the fields quoted as needed, joined by ',', ending in '\n'.
std::string csv_record(const std::vector<std::string>& fields);
// %.17g; "" for NaN and infinities.
std::string csv_number(double v);

struct CsvTable {
  std::string source;                          // file name, for messages
  std::vector<std::string> header;             // (columns)
  std::vector<std::vector<std::string>> rows;  // (rows, columns)
  std::vector<std::size_t> lines;              // (rows) 1-based line where each row starts

  // Index of a header column, or -1.
  int column(const std::string& name) const;
};

CsvTable parse_csv(const std::string& text, const std::string& source);
// Reads and parses a file; throws CsvError naming it when it cannot be read.
CsvTable read_csv(const std::filesystem::path& path);

}  // namespace mare::sweep
