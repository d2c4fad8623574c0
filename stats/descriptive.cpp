// Summary statistics, bootstrap intervals, Holm correction and effect sizes
// (see descriptive.h).
#include "stats/descriptive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "stats/ranks.h"

namespace mare::stats {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require_nonempty(std::span<const double> x, const char* what) {
  if (x.empty()) throw std::invalid_argument(std::string(what) + ": empty sample");
}
}  // namespace

double mean(std::span<const double> x) {
  require_nonempty(x, "mean");
  // Two passes (R's mean.default refines the sum the same way): x̄ + Σ(x − x̄)/n.
  double s = 0.0;
  for (double v : x) s += v;
  const double n = static_cast<double>(x.size());
  double m = s / n;
  if (std::isfinite(m)) {
    double t = 0.0;
    for (double v : x) t += v - m;
    m += t / n;
  }
  return m;
}

double sd(std::span<const double> x) {
  require_nonempty(x, "sd");
  if (x.size() < 2) return kNaN;
  const double m = mean(x);
  double ss = 0.0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

double quantile(std::span<const double> x, double p) {
  require_nonempty(x, "quantile");
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("quantile: p must lie in [0, 1]");
  std::vector<double> v(x.begin(), x.end());
  std::sort(v.begin(), v.end());
  const double h = (static_cast<double>(v.size()) - 1) * p;  // 0-based position
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = h - static_cast<double>(lo);
  return frac == 0.0 ? v[lo] : v[lo] + frac * (v[hi] - v[lo]);
}

double median(std::span<const double> x) {
  require_nonempty(x, "median");
  std::vector<double> v(x.begin(), x.end());
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::uint64_t uniform_index(std::mt19937_64& rng, std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("uniform_index: n = 0");
  // Accept words below the largest multiple of n that fits, then reduce mod n.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              (std::numeric_limits<std::uint64_t>::max() % n + 1) % n;
  for (;;) {
    const std::uint64_t w = rng();
    if (w <= limit) return w % n;
  }
}

std::array<double, 2> bootstrap_ci(std::span<const double> x,
                                   const std::function<double(std::span<const double>)>& statistic,
                                   double conf_level, int resamples, std::uint64_t seed) {
  require_nonempty(x, "bootstrap");
  if (resamples < 1) throw std::invalid_argument("bootstrap: resamples must be >= 1");
  if (!(conf_level > 0.0 && conf_level < 1.0)) {
    throw std::invalid_argument("bootstrap: conf_level must lie in (0, 1)");
  }
  std::mt19937_64 rng(seed);
  std::vector<double> sample(x.size()), replicates(static_cast<std::size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    for (double& s : sample) s = x[uniform_index(rng, x.size())];
    replicates[b] = statistic(sample);
  }
  const double alpha = 1.0 - conf_level;
  return {quantile(replicates, alpha / 2), quantile(replicates, 1.0 - alpha / 2)};
}

std::vector<double> holm(std::span<const double> p) {
  const std::size_t m = p.size();
  for (double v : p) {
    if (!(v >= 0.0 && v <= 1.0)) throw std::invalid_argument("holm: p-values must lie in [0, 1]");
  }
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    const double adj = std::min(1.0, static_cast<double>(m - i) * p[order[i]]);
    running = std::max(running, adj);
    out[order[i]] = running;
  }
  return out;
}

double vargha_delaney_a(std::span<const double> x, std::span<const double> y) {
  require_nonempty(x, "vargha_delaney_a");
  require_nonempty(y, "vargha_delaney_a");
  std::vector<double> pooled(x.begin(), x.end());
  pooled.insert(pooled.end(), y.begin(), y.end());
  const Ranking rk = average_ranks(pooled);
  double rx = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) rx += rk.ranks[i];
  const double nx = static_cast<double>(x.size()), ny = static_cast<double>(y.size());
  return (rx / nx - (nx + 1) / 2) / ny;
}

double rank_biserial(std::span<const double> x, std::span<const double> y) {
  return 2.0 * vargha_delaney_a(x, y) - 1.0;
}

double matched_pairs_rank_biserial(std::span<const double> x, std::span<const double> y) {
  require_nonempty(x, "matched_pairs_rank_biserial");
  if (!y.empty() && y.size() != x.size()) {
    throw std::invalid_argument("matched_pairs_rank_biserial: samples differ in length");
  }
  std::vector<double> d, ad;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i] - (y.empty() ? 0.0 : y[i]);
    if (v != 0.0) {
      d.push_back(v);
      ad.push_back(std::fabs(v));
    }
  }
  // T⁺ + T⁻ = 0: r is 0/0 (as the signed-rank test, which refuses all-zero differences).
  if (d.empty()) {
    throw std::invalid_argument(
        "matched_pairs_rank_biserial: every difference is zero (r = 0/0 is undefined)");
  }
  const Ranking rk = average_ranks(ad);
  double plus = 0.0, minus = 0.0;
  for (std::size_t i = 0; i < d.size(); ++i) (d[i] > 0 ? plus : minus) += rk.ranks[i];
  return (plus - minus) / (plus + minus);
}

}  // namespace mare::stats
