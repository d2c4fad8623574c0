// Allocation variants on the GPU (kernels/cuda/allocation.cu) against the CPU,
// like for like (same variant names on both devices). Without a GPU every test
// here skips with a message.
//
// 1. Every GPU variant except parallel-eps agrees with the CPU `sorted` to
//    1e-5 + 1e-5·|ref|, forward and backward (accumulating into a gradient that
//    starts at 1), for N ∈ {1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64, 128} on rows
//    with random usages, exact ties, all zeros, exactly 1, values within 1e-7 of
//    each other and values below ε; GPU parallel-eps agrees with CPU
//    parallel-eps to the same tolerance. Fresh GPU allocations are NaN-poisoned,
//    so an output element a kernel forgets to write fails the finiteness check.
// 2. Bit for bit on the GPU: `rank` ≡ `network` ≡ `sorted` and `parallel-block` ≡ `parallel`
//    (allocation.cu promises both), and a second run gives the same bits.
// 3. Many memories (grid-stride loops, partly filled warps of parallel-block).
// 4. The pinned parallel-eps near-tie and the hand case of thesis Fig. 2.28/3.7.
// 5. Usages outside [0, 1] and NaNs: the NaN rule of allocation.h.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/memory/allocation.h"
#include "kernels/random.h"
#include "tests/gpu_required.h"
#include "tests/kernels/allocation_checks.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

constexpr double kEps = 1e-6;

std::string name_of(AllocationVariant v) {
  return std::string(to_string(v));
}

// 37 rows (more than one warp's worth of memories for N ≤ 4, not a multiple of
// 8): random rows, then one row of every awkward kind.
Tensor tricky_usages(int64_t n, uint64_t seed) {
  const int64_t rows = 37;
  Tensor u = random_tensor({rows, n}, seed, 0.0f, 1.0f);
  float* x = u.f32();
  PhiloxStream rng(seed, 77);
  for (int64_t i = 0; i < n; ++i) {
    x[20 * n + i] = 0.0f;                                                     // all zero
    x[21 * n + i] = 1.0f;                                                     // all exactly 1
    x[22 * n + i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? 0.0f : x[22 * n + i]);  // 0s, 1s, random
    x[23 * n + i] = 0.25f * static_cast<float>(1 + (i * 7) % 3);              // exact ties
    x[24 * n + i] = 0.5f + static_cast<float>((i * 5) % 2) * std::ldexp(1.0f, -24);  // 1 ulp apart
    x[25 * n + i] = 0.1f + static_cast<float>((i * 3) % 4) * 1e-8f;     // 0.1 and its neighbours
    x[26 * n + i] = x[26 * n + (i / 2)];                                // pairs of equal values
    x[27 * n + i] = static_cast<float>(i % 5) * 1e-8f;                  // below ε: ties after û
    x[28 * n + i] = rng.uniform() < 0.5f ? 1.0f : rng.uniform();        // many exact 1s
    x[29 * n + i] = static_cast<float>(n - i) / static_cast<float>(n);  // descending
  }
  return u;
}

struct Result {
  Tensor a, d;  // forward, and backward accumulated into a gradient that started at 1
};

Result run(const Tensor& u, const Tensor& g, AllocationVariant v) {
  Result r;
  r.a = allocation_forward(u, v);
  r.d = Tensor::full(u.shape(), 1.0f, u.device());
  allocation_backward(r.d, g, u, v);
  return r;
}

Result run_gpu(const Tensor& u, const Tensor& g, AllocationVariant v) {
  PoisonedGpuAllocations poison;
  Result r = run(u.to(Device::cuda), g.to(Device::cuda), v);
  EXPECT_EQ(r.a.device(), Device::cuda) << name_of(v);
  return r;
}

class AllocationCuda : public ::testing::TestWithParam<int64_t> {};

