// Average ranks and tie groups: the one ranking routine every rank test here uses.
//
// Ranks follow R's rank(ties.method = "average"): the k-th smallest value gets rank k
// (1-based), and a group of t equal values shares the mean of the ranks it spans, so
// doubled ranks 2·r are always integers. Equality is exact (==), as in R.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mare::stats {

struct Ranking {
  std::vector<double> ranks;           // (n) average rank of each input value, in input order
  std::vector<std::size_t> tie_sizes;  // sizes t of the groups of equal values with t > 1
};

// Average ranks of v (NaN not allowed: callers validate first).
Ranking average_ranks(std::span<const double> v);

// Σ (t³ − t) over tie groups: the tie term of every tie-corrected variance.
double tie_term(std::span<const std::size_t> tie_sizes);

// Doubled ranks 2·r as integers (exact: average ranks are multiples of 1/2).
std::vector<std::int64_t> doubled_ranks(std::span<const double> ranks);

}  // namespace mare::stats
