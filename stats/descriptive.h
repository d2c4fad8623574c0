// Summary statistics, bootstrap intervals, Holm correction and effect sizes.
//
//   mean  x̄ = Σ x_i / n;  sd  s = sqrt(Σ (x_i − x̄)² / (n − 1))  (R's sd; NaN for n = 1)
//   median and quantile: R's quantile(type = 7), Q(p) = x_(⌊h⌋) + (h − ⌊h⌋)(x_(⌊h⌋+1) − x_(⌊h⌋)),
//     h = (n − 1)p + 1, 1-based order statistics.
//   bootstrap: B resamples of size n drawn with replacement by std::mt19937_64 seeded with
//     `seed` (the engine's output sequence is fixed by the C++ standard); indices come from
//     rejection sampling on the raw 64-bit words (not std::uniform_int_distribution, whose
//     algorithm is implementation-defined), so a seed gives the same interval everywhere.
//     The percentile interval is [Q(α/2), Q(1 − α/2)] of the B replicates (type 7).
//   Holm: p_(i) sorted ascending, adjusted p_(i) = max_{j<=i} min(1, (m − j + 1) p_(j)),
//     returned in the input order (R's p.adjust(method = "holm")).
//   Vargha–Delaney A = P(X > Y) + ½ P(X = Y) = (R_x/n_x − (n_x+1)/2) / n_y = W / (n_x n_y).
//   rank-biserial r = 2A − 1 = (W − W') / (n_x n_y), W' = n_x n_y − W.
//   matched-pairs rank-biserial r = (T⁺ − T⁻) / (T⁺ + T⁻) over the non-zero differences.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

namespace mare::stats {

double mean(std::span<const double> x);
double sd(std::span<const double> x);
double median(std::span<const double> x);
double quantile(std::span<const double> x, double p);  // type 7; p in [0, 1]

// Uniform index in [0, n) from a 64-bit engine, by rejection (portable and unbiased).
std::uint64_t uniform_index(std::mt19937_64& rng, std::uint64_t n);

// Percentile bootstrap interval of statistic(x) at level conf_level with B resamples.
// Deterministic for a given seed. Throws std::invalid_argument for empty x or B < 1.
std::array<double, 2> bootstrap_ci(std::span<const double> x,
                                   const std::function<double(std::span<const double>)>& statistic,
                                   double conf_level, int resamples, std::uint64_t seed);

// Holm-adjusted p-values, same order as the input.
std::vector<double> holm(std::span<const double> p);

double vargha_delaney_a(std::span<const double> x, std::span<const double> y);
double rank_biserial(std::span<const double> x, std::span<const double> y);
// Paired version on d_i = x_i − y_i (y empty: d = x); zeros are dropped. Throws
// std::invalid_argument for samples of different lengths and when every d_i is zero.
double matched_pairs_rank_biserial(std::span<const double> x, std::span<const double> y);

}  // namespace mare::stats