TEST_P(AllocationCuda, EveryVariantMatchesTheCpu) {
  MARE_NEEDS_GPU();
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 1700 + n);
  Tensor g = random_tensor(u.shape(), 1800 + n);
  const Result sorted = run(u, g, AllocationVariant::sorted);
  for (AllocationVariant v : allocation_variants()) {
    const std::string what = name_of(v) + " on the GPU, N " + std::to_string(n);
    const Result gpu = run_gpu(u, g, v);
    // parallel-eps is compared with itself on the CPU: its order and its raw-u
    // product differ from `sorted` by design (SPEC §3).
    const Result ref = v == AllocationVariant::parallel_eps ? run(u, g, v) : sorted;
    EXPECT_TRUE(close(gpu.a, ref.a, 1e-5, 1e-5, what + " forward"));
    EXPECT_TRUE(close(gpu.d, ref.d, 1e-5, 1e-5, what + " backward (+= into 1)"));
  }
}

TEST_P(AllocationCuda, RankIsSortedAndBlockIsParallelBitForBitAndRunsRepeat) {
  MARE_NEEDS_GPU();
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 1900 + n);
  Tensor g = random_tensor(u.shape(), 1901 + n);
  const Result sorted = run_gpu(u, g, AllocationVariant::sorted);
  const Result rank = run_gpu(u, g, AllocationVariant::rank);
  const Result net = run_gpu(u, g, AllocationVariant::network);
  const Result par = run_gpu(u, g, AllocationVariant::parallel);
  const Result block = run_gpu(u, g, AllocationVariant::parallel_block);
  EXPECT_TRUE(identical(rank.a, sorted.a, "rank forward"));
  EXPECT_TRUE(identical(rank.d, sorted.d, "rank backward"));
  EXPECT_TRUE(identical(net.a, sorted.a, "network forward"));
  EXPECT_TRUE(identical(net.d, sorted.d, "network backward"));
  EXPECT_TRUE(identical(block.a, par.a, "parallel-block forward"));
  EXPECT_TRUE(identical(block.d, par.d, "parallel-block backward"));
  for (AllocationVariant v : allocation_variants()) {
    const Result first = run_gpu(u, g, v), second = run_gpu(u, g, v);
    EXPECT_TRUE(identical(first.a, second.a, name_of(v) + " forward, second run"));
    EXPECT_TRUE(identical(first.d, second.d, name_of(v) + " backward, second run"));
  }
}

// The awkward rows (20 to 29) and two random rows of every GPU variant against the
// independent double-precision reference of allocation_checks.h (parallel-eps
// against its own A.1 semantics), not only against the CPU kernels.
TEST_P(AllocationCuda, TrickyRowsMatchTheIndependentDoubleReference) {
  MARE_NEEDS_GPU();
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 2300 + n);
  Tensor g = random_tensor(u.shape(), 2301 + n);
  const std::vector<int64_t> rows = {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 0, 1};
  const auto [a_dnc, d_dnc] = reference_allocation_rows(u, g, rows, false);
  const auto [a_eps, d_eps] = reference_allocation_rows(u, g, rows, true);
  for (AllocationVariant v : allocation_variants()) {
    const bool eps = v == AllocationVariant::parallel_eps;
    const Result gpu = run_gpu(u, g, v);  // backward accumulated into 1
    std::vector<float> d = select_rows(gpu.d, rows).to_vector();
    for (float& x : d) x -= 1.0f;
    // "memory i" in a failure message is rows[i].
    const std::string what = name_of(v) + " on the GPU, N " + std::to_string(n);
    EXPECT_TRUE(
        close(select_rows(gpu.a, rows), eps ? a_eps : a_dnc, 1e-5, 1e-5, what + " forward"));
    EXPECT_TRUE(close(Tensor::from_vector(d, a_dnc.shape()), eps ? d_eps : d_dnc, 1e-5, 1e-5,
                      what + " backward"));
  }
}

