// Wilcoxon signed-rank and rank-sum tests against published values (R's wilcox.test
// documentation, SciPy's test suite), against brute-force
// enumeration of the permutation distribution, and against properties every correct
// implementation has (p in [0, 1], mirrored one-sided p-values, exact → approx).
//
// Reference values marked "enumeration" came from an independent Python script during
// development (not kept in the repository) that enumerates all 2^n sign vectors or all
// subsets with exact fractions and follows R's qsignrank/qwilcox rule for the
// intervals; its normal-approximation references use math.erfc. Each value is
// commented. stats/reference/wilcoxon_reference.R prints R's own value beside each
// value used here; run with R 4.2.2, every one agreed (its output is
// wilcoxon_reference.out, which the ctest wilcoxon_reference_r compares with R's again).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "stats/wilcoxon.h"
#include "tests/stats/tolerance.h"

namespace mare::stats {
namespace {

using testing::near;
using testing::near_exact;

std::vector<double> draw(std::mt19937_64& rng, int n, double shift, bool ties);

TestOptions opts(Alternative alt, Method m, bool correct = true) {
  TestOptions o;
  o.alternative = alt;
  o.method = m;
  o.correct = correct;
  return o;
}

// ---- published values -------------------------------------------------------------

// One sample (SciPy's test_wilcoxon, from R): d = [6, 8, ..., 75].
const std::vector<double> kOneSample = {6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};

TEST(SignedRankPublished, OneSampleExactTwoSided) {
  const TestResult r = signed_rank_test(kOneSample, {}, {});
  EXPECT_EQ(r.method, Method::exact);  // auto: n = 15 < 50, no ties, no zeros
  EXPECT_EQ(r.statistic, 96.0);
  EXPECT_TRUE(near_exact(r.p_value, 0.041259765625));
  EXPECT_EQ(r.title, "Wilcoxon signed rank exact test");
}

TEST(SignedRankPublished, OneSampleExactGreater) {
  const TestResult r = signed_rank_test(kOneSample, {}, opts(Alternative::greater, Method::exact));
  EXPECT_EQ(r.statistic, 96.0);
  EXPECT_TRUE(near_exact(r.p_value, 0.0206298828125));
}

TEST(SignedRankPublished, OneSampleExactLess) {
  // P(V <= 96) = 32189/32768 = 0.982330322265625 (enumeration); also 1 − P(V >= 97).
  const TestResult r = signed_rank_test(kOneSample, {}, opts(Alternative::less, Method::exact));
  EXPECT_TRUE(near_exact(r.p_value, 0.982330322265625));
}

TEST(SignedRankPublished, OneSampleApproxNoCorrection) {
  const TestResult r =
      signed_rank_test(kOneSample, {}, opts(Alternative::two_sided, Method::approx, false));
  EXPECT_EQ(r.statistic, 96.0);
  EXPECT_TRUE(near_exact(r.p_value, 0.04088813291185591));
  EXPECT_FALSE(r.correct);
  EXPECT_EQ(r.title, "Wilcoxon signed rank test");
}

TEST(SignedRankPublished, OneSampleExactInterval) {
  // Enumeration: q = qsignrank(0.025, 15) = 26, interval = Walsh averages 26 and 95
  // (1-based) = [4, 41.5]; Hodges–Lehmann estimate 25.
  const TestResult r = signed_rank_test(kOneSample, {}, {});
  EXPECT_TRUE(near_exact(r.estimate, 25.0));
  EXPECT_TRUE(near_exact(r.conf_int[0], 4.0));
  EXPECT_TRUE(near_exact(r.conf_int[1], 41.5));
  EXPECT_EQ(r.conf_level, 0.95);
  EXPECT_TRUE(r.warnings.empty());
}

// Paired (R's ?wilcox.test, Hollander & Wolfe depression scale), alternative greater.
const std::vector<double> kDepX = {1.83, .50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
const std::vector<double> kDepY = {.878, .647, .598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};

TEST(SignedRankPublished, PairedGreaterExact) {
  TestOptions o;
  o.alternative = Alternative::greater;
  const TestResult r = signed_rank_test(kDepX, kDepY, o);
  EXPECT_EQ(r.method, Method::exact);
  EXPECT_EQ(r.statistic, 40.0);
  EXPECT_TRUE(near_exact(r.p_value, 0.01953125));
  // R prints "0.175 Inf" and "(pseudo)median 0.46"; enumeration gives the same
  // (q = qsignrank(0.05, 9) = 9). 1e-12 covers the rounding of (d_i + d_j)/2.
  EXPECT_TRUE(near(r.conf_int[0], 0.175, 1e-12, 0));
  EXPECT_TRUE(std::isinf(r.conf_int[1]) && r.conf_int[1] > 0);
  EXPECT_TRUE(near(r.estimate, 0.46, 1e-12, 0));
}

TEST(SignedRankPublished, PairedTwoSidedExactInterval) {
  // Enumeration: q = qsignrank(0.025, 9) = 6, interval [0.01, 0.786].
  const TestResult r = signed_rank_test(kDepX, kDepY, {});
  EXPECT_TRUE(near(r.conf_int[0], 0.01, 1e-12, 0));
  EXPECT_TRUE(near(r.conf_int[1], 0.786, 1e-12, 0));
  // Two-sided p doubles the greater tail: 2·0.01953125.
  EXPECT_TRUE(near_exact(r.p_value, 0.0390625));
}

// Paired, normal approximation (SciPy's test_wilcoxon_arg_type / R).
const std::vector<double> kApproxX = {120, 114, 181, 188, 180, 146, 121, 191, 132, 113, 127, 112};
const std::vector<double> kApproxY = {133, 143, 119, 189, 112, 199, 198, 113, 115, 121, 142, 187};

TEST(SignedRankPublished, PairedApproxWithAndWithoutCorrection) {
  const TestResult plain =
      signed_rank_test(kApproxX, kApproxY, opts(Alternative::two_sided, Method::approx, false));
  EXPECT_EQ(plain.statistic, 34.0);
  EXPECT_TRUE(near_exact(plain.p_value, 0.6948866023724735));
  const TestResult corr =
      signed_rank_test(kApproxX, kApproxY, opts(Alternative::two_sided, Method::approx, true));
  EXPECT_EQ(corr.statistic, 34.0);
  EXPECT_TRUE(near_exact(corr.p_value, 0.7240816609153895));
  EXPECT_TRUE(corr.correct);
  EXPECT_EQ(corr.title, "Wilcoxon signed rank test with continuity correction");
}

// Rank sum (SciPy's test_mannwhitneyu): x = [19, 22, 16, 29, 24], y = [20, 11, 17, 12].
const std::vector<double> kRsX = {19, 22, 16, 29, 24};
const std::vector<double> kRsY = {20, 11, 17, 12};

TEST(RankSumPublished, SmallExactAndApprox) {
  const TestResult exact = rank_sum_test(kRsX, kRsY, {});
  EXPECT_EQ(exact.method, Method::exact);
  EXPECT_EQ(exact.statistic, 17.0);
  EXPECT_TRUE(near_exact(exact.p_value, 0.1111111111111111));
  const TestResult corr = rank_sum_test(kRsX, kRsY, opts(Alternative::two_sided, Method::approx));
  EXPECT_TRUE(near_exact(corr.p_value, 0.11134688653314041));
  // Published to 13 significant digits; 1e-12 absolute covers that rounding.
  const TestResult plain =
      rank_sum_test(kRsX, kRsY, opts(Alternative::two_sided, Method::approx, false));
  EXPECT_TRUE(near(plain.p_value, 0.0864107329737, 1e-12, 0));
  EXPECT_EQ(exact.n_x, 5u);
  EXPECT_EQ(exact.n_y, 4u);
}

// R's ?wilcox.test: x = permeability after, y = before (Hollander & Wolfe).
const std::vector<double> kPermX = {.80, .83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, .73, 1.46};
const std::vector<double> kPermY = {1.15, .88, .90, .74, 1.21};

TEST(RankSumPublished, PermeabilityExactAllAlternatives) {
  // Published to 13 decimals (382/3003 etc.); 1e-12 absolute covers that rounding.
  const TestResult less = rank_sum_test(kPermX, kPermY, opts(Alternative::less, Method::automatic));
  const TestResult greater =
      rank_sum_test(kPermX, kPermY, opts(Alternative::greater, Method::automatic));
  const TestResult two = rank_sum_test(kPermX, kPermY, {});
  EXPECT_EQ(two.statistic, 35.0);
  EXPECT_TRUE(near(less.p_value, 0.8967698967699, 1e-12, 0));
  EXPECT_TRUE(near(greater.p_value, 0.1272061272061, 1e-12, 0));
  EXPECT_TRUE(near(two.p_value, 0.2544122544123, 1e-12, 0));
  // Exact rational: P(W >= 35) = 382/3003.
  EXPECT_TRUE(near(greater.p_value, 382.0 / 3003.0, 1e-15, 0));
}

TEST(RankSumPublished, PermeabilityIntervalAndLargeSampleApprox) {
  // Enumeration: qwilcox(0.025, 10, 5) = 9 → [-0.15, 0.76], estimate 0.305;
  // greater: qwilcox(0.05, 10, 5) = 12 → lower bound -0.08. 1e-12 for rounding of x − y.
  const TestResult two = rank_sum_test(kPermX, kPermY, {});
  EXPECT_TRUE(near(two.estimate, 0.305, 1e-12, 0));
  EXPECT_TRUE(near(two.conf_int[0], -0.15, 1e-12, 0));
  EXPECT_TRUE(near(two.conf_int[1], 0.76, 1e-12, 0));
  const TestResult greater =
      rank_sum_test(kPermX, kPermY, opts(Alternative::greater, Method::exact));
  EXPECT_TRUE(near(greater.conf_int[0], -0.08, 1e-12, 0));
  // R's doc: exact = FALSE, correct = FALSE gives p-value = 0.1103 (4 digits);
  // math.erfc with z = 10/sqrt(200/3) gives 0.11033568095992344.
  const TestResult h_w =
      rank_sum_test(kPermX, kPermY, opts(Alternative::greater, Method::approx, false));
  EXPECT_TRUE(near(h_w.p_value, 0.11033568095992344, 1e-14, 0));
  EXPECT_TRUE(near(h_w.p_value, 0.1103, 5e-5, 0));
}

// ---- ties, zeros and the conditional distribution ----------------------------------

// d has ties (|2| ×3, 4 ×3) and one zero.
const std::vector<double> kTiedD = {1, 2, 2, -3, 4, 4, 4, -5, 6, 0, -2, 7};

TEST(SignedRankTies, AutoFallsBackToApproxWithRWarnings) {
  const TestResult r = signed_rank_test(kTiedD, {}, {});
  EXPECT_EQ(r.method, Method::approx);
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.n_zero, 1u);
  EXPECT_EQ(r.n_used, 11u);
  EXPECT_EQ(r.statistic, 49.0);  // enumeration script, wilcox ranks
  // Normal approximation with tie-corrected variance, continuity corrected (math.erfc).
  EXPECT_TRUE(near(r.p_value, 0.1664816692119594, 1e-14, 0));
  ASSERT_EQ(r.warnings.size(), 4u);
  EXPECT_EQ(r.warnings[0], "cannot compute exact p-value with ties");
  EXPECT_EQ(r.warnings[2], "cannot compute exact p-value with zeroes");
}

TEST(SignedRankTies, ApproxByZeroMethod) {
  // References: SciPy's formulas re-implemented with exact fractions (ref.py).
  struct Case {
    ZeroMethod zm;
    double v, two_plain, two_corr, greater_corr;
  };
  const Case cases[] = {
      {ZeroMethod::wilcox, 49.0, 0.15322569812768455, 0.1664816692119594, 0.0832408346059797},
      {ZeroMethod::pratt, 57.0, 0.14515128094111193, 0.1563371987888462, 0.0781685993944231},
      {ZeroMethod::zsplit, 57.5, 0.14546297863829255, 0.15665811502898475, 0.07832905751449237},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.zm));
    TestOptions o = opts(Alternative::two_sided, Method::approx, false);
    o.zero_method = c.zm;
    const TestResult plain = signed_rank_test(kTiedD, {}, o);
    EXPECT_EQ(plain.statistic, c.v);
    // 1e-14: Python and C++ take the same formula through different erfc/cdf code.
    EXPECT_TRUE(near(plain.p_value, c.two_plain, 1e-14, 0));
    o.correct = true;
    EXPECT_TRUE(near(signed_rank_test(kTiedD, {}, o).p_value, c.two_corr, 1e-14, 0));
    o.alternative = Alternative::greater;
    EXPECT_TRUE(near(signed_rank_test(kTiedD, {}, o).p_value, c.greater_corr, 1e-14, 0));
  }
}

