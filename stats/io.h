// Reading samples: one number per line, or one column of a CSV file.
//
// Rules: blank lines and lines starting with '#' are skipped; a line ending in "\r\n"
// is accepted; each value must be a complete finite decimal number ("1", "-2.5e3",
// "+0.1"). NaN, infinities, missing values, extra text and an input with no numbers
// are refused with an InputError whose message starts "<source>:<line>:" so the
// user can go straight to the offending line. CSV: the first non-blank line is the
// header; fields are separated by ',' and may be double-quoted ("" is a quote).
#pragma once

#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mare::stats {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A sample as read: the values and the line each came from (for messages).
struct Sample {
  std::string source;              // file name as given ("<stdin>" for "-")
  std::vector<double> values;      // (n)
  std::vector<std::size_t> lines;  // (n) 1-based line of each value
};

// Parses `in` like parse_numbers, keeping the line of each value.
Sample parse_sample(std::istream& in, const std::string& source, const std::string& column = "");

// Opens `path` ("-": standard input) and parses it as parse_sample does.
Sample read_sample(const std::string& path, const std::string& column = "");

// Parses the values of `in`; `source` names it in messages. column empty: one number
// per line; otherwise the CSV column with that header name.
std::vector<double> parse_numbers(std::istream& in, const std::string& source,
                                  const std::string& column = "");

// Opens `path` and parses it as parse_numbers does ("-" reads standard input).
std::vector<double> read_numbers(const std::string& path, const std::string& column = "");

// Parses one complete finite number, or explains in `why` what is wrong.
bool parse_number(const std::string& text, double& value, std::string& why);

// Splits one CSV line into fields (double-quoted fields may contain commas).
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace mare::stats
