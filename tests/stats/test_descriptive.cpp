// Summary statistics, bootstrap, Holm and effect sizes against hand-computed values
// (each commented) and R's documented conventions.
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stats/descriptive.h"
#include "tests/stats/tolerance.h"

namespace mare::stats {
namespace {

using testing::near;
using testing::near_exact;

TEST(Descriptive, MeanSdMedianByHand) {
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_TRUE(near_exact(mean(x), 5.0));
  // Σ(x − 5)² = 32, n − 1 = 7 → sd = sqrt(32/7).
  EXPECT_TRUE(near(sd(x), std::sqrt(32.0 / 7.0), 0, 1e-15));
  EXPECT_TRUE(near_exact(median(x), 4.5));
  EXPECT_TRUE(near_exact(median(std::vector<double>{3, 1, 2}), 2.0));
  EXPECT_TRUE(std::isnan(sd(std::vector<double>{1.0})));
  EXPECT_THROW(mean(std::vector<double>{}), std::invalid_argument);
}

TEST(Descriptive, QuantileType7LikeR) {
  std::vector<double> x(10);
  for (int i = 0; i < 10; ++i) x[i] = i + 1;
  // R: quantile(1:10, c(0, .1, .25, .5, 1)) = 1, 1.9, 3.25, 5.5, 10.
  EXPECT_TRUE(near_exact(quantile(x, 0.0), 1.0));
  EXPECT_TRUE(near_exact(quantile(x, 0.1), 1.9));
  EXPECT_TRUE(near_exact(quantile(x, 0.25), 3.25));
  EXPECT_TRUE(near_exact(quantile(x, 0.5), 5.5));
  EXPECT_TRUE(near_exact(quantile(x, 1.0), 10.0));
}

TEST(Descriptive, Mt19937_64IsTheStandardEngine) {
  // C++ standard [rand.predef]: the 10000th output of a default-constructed
  // mt19937_64 is 9981545732273789042. The bootstrap's portability rests on this.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ULL);
}

TEST(Descriptive, UniformIndexIsInRangeAndCoversIt) {
  std::mt19937_64 rng(1);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const auto k = uniform_index(rng, 7);
    ASSERT_LT(k, 7u);
    ++seen[k];
  }
  for (int c : seen) EXPECT_GT(c, 800);  // expected 1000 each; 800 is > 6 sd away
}

TEST(Descriptive, BootstrapIsDeterministicForASeed) {
  const std::vector<double> x = {2.1, 3.4, 1.9, 5.6, 4.4, 3.3, 2.8, 3.9, 4.1, 3.0};
  auto stat = [](std::span<const double> s) { return mean(s); };
  const auto a = bootstrap_ci(x, stat, 0.95, 2000, 42);
  const auto b = bootstrap_ci(x, stat, 0.95, 2000, 42);
  const auto c = bootstrap_ci(x, stat, 0.95, 2000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The percentile interval of the mean brackets the sample mean and lies inside
  // the data range; for this sample the normal interval is 3.45 ± 0.66.
  EXPECT_LT(a[0], mean(x));
  EXPECT_GT(a[1], mean(x));
  EXPECT_GT(a[0], 2.5);
  EXPECT_LT(a[1], 4.4);
}

TEST(Descriptive, BootstrapOfConstantSampleIsDegenerate) {
  const std::vector<double> x(5, 7.0);
  const auto ci = bootstrap_ci(
      x, [](std::span<const double> s) { return median(s); }, 0.9, 100, 1);
  EXPECT_EQ(ci[0], 7.0);
  EXPECT_EQ(ci[1], 7.0);
  EXPECT_THROW(bootstrap_ci(
                   x, [](std::span<const double> s) { return mean(s); }, 0.9, 0, 1),
               std::invalid_argument);
}

TEST(Descriptive, HolmLikeRPAdjust) {
  // R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") = 0.05 0.08 0.09 0.09 0.09.
  const std::vector<double> adj = holm(std::vector<double>{0.01, 0.02, 0.03, 0.04, 0.05});
  const double ref[] = {0.05, 0.08, 0.09, 0.09, 0.09};
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(near(adj[i], ref[i], 1e-15, 0));
  // Input order kept, cap at 1: p = (0.5, 0.001, 0.3) → sorted ×(3, 2, 1):
  // 0.003, 0.6, max(0.6, 0.5) = 0.6.
  const std::vector<double> b = holm(std::vector<double>{0.5, 0.001, 0.3});
  EXPECT_TRUE(near(b[0], 0.6, 1e-15, 0));
  EXPECT_TRUE(near(b[1], 0.003, 1e-15, 0));
  EXPECT_TRUE(near(b[2], 0.6, 1e-15, 0));
  EXPECT_EQ(holm(std::vector<double>{0.9, 0.8})[0], 1.0);
  EXPECT_THROW(holm(std::vector<double>{0.1, std::nan("")}), std::invalid_argument);
}

TEST(Descriptive, EffectSizesByHand) {
  // x = {1, 2, 3}, y = {2, 4}: pairs x > y: (3,2) = 1; ties: (2,2) = 1; of 6.
  // A = (1 + 0.5)/6 = 0.25, rank-biserial = 2A − 1 = −0.5.
  const std::vector<double> x = {1, 2, 3}, y = {2, 4};
  EXPECT_TRUE(near_exact(vargha_delaney_a(x, y), 0.25));
  EXPECT_TRUE(near_exact(rank_biserial(x, y), -0.5));
  EXPECT_TRUE(near_exact(vargha_delaney_a(y, x), 0.75));  // A(y, x) = 1 − A(x, y)
  // Paired d = {1, −2, 3, 0}: ranks of {1, 2, 3} → T+ = 1 + 3 = 4, T− = 2 → r = 2/6.
  EXPECT_TRUE(
      near_exact(matched_pairs_rank_biserial(std::vector<double>{1, -2, 3, 0}, {}), 1.0 / 3.0));
}

// ---- edge cases: each refused with std::invalid_argument naming the function -------

// Runs f, expects std::invalid_argument whose message contains `names`.
template <class F>
void expect_refused(F&& f, const std::string& names) {
  try {
    f();
    ADD_FAILURE() << "expected std::invalid_argument from " << names;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  }
}

TEST(DescriptiveEdges, QuantileOutsideTheUnitInterval) {
  const std::vector<double> x = {3, 1, 2};
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {-1e-12, -0.5, 1.0 + 1e-12, 2.0, inf, -inf, std::nan("")})
    expect_refused([&] { quantile(x, p); }, "quantile");
  EXPECT_EQ(quantile(x, 0.0), 1.0);  // the closed ends stay valid
  EXPECT_EQ(quantile(x, 1.0), 3.0);
  expect_refused([] { quantile(std::vector<double>{}, 0.5); }, "quantile");
}

TEST(DescriptiveEdges, HolmWithPOutsideTheUnitInterval) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {-0.01, 1.01, 7.0, inf, -inf, std::nan("")})
    expect_refused([&] { holm(std::vector<double>{0.01, bad, 0.2}); }, "holm");
  // 0 and 1 are p-values; an empty family adjusts to nothing (R: numeric(0)).
  EXPECT_EQ(holm(std::vector<double>{0.0, 1.0}), (std::vector<double>{0.0, 1.0}));
  EXPECT_TRUE(holm(std::vector<double>{}).empty());
}

