// Exact null distributions of the Wilcoxon statistics (see distributions.h).
#include "stats/distributions.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mare::stats {
namespace {
// Largest number of inner-loop steps a distribution may take (a few seconds).
constexpr double kMaxWork = 4e9;

std::string sci(double v) {
  std::ostringstream s;
  s << std::setprecision(2) << v;
  return s.str();
}
}  // namespace

std::vector<double> sign_sum_pmf(std::span<const std::int64_t> weights) {
  std::int64_t total = 0;
  for (std::int64_t w : weights) {
    if (w < 0) throw std::invalid_argument("sign_sum_pmf: negative weight");
    total += w;
  }
  if (static_cast<double>(weights.size()) * static_cast<double>(total) > kMaxWork) {
    throw std::length_error("exact signed-rank distribution too costly (about " +
                            sci(static_cast<double>(weights.size()) * total) + " steps, limit " +
                            sci(kMaxWork) + ")");
  }
  std::vector<double> p(static_cast<std::size_t>(total) + 1, 0.0);
  p[0] = 1.0;
  std::int64_t top = 0;  // current support is 0..top
  for (std::int64_t w : weights) {
    top += w;
    // p'(k) = ½ p(k) + ½ p(k − w), descending k so p(k − w) is still the old value.
    for (std::int64_t k = top; k >= 0; --k) {
      const double keep = p[k];
      const double add = (k >= w) ? p[k - w] : 0.0;
      p[k] = 0.5 * keep + 0.5 * add;
    }
  }
  return p;
}

std::vector<double> signed_rank_pmf(int n) {
  if (n < 0) throw std::invalid_argument("signed_rank_pmf: n < 0");
  std::vector<std::int64_t> w(static_cast<std::size_t>(n));
  std::iota(w.begin(), w.end(), std::int64_t{1});
  return sign_sum_pmf(w);
}

namespace {

// Positive recursion (R's cwilcox, on probabilities): the largest of the N = m' + n'
// pooled values is an x with probability m'/N (it then adds n' to W) or a y:
//   p_{m',n'}(k) = m'/N · p_{m'−1,n'}(k − n') + n'/N · p_{m',n'−1}(k).
// Sums of non-negative terms only, so every coefficient carries a relative error of a
// few ulps. Cost O(m · n · K) for coefficients 0..K.
std::vector<double> rank_sum_half_positive(int m, int n, std::int64_t half) {
  // prev[j] = p_{m'−1, j}, cur[j] = p_{m', j}, truncated to 0..half.
  auto len = [&](std::int64_t mm, std::int64_t nn) { return std::min(mm * nn, half) + 1; };
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (int j = 0; j <= n; ++j) prev[j] = {1.0};  // m' = 0: W = 0
  for (int mm = 1; mm <= m; ++mm) {
    cur[0] = {1.0};  // n' = 0: W = 0
    for (int j = 1; j <= n; ++j) {
      const double px = static_cast<double>(mm) / (mm + j), py = static_cast<double>(j) / (mm + j);
      std::vector<double>& out = cur[j];
      out.assign(static_cast<std::size_t>(len(mm, j)), 0.0);
      const std::vector<double>& a = prev[j];     // p_{m'−1, j}, shifted by j
      const std::vector<double>& b = cur[j - 1];  // p_{m', j−1}
      for (std::size_t k = 0; k < out.size(); ++k) {
        double v = k < b.size() ? py * b[k] : 0.0;
        if (k >= static_cast<std::size_t>(j) && k - j < a.size()) v += px * a[k - j];
        out[k] = v;
      }
    }
    std::swap(prev, cur);
  }
  std::vector<double> out = prev[n];
  out.resize(static_cast<std::size_t>(half) + 1, 0.0);
  return out;
}

// Harding (1984): expand Π_{i=1}^{m} (1 − q^{n+i}) / (1 − q^i), renormalising by
// i/(n+i) each step. O(m · K), but the division step spreads rounding errors along
// combs, so the error grows quickly with m; long double keeps it near 1e-10 at
// m = n = 500 (checked by the caller through Σ p = 1).
std::vector<double> rank_sum_half_harding(int m, int n, std::int64_t half) {
  std::vector<long double> c(static_cast<std::size_t>(half) + 1, 0.0L);
  c[0] = 1.0L;
  for (int i = 1; i <= m; ++i) {
    const std::int64_t a = static_cast<std::int64_t>(n) + i;
    const std::int64_t top = std::min<std::int64_t>(half, static_cast<std::int64_t>(i) * n);
    // Multiply by (1 − q^a): c(k) −= c(k − a), descending.
    for (std::int64_t k = top; k >= a; --k) c[k] -= c[k - a];
    // Divide by (1 − q^i): c(k) += c(k − i), ascending, scaled by i/(n+i) so Σ c = 1
    // (the unscaled sum grows from C(n+i−1, i−1) to C(n+i, i)).
    const long double s = static_cast<long double>(i) / static_cast<long double>(a);
    for (std::int64_t k = 0; k < std::min<std::int64_t>(i, top + 1); ++k) c[k] *= s;
    for (std::int64_t k = i; k <= top; ++k) c[k] = s * c[k] + c[k - i];
  }
  return std::vector<double>(c.begin(), c.end());
}

}  // namespace

