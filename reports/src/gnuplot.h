// Running gnuplot for the report's figures: finding the binary, one child process per
// script with a timeout, and the text helpers the scripts and data files share.
//
// Rule: a figure is its data file (.dat) and script (.gp) first, the pictures second. The
// script reads the data by relative name and writes both pictures, so a reader re-plots with
// `gnuplot -d <id>.gp` in the figures directory. Same data -> same .dat and .gp bytes (no
// dates, no absolute paths, numbers in shortest round-trip form); the pictures carry no time
// either (checked by the tests for the svg and pngcairo terminals of gnuplot 5.4).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mare::report::gnuplot {

// The gnuplot binary: $MARE_GNUPLOT when set (a path, or a name searched on PATH; an empty
// value or one that resolves to nothing means "no gnuplot"), else `gnuplot` on PATH.
std::optional<std::filesystem::path> find_binary();

// What the binary offers, asked once per binary (`set terminal` listing).
struct Terminals {
  std::string png;  // "pngcairo", "png" or "" (none)
  bool svg = false;
  std::string version;  // first line of `gnuplot --version`
};
Terminals terminals(const std::filesystem::path& binary);

struct RunResult {
  bool ok = false;
  std::string error;  // exit status or timeout, and gnuplot's output (tail) when !ok
};
// Runs `binary -d script` with `dir` as working directory (-d: no ~/.gnuplot, so a user's
// settings never change the pictures). Kills it after timeout_s.
RunResult run(const std::filesystem::path& binary, const std::filesystem::path& dir,
              const std::string& script, double timeout_s = 120.0);

// Shortest round-trip decimal form ("0.1", "1e-05", "NaN" for a non-finite value, which
// gnuplot reads as a missing point).
std::string num(double v);
// A double-quoted gnuplot string literal (backslash and quote escaped; control characters
// replaced by spaces). Titles are drawn with `noenhanced`, so '_' and '^' stay literal.
std::string quote(std::string_view s);
// A comment-safe single line (newlines replaced) for `#` lines of .dat and .gp files.
std::string comment(std::string_view s);

// Writes `content` to a temporary file in the same directory and renames it over `path`.
void atomic_write(const std::filesystem::path& path, const std::string& content);

// Line style k (1-based) of the report's palette: colour, dash type and point type all change
// from one style to the next, so lines stay distinguishable printed in grey.
std::string line_style(int k, double line_width = 2.0);

}  // namespace mare::report::gnuplot
