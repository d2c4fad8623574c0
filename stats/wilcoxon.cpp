// Wilcoxon signed-rank and rank-sum tests, estimates and intervals (see wilcoxon.h).
#include "stats/wilcoxon.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>

#include "stats/distributions.h"
#include "stats/ranks.h"

namespace mare::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Φ(z) and 1 − Φ(z), each accurate in its own tail (R: pnorm, lower.tail).
double pnorm_lower(double z) {
  return boost::math::cdf(boost::math::normal_distribution<double>(), z);
}
double pnorm_upper(double z) {
  return boost::math::cdf(boost::math::complement(boost::math::normal_distribution<double>(), z));
}
// Φ⁻¹(p), with ±∞ outside (0, 1) as R's qnorm.
double qnorm(double p) {
  if (p <= 0.0) return -kInf;
  if (p >= 1.0) return kInf;
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

// R's signif(x, digits).
double signif(double x, int digits) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  const double e = std::floor(std::log10(std::fabs(x)));
  const double scale = std::pow(10.0, digits - 1 - e);
  return std::round(x * scale) / scale;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void check_finite(std::span<const double> v, const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      throw std::invalid_argument(std::string(what) + "[" + std::to_string(i) +
                                  "] is not a finite number");
    }
  }
}

// Continuity correction: sign(z)·½ two-sided, +½ greater, −½ less, 0 when off.
double continuity(Alternative alt, double z0, bool correct) {
  if (!correct) return 0.0;
  switch (alt) {
    case Alternative::two_sided:
      return z0 > 0 ? 0.5 : (z0 < 0 ? -0.5 : 0.0);
    case Alternative::greater:
      return 0.5;
    case Alternative::less:
      return -0.5;
  }
  return 0.0;
}

// Normal p-value of a standardised statistic.
double normal_p(Alternative alt, double z) {
  switch (alt) {
    case Alternative::less:
      return pnorm_lower(z);
    case Alternative::greater:
      return pnorm_upper(z);
    case Alternative::two_sided:
      return 2.0 * std::min(pnorm_lower(z), pnorm_upper(z));
  }
  return kNaN;
}

// Exact p-value of an integer-valued statistic s from its null pmf; two-sided is
// min(1, 2·min(P(S <= s), P(S >= s))), which for a symmetric pmf is R's rule of
// doubling the tail on the side of s from the centre.
double exact_p(Alternative alt, std::span<const double> pmf, std::int64_t s) {
  switch (alt) {
    case Alternative::less:
      return lower_tail(pmf, s);
    case Alternative::greater:
      return upper_tail(pmf, s);
    case Alternative::two_sided:
      return std::min(1.0, 2.0 * std::min(lower_tail(pmf, s), upper_tail(pmf, s)));
  }
  return kNaN;
}

// Interval from sorted averages A (size M) and the exact null pmf (R's conf.int rule):
// q = quantile(α/2) (α one-sided), bounds A_(q) and A_(M − q + 1), 1-based.
void exact_interval(const std::vector<double>& sorted, std::span<const double> pmf,
                    const TestOptions& o, TestResult& r, bool two_sample) {
  const std::int64_t big_m = static_cast<std::int64_t>(sorted.size());
  const double alpha = 1.0 - o.conf_level;
  double achieved = 0.0;
  std::int64_t qu =
      symmetric_quantile(pmf, o.alternative == Alternative::two_sided ? alpha / 2 : alpha);
  if (qu == 0) qu = 1;
  const std::int64_t ql = big_m - qu;
  switch (o.alternative) {
    case Alternative::two_sided:
      achieved = 2.0 * lower_tail(pmf, qu - 1);
      r.conf_int = {sorted[qu - 1], sorted[ql]};
      break;
    case Alternative::greater:
      achieved = lower_tail(pmf, qu - 1);
      r.conf_int = {sorted[qu - 1], kInf};
      break;
    case Alternative::less:
      achieved = lower_tail(pmf, qu - 1);
      r.conf_int = {-kInf, sorted[ql]};
      break;
  }
  r.conf_level = o.conf_level;
  // R's wording and rounding differ between its one- and two-sample branches.
  if (achieved - alpha > alpha / 2) {
    if (two_sample) {
      r.warnings.push_back("Requested conf.level not achievable");
      r.conf_level = 1.0 - achieved;
    } else {
      r.warnings.push_back("requested conf.level not achievable");
      r.conf_level = 1.0 - signif(achieved, 2);
    }
  }
  r.estimate = median_of(sorted);
}