TEST(SignedRankTies, ConditionalMatchesEnumeration) {
  // Enumeration of all 2^11 sign vectors over the tied non-zero ranks.
  struct Case {
    ZeroMethod zm;
    double less, greater, two;
  };
  const Case cases[] = {
      {ZeroMethod::wilcox, 0.927734375, 0.0859375, 0.171875},
      {ZeroMethod::pratt, 0.93408203125, 0.08447265625, 0.1689453125},
      {ZeroMethod::zsplit, 0.93408203125, 0.08447265625, 0.1689453125},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.zm));
    TestOptions o = opts(Alternative::less, Method::conditional);
    o.zero_method = c.zm;
    EXPECT_TRUE(near_exact(signed_rank_test(kTiedD, {}, o).p_value, c.less));
    o.alternative = Alternative::greater;
    EXPECT_TRUE(near_exact(signed_rank_test(kTiedD, {}, o).p_value, c.greater));
    o.alternative = Alternative::two_sided;
    const TestResult r = signed_rank_test(kTiedD, {}, o);
    EXPECT_TRUE(near_exact(r.p_value, c.two));
    EXPECT_EQ(r.method, Method::conditional);
  }
}

TEST(SignedRankTies, BruteForceOracleOnRandomTiedData) {
  // The shift algorithm against direct enumeration of sign vectors, random ties.
  std::mt19937_64 rng(7);
  for (int rep = 0; rep < 20; ++rep) {
    const int n = 4 + rep % 9;
    std::vector<double> d(n);
    for (double& v : d) v = static_cast<double>(static_cast<int>(rng() % 9) - 4);
    if (std::all_of(d.begin(), d.end(), [](double v) { return v == 0; })) d[0] = 1;
    const TestResult r = signed_rank_test(d, {}, opts(Alternative::greater, Method::conditional));
    std::vector<double> nz, ab;
    for (double v : d)
      if (v != 0) nz.push_back(v);
    // Average ranks of |nz| by counting (independent of ranks.cpp).
    std::vector<double> rk(nz.size());
    for (std::size_t i = 0; i < nz.size(); ++i) {
      double less = 0, eq = 0;
      for (double w : nz) {
        less += std::fabs(w) < std::fabs(nz[i]);
        eq += std::fabs(w) == std::fabs(nz[i]);
      }
      rk[i] = less + (eq + 1) / 2;
    }
    double v_obs = 0;
    for (std::size_t i = 0; i < nz.size(); ++i)
      if (nz[i] > 0) v_obs += rk[i];
    long count = 0;
    const long total = 1L << nz.size();
    for (long mask = 0; mask < total; ++mask) {
      double v = 0;
      for (std::size_t i = 0; i < nz.size(); ++i)
        if (mask >> i & 1) v += rk[i];
      count += v >= v_obs;
    }
    EXPECT_EQ(r.statistic, v_obs);
    EXPECT_TRUE(near(r.p_value, static_cast<double>(count) / total, 1e-14, 0));
  }
}

