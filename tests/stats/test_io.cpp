// The sample reader: accepted formats, and refusals that name the source and line.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stats/io.h"

namespace mare::stats {
namespace {

std::vector<double> parse(const std::string& text, const std::string& column = "") {
  std::istringstream in(text);
  return parse_numbers(in, "a.txt", column);
}

std::string error_of(const std::string& text, const std::string& column = "") {
  try {
    parse(text, column);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Reader, OneNumberPerLine) {
  const std::vector<double> v = parse("1\n  -2.5e1 \r\n\n# a comment\n+0.25\n3");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], -25.0);
  EXPECT_EQ(v[2], 0.25);
  EXPECT_EQ(v[3], 3.0);
}

TEST(Reader, RefusalsNameTheLine) {
  EXPECT_EQ(error_of("1\n2\nabc\n"), "a.txt:3: expected a number, got 'abc'");
  EXPECT_EQ(error_of("1\nNaN\n"),
            "a.txt:2: expected a finite number, got 'NaN' (missing values are not allowed)");
  EXPECT_EQ(error_of("1\n-inf\n"), "a.txt:2: expected a finite number, got '-inf'");
  EXPECT_EQ(error_of("1\n2 3\n"), "a.txt:2: expected a number, got '2 3'");
  EXPECT_EQ(error_of("1e999\n"), "a.txt:1: number '1e999' is out of the range of a double");
  EXPECT_EQ(error_of("1,2\n"),
            "a.txt:1: expected a number, got '1,2' (for CSV input give --column NAME)");
  EXPECT_EQ(error_of(""), "a.txt:1: expected at least one number, got none (empty input)");
  EXPECT_EQ(error_of("\n# only a comment\n"),
            "a.txt:3: expected at least one number, got none (empty input)");
}

TEST(Reader, CsvColumn) {
  const std::string csv = "seed,\"acc\",loss\n1,0.91,0.3\n2,\"0.93\",0.2\n\n3,0.90,0.4\n";
  const std::vector<double> v = parse(csv, "acc");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 0.91);
  EXPECT_EQ(v[1], 0.93);
  EXPECT_EQ(v[2], 0.90);
  EXPECT_EQ(parse(csv, "loss")[2], 0.4);
}

TEST(Reader, CsvRefusals) {
  EXPECT_EQ(error_of("seed,acc\n1,0.5\n", "loss"),
            "a.txt:1: expected a CSV header with a column 'loss', got: seed, acc");
  EXPECT_EQ(error_of("seed,acc\n1,0.5\n2\n", "acc"),
            "a.txt:3: expected at least 2 fields (column 'acc'), got 1");
  EXPECT_EQ(error_of("seed,acc\n1,\n", "acc"),
            "a.txt:2: column 'acc': expected a number, got an empty value");
  EXPECT_EQ(error_of("seed,acc\n1,nan\n", "acc"),
            "a.txt:2: column 'acc': expected a finite number, got 'nan' (missing values are not "
            "allowed)");
  EXPECT_EQ(error_of("seed,acc\n", "acc"),
            "a.txt:2: expected at least one number, got none (empty input)");
}

TEST(Reader, SplitCsvLine) {
  const std::vector<std::string> f = split_csv_line("a,\"b,c\",\"d\"\"e\",");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[1], "b,c");
  EXPECT_EQ(f[2], "d\"e");
  EXPECT_EQ(f[3], "");
}

TEST(Reader, MissingFile) {
  EXPECT_THROW(read_numbers("/nonexistent/file.txt"), InputError);
}

}  // namespace
}  // namespace mare::stats
