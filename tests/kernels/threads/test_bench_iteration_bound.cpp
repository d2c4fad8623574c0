// `mare bench iteration`'s GEMM bound and speedup fields (issue 17): a row's
// GEMM flops are the kernels' exact count, the same at 1 and 2 threads (the
// same products, cut into different numbers of blocks), and the bound, the
// ratio and the speedup are the quotients they claim to be. No timings asserted.
#include <gtest/gtest.h>

#include <cstdint>

#include "experiments/bench_iteration.h"
#include "kernels/ops/gemm_count.h"
#include "tests/kernels/threads/threads_check.h"

namespace mare::test {
namespace {

TEST(BenchIterationBound, FlopsBoundRatioAndSpeedup) {
  ThreadScope scope;
  set_threads(2);
  IterationBenchOptions opt;
  opt.models = {"cnn"};
  opt.shape = "semeval";
  opt.size = "default";
  opt.iterations = 1;
  opt.warmup = 0;
  opt.grpu = true;
  opt.speedup = true;
  const nlohmann::json j = run_iteration_bench(opt, nullptr);
  EXPECT_FALSE(gemm_counting());  // off again after the benchmark
  EXPECT_EQ(j["threads"], 2);
  ASSERT_TRUE(j.contains("gemm_bound"));
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["model"], "cnn");
  EXPECT_EQ(j["rows"][0]["registry_name"], "cnn+d=32");
  EXPECT_EQ(j["rows"][1]["model"], "grpu");
  EXPECT_EQ(j["rows"][1]["shape"], "addition");
  EXPECT_EQ(j["rows"][1]["batch"], 100);
  for (const nlohmann::json& r : j["rows"]) {
    SCOPED_TRACE(r["model"].get<std::string>());
    EXPECT_EQ(r["threads"], 2);
    const uint64_t flops = r["gemm_flops"];
    EXPECT_GT(flops, 0u);
    ASSERT_TRUE(r.contains("threads_1"));
    const nlohmann::json& one = r["threads_1"];
    EXPECT_EQ(one["threads"], 1);
    EXPECT_EQ(one["gemm_flops"].get<uint64_t>(), flops);  // the count at any thread count
    for (const nlohmann::json* x : {&r, &one}) {
      const double rate = (*x)["gemm_gflops_per_s"], bound = (*x)["bound_s"];
      EXPECT_GT(rate, 0.0);
      EXPECT_NEAR(bound, static_cast<double>(flops) / (rate * 1e9), 1e-9 * bound);
      EXPECT_NEAR((*x)["bound_ratio"].get<double>(), (*x)["median_s"].get<double>() / bound,
                  1e-9 * (*x)["bound_ratio"].get<double>());
      EXPECT_NEAR((*x)["gemm_gflop"].get<double>(), static_cast<double>(flops) / 1e9, 1e-9);
    }
    // System time and minor page faults of each timed iteration.
    ASSERT_EQ(r["sys_times_s"].size(), r["times_s"].size());
    ASSERT_EQ(r["minor_faults"].size(), r["times_s"].size());
    EXPECT_GE(r["minor_faults"][0].get<double>(), 0.0);
    EXPECT_NEAR(r["speedup"].get<double>(),
                one["median_s"].get<double>() / r["median_s"].get<double>(),
                1e-9 * r["speedup"].get<double>());
  }
}

TEST(BenchIterationBound, SequenceModelsNeedTheGrpuFlag) {
  IterationBenchOptions opt;
  opt.models = {"grpu"};
  EXPECT_THROW(run_iteration_bench(opt, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace mare::test