TEST(SignedRankTies, ConditionalEqualsExactWithoutTies) {
  for (Alternative a : {Alternative::two_sided, Alternative::less, Alternative::greater}) {
    const TestResult e = signed_rank_test(kOneSample, {}, opts(a, Method::exact));
    const TestResult c = signed_rank_test(kOneSample, {}, opts(a, Method::conditional));
    EXPECT_TRUE(near(c.p_value, e.p_value, 1e-15, 0));
    EXPECT_EQ(c.conf_int, e.conf_int);
    EXPECT_EQ(c.estimate, e.estimate);
  }
}

// Pooled ranks with ties across and within the samples.
const std::vector<double> kTiedX = {1, 2, 2, 3, 5, 8};
const std::vector<double> kTiedY = {2, 3, 4, 4, 6, 7, 7};

TEST(RankSumTies, AutoApproxAndConditionalEnumeration) {
  const TestResult a = rank_sum_test(kTiedX, kTiedY, {});
  EXPECT_EQ(a.method, Method::approx);
  EXPECT_EQ(a.statistic, 13.5);
  EXPECT_TRUE(near(a.p_value, 0.3126120479134945, 1e-14, 0));  // math.erfc reference
  const TestResult plain =
      rank_sum_test(kTiedX, kTiedY, opts(Alternative::two_sided, Method::approx, false));
  EXPECT_TRUE(near(plain.p_value, 0.2793050615222084, 1e-14, 0));
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_EQ(a.warnings[0], "cannot compute exact p-value with ties");
  // Enumeration of all C(13, 6) = 1716 subsets.
  EXPECT_TRUE(near_exact(
      rank_sum_test(kTiedX, kTiedY, opts(Alternative::less, Method::conditional)).p_value,
      0.15326340326340326));
  EXPECT_TRUE(near_exact(
      rank_sum_test(kTiedX, kTiedY, opts(Alternative::greater, Method::conditional)).p_value,
      0.8583916083916084));
  EXPECT_TRUE(near_exact(
      rank_sum_test(kTiedX, kTiedY, opts(Alternative::two_sided, Method::conditional)).p_value,
      0.30652680652680653));
}