std::vector<double> rank_sum_pmf(int m, int n) {
  if (m < 0 || n < 0) throw std::invalid_argument("rank_sum_pmf: negative sample size");
  if (m > n) std::swap(m, n);  // the distribution is symmetric in (m, n)
  const std::int64_t total = static_cast<std::int64_t>(m) * n;
  const std::int64_t half = total / 2;
  // Coefficients 0..half suffice: c(k) = c(mn − k).
  const bool small = static_cast<double>(m) * n * static_cast<double>(half + 1) <= 2e8;
  if (!small && m > kRankSumMaxFastM) {
    // Measured: the Harding path's |Σ p − 1| is ~3e-10 at 500 × 500 and grows fast.
    throw std::runtime_error("exact rank-sum distribution for n_x = " + std::to_string(m) +
                             ", n_y = " + std::to_string(n) +
                             " lost precision (both samples larger than " +
                             std::to_string(kRankSumMaxFastM) + ")");
  }
  const std::vector<double> c =
      small ? rank_sum_half_positive(m, n, half) : rank_sum_half_harding(m, n, half);
  std::vector<double> pmf(static_cast<std::size_t>(total) + 1, 0.0);
  for (std::int64_t k = 0; k <= half; ++k) {
    pmf[k] = c[k];
    pmf[total - k] = c[k];
  }
  if (!small) {
    // Accuracy check of the fast path: a distribution is non-negative and sums to one.
    long double sum = 0.0L;
    double most_negative = 0.0;
    for (double p : pmf) {
      sum += p;
      most_negative = std::min(most_negative, p);
    }
    const double err = static_cast<double>(std::fabs(sum - 1.0L));
    if (err > kRankSumMassTolerance || most_negative < -kRankSumMassTolerance) {
      throw std::runtime_error("exact rank-sum distribution for n_x = " + std::to_string(m) +
                               ", n_y = " + std::to_string(n) +
                               " lost precision (|sum p - 1| = " + std::to_string(err) + ")");
    }
  }
  return pmf;
}

std::vector<double> subset_sum_pmf(std::span<const std::int64_t> weights, int m,
                                   std::int64_t max_cells) {
  const int big_n = static_cast<int>(weights.size());
  if (m < 0 || m > big_n) throw std::invalid_argument("subset_sum_pmf: m out of range");
  std::int64_t total = 0;
  for (std::int64_t w : weights) {
    if (w < 0) throw std::invalid_argument("subset_sum_pmf: negative weight");
    total += w;
  }
  // Take the smaller side: the sum over the complement is total − sum.
  const bool complement = 2 * m > big_n;
  const int mm = complement ? big_n - m : m;
  const std::int64_t width = total + 1;
  // Work is N · (mm + 1) · width additions; refuse what would take minutes.
  if (static_cast<double>(big_n) * (mm + 1) * static_cast<double>(width) > kMaxWork) {
    throw std::length_error("exact conditional distribution too costly (about " +
                            sci(static_cast<double>(big_n) * (mm + 1) * width) + " steps, limit " +
                            sci(kMaxWork) + ")");
  }
  if (static_cast<std::int64_t>(mm + 1) * width > max_cells) {
    throw std::length_error("exact conditional distribution too large (" +
                            sci(static_cast<double>(mm + 1) * width) + " cells, limit " +
                            sci(static_cast<double>(max_cells)) + ")");
  }
  // row j holds P(j items taken among those seen so far, their weight sum = s).
  std::vector<std::vector<double>> row(mm + 1, std::vector<double>(width, 0.0));
  row[0][0] = 1.0;
  std::int64_t top = 0;
  for (int t = 0; t < big_n; ++t) {
    const std::int64_t w = weights[t];
    const double remaining = static_cast<double>(big_n - t);
    top += w;
    for (int j = std::min(t + 1, mm); j >= 0; --j) {
      // Stay in row j (item t not taken) with probability 1 − (mm − j)/remaining;
      // arrive from row j−1 (taken) with probability (mm − j + 1)/remaining.
      const double stay = 1.0 - static_cast<double>(mm - j) / remaining;
      const double take = j > 0 ? static_cast<double>(mm - j + 1) / remaining : 0.0;
      auto& r = row[j];
      for (std::int64_t s = top; s >= 0; --s) {
        double v = r[s] * stay;
        if (j > 0 && s >= w) v += row[j - 1][s - w] * take;
        r[s] = v;
      }
    }
  }
  std::vector<double> pmf = row[mm];
  if (complement) std::reverse(pmf.begin(), pmf.end());  // sum ↦ total − sum
  return pmf;
}

double lower_tail(std::span<const double> pmf, std::int64_t k) {
  if (k < 0) return 0.0;
  const std::int64_t top = std::min<std::int64_t>(k, static_cast<std::int64_t>(pmf.size()) - 1);
  double s = 0.0;
  for (std::int64_t i = 0; i <= top; ++i) s += pmf[i];
  return std::min(1.0, s);
}

double upper_tail(std::span<const double> pmf, std::int64_t k) {
  const std::int64_t size = static_cast<std::int64_t>(pmf.size());
  if (k >= size) return 0.0;
  double s = 0.0;
  for (std::int64_t i = size - 1; i >= std::max<std::int64_t>(k, 0); --i) s += pmf[i];
  return std::min(1.0, s);
}

std::int64_t symmetric_quantile(std::span<const double> pmf, double p) {
  const std::int64_t top = static_cast<std::int64_t>(pmf.size()) - 1;
  if (p <= 0.0) return 0;
  if (p >= 1.0) return top;
  std::int64_t q = 0;
  double f = 0.0;
  if (p <= 0.5) {
    p -= 10 * DBL_EPSILON;
    for (;; ++q) {
      f += pmf[q];
      if (f >= p || q == top) break;
    }
  } else {
    p = 1.0 - p + 10 * DBL_EPSILON;
    for (;; ++q) {
      f += pmf[q];
      if (f > p || q == top) {
        q = top - q;
        break;
      }
    }
  }
  return q;
}

}  // namespace mare::stats