// Root of a non-increasing step function f on [lo, hi]: lo if f(lo) <= 0, hi if
// f(hi) >= 0, otherwise the midpoint of the set where f changes sign, located by
// bisection to machine precision from both sides. (R: uniroot, tol = 1e-4.)
double step_root(const std::function<double(double)>& f, double lo, double hi) {
  if (f(lo) <= 0) return lo;
  if (f(hi) >= 0) return hi;
  auto bisect = [&](bool strict_left) {
    double a = lo, b = hi;
    for (int it = 0; it < 200; ++it) {
      const double mid = 0.5 * (a + b);
      if (mid <= a || mid >= b) break;
      const double v = f(mid);
      // strict_left: boundary of {f > 0}; otherwise boundary of {f >= 0}.
      const bool left = strict_left ? (v > 0) : (v >= 0);
      (left ? a : b) = mid;
    }
    return 0.5 * (a + b);
  };
  return 0.5 * (bisect(true) + bisect(false));
}

// R's method line for the test named `test` ("signed rank", "rank sum").
std::string test_title(const std::string& test, Method m, bool correct) {
  const std::string name = "Wilcoxon " + test;
  switch (m) {
    case Method::exact:
      return name + " exact test";
    case Method::conditional:
      return name + " exact conditional test";
    default:
      return name + (correct ? " test with continuity correction" : " test");
  }
}

void check_conf_level(double c) {
  if (!(c > 0.0 && c < 1.0)) throw std::invalid_argument("conf_level must lie in (0, 1)");
}

// R's asymptotic one-sample interval and estimate on the non-zero values v (already +mu),
// following R 4.x's wilcox.test: W(d) is the standardised statistic of v − d (zeros
// dropped, tie-corrected, continuity-corrected unless for the estimate); alpha is doubled
// until the sample range brackets the quantiles ("requested conf.level not achievable");
// when W is undefined at the range ends (all values equal) the interval is NaN with
// conf.level 0 and the estimate the midrange, as in R.
void signed_rank_approx_interval(const std::vector<double>& v, const TestOptions& o,
                                 TestResult& r) {
  bool corr = o.correct;
  auto w_of = [&](double d) {
    std::vector<double> xd;
    xd.reserve(v.size());
    for (double a : v)
      if (a - d != 0.0) xd.push_back(a - d);
    if (xd.empty()) return kNaN;  // R: 0/0
    const double nx = static_cast<double>(xd.size());
    std::vector<double> ab(xd.size());
    for (std::size_t i = 0; i < xd.size(); ++i) ab[i] = std::fabs(xd[i]);
    const Ranking rk = average_ranks(ab);
    double vplus = 0.0;
    for (std::size_t i = 0; i < xd.size(); ++i)
      if (xd[i] > 0) vplus += rk.ranks[i];
    // zd = V⁺ − n(n+1)/4,  σ² = n(n+1)(2n+1)/24 − Σ(t³−t)/48 (> 0 for n >= 1).
    const double zd = vplus - nx * (nx + 1) / 4;
    const double sigma = std::sqrt(nx * (nx + 1) * (2 * nx + 1) / 24 - tie_term(rk.tie_sizes) / 48);
    return (zd - continuity(o.alternative, zd, corr)) / sigma;
  };
  const double mumin = *std::min_element(v.begin(), v.end());
  const double mumax = *std::max_element(v.begin(), v.end());
  const double w_min = w_of(mumin);
  const double w_max = std::isfinite(w_min) ? w_of(mumax) : kNaN;
  r.conf_level = o.conf_level;
  if (!std::isfinite(w_min) || !std::isfinite(w_max)) {
    r.warnings.push_back(
        "cannot compute confidence interval when all observations are zero or tied");
    r.conf_int = {o.alternative == Alternative::less ? -kInf : kNaN,
                  o.alternative == Alternative::greater ? kInf : kNaN};
    r.conf_level = 0.0;
    r.estimate = (mumin + mumax) / 2;  // R: midrange
    return;
  }
  auto root = [&](double zq) {
    return step_root(
        [&](double d) { return d == mumin   ? w_min - zq
                               : d == mumax ? w_max - zq
                                            : w_of(d) - zq; },
        mumin, mumax);
  };
  const double median_v = median_of(v);
  double alpha = 1.0 - o.conf_level;
  auto not_achievable = [&] {
    if (alpha >= 1 || 1 - o.conf_level < alpha * 0.75) {
      r.conf_level = 1 - std::min(1.0, alpha);
      r.warnings.push_back("requested conf.level not achievable");
    }
  };
  switch (o.alternative) {
    case Alternative::two_sided:
      // Widen alpha until both limits are bracketed by the sample range (R).
      while (w_min - qnorm(1.0 - alpha / 2) < 0 || w_max - qnorm(alpha / 2) > 0) alpha *= 2;
      not_achievable();
      if (alpha < 1) {
        r.conf_int = {root(qnorm(1.0 - alpha / 2)), root(qnorm(alpha / 2))};
      } else {
        r.conf_int = {median_v, median_v};
      }
      break;
    case Alternative::greater:
      while (w_min - qnorm(1.0 - alpha) < 0) alpha *= 2;
      not_achievable();
      r.conf_int = {alpha < 1 ? root(qnorm(1.0 - alpha)) : median_v, kInf};
      break;
    case Alternative::less:
      // R compares with qnorm(alpha/2) here (not qnorm(alpha)); kept for fidelity.
      while (w_max - qnorm(alpha / 2) > 0) alpha *= 2;
      not_achievable();
      r.conf_int = {-kInf, alpha < 1 ? root(qnorm(alpha)) : median_v};
      break;
  }
  corr = false;  // no continuity correction for the estimate (R)
  r.estimate = step_root([&](double d) { return w_of(d); }, mumin, mumax);
}