TEST(RankSumTies, ExplicitExactFallsBackLikeR) {
  const TestResult r = rank_sum_test(kTiedX, kTiedY, opts(Alternative::two_sided, Method::exact));
  EXPECT_EQ(r.method, Method::approx);
  EXPECT_EQ(r.warnings.front(), "cannot compute exact p-value with ties");
}

TEST(RankSumTies, ConditionalEqualsExactWithoutTies) {
  for (Alternative a : {Alternative::two_sided, Alternative::less, Alternative::greater}) {
    const TestResult e = rank_sum_test(kPermX, kPermY, opts(a, Method::exact));
    const TestResult c = rank_sum_test(kPermX, kPermY, opts(a, Method::conditional));
    EXPECT_TRUE(near(c.p_value, e.p_value, 1e-14, 0));
    // Same interval rule (untied quantiles on the pairwise differences).
    EXPECT_EQ(c.conf_int, e.conf_int);
    EXPECT_EQ(c.estimate, e.estimate);
  }
}

TEST(RankSumTies, ConditionalIntervalUsesUntiedQuantiles) {
  // Tied data: the interval is R's exact rule, [D_(q), D_(M−q+1)] of the sorted
  // differences with q = qwilcox(0.025, 6, 7) = 7 (enumeration of C(13, 6) subsets).
  const TestResult c =
      rank_sum_test(kTiedX, kTiedY, opts(Alternative::two_sided, Method::conditional));
  std::vector<double> d;
  for (double a : kTiedX)
    for (double b : kTiedY) d.push_back(a - b);
  std::sort(d.begin(), d.end());
  EXPECT_EQ(c.conf_int[0], d[7 - 1]);
  EXPECT_EQ(c.conf_int[1], d[42 - 7]);
}

// ---- mu, estimates, intervals ---------------------------------------------------