// Usages outside [0, 1] and NaNs (allocation_checks.h's nonfinite_usages): the
// NaN rule of allocation.h on the GPU. A NaN slot's allocation is NaN and no
// other (the poisoned allocations make an unwritten element NaN too); every
// GPU variant equals its CPU twin where the CPU is finite; rank ≡ network ≡
// sorted and parallel-block ≡ parallel bit for bit, NaNs included.
TEST_P(AllocationCuda, NonFiniteUsagesFollowTheNaNRule) {
  MARE_NEEDS_GPU();
  const int64_t n = GetParam();
  Tensor u = nonfinite_usages(n, 2600 + n);
  Tensor g = random_tensor(u.shape(), 2601 + n);
  const std::vector<float> x = u.to_vector();
  for (AllocationVariant v : allocation_variants()) {
    const std::string what = name_of(v) + " on the GPU, N " + std::to_string(n);
    const Result gpu = run_gpu(u, g, v), cpu = run(u, g, v);
    const std::vector<float> ga = gpu.a.to_vector(), ca = cpu.a.to_vector();
    for (size_t e = 0; e < ga.size(); ++e) {
      if (e < size_t(8 * n)) {  // rows 0..7: NaNs among usages in [0, 1]
        EXPECT_EQ(std::isnan(ga[e]), std::isnan(x[e])) << what << ", element " << e;
      }
      if (std::isfinite(ca[e])) {
        EXPECT_NEAR(ga[e], ca[e], 1e-5 + 1e-5 * std::fabs(ca[e])) << what << ", element " << e;
      }
    }
  }
  const Result sorted = run_gpu(u, g, AllocationVariant::sorted);
  const Result par = run_gpu(u, g, AllocationVariant::parallel);
  for (auto [v, ref] :
       {std::pair{AllocationVariant::rank, &sorted}, std::pair{AllocationVariant::network, &sorted},
        std::pair{AllocationVariant::parallel_block, &par}}) {
    const Result got = run_gpu(u, g, v);
    EXPECT_TRUE(same_or_both_nan(got.a, ref->a, name_of(v) + " forward on the GPU"));
    EXPECT_TRUE(same_or_both_nan(got.d, ref->d, name_of(v) + " backward on the GPU"));
  }
}

// The free lists a forward keeps for its backward (allocation.h): on the GPU
// `sorted`, `rank` and `network` keep them (the warp sort of N ≤ 128 writes its
// registers out; the free-list kernels write into them), their backward reads
// them (the fused sweep for 2 ≤ N ≤ 128, the ordered sweep otherwise) and gives
// the bits of ordering again; the mask variants ignore them.
// kept_free_lists_agree for every variant on the GPU, usages u (on the host).
void expect_kept_lists_on_gpu(const Tensor& u, uint64_t seed) {
  const Tensor g = random_tensor(u.shape(), seed).to(Device::cuda);
  for (AllocationVariant v : allocation_variants()) {
    PoisonedGpuAllocations poison;
    EXPECT_TRUE(kept_free_lists_agree(u.to(Device::cuda), g, v,
                                      allocation_keeps_free_list(v, Device::cuda),
                                      name_of(v) + " on the GPU, N " + std::to_string(u.dim(1))));
  }
}

TEST_P(AllocationCuda, KeptFreeListsGiveTheSameBits) {
  MARE_NEEDS_GPU();
  const int64_t n = GetParam();
  expect_kept_lists_on_gpu(tricky_usages(n, 2700 + n), 2701 + n);
  expect_kept_lists_on_gpu(nonfinite_usages(n, 2750 + n), 2751 + n);
}

INSTANTIATE_TEST_SUITE_P(N, AllocationCuda,
                         ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64, 128));

// Kept lists beyond the warp sort (N > 256: the segmented radix sort writes
// them) and between it and the fused sweep (128 < N ≤ 256).
TEST(AllocationCudaLarge, KeptFreeListsGiveTheSameBits) {
  MARE_NEEDS_GPU();
  for (int64_t n : {200, 300}) expect_kept_lists_on_gpu(tricky_usages(n, 2800 + n), 2801 + n);
}

