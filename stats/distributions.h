// Exact null distributions of the Wilcoxon statistics, as probability mass functions.
//
// Each function returns pmf[k] = P(X = k) for k = 0..max, computed by counting
// recursions on frequency arrays held as probabilities in double (never by
// enumerating sign assignments or subsets), so there is no overflow for large n:
//
//   signed rank:   V = Σ s_i w_i, s_i ∈ {0,1} independent with P = 1/2.
//                  Adding item i:  p'(k) = ½ p(k) + ½ p(k − w_i).
//                  Weights 1..n give R's dsignrank; doubled average ranks give the
//                  exact conditional distribution with ties (in units of ½).
//   rank sum:      U = W = Σ ranks(x) − m(m+1)/2 over a uniformly random m-subset of
//                  1..m+n. Its generating function is the Gaussian binomial
//                    Σ_k c(k) q^k = Π_{i=1}^{m} (1 − q^{n+i}) / (1 − q^i),
//                  Small cases (m·n·mn/2 <= 2e8, e.g. up to 140 × 140) use R's cwilcox
//                  recursion on probabilities, p_{m,n}(k) = m/N p_{m−1,n}(k−n) + n/N p_{m,n−1}(k),
//                  which only adds non-negative terms (relative error of a few ulps).
//                  Larger cases expand the product by Harding's (1984) algorithm in long
//                  double (multiply by 1 − q^{n+i}, divide by 1 − q^i, renormalise by
//                  i/(n+i)); its rounding errors grow with m, so the result is checked
//                  (non-negative, Σ p = 1 within kRankSumMassTolerance) and refused with
//                  std::runtime_error when the check fails (e.g. 1000 × 1000).
//   subset sum:    the sum of integer weights over a uniformly random m-subset
//                  (the conditional rank-sum distribution with ties, on doubled ranks):
//                  item t is taken with probability (m − j)/(N − t) given j taken so far.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mare::stats {

// pmf of Σ s_i w_i with independent fair signs s_i ∈ {0, 1}; weights must be >= 0.
// Throws std::length_error when the work (items × Σ w) would exceed 4e9 steps.
std::vector<double> sign_sum_pmf(std::span<const std::int64_t> weights);

// pmf of the signed-rank statistic V for n untied, non-zero observations (R: dsignrank).
std::vector<double> signed_rank_pmf(int n);

// Largest |Σ p − 1| accepted from the fast (Harding) path of rank_sum_pmf.
inline constexpr double kRankSumMassTolerance = 1e-9;
// Above this smaller sample size the fast path is refused without trying.
inline constexpr int kRankSumMaxFastM = 600;

// pmf of the Mann–Whitney statistic W for sample sizes m and n, no ties (R: dwilcox).
// Throws std::runtime_error when the large-sample path cannot reach the tolerance.
std::vector<double> rank_sum_pmf(int m, int n);

// pmf of the sum of weights over a uniformly random m-subset of the items.
// Throws std::length_error when the table would exceed max_cells doubles or the work
// (items × rows × Σ w) 4e9 steps.
std::vector<double> subset_sum_pmf(std::span<const std::int64_t> weights, int m,
                                   std::int64_t max_cells = 50'000'000);

// P(X <= k) and P(X >= k), each summed directly over its own tail.
double lower_tail(std::span<const double> pmf, std::int64_t k);
double upper_tail(std::span<const double> pmf, std::int64_t k);

// R's qsignrank/qwilcox rule on a symmetric pmf: for p <= 1/2 the smallest q with
// P(X <= q) >= p − 10·DBL_EPSILON; for p > 1/2 the mirrored rule of R's C code.
std::int64_t symmetric_quantile(std::span<const double> pmf, double p);

}  // namespace mare::stats