TEST(Estimates, HodgesLehmannByHand) {
  // Walsh averages of {1, 2, 4}: 1, 1.5, 2, 2.5, 3, 4 → median 2.25.
  EXPECT_DOUBLE_EQ(hodges_lehmann(std::vector<double>{1, 2, 4}), 2.25);
  // Differences {3,5} − {1,2}: 2, 1, 4, 3 → median 2.5.
  EXPECT_DOUBLE_EQ(hodges_lehmann(std::vector<double>{3, 5}, std::vector<double>{1, 2}), 2.5);
}

TEST(Estimates, MuShiftsTheSignedRankTest) {
  // Testing x against mu equals testing x − mu against 0; the interval is not shifted.
  TestOptions o;
  o.mu = 10;
  std::vector<double> shifted(kOneSample);
  for (double& v : shifted) v -= 10;
  const TestResult a = signed_rank_test(kOneSample, {}, o);
  const TestResult b = signed_rank_test(shifted, {}, {});
  EXPECT_EQ(a.statistic, b.statistic);
  EXPECT_TRUE(near(a.p_value, b.p_value, 1e-15, 0));
  EXPECT_TRUE(near(a.estimate, b.estimate + 10, 1e-12, 0));
  EXPECT_TRUE(near(a.conf_int[0], b.conf_int[0] + 10, 1e-12, 0));
}

// The estimate of the approximate (normal) method, pinned. R's wilcox.test(conf.int =
// TRUE) reports there not the Hodges–Lehmann estimate but the root of the
// standardised statistic W(d) of the data shifted by d, without continuity correction
// (R ≥ 4.0: uniroot(W, c(min, max), tol = 1e-4)$root). W is a step function, so the
// root is either a jump where W changes sign or an interval on which W is exactly 0.
// Our convention: the midpoint of the set where W changes sign, to machine precision
// (step_root in wilcoxon.cpp). It differs from R's printed value in two ways:
//   - at a jump, R stops within its tolerance 1e-4 of the jump (we give the jump);
//   - on an interval where W = 0, R returns whichever point of it uniroot's Brent
//     iteration evaluates first (anywhere inside), we return the midpoint.
// hodges_lehmann() is always the definitional median of the Walsh averages (one
// sample) or of the pairwise differences (two samples), R's exact-case estimate. The
// values below were computed by hand with exact fractions from those definitions
// (stats/reference/wilcoxon_reference.R prints R's for comparison: they agree).
TEST(Estimates, ApproxEstimateIsTheRootOfTheStatisticPinned) {
  // kTiedD without its zero (R drops it): d = {1, 2, 2, −3, 4, 4, 4, −5, 6, −2, 7}.
  // 66 Walsh averages; sorted, the 33rd and 34th are both 2 (the 31st to 35th are
  // 2, 2, 2, 2, 5/2): Hodges–Lehmann = 2.
  const std::vector<double> d = {1, 2, 2, -3, 4, 4, 4, -5, 6, -2, 7};
  EXPECT_EQ(hodges_lehmann(d), 2.0);
  // V⁺(δ) − n(n+1)/4 of d − δ (zeros dropped, average ranks): 3 on (1.5, 2), −1/2 at
  // δ = 2, −2 on (2, 2.5): W jumps from positive to negative at exactly 2, so the
  // root is 2; R prints 2 up to uniroot's 1e-4.
  const TestResult r = signed_rank_test(kTiedD, {}, {});
  ASSERT_EQ(r.method, Method::approx);
  EXPECT_NEAR(r.estimate, 2.0, 1e-12);
  EXPECT_LT(r.conf_int[0], r.estimate);
  EXPECT_LT(r.estimate, r.conf_int[1]);

  // Two samples kTiedX − kTiedY: 42 differences; sorted, the 19th to 24th are
  // −2, −2, −2, −1, −1, −1, so Hodges–Lehmann = (−2 + −1)/2 = −3/2.
  EXPECT_EQ(hodges_lehmann(kTiedX, kTiedY), -1.5);
  // R_x(δ) − n_x(n_x+1)/2 − n_x n_y/2 of (x − δ, y): 7/2 at δ = −2, exactly 0 on the
  // whole open interval (−2, −1), −3 at δ = −1. Our root: the midpoint, −3/2 (here equal
  // to Hodges–Lehmann); R's: the first point of (−2, −1) that uniroot evaluates.
  const TestResult s = rank_sum_test(kTiedX, kTiedY, {});
  ASSERT_EQ(s.method, Method::approx);
  EXPECT_NEAR(s.estimate, -1.5, 1e-12);
  EXPECT_LT(s.conf_int[0], s.estimate);
  EXPECT_LT(s.estimate, s.conf_int[1]);

  // No ties, approx forced on kOneSample (120 Walsh averages, the 60th and 61st are
  // 49/2 and 51/2): Hodges–Lehmann 25; W is 1/2 at 24.5, exactly 0 on (24.5, 25.5), −1/2
  // at 25.5; our root is the midpoint 25; R's estimate lies somewhere in [24.5, 25.5].
  EXPECT_EQ(hodges_lehmann(kOneSample), 25.0);
  const TestResult a =
      signed_rank_test(kOneSample, {}, opts(Alternative::two_sided, Method::approx));
  EXPECT_NEAR(a.estimate, 25.0, 1e-12);
  // The exact method reports Hodges–Lehmann itself.
  EXPECT_EQ(signed_rank_test(kOneSample, {}, {}).estimate, 25.0);
}