// B·I memories as in NTCRE: thousands of rows, grid-stride loops with several
// iterations per thread for the per-memory kernels of sorted and rank.
TEST(AllocationCudaLarge, ManyMemories) {
  MARE_NEEDS_GPU();
  for (int64_t n : {4, 16, 40}) {
    Tensor u = random_tensor({20011, n}, 2100 + n, 0.0f, 1.0f);
    Tensor g = random_tensor(u.shape(), 2200 + n);
    const Result sorted = run(u, g, AllocationVariant::sorted);
    for (AllocationVariant v : allocation_variants()) {
      if (v == AllocationVariant::parallel_eps) continue;  // random usages may be near-ties
      const Result gpu = run_gpu(u, g, v);
      const std::string what = name_of(v) + ", 20011 memories of N " + std::to_string(n);
      EXPECT_TRUE(close(gpu.a, sorted.a, 1e-5, 1e-5, what + " forward"));
      EXPECT_TRUE(close(gpu.d, sorted.d, 1e-5, 1e-5, what + " backward"));
    }
  }
}

// The pinned near-tie of test_allocation.cpp: the GPU's parallel-eps reorders it
// exactly as the CPU's does (the ε-keys round identically on both devices).
TEST(AllocationCudaParallelEps, NearTieIsReorderedAsOnTheCpu) {
  MARE_NEEDS_GPU();
  const float u0 = 0.5f + 8.0f * std::ldexp(1.0f, -24), u1 = 0.5f;
  Tensor u = Tensor::from_vector({u0, u1}, {1, 2});
  Tensor g = Tensor::from_vector({0.3f, -0.7f}, {1, 2});
  const Result cpu_eps = run(u, g, AllocationVariant::parallel_eps);
  const Result gpu_eps = run_gpu(u, g, AllocationVariant::parallel_eps);
  const Result gpu_sorted = run_gpu(u, g, AllocationVariant::sorted);
  EXPECT_TRUE(close(gpu_eps.a, cpu_eps.a, 1e-6, 0, "parallel-eps forward"));
  EXPECT_TRUE(close(gpu_eps.d, cpu_eps.d, 1e-6, 0, "parallel-eps backward"));
  const std::vector<float> e = gpu_eps.a.to_vector(), s = gpu_sorted.a.to_vector();
  EXPECT_NEAR(e[0], 1 - double(u0), 1e-6);
  EXPECT_GT(std::fabs(e[0] - s[0]), 0.2) << "the near-tie must change the allocation by O(1)";
}

// Thesis Fig. 2.28 / 3.7, values by hand (see test_allocation.cpp).
TEST(AllocationCudaHandCase, UsageFromTheThesis) {
  MARE_NEEDS_GPU();
  Tensor u = Tensor::from_vector({0.1f, 0.9f, 0.0f, 0.8f}, {1, 4});
  const double expect[4] = {8.999991e-7, 8.000066e-9, 0.999999, 2.0000160e-8};
  for (AllocationVariant v : allocation_variants()) {
    std::vector<float> a = allocation_forward(u.to(Device::cuda), v).to_vector();
    if (v == AllocationVariant::parallel_eps) {
      EXPECT_EQ(a, (std::vector<float>{0.0f, 0.0f, 1.0f, 0.0f}));
      continue;
    }
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(a[i], expect[i], 1e-5 * expect[i]) << name_of(v) << " slot " << i;
  }
}

TEST(AllocationCudaErrors, MixedDevicesAreRefused) {
  MARE_NEEDS_GPU();
  Tensor u = random_tensor({3, 4}, 5, 0.0f, 1.0f);
  Tensor d = Tensor::zeros({3, 4}, Device::cuda);
  EXPECT_THROW(allocation_backward(d, u, u.to(Device::cuda), AllocationVariant::sorted),
               std::invalid_argument);
  Tensor out = Tensor::empty({3, 4}, Device::cuda);
  EXPECT_THROW(allocation_forward_into(out, u, AllocationVariant::rank), std::invalid_argument);
}

}  // namespace
}  // namespace mare::test
