// `mare bench iteration`'s GEMM bound and speedup fields: a row's
// GEMM flops are the kernels' exact count, the same at 1 and 2 threads (the
// same products, cut into different numbers of blocks), and the bound, the
// ratio and the speedup are the quotients they claim to be. No timings asserted.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "experiments/bench_iteration.h"
#include "kernels/ops.h"
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

// --by-op: each row's dispatches by op add up to its op count (one timed iteration: the
// median is that iteration), the tally is off again afterwards, and without the flag
// no row carries them.
TEST(BenchIterationBound, OpsByNameAddUpToTheIterationsDispatches) {
  IterationBenchOptions opt;
  opt.models = {"UTRE-CPD"};
  opt.shape = "semeval";
  opt.iterations = 1;
  opt.warmup = 0;
  opt.by_op = true;
  const nlohmann::json j = run_iteration_bench(opt, nullptr);
  ASSERT_EQ(j["rows"].size(), 1u);
  const nlohmann::json& r = j["rows"][0];
  ASSERT_TRUE(r.contains("ops_by_name"));
  int64_t sum = 0;
  for (const auto& [op, n] : r["ops_by_name"].items()) {
    EXPECT_GT(n.get<int64_t>(), 0) << op;
    sum += n.get<int64_t>();
  }
  EXPECT_EQ(sum, r["ops"].get<int64_t>());
  // Every halting selection of the state is taken back too.
  EXPECT_EQ(r["ops_by_name"].value("select_rows_forward", 0),
            r["ops_by_name"].value("select_rows_backward", 0));

  const std::map<std::string, int64_t> before = op_tally();
  (void)add_forward(Tensor::zeros({2}), Tensor::zeros({2}));
  EXPECT_EQ(op_tally(), before);  // off after the benchmark

  opt.by_op = false;
  EXPECT_FALSE(run_iteration_bench(opt, nullptr)["rows"][0].contains("ops_by_name"));
}

TEST(BenchIterationBound, SequenceModelsNeedTheGrpuFlag) {
  IterationBenchOptions opt;
  opt.models = {"grpu"};
  EXPECT_THROW(run_iteration_bench(opt, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace mare::test