TEST(Estimates, ApproxIntervalIsWhereTheStatisticCrossesTheQuantile) {
  // For large untied samples the approximate interval must be close to the exact
  // one (both invert the same test): within a few Walsh-average spacings.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g(0.3, 1.0);
  std::vector<double> x(60);
  for (double& v : x) v = g(rng);
  const TestResult e = signed_rank_test(x, {}, opts(Alternative::two_sided, Method::exact));
  const TestResult a = signed_rank_test(x, {}, opts(Alternative::two_sided, Method::approx));
  EXPECT_NEAR(a.conf_int[0], e.conf_int[0], 0.05);
  EXPECT_NEAR(a.conf_int[1], e.conf_int[1], 0.05);
  EXPECT_NEAR(a.estimate, e.estimate, 0.02);
}

TEST(Estimates, ApproxBoundsAreWhereTheTestStatisticCrossesItsQuantile) {
  // R's approximate interval is {d : the test of mu = d is not rejected}: at the lower
  // bound l the standardised statistic of x − d crosses z_{1−α/2} (it decreases in d),
  // at the upper bound u it crosses z_{α/2}. Checked through the test's own z at
  // mu = bound ∓ δ, an independent path from the interval's root finder. Tied data.
  const double z975 = 1.959963984540054;  // qnorm(0.975)
  std::mt19937_64 rng(21);
  for (int rep = 0; rep < 5; ++rep) {
    // R builds the interval from the differences that are non-zero under mu = 0, so
    // the identity holds for data without exact zeros: drop them.
    std::vector<double> x;
    for (double v : draw(rng, 25 + rep, 0.4, true))
      if (v != 0) x.push_back(v);
    std::vector<double> y = draw(rng, 20, 0.0, true);
    const TestResult sr = signed_rank_test(x, {}, {});
    const TestResult rs = rank_sum_test(x, y, {});
    ASSERT_EQ(sr.method, Method::approx);
    ASSERT_EQ(rs.method, Method::approx);
    const double delta = 1e-7;
    auto z_sr = [&](double mu) {
      TestOptions o;
      o.mu = mu;
      o.conf_int = false;
      return signed_rank_test(x, {}, o).z;
    };
    auto z_rs = [&](double mu) {
      TestOptions o;
      o.mu = mu;
      o.conf_int = false;
      return rank_sum_test(x, y, o).z;
    };
    EXPECT_GT(z_sr(sr.conf_int[0] - delta), z975);
    EXPECT_LE(z_sr(sr.conf_int[0] + delta), z975);
    EXPECT_GE(z_sr(sr.conf_int[1] - delta), -z975);
    EXPECT_LT(z_sr(sr.conf_int[1] + delta), -z975);
    EXPECT_GT(z_rs(rs.conf_int[0] - delta), z975);
    EXPECT_LE(z_rs(rs.conf_int[0] + delta), z975);
    EXPECT_GE(z_rs(rs.conf_int[1] - delta), -z975);
    EXPECT_LT(z_rs(rs.conf_int[1] + delta), -z975);
  }
}

TEST(Estimates, UnachievableConfLevelIsReportedLikeR) {
  // n = 3: the smallest two-sided exact alpha is 2/8 = 0.25 > 0.05·1.5.
  const TestResult r = signed_rank_test(std::vector<double>{1.5, 2.5, 4.0}, {}, {});
  EXPECT_EQ(r.method, Method::exact);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_EQ(r.warnings.back(), "requested conf.level not achievable");
  EXPECT_TRUE(near_exact(r.conf_level, 0.75));  // 1 − signif(2·P(V <= 0), 2) = 1 − 0.25
  EXPECT_TRUE(near_exact(r.conf_int[0], 1.5));  // q = 1: smallest and largest average
  EXPECT_TRUE(near_exact(r.conf_int[1], 4.0));
}

TEST(Estimates, RankSumUnachievableConfLevelIsReportedLikeR) {
  // n_x = n_y = 2: the smallest two-sided exact alpha is 2·P(W <= 0) = 2/6. R's two-sample
  // branch says "Requested ..." and sets conf.level = 1 − achieved (no signif()).
  // Differences {1,2} − {3,4} sorted: −3, −2, −2, −1; q = 1 → [−3, −1].
  const TestResult r = rank_sum_test(std::vector<double>{1, 2}, std::vector<double>{3, 4}, {});
  EXPECT_EQ(r.method, Method::exact);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_EQ(r.warnings.back(), "Requested conf.level not achievable");
  EXPECT_TRUE(near_exact(r.conf_level, 1.0 - 1.0 / 3.0));
  EXPECT_EQ(r.conf_int[0], -3.0);
  EXPECT_EQ(r.conf_int[1], -1.0);
  EXPECT_EQ(r.estimate, -2.0);
  EXPECT_TRUE(near_exact(r.p_value, 1.0 / 3.0));  // 2·P(W <= 0) = 2/6
}

