// `mare bench allocation` run for real, small: every row of its JSON holds the fields the
// README and kernels/memory/README.md promise, each derived field is what it says it is
// (a ratio of the row's own times), the CSV carries the same rows, and `mare report` reads
// the JSON into Table 4.14. No timing is asserted, only the relations between the fields.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "experiments/sweep/csv.h"
#include "tests/experiments/collect/run_mare.h"
#include "tests/temp_dir.h"

namespace mare::test {
namespace {

using nlohmann::json;

// a == b to the rounding of the arithmetic that made one from the other.
void expect_ratio(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-9 * std::max(std::fabs(a), std::fabs(b))) << what;
}

// Each (pass, N, sequence) point of a run.
using Point = std::tuple<std::string, int, int>;

// One variant's row at each point.
std::map<Point, json> rows_of(const json& rows, const std::string& variant) {
  std::map<Point, json> out;
  for (const json& r : rows)
    if (r.at("variant") == variant) out[{r.at("pass"), r.at("mem"), r.at("seq")}] = r;
  return out;
}

// The rows of one run: every field there and each derived one what it says it is.
void check_rows(const json& j, int threads) {
  const json& rows = j.at("rows");
  EXPECT_EQ(j.at("device"), "cpu");
  EXPECT_EQ(j.at("threads"), threads);
  const std::set<std::string> variants = {"sorted", "parallel",       "parallel-eps",
                                          "rank",   "parallel-block", "network"};
  // Each point: the copy of its bytes, then every variant.
  const std::map<Point, json> copy = rows_of(rows, "copy"), sorted = rows_of(rows, "sorted");
  std::map<Point, std::set<std::string>> seen;
  for (const json& r : rows)
    seen[{r.at("pass"), r.at("mem"), r.at("seq")}].insert(r.at("variant").get<std::string>());
  ASSERT_EQ(seen.size(), 4u) << "forward and forward+backward at N 4 and 16";
  for (const auto& [p, names] : seen) {
    std::set<std::string> expected = variants;
    expected.insert("copy");
    EXPECT_EQ(names, expected) << std::get<0>(p) << " N " << std::get<1>(p);
  }
  for (const json& r : rows) {
    const std::string v = r.at("variant");
    const Point p{r.at("pass"), r.at("mem"), r.at("seq")};
    const std::string at = v + " " + std::get<0>(p) + " N " + std::to_string(std::get<1>(p)) +
                           ", " + std::to_string(threads) + " thread(s)";
    EXPECT_EQ(r.at("memories"), r.at("batch").get<int>() * r.at("seq").get<int>()) << at;
    const double seconds = r.at("seconds");
    EXPECT_GT(seconds, 0) << at;
    EXPECT_GT(r.at("bytes_processed").get<double>(), 0) << at;
    EXPECT_LE(r.at("seconds_min").get<double>(), seconds) << at;
    EXPECT_GE(r.at("seconds_max").get<double>(), seconds) << at;
    // The copy floor is the copy row's time at the same point; the ratios are the row's.
    const double floor = copy.at(p).at("seconds");
    expect_ratio(r.at("copy_floor_seconds"), floor, at + ": copy_floor_seconds");
    expect_ratio(r.at("floor_ratio"), seconds / floor, at + ": floor_ratio");
    // On 1 thread the row's own time is its 1-thread time: no second measurement, and no
    // field that would have to pretend to be one.
    double one_thread = seconds;
    if (threads == 1) {
      EXPECT_FALSE(r.contains("seconds_1thread")) << at;
      EXPECT_FALSE(r.contains("thread_speedup")) << at;
      expect_ratio(r.at("copy_floor_seconds_1thread"), floor, at + ": copy_floor_seconds_1thread");
    } else {
      one_thread = r.at("seconds_1thread");
      EXPECT_GT(one_thread, 0) << at;
      expect_ratio(r.at("thread_speedup"), one_thread / seconds, at + ": thread_speedup");
    }
    if (v == "copy") {
      EXPECT_FALSE(r.contains("speedup_vs_sorted")) << at;
      continue;
    }
    expect_ratio(r.at("speedup_vs_sorted"), sorted.at(p).at("seconds").get<double>() / seconds,
                 at + ": speedup_vs_sorted");
    expect_ratio(r.at("floor_ratio_1thread"),
                 one_thread / r.at("copy_floor_seconds_1thread").get<double>(),
                 at + ": floor_ratio_1thread");
    EXPECT_GT(r.at("compute_bound_seconds").get<double>(), 0) << at;
    expect_ratio(r.at("peak_fraction"), r.at("compute_bound_seconds").get<double>() / one_thread,
                 at + ": peak_fraction");
    EXPECT_TRUE(j.at("ops_counted").contains(v)) << at;
  }
}

TEST(CliBench, AllocationOnTwoThreadsTimesEachRowOnOneToo) {
  TempDir dir("bench2");
  const MareOutcome run =
      run_mare_in(dir.path(), {"bench", "allocation", "--seq", "10", "--mem", "4", "16",
                               "--repetitions", "2", "--threads", "2", "--json", "a.json"});
  ASSERT_EQ(run.status, 0) << run.err;
  check_rows(json::parse(slurp_file(dir / "a.json")), 2);
}

TEST(CliBench, AllocationRowsHoldTheirFieldsAndTheReportReadsThem) {
  TempDir dir("bench");
  const MareOutcome run = run_mare_in(
      dir.path(), {"bench", "allocation", "--seq", "10", "--mem", "4", "16", "--repetitions", "2",
                   "--threads", "1", "--json", "a.json", "--csv", "a.csv"});
  ASSERT_EQ(run.status, 0) << run.err;
  const json j = json::parse(slurp_file(dir / "a.json"));
  check_rows(j, 1);
  const json& rows = j.at("rows");
  const std::map<Point, json> sorted = rows_of(rows, "sorted"),
                              parallel = rows_of(rows, "parallel");
  // parallel-eps against sorted at every point: the same allocations.
  for (const json& c : j.at("parallel_eps_vs_sorted")) EXPECT_EQ(c.at("alloc_differs"), 0);

  // The CSV: one line per JSON row, the same variants and times.
  const sweep::CsvTable csv = sweep::parse_csv(slurp_file(dir / "a.csv"), "a.csv");
  ASSERT_EQ(csv.rows.size(), rows.size());
  for (const char* column : {"variant", "pass", "mem", "seq", "seconds", "copy_floor_seconds",
                             "floor_ratio", "compute_bound_seconds", "peak_fraction"})
    ASSERT_GE(csv.column(column), 0) << column;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(csv.rows[i][csv.column("variant")], rows[i].at("variant").get<std::string>());
    const double s = std::stod(csv.rows[i][csv.column("seconds")]);
    EXPECT_NEAR(s, rows[i].at("seconds").get<double>(), 1e-6 * s) << "row " << i;
    // A field the JSON leaves out is an empty cell, never a 0.
    for (const char* column : {"seconds_1thread", "thread_speedup", "speedup_vs_sorted",
                               "compute_bound_seconds", "peak_fraction"})
      EXPECT_EQ(csv.rows[i][csv.column(column)].empty(), !rows[i].contains(column))
          << "row " << i << ": " << column;
  }

  // Table 4.14 from the JSON: our sorted and parallel times (per 100 calls) and their ratio.
  const MareOutcome report =
      run_mare_in(dir.path(), {"report", "a.json", "--out", "rep", "--only", "table4.14"});
  ASSERT_EQ(report.status, 0) << report.err;
  const sweep::CsvTable table =
      sweep::parse_csv(slurp_file(dir / "rep" / "tables" / "table4.14.csv"), "table4.14.csv");
  ASSERT_EQ(table.rows.size(), 2u) << "N 4 and 16 at sequence 10";
  for (const auto& row : table.rows) {
    const Point p{"forward", std::stoi(row.at(table.column("N"))),
                  std::stoi(row.at(table.column("sequence")))};
    const double s = sorted.at(p).at("seconds").get<double>() * 100;
    const double q = parallel.at(p).at("seconds").get<double>() * 100;
    EXPECT_NEAR(std::stod(row.at(table.column("ours sorted"))), s, 0.006 * s);
    EXPECT_NEAR(std::stod(row.at(table.column("ours parallel"))), q, 0.006 * q);
    EXPECT_NEAR(std::stod(row.at(table.column("ours speedup"))), s / q, 0.0051);
  }
}

}  // namespace
}  // namespace mare::test
