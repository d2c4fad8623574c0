// Exact null distributions against slow oracles: enumeration of sign vectors and
// subsets, and R's cwilcox recursion in exact 64-bit integer counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "stats/distributions.h"
#include "tests/stats/tolerance.h"

namespace mare::stats {
namespace {

using testing::near;

// R's cwilcox: c(k; m, n) = c(k − n; m − 1, n) + c(k; m, n − 1), exact integers.
std::uint64_t cwilcox(int k, int m, int n,
                      std::map<std::tuple<int, int, int>, std::uint64_t>& memo) {
  const int u = m * n;
  if (k < 0 || k > u) return 0;
  const int c = u / 2;
  if (k > c) k = u - k;  // symmetry
  if (m == 0 || n == 0) return k == 0 ? 1 : 0;
  const auto key = std::make_tuple(k, m, n);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  const std::uint64_t v = cwilcox(k - n, m - 1, n, memo) + cwilcox(k, m, n - 1, memo);
  memo[key] = v;
  return v;
}

double choose(int n, int k) {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

TEST(Distributions, SignedRankPmfMatchesEnumeration) {
  for (int n = 0; n <= 14; ++n) {
    const std::vector<double> pmf = signed_rank_pmf(n);
    ASSERT_EQ(pmf.size(), static_cast<std::size_t>(n * (n + 1) / 2 + 1));
    std::vector<double> count(pmf.size(), 0.0);
    for (long mask = 0; mask < (1L << n); ++mask) {
      int v = 0;
      for (int i = 0; i < n; ++i)
        if (mask >> i & 1) v += i + 1;
      count[v] += 1;
    }
    for (std::size_t k = 0; k < pmf.size(); ++k) {
      // Exact in double: counts/2^n are dyadic rationals well inside 53 bits.
      EXPECT_EQ(pmf[k], count[k] / static_cast<double>(1L << n)) << "n " << n << " k " << k;
    }
  }
}

TEST(Distributions, RankSumPmfMatchesCwilcox) {
  std::map<std::tuple<int, int, int>, std::uint64_t> memo;
  const std::pair<int, int> sizes[] = {{1, 1},  {1, 7},   {7, 1},   {2, 3},   {5, 4}, {10, 5},
                                       {3, 20}, {12, 12}, {20, 17}, {25, 25}, {0, 4}};
  for (auto [m, n] : sizes) {
    const std::vector<double> pmf = rank_sum_pmf(m, n);
    ASSERT_EQ(pmf.size(), static_cast<std::size_t>(m * n + 1));
    const double total = choose(m + n, m);
    double sum = 0;
    for (int k = 0; k <= m * n; ++k) {
      const double ref = static_cast<double>(cwilcox(k, m, n, memo)) / total;
      // Harding's expansion subtracts; 1e-13 relative covers the rounding over up
      // to 25 steps (observed errors are ~1e-15).
      EXPECT_TRUE(near(pmf[k], ref, 1e-300, 1e-13)) << "m " << m << " n " << n << " k " << k;
      sum += pmf[k];
    }
    EXPECT_TRUE(near(sum, 1.0, 1e-13, 0));
  }
}

TEST(Distributions, RankSumPmfBothPathsAgree) {
  // 150 × 150 takes the Harding path (m·n·mn/2 > 2e8); the positive recursion of the
  // small path is the oracle, run here through subset_sum_pmf's independent recursion
  // on a size both can do (60 × 60 is small-path; 200 × 100 is Harding).
  for (auto [m, n] : {std::pair{60, 60}, std::pair{200, 100}}) {
    const std::vector<double> pmf = rank_sum_pmf(m, n);
    std::vector<std::int64_t> w(m + n);
    std::iota(w.begin(), w.end(), 1);
    const std::vector<double> sub = subset_sum_pmf(w, std::min(m, n), 200'000'000);
    const int mm = std::min(m, n);
    const int offset = mm * (mm + 1) / 2;
    double sum = 0, worst_cdf = 0, cdf_a = 0, cdf_b = 0;
    for (std::size_t k = 0; k < pmf.size(); ++k) {
      sum += pmf[k];
      cdf_a += pmf[k];
      cdf_b += sub[offset + k];
      worst_cdf = std::max(worst_cdf, std::fabs(cdf_a - cdf_b));
    }
    EXPECT_TRUE(near(sum, 1.0, 1e-12, 0)) << m << "x" << n;
    // Both recursions are stable; 1e-12 on the CDF is well above what they reach.
    EXPECT_LT(worst_cdf, 1e-12) << m << "x" << n;
  }
}

TEST(Distributions, RankSumPmfLargeIsADistribution) {
  // 500 × 500 (N = 1000) takes the Harding path in long double: it must pass its own
  // check (|Σ p − 1| <= 1e-9), stay non-negative and have mean m·n/2.
  const std::vector<double> pmf = rank_sum_pmf(500, 500);
  double sum = 0, mean = 0;
  for (std::size_t k = 0; k < pmf.size(); ++k) {
    EXPECT_GE(pmf[k], -kRankSumMassTolerance);
    sum += pmf[k];
    mean += k * pmf[k];
  }
  EXPECT_TRUE(near(sum, 1.0, kRankSumMassTolerance, 0));
  EXPECT_TRUE(near(mean, 500.0 * 500.0 / 2, 1e-3, 0));  // symmetric by construction
  // 1000 × 1000 is beyond the fast path's precision: refused, not silently wrong.
  EXPECT_THROW(rank_sum_pmf(1000, 1000), std::runtime_error);
}

TEST(Distributions, SubsetSumAgreesWithHardingWithoutTies) {
  // Ranks 1..N (doubled) of a random m-subset: same law as 2(W + m(m+1)/2).
  for (auto [m, n] : {std::pair{30, 25}, std::pair{7, 40}, std::pair{40, 3}}) {
    std::vector<std::int64_t> w(m + n);
    std::iota(w.begin(), w.end(), 1);
    for (auto& v : w) v *= 2;
    const std::vector<double> sub = subset_sum_pmf(w, m);
    const std::vector<double> har = rank_sum_pmf(m, n);
    const int offset = m * (m + 1);  // 2 · (1 + … + m)
    for (std::size_t k = 0; k < har.size(); ++k) {
      EXPECT_TRUE(near(sub[offset + 2 * k], har[k], 1e-300, 1e-11)) << m << "," << n << " k " << k;
    }
  }
}

TEST(Distributions, SubsetSumMatchesEnumeration) {
  const std::vector<std::int64_t> w = {3, 3, 5, 6, 6, 6, 10, 11, 14, 14, 19};
  for (int m = 0; m <= static_cast<int>(w.size()); ++m) {
    const std::vector<double> pmf = subset_sum_pmf(w, m);
    std::vector<double> count(pmf.size(), 0.0);
    double subsets = 0;
    for (long mask = 0; mask < (1L << w.size()); ++mask) {
      if (__builtin_popcountl(mask) != m) continue;
      std::int64_t s = 0;
      for (std::size_t i = 0; i < w.size(); ++i)
        if (mask >> i & 1) s += w[i];
      count[s] += 1;
      subsets += 1;
    }
    for (std::size_t k = 0; k < pmf.size(); ++k) {
      EXPECT_TRUE(near(pmf[k], count[k] / subsets, 1e-15, 0)) << "m " << m << " k " << k;
    }
  }
}

TEST(Distributions, SignSumWithTiedWeightsMatchesEnumeration) {
  const std::vector<std::int64_t> w = {3, 3, 5, 8, 8, 8, 13, 2};
  const std::vector<double> pmf = sign_sum_pmf(w);
  std::vector<double> count(pmf.size(), 0.0);
  for (long mask = 0; mask < (1L << w.size()); ++mask) {
    std::int64_t s = 0;
    for (std::size_t i = 0; i < w.size(); ++i)
      if (mask >> i & 1) s += w[i];
    count[s] += 1;
  }
  for (std::size_t k = 0; k < pmf.size(); ++k) EXPECT_EQ(pmf[k], count[k] / 256.0);
}

TEST(Distributions, TailsAndQuantilesFollowR) {
  const std::vector<double> pmf = signed_rank_pmf(9);
  // psignrank(5, 9) = #{V <= 5}/512 = (1+1+1+2+2+3)/512.
  EXPECT_DOUBLE_EQ(lower_tail(pmf, 5), 10.0 / 512);
  EXPECT_DOUBLE_EQ(upper_tail(pmf, 40), 10.0 / 512);  // symmetry: V >= 45 − 5
  EXPECT_EQ(lower_tail(pmf, -1), 0.0);
  EXPECT_EQ(upper_tail(pmf, 46), 0.0);
  // qsignrank(0.025, 9) = 6 and qsignrank(0.05, 9) = 9 (enumeration script; R agrees:
  // its interval for the depression data uses these).
  EXPECT_EQ(symmetric_quantile(pmf, 0.025), 6);
  EXPECT_EQ(symmetric_quantile(pmf, 0.05), 9);
  // Upper branch: qsignrank(0.975, 9) = 45 − 6 = 39 by symmetry.
  EXPECT_EQ(symmetric_quantile(pmf, 0.975), 39);
  // qwilcox(0.025, 10, 5) = 9.
  EXPECT_EQ(symmetric_quantile(rank_sum_pmf(10, 5), 0.025), 9);
}

TEST(Distributions, SubsetSumRefusesHugeTables) {
  std::vector<std::int64_t> w(2000);
  std::iota(w.begin(), w.end(), 1);
  EXPECT_THROW(subset_sum_pmf(w, 1000, 1'000'000), std::length_error);
}

}  // namespace
}  // namespace mare::stats