// R's asymptotic two-sample interval and estimate for the shift of x against y.
void rank_sum_approx_interval(std::span<const double> x, std::span<const double> y,
                              const TestOptions& o, TestResult& r) {
  bool corr = o.correct;
  const double nx = static_cast<double>(x.size()), ny = static_cast<double>(y.size());
  auto w_of = [&](double d) {
    std::vector<double> pooled;
    pooled.reserve(x.size() + y.size());
    for (double a : x) pooled.push_back(a - d);
    pooled.insert(pooled.end(), y.begin(), y.end());
    const Ranking rk = average_ranks(pooled);
    double rx = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) rx += rk.ranks[i];
    const double dz = rx - nx * (nx + 1) / 2 - nx * ny / 2;
    const double big_n = nx + ny;
    const double sigma =
        std::sqrt((nx * ny / 12) * ((big_n + 1) - tie_term(rk.tie_sizes) / (big_n * (big_n - 1))));
    if (sigma == 0.0) {
      throw std::invalid_argument(
          "cannot compute confidence interval when all observations are tied");
    }
    return (dz - continuity(o.alternative, dz, corr)) / sigma;
  };
  const double mumin =
      *std::min_element(x.begin(), x.end()) - *std::max_element(y.begin(), y.end());
  const double mumax =
      *std::max_element(x.begin(), x.end()) - *std::min_element(y.begin(), y.end());
  auto root = [&](double zq) {
    return step_root([&](double d) { return w_of(d) - zq; }, mumin, mumax);
  };
  const double alpha = 1.0 - o.conf_level;
  r.conf_level = o.conf_level;
  switch (o.alternative) {
    case Alternative::two_sided:
      r.conf_int = {root(qnorm(1.0 - alpha / 2)), root(qnorm(alpha / 2))};
      break;
    case Alternative::greater:
      r.conf_int = {root(qnorm(1.0 - alpha)), kInf};
      break;
    case Alternative::less:
      r.conf_int = {-kInf, root(qnorm(alpha))};
      break;
  }
  corr = false;  // no continuity correction for the estimate (R)
  r.estimate = step_root([&](double d) { return w_of(d); }, mumin, mumax);
}

// Runs a conditional-distribution computation; a refusal for size gets a hint.
template <class F>
std::vector<double> with_hint(F&& f) {
  try {
    return f();
  } catch (const std::length_error& e) {
    throw std::length_error(std::string(e.what()) + "; use the approx method");
  }
}

std::vector<double> walsh_averages_sorted(std::span<const double> v) {
  std::vector<double> a;
  a.reserve(v.size() * (v.size() + 1) / 2);
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i; j < v.size(); ++j) a.push_back((v[i] + v[j]) / 2);
  std::sort(a.begin(), a.end());
  return a;
}

std::vector<double> differences_sorted(std::span<const double> x, std::span<const double> y) {
  std::vector<double> a;
  a.reserve(x.size() * y.size());
  for (double xi : x)
    for (double yj : y) a.push_back(xi - yj);
  std::sort(a.begin(), a.end());
  return a;
}

}  // namespace

