// mare compare (experiments/sweep/compare.h) on a small collect table whose p-values
// are derived here independently: exact values counted by hand in the comments, checked
// again against brute-force enumeration of the exact null distributions (every sign
// pattern of the signed-rank statistic, every split of the pooled ranks of the rank-sum
// statistic), the normal approximation with zeros from its formula, Holm's correction
// written out, Hodges-Lehmann and Vargha-Delaney A by definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep/compare.h"
#include "experiments/sweep/csv.h"
#include "tests/experiments/collect/run_mare.h"
#include "tests/temp_dir.h"

namespace mare::test {
namespace {

namespace fs = std::filesystem;
using sweep::compare_cells;
using sweep::CompareError;
using sweep::CompareOptions;

// Metric values are k/256: exact in binary, so differences are exact and ties are
// exactly what the integers say.
const std::vector<int> kA{153, 157, 173, 128, 161};                     // seeds 1-5
const std::vector<int> kB{92, 145, 126, 111, 90};                       // seeds 1-5
const std::vector<int> kC{133, 170, 84, 118, 175, 107};                 // seeds 1-6
const std::vector<int> kP{10, 20, 30, 40, 50}, kQ{10, 19, 28, 37, 46};  // sweep t

std::string v(int k) {
  return sweep::csv_number(k / 256.0);
}

std::string table_text() {
  std::string s = "sweep,table,profile,cell,seed,id,status,param.model,test_f1,valid_f1,dir\n";
  auto add = [&](const std::string& sweep, const std::string& table, const std::string& cell,
                 int seed, const std::string& status, const std::string& value) {
    s += sweep + "," + table + ",smoke," + cell + "," + std::to_string(seed) + ",id" + cell +
         std::to_string(seed) + "," + status + ",m," + value + ",0.5," + cell + "/seed" +
         std::to_string(seed) + "\n";
  };
  for (int i = 0; i < 5; ++i) add("s", "4.7", "A", i + 1, "completed", v(kA[i]));
  add("s", "4.7", "A", 9, "diverged", "");
  for (int i = 0; i < 5; ++i) add("s", "4.7", "B", i + 1, "completed", v(kB[i]));
  for (int i = 0; i < 6; ++i) add("s", "4.7", "C", i + 1, "completed", v(kC[i]));
  add("s", "4.7", "C", 7, "failed", "");
  add("s", "4.7", "C", 8, "completed", "");
  for (int i = 0; i < 5; ++i) add("t", "", "P", i + 1, "completed", v(kP[i]));
  for (int i = 0; i < 5; ++i) add("t", "", "Q", i + 1, "completed", v(kQ[i]));
  return s;
}

sweep::CompareReport run(const std::string& text, CompareOptions o) {
  return compare_cells(sweep::parse_csv(text, "results.csv"), o);
}

CompareOptions metric(const std::string& m = "test_f1") {
  CompareOptions o;
  o.metric = m;
  return o;
}

// Exact two-sided p of the signed-rank statistic over every sign pattern (no zeros, no
// ties in |d|); one-sided "greater" when greater is set.
double brute_signed_rank(const std::vector<int>& x, const std::vector<int>& y, bool greater) {
  std::vector<int> d;
  for (std::size_t i = 0; i < x.size(); ++i) d.push_back(x[i] - y[i]);
  std::vector<int> order(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return std::abs(d[a]) < std::abs(d[b]); });
  int v = 0;
  for (std::size_t r = 0; r < order.size(); ++r)
    if (d[order[r]] > 0) v += static_cast<int>(r) + 1;
  const int n = static_cast<int>(d.size());
  double le = 0, ge = 0, total = 0;
  for (int mask = 0; mask < (1 << n); ++mask) {
    int s = 0;
    for (int r = 0; r < n; ++r)
      if (mask & (1 << r)) s += r + 1;
    le += s <= v;
    ge += s >= v;
    total += 1;
  }
  if (greater) return ge / total;
  return std::min(1.0, 2 * std::min(le, ge) / total);
}

// Exact two-sided p of the rank-sum statistic W = #{x_i > y_j} over every way of giving
// m of the m + n pooled ranks to x (no ties).
double brute_rank_sum(const std::vector<int>& x, const std::vector<int>& y) {
  int w = 0;
  for (int a : x)
    for (int b : y) w += a > b;
  const int m = static_cast<int>(x.size()), n = static_cast<int>(y.size()), N = m + n;
  double le = 0, ge = 0, total = 0;
  for (int mask = 0; mask < (1 << N); ++mask) {
    if (__builtin_popcount(mask) != m) continue;
    // W of this split: for each x position, the y positions below it.
    int s = 0, ys_below = 0;
    for (int r = 0; r < N; ++r) {
      if (mask & (1 << r))
        s += ys_below;
      else
        ++ys_below;
    }
    le += s <= w;
    ge += s >= w;
    total += 1;
  }
  return std::min(1.0, 2 * std::min(le, ge) / total);
}

std::vector<double> holm_by_hand(const std::vector<double>& p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> idx(m);
  for (std::size_t i = 0; i < m; ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double run = 0;
  for (std::size_t k = 0; k < m; ++k) {
    run = std::max(run, std::min(1.0, (m - k) * p[idx[k]]));
    out[idx[k]] = run;
  }
  return out;
}

TEST(Compare, PairsPValuesAndHolmAgainstExactDistributions) {
  const sweep::CompareReport rep = run(table_text(), metric());
  ASSERT_EQ(rep.groups.size(), 2u);
  const sweep::CompareGroup& g = rep.groups[0];
  EXPECT_EQ(g.sweep, "s");
  EXPECT_EQ(g.table, "4.7");
  ASSERT_EQ(g.cells.size(), 3u);
  EXPECT_EQ(g.cells[0].runs, 6);
  EXPECT_EQ(g.cells[0].excluded.at("diverged"), 1);
  EXPECT_EQ(g.cells[2].runs, 8);
  EXPECT_EQ(g.cells[2].excluded.at("failed"), 1);
  EXPECT_EQ(g.cells[2].excluded.at("no value"), 1);
  ASSERT_EQ(g.comparisons.size(), 3u);
  const auto& ab = g.comparisons[0];
  const auto& ac = g.comparisons[1];
  const auto& bc = g.comparisons[2];
  EXPECT_EQ(ab.a + ab.b + ac.a + ac.b + bc.a + bc.b, "ABACBC");

  // A − B = 61, 12, 47, 17, 71 (/256): all positive, V = 15 = 1+2+3+4+5, and only the
  // all-plus pattern of 2^5 reaches it: p = 2/32.
  ASSERT_TRUE(ab.signed_rank);
  EXPECT_EQ(ab.signed_rank->statistic, 15);
  EXPECT_EQ(ab.signed_rank->method, stats::Method::exact);
  EXPECT_DOUBLE_EQ(ab.signed_rank->p_value, 0.0625);
  EXPECT_DOUBLE_EQ(ab.signed_rank->p_value, brute_signed_rank(kA, kB, false));
  // A − C over seeds 1-5 = 20, −13, 89, 10, −14: ranks of |d| 4, 2, 5, 1, 3, V = 4+5+1 = 10;
  // 10 of the 32 subsets of {1..5} sum to ≥ 10 (their complements sum to ≤ 5): p = 20/32.
  EXPECT_EQ(ac.signed_rank->statistic, 10);
  EXPECT_DOUBLE_EQ(ac.signed_rank->p_value, 0.625);
  EXPECT_DOUBLE_EQ(ac.signed_rank->p_value,
                   brute_signed_rank(kA, std::vector<int>(kC.begin(), kC.begin() + 5), false));
  // B − C = −41, −25, 42, −7, −85: V = 4 (42 has rank 4); 7 subsets sum to ≤ 4: p = 14/32.
  EXPECT_EQ(bc.signed_rank->statistic, 4);
  EXPECT_DOUBLE_EQ(bc.signed_rank->p_value, 0.4375);

  // Pairing: seeds 1-5; C's seed 6 is unpaired, its failed and value-less runs and A's
  // diverged run are dropped too.
  EXPECT_EQ(ab.n_paired, 5);
  EXPECT_EQ(ab.dropped, 1);
  EXPECT_EQ(ac.n_paired, 5);
  EXPECT_EQ(ac.n_a, 5);
  EXPECT_EQ(ac.n_b, 6);
  EXPECT_EQ(ac.dropped, (6 - 5) + (8 - 5));

  // Rank sum: every A above every B but 128 < 145: W = 24; of the C(10,5) = 252 splits
  // one gives W = 25 and one W = 24: p = 2 · 2/252. A against all six C values by
  // enumeration.
  ASSERT_TRUE(ab.rank_sum);
  EXPECT_EQ(ab.rank_sum->statistic, 24);
  EXPECT_DOUBLE_EQ(ab.rank_sum->p_value, 4.0 / 252);
  EXPECT_DOUBLE_EQ(ab.rank_sum->p_value, brute_rank_sum(kA, kB));
  EXPECT_DOUBLE_EQ(ac.rank_sum->p_value, brute_rank_sum(kA, kC));
  EXPECT_DOUBLE_EQ(bc.rank_sum->p_value, brute_rank_sum(kB, kC));

  // Holm over the three signed-rank p-values: 3 · 0.0625, then max(2 · 0.4375, ·) twice.
  EXPECT_DOUBLE_EQ(ab.p_signed_rank_holm, 0.1875);
  EXPECT_DOUBLE_EQ(bc.p_signed_rank_holm, 0.875);
  EXPECT_DOUBLE_EQ(ac.p_signed_rank_holm, 0.875);
  const std::vector<double> rs_holm =
      holm_by_hand({ab.rank_sum->p_value, ac.rank_sum->p_value, bc.rank_sum->p_value});
  EXPECT_DOUBLE_EQ(ab.p_rank_sum_holm, rs_holm[0]);
  EXPECT_DOUBLE_EQ(ac.p_rank_sum_holm, rs_holm[1]);
  EXPECT_DOUBLE_EQ(bc.p_rank_sum_holm, rs_holm[2]);

  // Hodges-Lehmann: median of the 15 Walsh averages of A − B.
  std::vector<double> d, walsh;
  for (std::size_t i = 0; i < kA.size(); ++i) d.push_back((kA[i] - kB[i]) / 256.0);
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = i; j < d.size(); ++j) walsh.push_back((d[i] + d[j]) / 2);
  std::sort(walsh.begin(), walsh.end());
  EXPECT_DOUBLE_EQ(ab.signed_rank->estimate, walsh[7]);
  EXPECT_LE(ab.signed_rank->conf_int[0], ab.signed_rank->estimate);
  EXPECT_GE(ab.signed_rank->conf_int[1], ab.signed_rank->estimate);

  // Vargha-Delaney A by definition: P(a > b) over all pairs (no ties here).
  double gt = 0;
  for (int a : kA)
    for (int c : kC) gt += a > c;
  EXPECT_DOUBLE_EQ(ac.vargha_delaney_a, gt / 30);
  EXPECT_DOUBLE_EQ(ab.vargha_delaney_a, 24.0 / 25);

  // Means and sds.
  EXPECT_DOUBLE_EQ(ab.mean_a, (153 + 157 + 173 + 128 + 161) / 5.0 / 256);
  std::vector<double> a;
  for (int k : kA) a.push_back(k / 256.0);
  double ss = 0;
  for (double x : a) ss += (x - ab.mean_a) * (x - ab.mean_a);
  EXPECT_NEAR(ab.sd_a, std::sqrt(ss / 4), 1e-15);

  // Sweep t is its own family: one comparison, Holm leaves it as it is. P − Q has a
  // zero: R drops it and uses the normal approximation with continuity correction:
  // n = 4, V = 10, z = (10 − 5 − ½)/√7.5, p = 2(1 − Φ(z)) = erfc(z/√2).
  const sweep::CompareGroup& t = rep.groups[1];
  ASSERT_EQ(t.comparisons.size(), 1u);
  const auto& pq = t.comparisons[0];
  EXPECT_EQ(pq.signed_rank->method, stats::Method::approx);
  const double z = 4.5 / std::sqrt(7.5);
  EXPECT_NEAR(pq.signed_rank->p_value, std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_DOUBLE_EQ(pq.p_signed_rank_holm, pq.signed_rank->p_value);
  ASSERT_FALSE(pq.notes.empty());
  EXPECT_NE(pq.notes[0].find("signed-rank: "), std::string::npos);
}

TEST(Compare, BaselineAndOneSidedAlternative) {
  CompareOptions o = metric();
  o.baseline = "B";
  const sweep::CompareReport rep = run(table_text(), o);
  ASSERT_EQ(rep.groups[0].comparisons.size(), 2u);
  const auto& ab = rep.groups[0].comparisons[0];
  const auto& cb = rep.groups[0].comparisons[1];
  EXPECT_EQ(ab.a + ab.b + cb.a + cb.b, "ABCB");
  // C − B = −(B − C): V = 15 − 4 = 11, the same two-sided p; Holm over two: 2 · 0.0625.
  EXPECT_EQ(cb.signed_rank->statistic, 11);
  EXPECT_DOUBLE_EQ(cb.signed_rank->p_value, 0.4375);
  EXPECT_DOUBLE_EQ(ab.p_signed_rank_holm, 0.125);
  EXPECT_DOUBLE_EQ(cb.p_signed_rank_holm, 0.4375);
  // Sweep t has no cell B: skipped with a warning.
  EXPECT_TRUE(rep.groups[1].comparisons.empty());
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_NE(rep.warnings[0].find("baseline B"), std::string::npos);

  o.alternative = stats::Alternative::greater;
  const sweep::CompareReport g = run(table_text(), o);
  // P(V ≥ 15) = 1/32.
  EXPECT_DOUBLE_EQ(g.groups[0].comparisons[0].signed_rank->p_value, 1.0 / 32);
  EXPECT_DOUBLE_EQ(g.groups[0].comparisons[0].signed_rank->p_value,
                   brute_signed_rank(kA, kB, true));
}

void expect_error(const std::string& text, const CompareOptions& o,
                  const std::vector<std::string>& parts) {
  try {
    run(text, o);
    FAIL() << "expected a CompareError";
  } catch (const CompareError& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Compare, Errors) {
  const std::string text = table_text();
  expect_error(text, metric("test_mse"),
               {"results.csv: no metric column 'test_mse'; closest: test_f1; short names: "
                "test_f1, valid_f1; 2 metric columns in all"});
  // A collect CSV has ~150 metric columns: the message names the closest few and the
  // short names, not every one (it listed all of them on one line).
  std::string wide = "sweep,table,profile,cell,seed,id,status,test_f1";
  for (int k = 0; k < 150; ++k) wide += ",test.relations.class" + std::to_string(k) + ".f1";
  expect_error(wide + "\ns,,,A,1,x,completed,0.5" + std::string(150, ',') + "\n",
               metric("test_f11"), {"closest: test_f1; short names: test_f1; 151 metric columns"});
  try {
    run(wide + "\n", metric("tst_f1"));
  } catch (const CompareError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
  }
  // One run in all: said so (it said "no pair of cells").
  expect_error("sweep,table,profile,cell,seed,id,status,test_f1,dir\ns,,,A,3,x,completed,0.5,d\n",
               metric(),
               {"one completed run with a value of test_f1 (cell A, seed 3): a comparison needs "
                "two cells"});
  expect_error(text, metric("param.model"), {"no metric column 'param.model'"});
  CompareOptions o = metric();
  o.baseline = "Z";
  expect_error(text, o, {"--baseline: no cell 'Z'", "(cells: A, B, C, P, Q)"});
  const std::string header = "sweep,table,profile,cell,seed,id,status,test_f1,dir\n";
  expect_error(header + "s,,,A,1,x,failed,,d\ns,,,A,2,y,missing,,d\n", metric(),
               {"no completed run with a value of test_f1 (1 failed, 1 missing)"});
  expect_error(
      header + "s,,,A,1,x,completed,0.5,d\ns,,,A,1,y,completed,0.6,d\n", metric(),
      {"results.csv:3: cell A has a second completed run of seed 1", "first is on line 2"});
  const std::string profiled = "sweep,table,profile,cell,seed,id,status,test_f1,dir\n";
  expect_error(profiled + "s,,smoke,A,1,x,completed,0.5,d\ns,,paper,A,1,y,completed,0.6,d\n",
               metric(), {"(profiles smoke and paper: compare one profile at a time)"});
  expect_error(header + "s,,,A,1,x,completed,high,d\n", metric(),
               {"results.csv:2: column test_f1: expected a number, got 'high'"});
  expect_error(header + "s,,,A,one,x,completed,0.5,d\n", metric(),
               {"results.csv:2: column seed: expected an integer"});
  expect_error("sweep,table,seed,status,test_f1\n", metric(), {"no 'cell' column"});
}

TEST(Compare, OutputsMarkdownCsvJson) {
  TempDir tmp("compare");
  const sweep::CompareReport rep = run(table_text(), metric());
  const std::string md = sweep::compare_markdown(rep);
  EXPECT_NE(md.find("## s (Table 4.7): test_f1, two-sided"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | b | p | p (Holm) | n | dropped |"), std::string::npos) << md;
  EXPECT_NE(md.find("| A | B | 0.0625 | 0.1875 | 5 | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- C: left out 1 failed, 1 no value"), std::string::npos) << md;
  // Two pairs cannot give a 95 % interval: R lowers the level, and the table says so.
  const std::string two =
      "sweep,table,profile,cell,seed,id,status,test_f1,dir\n"
      "s,,,A,1,a,completed,0.5,d\ns,,,A,2,b,completed,0.75,d\n"
      "s,,,B,1,c,completed,0.25,d\ns,,,B,2,d,completed,0.375,d\n";
  const std::string md_two = sweep::compare_markdown(run(two, metric()));
  // A table where one cell has runs: said so (it said "no pair of cells").
  const std::string one_cell =
      "sweep,table,profile,cell,seed,id,status,test_f1,dir\n"
      "s,,,A,1,a,completed,0.5,d\ns,,,A,2,b,completed,0.75,d\ns,,,B,1,c,failed,,d\n";
  EXPECT_NE(sweep::compare_markdown(run(one_cell, metric()))
                .find("(one cell, A, has completed runs: nothing to compare it with)"),
            std::string::npos);
  EXPECT_NE(md_two.find("[0.25, 0.375] at 50%"), std::string::npos) << md_two;
  // Five pairs reach 95 % (no note); the approximate interval of P − Q with its zero
  // does not (R widens alpha until the data bracket the quantiles).
  const std::size_t ab_row = md.find("| A | B |");
  EXPECT_EQ(md.substr(ab_row, md.find('\n', ab_row) - ab_row).find("% |"), std::string::npos);
  EXPECT_NE(md.find("] at 80% |"), std::string::npos) << md;
  sweep::write_compare(rep, (tmp / "out" / "cmp").string());
  EXPECT_EQ(slurp_file(tmp / "out" / "cmp.md"), md);
  const sweep::CsvTable t = sweep::read_csv(tmp / "out" / "cmp.csv");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0][t.column("a")], "A");
  EXPECT_EQ(t.rows[0][t.column("p")], "0.0625");
  EXPECT_EQ(t.rows[0][t.column("p_holm")], "0.1875");
  EXPECT_EQ(t.rows[0][t.column("signed_rank_method")], "exact");
  EXPECT_EQ(t.rows[0][t.column("n_paired")], "5");
  EXPECT_EQ(t.rows[3][t.column("sweep")], "t");
  const auto j = nlohmann::json::parse(slurp_file(tmp / "out" / "cmp.json"));
  EXPECT_EQ(j["metric"], "test_f1");
  EXPECT_DOUBLE_EQ(j["groups"][0]["comparisons"][0]["signed_rank"]["p_value"].get<double>(),
                   0.0625);
  EXPECT_EQ(j["groups"][0]["cells"][2]["seeds"], nlohmann::json({1, 2, 3, 4, 5, 6}));
}

TEST(CompareCli, PrintsTheTableAndWritesTheFiles) {
  TempDir tmp("compare_cli");
  std::ofstream(tmp / "results.csv") << table_text();
  const MareOutcome ok = run_mare_in(
      tmp.path(), {"compare", "results.csv", "--metric", "test_f1", "--out", "cmp/t47"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, sweep::compare_markdown(run(table_text(), metric())));
  EXPECT_TRUE(fs::exists(tmp / "cmp" / "t47.md"));
  EXPECT_TRUE(fs::exists(tmp / "cmp" / "t47.csv"));
  EXPECT_TRUE(fs::exists(tmp / "cmp" / "t47.json"));
  const MareOutcome bad = run_mare_in(tmp.path(), {"compare", "results.csv", "--metric", "f1"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("mare: error: results.csv: no metric column 'f1'; closest: test_f1, "
                         "valid_f1;"),
            std::string::npos)
      << bad.err;
  const MareOutcome alt = run_mare_in(
      tmp.path(), {"compare", "results.csv", "--metric", "test_f1", "--alternative", "bigger"});
  EXPECT_EQ(alt.status, 2);
  EXPECT_NE(alt.err.find("--alternative"), std::string::npos) << alt.err;
}

}  // namespace
}  // namespace mare::test