TEST(DescriptiveEdges, BootstrapConfidenceLevelOutOfRange) {
  const std::vector<double> x = {1, 2, 3, 4};
  const auto stat = [](std::span<const double> v) { return mean(v); };
  for (double level : {0.0, 1.0, -0.5, 1.5, std::nan("")})
    expect_refused([&] { bootstrap_ci(x, stat, level, 100, 1); }, "bootstrap");
  expect_refused([&] { bootstrap_ci(x, stat, 0.95, 0, 1); }, "bootstrap");
  expect_refused([&] { bootstrap_ci(std::vector<double>{}, stat, 0.95, 100, 1); }, "bootstrap");
  const std::array<double, 2> ci = bootstrap_ci(x, stat, 0.5, 100, 1);  // in range: fine
  EXPECT_LE(ci[0], ci[1]);
}

TEST(DescriptiveEdges, RankBiserialAllZeroDifferencesAndMismatchedLengths) {
  // Every paired difference zero: T⁺ + T⁻ = 0, r = 0/0 (it used to return 0).
  expect_refused(
      [] {
        matched_pairs_rank_biserial(std::vector<double>{0, 0, 0}, {});
      },
      "matched_pairs_rank_biserial");
  expect_refused(
      [] {
        matched_pairs_rank_biserial(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2, 3});
      },
      "matched_pairs_rank_biserial");
  // Paired samples of different lengths.
  expect_refused(
      [] {
        matched_pairs_rank_biserial(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2});
      },
      "differ in length");
  expect_refused([] { matched_pairs_rank_biserial(std::vector<double>{}, {}); },
                 "matched_pairs_rank_biserial");
  // One non-zero difference among zeros is defined: r = ±1.
  EXPECT_EQ(matched_pairs_rank_biserial(std::vector<double>{0, -2, 0}, {}), -1.0);
  // Two-sample: different lengths are the normal case; an empty sample is refused.
  EXPECT_TRUE(
      near_exact(rank_biserial(std::vector<double>{1, 2, 3}, std::vector<double>{2, 4}), -0.5));
  expect_refused(
      [] {
        rank_biserial(std::vector<double>{1, 2}, std::vector<double>{});
      },
      "vargha_delaney_a");
  // All values equal across both samples: every pair a tie, A = ½, r = 0 (defined).
  EXPECT_TRUE(near_exact(rank_biserial(std::vector<double>{5, 5}, std::vector<double>{5}), 0.0));
}

}  // namespace
}  // namespace mare::stats