namespace {

// What both tests check of their input, and their result before the test: no
// statistic, estimate or interval yet (NaN).
TestResult begin_test(const char* name, std::span<const double> x, std::span<const double> y,
                      const TestOptions& o) {
  check_finite(x, "x");
  check_finite(y, "y");
  if (!std::isfinite(o.mu)) throw std::invalid_argument("mu must be finite");
  check_conf_level(o.conf_level);
  TestResult r;
  r.test = name;
  r.alternative = o.alternative;
  r.z = kNaN;
  r.estimate = kNaN;
  r.conf_int = {kNaN, kNaN};
  r.conf_level = o.conf_level;
  return r;
}

}  // namespace

TestResult signed_rank_test(std::span<const double> x, std::span<const double> y,
                            const TestOptions& o) {
  if (x.empty()) throw std::invalid_argument("signed-rank test: empty sample");
  if (!y.empty() && y.size() != x.size()) {
    throw std::invalid_argument("signed-rank test: paired samples differ in length (" +
                                std::to_string(x.size()) + " and " + std::to_string(y.size()) +
                                ")");
  }
  TestResult r = begin_test("signed-rank", x, y, o);
  r.n = x.size();

  // d_i = x_i − y_i − mu.
  std::vector<double> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) d[i] = x[i] - (y.empty() ? 0.0 : y[i]) - o.mu;
  std::vector<double> nonzero;
  for (double v : d)
    if (v != 0.0) nonzero.push_back(v);
  r.n_zero = d.size() - nonzero.size();
  if (nonzero.empty()) throw std::invalid_argument("signed-rank test: all differences are zero");

  // Ranks of |d|: over the non-zero values (wilcox) or over all values (pratt, zsplit).
  const bool keep_zeros = o.zero_method != ZeroMethod::wilcox;
  const std::vector<double>& ranked = keep_zeros ? d : nonzero;
  std::vector<double> absval(ranked.size());
  for (std::size_t i = 0; i < ranked.size(); ++i) absval[i] = std::fabs(ranked[i]);
  const Ranking rk = average_ranks(absval);
  r.n_used = ranked.size();

  double v_stat = 0.0, zero_rank_sum = 0.0;
  std::vector<double> nonzero_ranks;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i] > 0) v_stat += rk.ranks[i];
    if (ranked[i] == 0) {
      zero_rank_sum += rk.ranks[i];
    } else {
      nonzero_ranks.push_back(rk.ranks[i]);
    }
  }
  if (o.zero_method == ZeroMethod::zsplit) v_stat += zero_rank_sum / 2;
  r.statistic = v_stat;

  // Tie groups among the non-zero |d| (the zeros, when ranked, form the group at 0).
  std::vector<double> abs_nonzero(nonzero.size());
  for (std::size_t i = 0; i < nonzero.size(); ++i) abs_nonzero[i] = std::fabs(nonzero[i]);
  const std::vector<std::size_t> nz_ties = average_ranks(abs_nonzero).tie_sizes;
  r.ties = !nz_ties.empty();
  const bool zeros = r.n_zero > 0;
  const std::size_t n_nz = nonzero.size();

  // Method (R: exact <- n < 50 by default; ties or zeros force the approximation).
  Method m = o.method;
  if (m == Method::automatic || m == Method::exact) {
    const bool want_exact = (m == Method::exact) || n_nz < 50;
    if (want_exact && !r.ties && !zeros) {
      m = Method::exact;
    } else {
      if (want_exact && r.ties) {
        r.warnings.push_back("cannot compute exact p-value with ties");
        if (o.conf_int) r.warnings.push_back("cannot compute exact confidence interval with ties");
      }
      if (want_exact && zeros) {
        r.warnings.push_back("cannot compute exact p-value with zeroes");
        if (o.conf_int) {
          r.warnings.push_back("cannot compute exact confidence interval with zeroes");
        }
      }
      m = Method::approx;
    }
  }
  // The exact distribution; past its work limit (n in the thousands) the approximation
  // is used, with a warning.
  std::vector<double> exact_pmf;
  if (m == Method::exact) {
    try {
      exact_pmf = signed_rank_pmf(static_cast<int>(n_nz));
    } catch (const std::length_error& e) {
      r.warnings.push_back(std::string(e.what()) + "; using the normal approximation");
      m = Method::approx;
    }
  }
  r.method = m;
  r.correct = (m == Method::approx) && o.correct;
  r.title = test_title("signed rank", m, r.correct);

  // Non-zero differences shifted back by mu: the data of R's estimate and interval.
  std::vector<double> ci_data(nonzero);
  for (double& v : ci_data) v += o.mu;

  if (m == Method::exact) {
    r.p_value = exact_p(o.alternative, exact_pmf, std::llround(v_stat));
    if (o.conf_int) exact_interval(walsh_averages_sorted(ci_data), exact_pmf, o, r, false);
  } else if (m == Method::conditional) {
    // 2V − (zsplit offset) = Σ s_i·(2 r_i) over the non-zero items, fair signs.
    const std::vector<std::int64_t> w = doubled_ranks(nonzero_ranks);
    const std::vector<double> pmf = with_hint([&] { return sign_sum_pmf(w); });
    const double offset = o.zero_method == ZeroMethod::zsplit ? zero_rank_sum / 2 : 0.0;
    r.p_value = exact_p(o.alternative, pmf, std::llround(2 * (v_stat - offset)));
    if (o.conf_int) {
      exact_interval(walsh_averages_sorted(ci_data), signed_rank_pmf(static_cast<int>(n_nz)), o, r,
                     false);
    }
  } else {
    const double n = static_cast<double>(r.n_used);
    double mean = n * (n + 1) / 4;
    double var = n * (n + 1) * (2 * n + 1) / 24;
    if (o.zero_method == ZeroMethod::pratt) {
      const double n0 = static_cast<double>(r.n_zero);
      mean -= n0 * (n0 + 1) / 4;
      var -= n0 * (n0 + 1) * (2 * n0 + 1) / 24;
      var -= tie_term(nz_ties) / 48;
    } else {
      var -= tie_term(rk.tie_sizes) / 48;  // zsplit: the zeros count as a tie group
    }
    const double z0 = v_stat - mean;
    r.z = (z0 - continuity(o.alternative, z0, o.correct)) / std::sqrt(var);
    r.p_value = normal_p(o.alternative, r.z);
    if (o.conf_int) signed_rank_approx_interval(ci_data, o, r);
  }
  return r;
}

