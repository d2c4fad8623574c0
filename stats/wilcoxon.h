// Wilcoxon signed-rank and rank-sum (Mann–Whitney) tests, matching R's wilcox.test.
//
// The reference is R (≤ 4.5) wilcox.test with conf.int = TRUE; SciPy's wilcoxon
// supplies the zero methods "pratt" and "zsplit". The rules kept here:
//
//  * Signed rank, d_i = x_i − y_i − mu (or x_i − mu). Statistic V = Σ_{d_i > 0} r_i,
//    r_i the average rank of |d_i|. Zeros: wilcox drops them before ranking (R);
//    pratt ranks them with the rest and then drops their ranks; zsplit ranks them and
//    adds half of each zero's rank to V.
//  * Rank sum: W = Σ ranks of (x − mu) in the pooled sample − n_x(n_x+1)/2.
//  * Method auto: exact when (signed rank) n < 50, no ties and no zeros, or (rank sum)
//    n_x < 50 and n_y < 50 and no ties; otherwise approx. Method exact with ties or
//    zeros falls back to approx with a warning, as R does. Method conditional is the
//    exact permutation distribution given the (tied, doubled) ranks.
//  * Exact two-sided p = min(1, 2·min(P(S <= s), P(S >= s))).
//  * Approx: z = (S − E S − CORRECTION) / σ with CORRECTION = sign(S − E S)·½ for
//    two-sided, +½ for greater, −½ for less (0 without continuity correction), and
//      signed rank (wilcox): E V = n(n+1)/4,  σ² = n(n+1)(2n+1)/24 − Σ(t³−t)/48
//      signed rank (pratt):  E V = (n(n+1) − n₀(n₀+1))/4,
//                            σ² = (n(n+1)(2n+1) − n₀(n₀+1)(2n₀+1))/24 − Σ_{t≠zeros}(t³−t)/48
//      signed rank (zsplit): the wilcox formulas over all n, the zeros a tie group
//      rank sum:             E W = n_x n_y/2,
//                            σ² = n_x n_y/12 · ((N+1) − Σ(t³−t)/(N(N−1))),  N = n_x+n_y
//    p = Φ(z) (less), 1 − Φ(z) (greater), 2·min(Φ(z), 1 − Φ(z)) (two-sided).
//  * Estimate and confidence interval (R's conf.int = TRUE):
//      exact (and conditional): Hodges–Lehmann, the median of the Walsh averages
//      (d_i + d_j)/2, i <= j (signed rank) or of the differences x_i − y_j (rank sum);
//      the interval is [A_(q), A_(M − q + 1)] of the sorted averages A with
//      q = qsignrank(α/2, n) or qwilcox(α/2, n_x, n_y) (α for one-sided bounds), and
//      R's "requested conf.level not achievable" adjustment.
//      ("requested conf.level not achievable": one sample conf.level = 1 − signif(a, 2);
//      two samples "Requested ...", conf.level = 1 − a, as R's two branches differ.)
//      approx: R inverts the normal approximation numerically: the bounds are where the
//      standardised statistic of x − d crosses z_{1−α/2} and z_{α/2}. R uses uniroot
//      with tol = 1e-4; here the step function is bisected to machine precision and the
//      midpoint of its root set is returned, so the two agree to about R's tolerance.
//      R's one-sample safeguards are kept (alpha doubled until the sample range brackets
//      the quantiles; NaN interval, conf.level 0 and the midrange as estimate when all
//      values are equal); R's two-sample root returns a range end when not bracketed.
//      The estimate is the root of the uncorrected statistic, not the HL median.
//    Under method conditional the interval uses the untied quantiles (exact coverage
//    only without ties). The data of the one-sample interval are the differences that
//    are non-zero under mu, shifted back by mu (R), whatever the zero method.
//    Checked against R's src/library/stats/R/wilcox.test.R (R 4.x, 2019 revision).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace mare::stats {

enum class Alternative { two_sided, less, greater };
enum class Method { automatic, exact, approx, conditional };
enum class ZeroMethod { wilcox, pratt, zsplit };

struct TestOptions {
  Alternative alternative = Alternative::two_sided;
  Method method = Method::automatic;
  bool correct = true;                          // continuity correction (approx only)
  ZeroMethod zero_method = ZeroMethod::wilcox;  // signed rank only
  double mu = 0.0;                              // location shift under the null
  double conf_level = 0.95;
  bool conf_int = true;  // compute estimate and interval
};

struct TestResult {
  std::string test;   // "signed-rank" or "rank-sum"
  std::string title;  // R's method line, e.g. "Wilcoxon signed rank exact test"
  Alternative alternative = Alternative::two_sided;
  Method method = Method::exact;  // the method used: exact, approx or conditional
  bool correct = false;           // continuity correction applied
  std::size_t n = 0;              // signed rank: pairs given; rank sum: n_x + n_y
  std::size_t n_used = 0;  // signed rank: differences entering the ranks (zeros dropped by wilcox)
  std::size_t n_zero = 0;  // signed rank: zero differences
  std::size_t n_x = 0, n_y = 0;  // rank sum
  bool ties = false;
  double statistic = 0.0;  // V or W
  double z = 0.0;          // standardised statistic (approx only; NaN otherwise)
  double p_value = 0.0;
  double estimate = 0.0;  // (pseudo)median or difference in location; NaN without conf_int
  std::array<double, 2> conf_int{0.0, 0.0};  // may hold ±infinity for one-sided bounds
  double conf_level = 0.95;                  // achieved level (R lowers it when not achievable)
  std::vector<std::string> warnings;         // R's warnings, same wording
};

// Signed-rank test. y empty: one sample against mu; otherwise paired (sizes must match).
// Throws std::invalid_argument for empty input, non-finite values, unequal lengths or
// all-zero differences.
TestResult signed_rank_test(std::span<const double> x, std::span<const double> y,
                            const TestOptions& options = {});

// Rank-sum (Mann–Whitney) test of x against y. Throws std::invalid_argument for an empty
// sample or non-finite values.
TestResult rank_sum_test(std::span<const double> x, std::span<const double> y,
                         const TestOptions& options = {});

// Hodges–Lehmann estimates: the median of the Walsh averages of x, and the median of
// the pairwise differences x_i − y_j.
double hodges_lehmann(std::span<const double> x);
double hodges_lehmann(std::span<const double> x, std::span<const double> y);

// Names as used on the command line and in JSON ("two-sided", "exact", "zsplit", ...).
std::string to_string(Alternative a);
std::string to_string(Method m);
std::string to_string(ZeroMethod z);
Alternative parse_alternative(const std::string& s);  // throws std::invalid_argument
Method parse_method(const std::string& s);
ZeroMethod parse_zero_method(const std::string& s);

}  // namespace mare::stats