TEST(Estimates, AllEqualValuesGiveRsUndefinedInterval) {
  // Signed rank on {2, 2, 2}: approx (ties); R's W(d) is 0/0 at the range ends, so the
  // interval is NaN with conf.level 0 and the estimate the midrange, plus a warning.
  const TestResult r = signed_rank_test(std::vector<double>{2, 2, 2}, {}, {});
  EXPECT_EQ(r.method, Method::approx);
  EXPECT_TRUE(std::isnan(r.conf_int[0]) && std::isnan(r.conf_int[1]));
  EXPECT_EQ(r.conf_level, 0.0);
  EXPECT_EQ(r.estimate, 2.0);
  EXPECT_EQ(r.warnings.back(),
            "cannot compute confidence interval when all observations are zero or tied");
  // V = 6 of 6, z = (6 − 3 − ½)/sqrt(3·4·7/24 − 24/48) = 2.5/sqrt(3): p = 2(1 − Φ(1.4434)).
  EXPECT_TRUE(near(r.p_value, 0.14891467317876567, 1e-14, 0));  // math.erfc reference
  // Rank sum with every pooled value equal: zero variance, refused.
  EXPECT_THROW(rank_sum_test(std::vector<double>{1, 1}, std::vector<double>{1, 1, 1}, {}),
               std::invalid_argument);
}

TEST(Estimates, OneSidedApproxBoundsCrossTheirQuantile) {
  const double z95 = 1.6448536269514722;  // qnorm(0.95)
  std::mt19937_64 rng(8);
  std::vector<double> x;
  for (double v : draw(rng, 30, 0.3, true))
    if (v != 0) x.push_back(v);
  const std::vector<double> y = draw(rng, 25, 0.0, true);
  auto z_at = [&](bool paired, Alternative a, double mu) {
    TestOptions o;
    o.alternative = a;
    o.mu = mu;
    o.conf_int = false;
    return paired ? signed_rank_test(x, {}, o).z : rank_sum_test(x, y, o).z;
  };
  const double delta = 1e-7;
  for (bool paired : {true, false}) {
    SCOPED_TRACE(paired ? "signed rank" : "rank sum");
    const TestResult g = paired
                             ? signed_rank_test(x, {}, opts(Alternative::greater, Method::approx))
                             : rank_sum_test(x, y, opts(Alternative::greater, Method::approx));
    const TestResult l = paired ? signed_rank_test(x, {}, opts(Alternative::less, Method::approx))
                                : rank_sum_test(x, y, opts(Alternative::less, Method::approx));
    EXPECT_TRUE(std::isinf(g.conf_int[1]) && std::isinf(l.conf_int[0]));
    EXPECT_GT(z_at(paired, Alternative::greater, g.conf_int[0] - delta), z95);
    EXPECT_LE(z_at(paired, Alternative::greater, g.conf_int[0] + delta), z95);
    EXPECT_GE(z_at(paired, Alternative::less, l.conf_int[1] - delta), -z95);
    EXPECT_LT(z_at(paired, Alternative::less, l.conf_int[1] + delta), -z95);
  }
}

// ---- input validation ------------------------------------------------------------

TEST(Validation, RefusesBadInput) {
  const std::vector<double> nan = {1, std::nan(""), 3};
  EXPECT_THROW(signed_rank_test(std::vector<double>{}, {}, {}), std::invalid_argument);
  EXPECT_THROW(signed_rank_test(std::vector<double>{1, 2}, std::vector<double>{1}, {}),
               std::invalid_argument);
  EXPECT_THROW(signed_rank_test(nan, {}, {}), std::invalid_argument);
  EXPECT_THROW(signed_rank_test(std::vector<double>{0, 0}, {}, {}), std::invalid_argument);
  EXPECT_THROW(rank_sum_test(nan, kRsY, {}), std::invalid_argument);
  EXPECT_THROW(rank_sum_test(kRsX, std::vector<double>{}, {}), std::invalid_argument);
  TestOptions bad;
  bad.conf_level = 1.0;
  EXPECT_THROW(rank_sum_test(kRsX, kRsY, bad), std::invalid_argument);
  EXPECT_THROW(parse_method("fast"), std::invalid_argument);
  EXPECT_EQ(parse_alternative("two.sided"), Alternative::two_sided);
  EXPECT_EQ(parse_zero_method("zsplit"), ZeroMethod::zsplit);
}

// ---- properties ----------------------------------------------------------------------

std::vector<double> draw(std::mt19937_64& rng, int n, double shift, bool ties) {
  std::normal_distribution<double> g(shift, 1.0);
  std::vector<double> v(n);
  for (double& a : v) a = ties ? std::round(2 * g(rng)) / 2 : g(rng);
  return v;
}

