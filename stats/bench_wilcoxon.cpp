// The exact rank tests' cost (Google Benchmark): the signed-rank test of n paired
// differences and the rank-sum test of two samples of n each, asked for R's exact method
// (the counter `exact` says whether it was taken), from n 25 (about a thesis table's 30
// seeds) to n 500 (a rank-sum of 1 000 observations).
//   build/stats/bench_wilcoxon --benchmark_out=wilcoxon.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "stats/wilcoxon.h"

namespace {

// n distinct values (no ties: the exact path), shifted by `shift`.
std::vector<double> sample(int n, double shift, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(shift, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = normal(rng);
  return v;
}

mare::stats::TestOptions exact() {
  mare::stats::TestOptions o;
  o.method = mare::stats::Method::exact;
  return o;
}

void BM_SignedRankExact(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<double> x = sample(n, 0.2, 1), y = sample(n, 0.0, 2);
  mare::stats::TestResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = mare::stats::signed_rank_test(x, y, exact()));
  state.counters["n"] = n;
  state.counters["exact"] = r.method == mare::stats::Method::exact;
}
BENCHMARK(BM_SignedRankExact)->Arg(25)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

void BM_RankSumExact(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<double> x = sample(n, 0.05, 3), y = sample(n, 0.0, 4);
  mare::stats::TestResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = mare::stats::rank_sum_test(x, y, exact()));
  state.counters["observations"] = 2 * n;
  state.counters["exact"] = r.method == mare::stats::Method::exact;
}
BENCHMARK(BM_RankSumExact)->Arg(25)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
