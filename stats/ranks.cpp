// Average ranks and tie groups (see ranks.h).
#include "stats/ranks.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mare::stats {

Ranking average_ranks(std::span<const double> v) {
  const std::size_t n = v.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  Ranking out;
  out.ranks.assign(n, 0.0);
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i + 1;
    while (j < n && v[order[j]] == v[order[i]]) ++j;
    // Positions i..j-1 (0-based) hold ranks i+1..j; their mean is (i + 1 + j) / 2.
    const double r = 0.5 * static_cast<double>(i + 1 + j);
    for (std::size_t k = i; k < j; ++k) out.ranks[order[k]] = r;
    if (j - i > 1) out.tie_sizes.push_back(j - i);
    i = j;
  }
  return out;
}

double tie_term(std::span<const std::size_t> tie_sizes) {
  double s = 0.0;
  for (std::size_t t : tie_sizes) {
    const double td = static_cast<double>(t);
    s += td * td * td - td;
  }
  return s;
}

std::vector<std::int64_t> doubled_ranks(std::span<const double> ranks) {
  std::vector<std::int64_t> out(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out[i] = static_cast<std::int64_t>(std::llround(2.0 * ranks[i]));
  }
  return out;
}

}  // namespace mare::stats