TestResult rank_sum_test(std::span<const double> x, std::span<const double> y,
                         const TestOptions& o) {
  if (x.empty() || y.empty()) throw std::invalid_argument("rank-sum test: empty sample");
  TestResult r = begin_test("rank-sum", x, y, o);
  r.n_x = x.size();
  r.n_y = y.size();
  r.n = r.n_used = x.size() + y.size();

  std::vector<double> pooled;
  pooled.reserve(r.n);
  for (double a : x) pooled.push_back(a - o.mu);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const Ranking rk = average_ranks(pooled);
  const double nx = static_cast<double>(r.n_x), ny = static_cast<double>(r.n_y);
  double rx = 0.0;
  for (std::size_t i = 0; i < r.n_x; ++i) rx += rk.ranks[i];
  // W = Σ ranks(x) − n_x(n_x+1)/2.
  r.statistic = rx - nx * (nx + 1) / 2;
  r.ties = !rk.tie_sizes.empty();

  Method m = o.method;
  if (m == Method::automatic || m == Method::exact) {
    const bool want_exact = (m == Method::exact) || (r.n_x < 50 && r.n_y < 50);
    if (want_exact && !r.ties) {
      m = Method::exact;
    } else {
      if (want_exact) {
        r.warnings.push_back("cannot compute exact p-value with ties");
        if (o.conf_int) r.warnings.push_back("cannot compute exact confidence intervals with ties");
      }
      m = Method::approx;
    }
  }
  // The exact distribution (also needed for the conditional method's interval);
  // very large samples can exceed its accuracy check, and then the approximation is used.
  // The untied exact distribution: the exact method's p-value and interval, and the
  // conditional method's interval. Very large samples fail its accuracy check: the
  // exact method then falls back to the approximation, the conditional method's
  // interval to the approximate one (with a warning either way).
  std::vector<double> untied_pmf;
  if (m == Method::exact || (m == Method::conditional && o.conf_int)) {
    try {
      untied_pmf = rank_sum_pmf(static_cast<int>(r.n_x), static_cast<int>(r.n_y));
    } catch (const std::runtime_error& e) {
      if (m == Method::exact) {
        r.warnings.push_back(std::string(e.what()) + "; using the normal approximation");
        m = Method::approx;
      } else {
        r.warnings.push_back(std::string(e.what()) + "; using the approximate interval");
      }
    }
  }
  r.method = m;
  r.correct = (m == Method::approx) && o.correct;
  r.title = test_title("rank sum", m, r.correct);

  if (m == Method::exact) {
    r.p_value = exact_p(o.alternative, untied_pmf, std::llround(r.statistic));
    if (o.conf_int) exact_interval(differences_sorted(x, y), untied_pmf, o, r, true);
  } else if (m == Method::conditional) {
    // 2·Σ ranks(x) over a uniformly random n_x-subset of the doubled pooled ranks
    // (W is this shifted by a constant, so the tails are the same).
    const std::vector<std::int64_t> w = doubled_ranks(rk.ranks);
    const std::vector<double> pmf =
        with_hint([&] { return subset_sum_pmf(w, static_cast<int>(r.n_x)); });
    r.p_value = exact_p(o.alternative, pmf, std::llround(2 * rx));
    if (o.conf_int) {
      if (!untied_pmf.empty()) {
        exact_interval(differences_sorted(x, y), untied_pmf, o, r, true);
      } else {
        rank_sum_approx_interval(x, y, o, r);
      }
    }
  } else {
    const double big_n = nx + ny;
    const double z0 = r.statistic - nx * ny / 2;
    const double var =
        (nx * ny / 12) * ((big_n + 1) - tie_term(rk.tie_sizes) / (big_n * (big_n - 1)));
    if (!(var > 0.0)) {
      throw std::invalid_argument("rank-sum test: all observations are equal (zero variance)");
    }
    r.z = (z0 - continuity(o.alternative, z0, o.correct)) / std::sqrt(var);
    r.p_value = normal_p(o.alternative, r.z);
    if (o.conf_int) {
      try {
        rank_sum_approx_interval(x, y, o, r);
      } catch (const std::invalid_argument& e) {  // R stops here; the test itself stands
        r.warnings.push_back(e.what());
        r.conf_int = {kNaN, kNaN};
        r.estimate = kNaN;
      }
    }
  }
  return r;
}