TEST(Properties, PValuesInUnitIntervalAndSwapMirrorsOneSided) {
  std::mt19937_64 rng(2024);
  const Method methods[] = {Method::automatic, Method::exact, Method::approx, Method::conditional};
  for (int rep = 0; rep < 30; ++rep) {
    const bool ties = rep % 2;
    const int nx = 2 + rep % 11, ny = 3 + (rep * 7) % 13;
    const std::vector<double> x = draw(rng, nx, 0.2 * (rep % 4), ties);
    const std::vector<double> y = draw(rng, ny, 0.0, ties);
    const std::vector<double> yp = draw(rng, nx, 0.0, ties);
    for (Method m : methods) {
      for (bool corr : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "rep " << rep << " method " << to_string(m));
        for (Alternative a : {Alternative::two_sided, Alternative::less, Alternative::greater}) {
          const double p1 = rank_sum_test(x, y, opts(a, m, corr)).p_value;
          EXPECT_TRUE(p1 >= 0 && p1 <= 1) << p1;
          bool all_zero = true;
          for (int i = 0; i < nx; ++i) all_zero = all_zero && x[i] == yp[i];
          if (!all_zero) {
            const double p2 = signed_rank_test(x, yp, opts(a, m, corr)).p_value;
            EXPECT_TRUE(p2 >= 0 && p2 <= 1) << p2;
          }
        }
        // less(x, y) == greater(y, x); the continuity correction mirrors too.
        EXPECT_TRUE(near(rank_sum_test(x, y, opts(Alternative::less, m, corr)).p_value,
                         rank_sum_test(y, x, opts(Alternative::greater, m, corr)).p_value, 1e-13,
                         0));
        EXPECT_TRUE(near(rank_sum_test(x, y, opts(Alternative::two_sided, m, corr)).p_value,
                         rank_sum_test(y, x, opts(Alternative::two_sided, m, corr)).p_value, 1e-13,
                         0));
        bool all_zero = true;
        for (int i = 0; i < nx; ++i) all_zero = all_zero && x[i] == yp[i];
        if (!all_zero) {
          EXPECT_TRUE(near(signed_rank_test(x, yp, opts(Alternative::less, m, corr)).p_value,
                           signed_rank_test(yp, x, opts(Alternative::greater, m, corr)).p_value,
                           1e-13, 0));
        }
      }
    }
  }
}

TEST(Properties, ExactAndApproxConvergeAsNGrows) {
  // Same standardised shift at each n; |p_exact − p_approx(corrected)| must shrink.
  std::mt19937_64 rng(5);
  double prev_sr = 1.0, prev_rs = 1.0;
  for (int n : {10, 40, 160, 640}) {
    const std::vector<double> x = draw(rng, n, 1.0 / std::sqrt(n), false);
    const std::vector<double> y = draw(rng, n, 0.0, false);
    const double sr =
        std::fabs(signed_rank_test(x, {}, opts(Alternative::two_sided, Method::exact)).p_value -
                  signed_rank_test(x, {}, opts(Alternative::two_sided, Method::approx)).p_value);
    const double rs =
        std::fabs(rank_sum_test(x, y, opts(Alternative::two_sided, Method::exact)).p_value -
                  rank_sum_test(x, y, opts(Alternative::two_sided, Method::approx)).p_value);
    // Allow a little non-monotonicity from sampling, but the trend must be downwards.
    EXPECT_LT(sr, std::max(prev_sr, 0.02));
    EXPECT_LT(rs, std::max(prev_rs, 0.02));
    prev_sr = sr;
    prev_rs = rs;
  }
  EXPECT_LT(prev_sr, 1e-3);
  EXPECT_LT(prev_rs, 1e-3);
}

TEST(Properties, RankSumExactWithOneThousandObservations) {
  // n = n_x + n_y = 1000 (500 + 500) is still computed exactly, and agrees with the
  // corrected normal approximation to 1e-3. (Its cost is measured by stats/bench_wilcoxon,
  // not asserted here.)
  std::mt19937_64 rng(99);
  const std::vector<double> x = draw(rng, 500, 0.05, false);
  const std::vector<double> y = draw(rng, 500, 0.0, false);
  const TestResult e = rank_sum_test(x, y, opts(Alternative::two_sided, Method::exact));
  EXPECT_EQ(e.method, Method::exact);
  const TestResult a = rank_sum_test(x, y, opts(Alternative::two_sided, Method::approx));
  EXPECT_TRUE(near(e.p_value, a.p_value, 1e-3, 0)) << e.p_value << " vs " << a.p_value;
}

TEST(Properties, RankSumExactTooLargeFallsBackWithAWarning) {
  // 1000 × 1000 is past the exact path's accuracy check: approx, and a warning says so.
  std::mt19937_64 rng(3);
  const std::vector<double> x = draw(rng, 1000, 0.0, false);
  const std::vector<double> y = draw(rng, 1000, 0.0, false);
  const TestResult r = rank_sum_test(x, y, opts(Alternative::two_sided, Method::exact));
  EXPECT_EQ(r.method, Method::approx);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("lost precision"), std::string::npos);
}

}  // namespace
}  // namespace mare::stats