double hodges_lehmann(std::span<const double> x) {
  return median_of(walsh_averages_sorted(x));
}

double hodges_lehmann(std::span<const double> x, std::span<const double> y) {
  return median_of(differences_sorted(x, y));
}

namespace {

// Each enum's spellings, once: printing, parsing and the error's list read them (the
// same idea as kernels/names.h, which stats/ may not include: tests/layering.sh).
template <class E>
struct Spelling {
  E value;
  const char* name;
};
constexpr Spelling<Alternative> kAlternatives[] = {{Alternative::two_sided, "two-sided"},
                                                   {Alternative::less, "less"},
                                                   {Alternative::greater, "greater"}};
constexpr Spelling<Method> kMethods[] = {{Method::automatic, "auto"},
                                         {Method::exact, "exact"},
                                         {Method::approx, "approx"},
                                         {Method::conditional, "conditional"}};
constexpr Spelling<ZeroMethod> kZeroMethods[] = {
    {ZeroMethod::wilcox, "wilcox"}, {ZeroMethod::pratt, "pratt"}, {ZeroMethod::zsplit, "zsplit"}};

template <class E, size_t K>
std::string spelling(const Spelling<E> (&table)[K], E v) {
  for (const auto& s : table)
    if (s.value == v) return s.name;
  return "?";
}

// `what` names the option in the error, which lists the table: "a, b or c".
template <class E, size_t K>
E parse(const Spelling<E> (&table)[K], const std::string& s, const std::string& what) {
  std::string expected;
  for (size_t i = 0; i < K; ++i) {
    if (s == table[i].name) return table[i].value;
    expected += (i == 0 ? "" : i + 1 == K ? " or " : ", ") + std::string(table[i].name);
  }
  throw std::invalid_argument("unknown " + what + " '" + s + "' (expected " + expected + ")");
}

}  // namespace

std::string to_string(Alternative a) {
  return spelling(kAlternatives, a);
}
std::string to_string(Method m) {
  return spelling(kMethods, m);
}
std::string to_string(ZeroMethod z) {
  return spelling(kZeroMethods, z);
}

Alternative parse_alternative(const std::string& s) {
  // R's spelling and the enum's are accepted too.
  if (s == "two.sided" || s == "two_sided") return Alternative::two_sided;
  return parse(kAlternatives, s, "alternative");
}
Method parse_method(const std::string& s) {
  return parse(kMethods, s, "method");
}
ZeroMethod parse_zero_method(const std::string& s) {
  return parse(kZeroMethods, s, "zero method");
}

}  // namespace mare::stats
