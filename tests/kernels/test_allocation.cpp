// Allocation variants (SPEC §3 step 4) and a whole memory step composed over
// T = 3 steps.
//
// 1. Every variant except parallel-eps agrees with `sorted` to 1e-5 in forward
//    and backward for N ∈ {1, 2, 3, 4, 5, 8, 16, 32, 64, 128} on rows with random
//    usages, exact ties, all zeros, exactly 1, values within 1e-7 of each
//    other and values below ε; `rank` and `network` equal `sorted` and
//    `parallel-block` equals `parallel` bit for bit (allocation.h promises it).
// 2. parallel-eps agrees with `sorted` where usages are separated by more than
//    N·ε', and differs by O(1) on a constructed near-tie (pinned).
// 3. DNC properties and the hand case [0.1, 0.9, 0.0, 0.8] of thesis Fig. 2.28/3.7.
// 4. content → retention → usage → allocation → write → links → reads over
//    T = 3 steps: the float gradient of the composed ops against central
//    differences of an independent double-precision composition, for every
//    variant (the reference freezes w^w_{t−1} inside the usage and the free
//    list at the point of evaluation, i.e. exactly SPEC §3's "no gradient").
// 5. Usages outside [0, 1] and NaN: the NaN rule of allocation.h in every
//    variant, and the bit-for-bit promises with such usages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "kernels/bench/allocation_sweep.h"
#include "kernels/memory/access.h"
#include "kernels/memory/allocation.h"
#include "kernels/memory/interface.h"
#include "kernels/random.h"
#include "tests/kernels/allocation_checks.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

constexpr double kEps = 1e-6;

std::vector<AllocationVariant> exact_variants() {
  return {AllocationVariant::parallel, AllocationVariant::rank, AllocationVariant::parallel_block,
          AllocationVariant::network};
}

std::string name_of(AllocationVariant v) {
  return std::string(to_string(v));
}

// {allocation_forward(u, v), start + the backward of g} (start is copied).
std::pair<Tensor, Tensor> forward_and_backward(const Tensor& u, const Tensor& g,
                                               const Tensor& start, AllocationVariant v) {
  Tensor d = start.clone();
  allocation_backward(d, g, u, v);
  return {allocation_forward(u, v), d};
}

// Rows of every awkward kind for N slots (19 rows: more than one 16-memory
// block of parallel-block, and not a multiple of 4).
Tensor tricky_usages(int64_t n, uint64_t seed) {
  const int64_t rows = 19;
  Tensor u = random_tensor({rows, n}, seed, 0.0f, 1.0f);
  float* x = u.f32();
  PhiloxStream rng(seed, 99);
  for (int64_t i = 0; i < n; ++i) {
    x[8 * n + i] = 0.0f;                                                      // all zero
    x[9 * n + i] = 1.0f;                                                      // all exactly 1
    x[10 * n + i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? 0.0f : x[10 * n + i]);  // 0s, 1s, random
    x[11 * n + i] = 0.25f * static_cast<float>(1 + (i * 7) % 3);              // exact ties
    // within 1e-7: 0.5 and the next floats above it (spacing 2^-24 ≈ 6e-8), shuffled
    x[12 * n + i] = 0.5f + static_cast<float>((i * 5) % 2) * std::ldexp(1.0f, -24);
    x[13 * n + i] = 0.1f + static_cast<float>((i * 3) % 4) * 1e-8f;  // 0.1 and its neighbours
    x[14 * n + i] = x[14 * n + (i / 2)];                             // pairs of equal random values
    x[15 * n + i] = static_cast<float>(i % 5) * 1e-8f;               // below ε: ties after û
    x[16 * n + i] = rng.uniform() < 0.5f ? 1.0f : rng.uniform();     // many exact 1s
  }
  return u;
}

// Distinct usages, pairwise gaps ≥ 0.2/N (far above N·ε' for N ≤ 128).
Tensor separated_usages(int64_t rows, int64_t n, uint64_t seed) {
  Tensor u = random_tensor({rows, n}, seed, 0.0f, 1.0f);
  for (int64_t b = 0; b < rows; ++b) {
    std::vector<int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    PhiloxStream rng(seed + b, 5);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(perm[i], perm[rng.below(static_cast<uint32_t>(i + 1))]);
    for (int64_t i = 0; i < n; ++i)
      u.f32()[b * n + i] = (static_cast<float>(perm[i]) + 0.4f + 0.2f * u.f32()[b * n + i]) / n;
  }
  return u;
}

class AllocationAgreement : public ::testing::TestWithParam<int64_t> {};

TEST_P(AllocationAgreement, ExactVariantsMatchSortedForwardAndBackward) {
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 700 + n);
  Tensor g = random_tensor(u.shape(), 800 + n);
  Tensor a_ref = allocation_forward(u, AllocationVariant::sorted);
  Tensor d_ref = Tensor::zeros_like(u);
  allocation_backward(d_ref, g, u, AllocationVariant::sorted);
  for (float v : d_ref.to_vector()) ASSERT_TRUE(std::isfinite(v)) << "sorted backward not finite";
  for (AllocationVariant v : exact_variants()) {
    Tensor a = allocation_forward(u, v);
    Tensor d = Tensor::zeros_like(u);
    allocation_backward(d, g, u, v);
    EXPECT_TRUE(close(a, a_ref, 1e-5, 1e-5, name_of(v) + " forward, N " + std::to_string(n)));
    EXPECT_TRUE(close(d, d_ref, 1e-5, 1e-5, name_of(v) + " backward, N " + std::to_string(n)));
  }
}

TEST_P(AllocationAgreement, RankAndNetworkAreSortedAndBlockIsParallelBitForBit) {
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 900 + n);
  Tensor g = random_tensor(u.shape(), 901 + n);
  const Tensor start = Tensor::zeros_like(u);
  auto run = [&](AllocationVariant v) { return forward_and_backward(u, g, start, v); };
  auto [a_sorted, d_sorted] = run(AllocationVariant::sorted);
  auto [a_rank, d_rank] = run(AllocationVariant::rank);
  auto [a_net, d_net] = run(AllocationVariant::network);
  auto [a_par, d_par] = run(AllocationVariant::parallel);
  auto [a_block, d_block] = run(AllocationVariant::parallel_block);
  EXPECT_TRUE(identical(a_rank, a_sorted, "rank forward"));
  EXPECT_TRUE(identical(d_rank, d_sorted, "rank backward"));
  EXPECT_TRUE(identical(a_net, a_sorted, "network forward"));
  EXPECT_TRUE(identical(d_net, d_sorted, "network backward"));
  EXPECT_TRUE(identical(a_block, a_par, "parallel-block forward"));
  EXPECT_TRUE(identical(d_block, d_par, "parallel-block backward"));
}

TEST_P(AllocationAgreement, ParallelEpsMatchesSortedWhenUsagesAreSeparated) {
  const int64_t n = GetParam();
  // Looser than 1e-5 by N·ε': parallel-eps multiplies raw usages where sorted
  // multiplies û = ε + (1 − ε)u, |û − u| ≤ ε per factor, at most N factors.
  const double atol = 1e-5 + n * kEps;
  Tensor u = separated_usages(21, n, 1000 + n);
  Tensor g = random_tensor(u.shape(), 1001 + n);
  Tensor d_ref = Tensor::zeros_like(u), d = Tensor::zeros_like(u);
  allocation_backward(d_ref, g, u, AllocationVariant::sorted);
  allocation_backward(d, g, u, AllocationVariant::parallel_eps);
  EXPECT_TRUE(close(allocation_forward(u, AllocationVariant::parallel_eps),
                    allocation_forward(u, AllocationVariant::sorted), atol, 1e-5, "forward"));
  EXPECT_TRUE(close(d, d_ref, atol, 1e-5, "backward"));
}

TEST_P(AllocationAgreement, DncProperties) {
  const int64_t n = GetParam();
  Tensor distinct = separated_usages(23, n, 1100 + n), tricky = tricky_usages(n, 1200 + n);
  for (AllocationVariant v : allocation_variants()) {
    for (const Tensor* u : {&distinct, &tricky}) {
      std::vector<float> a = allocation_forward(*u, v).to_vector();
      for (int64_t b = 0; b < u->dim(0); ++b) {
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_GE(a[b * n + i], 0.0f) << name_of(v) << " memory " << b << " slot " << i;
          sum += a[b * n + i];
        }
        EXPECT_LE(sum, 1.0 + 1e-6) << name_of(v) << " memory " << b;
        if (u == &distinct) {  // no ties: the largest share goes to the least-used slot
          const float* row = u->f32() + b * n;
          EXPECT_EQ(
              std::max_element(a.begin() + b * n, a.begin() + (b + 1) * n) - a.begin() - b * n,
              std::min_element(row, row + n) - row)
              << name_of(v) << " memory " << b;
        }
      }
    }
  }
}

// The awkward rows of tricky_usages (8 to 16: zeros, ones, exact ties, near-ties 1 ulp
// apart, values below ε) and two random rows, for every variant, against the
// independent double-precision reference of allocation_checks.h rather than against
// `sorted`, which shares û and the tie rule with the other variants. parallel-eps is
// held to its own A.1 semantics (ε-offset key, raw u). The tolerance is that of the
// variant-to-variant checks: float products and sums of at most N terms in (0, 1].
TEST_P(AllocationAgreement, TrickyRowsMatchTheIndependentDoubleReference) {
  const int64_t n = GetParam();
  Tensor u = tricky_usages(n, 1500 + n);
  Tensor g = random_tensor(u.shape(), 1501 + n);
  const std::vector<int64_t> rows = {8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 1};
  const auto [a_dnc, d_dnc] = reference_allocation_rows(u, g, rows, false);
  const auto [a_eps, d_eps] = reference_allocation_rows(u, g, rows, true);
  for (AllocationVariant v : allocation_variants()) {
    const bool eps = v == AllocationVariant::parallel_eps;
    Tensor d = Tensor::zeros_like(u);
    allocation_backward(d, g, u, v);
    // "memory i" in a failure message is rows[i].
    const std::string what = name_of(v) + ", N " + std::to_string(n) + ", rows 8-16, 0, 1";
    EXPECT_TRUE(close(select_rows(allocation_forward(u, v), rows), eps ? a_eps : a_dnc, 1e-5, 1e-5,
                      what + " forward"));
    EXPECT_TRUE(close(select_rows(d, rows), eps ? d_eps : d_dnc, 1e-5, 1e-5, what + " backward"));
  }
}

// The free lists a forward keeps for its backward: on the CPU `sorted` keeps
// them (rank and network order in SIMD lanes without a list; given sorted's, their
// backward reads them), on tricky rows and on non-finite ones.
TEST_P(AllocationAgreement, KeptFreeListsGiveTheSameBits) {
  const int64_t n = GetParam();
  for (const Tensor& u : {tricky_usages(n, 900 + n), nonfinite_usages(n, 950 + n)}) {
    Tensor g = random_tensor(u.shape(), 901 + n);
    for (AllocationVariant v : allocation_variants())
      EXPECT_TRUE(kept_free_lists_agree(u, g, v, allocation_keeps_free_list(v, Device::cpu),
                                        name_of(v) + ", N " + std::to_string(n)));
  }
}

INSTANTIATE_TEST_SUITE_P(N, AllocationAgreement,
                         ::testing::Values(1, 2, 3, 4, 5, 8, 16, 32, 64, 128));

// The lane-block paths (16 memories per block, in-register transposition for
// N = 4 and N a multiple of 16 on AVX-512 builds, the N = 4 and N = 16
// register kernels, rank's counting and products across memories, the
// network's packed-key register kernels for N = 4 and 16, its wide path for
// 16 < N ≤ 128 (N = 17 and 48: a partial group and padding) and its general path)
// over several full blocks and a tail, on usages with many exact ties (values
// from a small set) mixed with the awkward rows: `rank` ≡ `network` ≡ `sorted` and
// `parallel-block` ≡ `parallel` bit for bit, forward and backward (the
// backward accumulating into a non-zero d_usage).
class AllocationLaneBlocks : public ::testing::TestWithParam<int64_t> {};

TEST_P(AllocationLaneBlocks, BitIdentitiesOverManyBlocks) {
  const int64_t n = GetParam(), rows = 5 * 16 + 7;
  Tensor u = random_tensor({rows, n}, 1300 + n, 0.0f, 1.0f);
  Tensor tricky = tricky_usages(n, 1400 + n);
  float* x = u.f32();
  PhiloxStream rng(1500 + n, 3);
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t i = 0; i < n; ++i) {
      if (b % 3 == 0) x[b * n + i] = 0.125f * static_cast<float>(rng.below(5));  // ties
      if (b >= 40 && b < 40 + 19) x[b * n + i] = tricky.f32()[(b - 40) * n + i];
    }
  Tensor g = random_tensor(u.shape(), 1600 + n);
  Tensor start = random_tensor(u.shape(), 1700 + n);
  auto run = [&](AllocationVariant v) { return forward_and_backward(u, g, start, v); };
  auto [a_sorted, d_sorted] = run(AllocationVariant::sorted);
  auto [a_rank, d_rank] = run(AllocationVariant::rank);
  auto [a_net, d_net] = run(AllocationVariant::network);
  auto [a_par, d_par] = run(AllocationVariant::parallel);
  auto [a_block, d_block] = run(AllocationVariant::parallel_block);
  const std::string at = ", N " + std::to_string(n);
  EXPECT_TRUE(identical(a_rank, a_sorted, "rank forward" + at));
  EXPECT_TRUE(identical(d_rank, d_sorted, "rank backward" + at));
  EXPECT_TRUE(identical(a_net, a_sorted, "network forward" + at));
  EXPECT_TRUE(identical(d_net, d_sorted, "network backward" + at));
  EXPECT_TRUE(identical(a_block, a_par, "parallel-block forward" + at));
  EXPECT_TRUE(identical(d_block, d_par, "parallel-block backward" + at));
  EXPECT_TRUE(close(a_block, a_sorted, 1e-5, 1e-5, "parallel-block vs sorted forward" + at));
  EXPECT_TRUE(close(d_block, d_sorted, 1e-5, 1e-5, "parallel-block vs sorted backward" + at));
}

INSTANTIATE_TEST_SUITE_P(N, AllocationLaneBlocks,
                         ::testing::Values(1, 2, 4, 6, 8, 12, 16, 17, 32, 48, 64, 128));

// `network` ≡ `sorted` bit for bit on usages u, forward and backward (into a
// random non-zero d_usage), gradients and start drawn from seed.
void expect_network_is_sorted(const Tensor& u, uint64_t seed) {
  Tensor g = random_tensor(u.shape(), seed);
  Tensor start = random_tensor(u.shape(), seed + 100);
  auto run = [&](AllocationVariant v) { return forward_and_backward(u, g, start, v); };
  auto [a_sorted, d_sorted] = run(AllocationVariant::sorted);
  auto [a_net, d_net] = run(AllocationVariant::network);
  const std::string at = ", N " + std::to_string(u.shape()[1]);
  EXPECT_TRUE(identical(a_net, a_sorted, "network forward" + at));
  EXPECT_TRUE(identical(d_net, d_sorted, "network backward" + at));
}

// `network`'s register kernels (N = 4 and 16 on AVX-512 builds) and its wide
// path (16 < N ≤ 128) pack û into integer keys that are exact for
// 2^-31 ≤ û < 2 only: blocks with a usage outside [0, 2) (negative, 2, huge)
// take the general path, blocks beside them the packed one, and every block
// still equals `sorted` bit for bit. Also the comparator counts of Batcher's
// network, and a network that sorts every 0/1 input (the 0-1 principle: then
// it sorts every input).
TEST(AllocationNetwork, OutOfRangeUsagesTakeTheGeneralPath) {
  for (int64_t n : {4, 16, 32, 100, 128}) {
    const int64_t rows = 4 * 16 + 3;
    Tensor u = random_tensor({rows, n}, 2100 + n, 0.0f, 1.0f);
    float* x = u.f32();
    x[16 * n + 3] = -0.25f;                     // block 1: a negative usage
    x[33 * n + 1] = 5000.0f;                    // block 2: û far above 2
    x[34 * n + 0] = x[34 * n + 1] = -1.0f;      // and a tie below 0
    x[65 * n + 2] = -3.0f;                      // the tail
    x[48 * n + 2] = 3.0f;                       // block 3: past the packed range (2 is the
    x[49 * n + 1] = 2.0f;                       // first usage outside it)
    x[0 * n + 1] = std::nextafter(2.0f, 0.0f);  // block 0: the last one inside it,
    x[1 * n + 0] = x[1 * n + 2] = 1.0f;         // beside exact ties at 1
    expect_network_is_sorted(u, 2200 + n);
  }
}

TEST(AllocationNetwork, BatcherComparatorsSortEveryZeroOneInput) {
  EXPECT_EQ(network_comparators(1), 0);
  EXPECT_EQ(network_comparators(4), 5);
  EXPECT_EQ(network_comparators(16), 63);
  EXPECT_EQ(network_comparators(32), 191);
  EXPECT_EQ(network_comparators(128), 1471);
  // Through the kernel: usages of only two values, every pattern for N ≤ 12
  // (4096 memories at N = 12), against `sorted` bit for bit.
  for (int64_t n = 1; n <= 12; ++n) {
    const int64_t rows = int64_t{1} << n;
    Tensor u = Tensor::empty({rows, n});
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t i = 0; i < n; ++i) u.f32()[b * n + i] = (b >> i) & 1 ? 0.75f : 0.25f;
    EXPECT_TRUE(identical(allocation_forward(u, AllocationVariant::network),
                          allocation_forward(u, AllocationVariant::sorted),
                          "network forward, every 0/1 pattern, N " + std::to_string(n)));
  }
}

// The wide path's merges run on usages of two or three values, so that nearly
// every comparison is an exact tie that only the slot decides, over whole
// blocks, a tail, N a power of two and not (padding, a partial group): equal
// to `sorted` bit for bit, forward and backward. And its comparator counts.
TEST(AllocationNetwork, WidePathBreaksTiesBySlot) {
  for (int64_t n : {17, 32, 48, 64, 100, 128}) {
    const int64_t rows = 6 * 16 + 5;
    Tensor u = Tensor::empty({rows, n});
    PhiloxStream rng(2400 + n, 1);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t i = 0; i < n; ++i)
        u.f32()[b * n + i] = b % 2 ? 0.25f * static_cast<float>(1 + rng.below(2))
                                   : 0.125f * static_cast<float>(rng.below(3));
    expect_network_is_sorted(u, 2500 + n);
  }
  const auto counts = [](int64_t n) {
    const NetworkWideCounts c = network_wide_comparators(n);
    return std::vector<int64_t>{c.sort16_32, c.sort16_64, c.merge64};
  };
  EXPECT_EQ(counts(16), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(counts(129), (std::vector<int64_t>{0, 0, 0}));
  if (kAllocationLanes == 16) {
    EXPECT_EQ(counts(32), (std::vector<int64_t>{126, 0, 80}));
    EXPECT_EQ(counts(48), (std::vector<int64_t>{189, 0, 352}));
    EXPECT_EQ(counts(100), (std::vector<int64_t>{378, 63, 1152}));
    EXPECT_EQ(counts(128), (std::vector<int64_t>{504, 0, 1152}));
  } else {
    EXPECT_EQ(counts(128), (std::vector<int64_t>{0, 0, 0}));
  }
}

// Usages outside [0, 1] and NaN (nonfinite_usages): the free list puts a NaN
// after every number (NaNs among themselves by slot), so a NaN slot's
// allocation is NaN and every other slot's is that of the memory without it,
// in every variant; the bit-for-bit promises (rank and network = sorted,
// parallel-block = parallel) hold forward and backward with ±∞, negative and
// huge usages and NaNs of every sign and payload, on whole lane blocks,
// 2-memory registers (N = 8) and tails. Before, `sorted` handed NaNs to
// std::sort (no strict weak order: undefined behaviour), `rank` could give two
// slots one rank, and the fast paths disagreed with their references.
TEST(AllocationNonFinite, EveryVariantKeepsItsPromises) {
  for (int64_t n : {1, 2, 3, 4, 5, 8, 16, 17, 32, 100, 128}) {
    Tensor u = nonfinite_usages(n, 3100 + n);
    const float* x = u.f32();
    const std::string where = ", N " + std::to_string(n);
    Tensor g = random_tensor(u.shape(), 3300 + n);
    const Tensor start = random_tensor(u.shape(), 3400 + n);
    auto run = [&](AllocationVariant v) { return forward_and_backward(u, g, start, v); };
    const auto sorted = run(AllocationVariant::sorted), parallel = run(AllocationVariant::parallel);
    for (auto [v, ref] : {std::pair{AllocationVariant::rank, &sorted},
                          std::pair{AllocationVariant::network, &sorted},
                          std::pair{AllocationVariant::parallel_block, &parallel}}) {
      const auto got = run(v);
      EXPECT_TRUE(same_or_both_nan(got.first, ref->first, name_of(v) + " forward" + where));
      EXPECT_TRUE(same_or_both_nan(got.second, ref->second, name_of(v) + " backward" + where));
    }
    // Rows 0..7: NaNs among usages in [0, 1].
    for (AllocationVariant v : allocation_variants()) {
      const std::vector<float> a = allocation_forward(u, v).to_vector();
      for (int64_t r = 0; r < 8; ++r) {
        std::vector<float> kept;
        for (int64_t i = 0; i < n; ++i) {
          const float ui = x[r * n + i], ai = a[r * n + i];
          EXPECT_EQ(std::isnan(ai), std::isnan(ui))
              << name_of(v) << where << ", row " << r << ", slot " << i << ": a = " << ai;
          if (!std::isnan(ui)) kept.push_back(ui);
        }
        if (v == AllocationVariant::parallel_eps || kept.empty())
          continue;  // its keys hold the slot
        const std::vector<float> alone =
            allocation_forward(Tensor::from_vector(kept, {1, static_cast<int64_t>(kept.size())}), v)
                .to_vector();
        for (int64_t i = 0, j = 0; i < n; ++i)
          if (!std::isnan(x[r * n + i])) {
            EXPECT_EQ(a[r * n + i], alone[j])
                << name_of(v) << where << ", row " << r << ", slot " << i;
            ++j;
          }
      }
    }
  }
}

// The benchmark's operation counts (allocation_sweep.h): what each variant's
// compute bound divides by the measured peak.
TEST(AllocationOpsCount, CountsPerMemory) {
  OpsPeak kind = OpsPeak::scalar;
  std::string what;
  // N = 4: P = 12 ordered pairs.
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::parallel_block, 4, false, &kind, &what),
            24.0);
  EXPECT_EQ(kind, OpsPeak::select);
  EXPECT_NE(what.find("compares"), std::string::npos);
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::parallel, 4, true, &kind), 24.0 + 72.0);
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::rank, 4, false, &kind), 24.0 + 8.0);
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::rank, 4, true, &kind), 48.0 + 24.0);
  EXPECT_EQ(kind, OpsPeak::count);
  // network, N = 4: C = 5 comparators; packed keys on AVX-512 builds, the
  // general path otherwise (and for N = 8 everywhere: C = 19).
  if (kAllocationLanes == 16) {
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 4, false, &kind), 25.0 + 8.0);
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 4, true, &kind),
              25.0 + 8.0 + 35.0 + 16.0);
  } else {
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 4, false, &kind), 45.0 + 12.0);
  }
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 8, false, &kind), 171.0 + 24.0);
  // N = 32: the wide path on AVX-512 builds (2 x 126 + 4 x 80), else the
  // general path (C = 191).
  if (kAllocationLanes == 16) {
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 32, false, &kind),
              252.0 + 320.0 + 96.0);
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 32, true, &kind),
              2 * (252.0 + 320.0) + 288.0);
  } else {
    EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::network, 32, false, &kind),
              9.0 * 191 + 96.0);
  }
  EXPECT_EQ(kind, OpsPeak::count);
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::sorted, 4, false, &kind), 8.0 + 8.0);
  EXPECT_EQ(kind, OpsPeak::scalar);
  EXPECT_EQ(allocation_ops_per_memory(AllocationVariant::sorted, 128, true, &kind),
            2 * 128.0 * 7 + 6 * 128.0);
  const ComputePeak peak = measure_compute_peak();  // rates only; no time is asserted
  EXPECT_GT(peak.select_ops_per_second, 0.0);
  EXPECT_GT(peak.count_ops_per_second, 0.0);
  EXPECT_GT(peak.scalar_ops_per_second, 0.0);
  EXPECT_GT(peak.clock_hz, 0.0);
  EXPECT_TRUE(peak.simd_lanes == 4 || peak.simd_lanes == 8 || peak.simd_lanes == 16);
}

// Thesis Fig. 2.28 / 3.7: usage [0.1, 0.9, 0.0, 0.8] allocates (almost)
// everything to slot 2. Expected values by hand from SPEC §3 with ε = 1e-6:
// û = [0.1000009, 0.9000001, 1e-6, 0.8000002], free list (2, 0, 3, 1),
// a2 = 1 − 1e-6, a0 = 0.8999991·1e-6, a3 = 0.1999998·1e-6·0.1000009,
// a1 = 0.0999999·1e-6·0.1000009·0.8000002.
TEST(AllocationHandCase, UsageFromTheThesis) {
  Tensor u = Tensor::from_vector({0.1f, 0.9f, 0.0f, 0.8f}, {1, 4});
  const double expect[4] = {8.999991e-7, 8.000066e-9, 0.999999, 2.0000160e-8};
  for (AllocationVariant v : allocation_variants()) {
    std::vector<float> a = allocation_forward(u, v).to_vector();
    if (v == AllocationVariant::parallel_eps) {
      // Raw usage: the empty slot takes exactly everything, as in Fig. 3.7.
      EXPECT_EQ(a, (std::vector<float>{0.0f, 0.0f, 1.0f, 0.0f}));
      continue;
    }
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(a[i], expect[i], 1e-5 * expect[i]) << name_of(v) << " slot " << i;
  }
}

// Every variant runs with subnormals flushed (FTZ and DAZ) and gives the caller back its
// floating-point mode: N = 128 usages of 0.5 make products down to 2^-127 (subnormal), which
// come out as 0, never as subnormals; the caller's MXCSR, with the flags off and then on,
// is the same afterwards, forward and backward.
TEST(AllocationFloatingPointMode, SubnormalsFlushedAndTheCallersModeRestored) {
#if defined(__SSE__)
  const unsigned entry = _mm_getcsr();
  const int64_t n = 128;
  Tensor u = Tensor::from_vector(std::vector<float>(n, 0.5f), {1, n});
  Tensor d_out = Tensor::from_vector(std::vector<float>(n, 1.0f), {1, n});
  for (const unsigned mode : {entry & ~0x8040u, entry | 0x8040u}) {
    _mm_setcsr(mode);
    for (AllocationVariant v : allocation_variants()) {
      const std::vector<float> a = allocation_forward(u, v).to_vector();
      EXPECT_EQ(_mm_getcsr(), mode) << name_of(v) << ": forward changed the caller's mode";
      bool flushed = false;
      for (float x : a) {
        EXPECT_FALSE(std::fpclassify(x) == FP_SUBNORMAL) << name_of(v) << ": " << x;
        flushed = flushed || x == 0.0f;
      }
      EXPECT_TRUE(flushed) << name_of(v) << ": the smallest allocations should underflow to 0";
      Tensor d_usage = Tensor::zeros({1, n});
      allocation_backward(d_usage, d_out, u, v);
      EXPECT_EQ(_mm_getcsr(), mode) << name_of(v) << ": backward changed the caller's mode";
    }
  }
  _mm_setcsr(entry);
#else
  GTEST_SKIP() << "no SSE control register on this CPU";
#endif
}

// The reference itself: the thesis hand case above, and its backward against central
// differences of its own forward (distinct usages, so a small step keeps the order).
TEST(AllocationReference, HandCaseAndCentralDifferences) {
  const ReferenceAllocation hand =
      reference_allocation({0.1, 0.9, 0.0, 0.8}, {0.0, 0.0, 0.0, 0.0}, false);
  const double expect[4] = {8.999991e-7, 8.000066e-9, 0.999999, 2.0000160e-8};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(hand.a[i], expect[i], 1e-6 * expect[i]) << i;
  EXPECT_EQ(reference_allocation({0.1, 0.9, 0.0, 0.8}, {0, 0, 0, 0}, true).a,
            (std::vector<double>{0, 0, 1, 0}));
  const std::vector<double> u = {0.31, 0.72, 0.05, 0.55, 0.98, 0.4},
                            g = {0.3, -1.1, 0.7, 0.2, -0.4, 0.9};
  for (bool eps : {false, true}) {
    const ReferenceAllocation r = reference_allocation(u, g, eps);
    for (size_t k = 0; k < u.size(); ++k) {
      std::vector<double> up = u, down = u;
      up[k] += 1e-6;
      down[k] -= 1e-6;
      const std::vector<double> a_up = reference_allocation(up, g, eps).a,
                                a_down = reference_allocation(down, g, eps).a;
      double numeric = 0;
      for (size_t i = 0; i < u.size(); ++i) numeric += g[i] * (a_up[i] - a_down[i]) / 2e-6;
      EXPECT_NEAR(r.d_u[k], numeric, 1e-8) << (eps ? "parallel-eps" : "dnc") << " slot " << k;
    }
  }
}

// The pinned difference of parallel-eps: two usages 8 float steps apart
// (4.8e-7 < ε') are ordered one way by û and the other by the ε-offset key.
TEST(AllocationParallelEps, NearTieIsReorderedAndChangesTheAllocation) {
  const float u0 = 0.5f + 8.0f * std::ldexp(1.0f, -24), u1 = 0.5f;
  Tensor u = Tensor::from_vector({u0, u1}, {1, 2});
  int32_t order_sorted[2], order_eps[2];
  allocation_order(u.f32(), 2, AllocationVariant::sorted, order_sorted);
  allocation_order(u.f32(), 2, AllocationVariant::parallel_eps, order_eps);
  EXPECT_EQ(order_sorted[0], 1);  // û1 < û0: slot 1 first
  EXPECT_EQ(order_eps[0], 0);     // key0 = (1−ε')u0 < key1 = ε' + (1−ε')u1: slot 0 first
  std::vector<float> s = allocation_forward(u, AllocationVariant::sorted).to_vector();
  std::vector<float> e = allocation_forward(u, AllocationVariant::parallel_eps).to_vector();
  const double h0 = kEps + (1 - kEps) * u0, h1 = kEps + (1 - kEps) * u1;
  EXPECT_NEAR(s[0], (1 - h0) * h1, 1e-6);
  EXPECT_NEAR(s[1], 1 - h1, 1e-6);
  EXPECT_NEAR(e[0], 1 - double(u0), 1e-6);
  EXPECT_NEAR(e[1], (1 - double(u1)) * u0, 1e-6);
  EXPECT_GT(std::fabs(e[0] - s[0]), 0.2) << "the near-tie must change the allocation by O(1)";
  // Separated by more than N·ε': the same order, the same allocation.
  Tensor far = Tensor::from_vector({0.5f + 1e-4f, 0.5f}, {1, 2});
  EXPECT_TRUE(close(allocation_forward(far, AllocationVariant::parallel_eps),
                    allocation_forward(far, AllocationVariant::sorted), 1e-5 + 2 * kEps, 0,
                    "separated pair"));
}

TEST(AllocationErrors, BadInputsAreRefused) {
  EXPECT_THROW(parse_allocation_variant("bitonic"), std::invalid_argument);
  EXPECT_EQ(parse_allocation_variant("parallel-eps"), AllocationVariant::parallel_eps);
  EXPECT_THROW(allocation_forward(Tensor::zeros({2, 3, 4}), AllocationVariant::sorted), ShapeError);
  Tensor d = Tensor::zeros({2, 4});
  EXPECT_THROW(
      allocation_backward(d, Tensor::zeros({2, 5}), Tensor::zeros({2, 4}), AllocationVariant::rank),
      ShapeError);
}

// ------------------------------------------------------------- composed step
constexpr int64_t kM = 2, kN = 4, kW = 3, kR = 2, kT = 3;
const int64_t kX = interface_width(kR, kW);

// The double-precision composition, written from SPEC §3 independently of the
// kernels. `frozen` holds, per step, w^w_{t−1} as seen by the usage and the
// free list per memory; record = true fills it (at the point of evaluation),
// record = false reuses it (for the perturbed evaluations).
struct Frozen {
  std::vector<VecD> write_prev;                      // [T][M·N]
  std::vector<std::vector<std::vector<int>>> order;  // [T][M][N]
};

double sig(double x) {
  return 1 / (1 + std::exp(-x));
}
double oneplus(double x) {
  return 1 + std::log1p(std::exp(x));
}

// Σ_t Σ cot_t · reads_t.
double ref_composed_loss(const std::vector<VecD>& xi, const std::vector<VecD>& cot, bool eps_kernel,
                         Frozen& fz, bool record) {
  const int64_t m = kM, n = kN, w = kW, r = kR;
  VecD mem(m * n * w, 0), u(m * n, 0), ww(m * n, 0), wr(m * r * n, 0), p(m * n, 0),
      link(m * n * n, 0);
  if (record) {
    fz.write_prev.assign(kT, {});
    fz.order.assign(kT, {});
  }
  double loss = 0;
  auto content = [&](const VecD& mm, const double* key, double beta, int64_t b, double* out) {
    double kk = 0;
    for (int64_t j = 0; j < w; ++j) kk += key[j] * key[j];
    VecD s(n);
    for (int64_t i = 0; i < n; ++i) {
      double dot = 0, nm = 0;
      for (int64_t j = 0; j < w; ++j) {
        dot += key[j] * mm[(b * n + i) * w + j];
        nm += mm[(b * n + i) * w + j] * mm[(b * n + i) * w + j];
      }
      s[i] = beta * dot / (std::sqrt(kk + kEps) * std::sqrt(nm + kEps) + kEps);
    }
    double mx = *std::max_element(s.begin(), s.end()), z = 0;
    for (double v : s) z += std::exp(v - mx);
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(s[i] - mx) / z;
  };
  for (int64_t t = 0; t < kT; ++t) {
    if (record) fz.write_prev[t] = ww;
    const VecD& ww_frozen = fz.write_prev[t];
    if (record) fz.order[t].assign(m, std::vector<int>(n));
    VecD mem_new(m * n * w), u_new(m * n), ww_new(m * n), wr_new(m * r * n), p_new(m * n),
        link_new(m * n * n);
    for (int64_t b = 0; b < m; ++b) {
      // interface split, in SPEC order
      const double* x = &xi[t][b * kX];
      const double* read_keys = x;
      const double* read_str_raw = read_keys + r * w;
      const double* write_key = read_str_raw + r;
      const double write_str = oneplus(write_key[w]);
      const double* erase_raw = write_key + w + 1;
      const double* write_vec = erase_raw + w;
      const double* free_raw = write_vec + w;
      const double ga = sig(free_raw[r]), gw = sig(free_raw[r + 1]);
      const double* modes_raw = free_raw + r + 2;
      // write content on M_{t−1}
      double cw[kN];
      content(mem, write_key, write_str, b, cw);
      // retention and usage (w^w_{t−1} frozen)
      for (int64_t i = 0; i < n; ++i) {
        double psi = 1;
        for (int64_t h = 0; h < r; ++h) psi *= 1 - sig(free_raw[h]) * wr[(b * r + h) * n + i];
        const double wf = ww_frozen[b * n + i];
        u_new[b * n + i] = (u[b * n + i] + wf - u[b * n + i] * wf) * psi;
      }
      // allocation
      double val[kN], key[kN], a[kN];
      for (int64_t i = 0; i < n; ++i) {
        const double uu = u_new[b * n + i];
        val[i] = eps_kernel ? uu : kEps + (1 - kEps) * uu;
        key[i] = eps_kernel ? i * kEps + (1 - kEps) * uu : val[i];
      }
      std::vector<int>& order = fz.order[t][b];
      if (record) {
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return key[i] < key[j]; });
      }
      double prod = 1;
      for (int j = 0; j < n; ++j) {
        a[order[j]] = (1 - val[order[j]]) * prod;
        prod *= val[order[j]];
      }
      // write weights, memory, links, precedence
      double sum_w = 0;
      for (int64_t i = 0; i < n; ++i) {
        ww_new[b * n + i] = gw * (ga * a[i] + (1 - ga) * cw[i]);
        sum_w += ww_new[b * n + i];
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < w; ++j)
          mem_new[(b * n + i) * w + j] =
              mem[(b * n + i) * w + j] * (1 - ww_new[b * n + i] * sig(erase_raw[j])) +
              ww_new[b * n + i] * write_vec[j];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          link_new[(b * n + i) * n + j] =
              i == j ? 0
                     : (1 - ww_new[b * n + i] - ww_new[b * n + j]) * link[(b * n + i) * n + j] +
                           ww_new[b * n + i] * p[b * n + j];
      for (int64_t i = 0; i < n; ++i)
        p_new[b * n + i] = (1 - sum_w) * p[b * n + i] + ww_new[b * n + i];
      // reads
      for (int64_t h = 0; h < r; ++h) {
        double cr[kN], f[kN] = {}, bw[kN] = {};
        content(mem_new, read_keys + h * w, oneplus(read_str_raw[h]), b, cr);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            f[i] += link_new[(b * n + i) * n + j] * wr[(b * r + h) * n + j];
            bw[i] += link_new[(b * n + j) * n + i] * wr[(b * r + h) * n + j];
          }
        const double* mr = modes_raw + 3 * h;
        const double mx = std::max({mr[0], mr[1], mr[2]});
        const double e0 = std::exp(mr[0] - mx), e1 = std::exp(mr[1] - mx),
                     e2 = std::exp(mr[2] - mx);
        const double pi0 = e0 / (e0 + e1 + e2), pi1 = e1 / (e0 + e1 + e2),
                     pi2 = e2 / (e0 + e1 + e2);
        for (int64_t i = 0; i < n; ++i)
          wr_new[(b * r + h) * n + i] = pi0 * bw[i] + pi1 * cr[i] + pi2 * f[i];
        for (int64_t j = 0; j < w; ++j) {
          double rv = 0;
          for (int64_t i = 0; i < n; ++i)
            rv += wr_new[(b * r + h) * n + i] * mem_new[(b * n + i) * w + j];
          loss += cot[t][(b * r + h) * w + j] * rv;
        }
      }
    }
    mem = mem_new;
    u = u_new;
    ww = ww_new;
    wr = wr_new;
    p = p_new;
    link = link_new;
  }
  return loss;
}

// The same composition with the float kernels, forward then a hand-written
// reverse pass; returns the loss and fills d_xi.
struct StepTape {
  InterfaceParts parts;
  Tensor mem_prev, u_prev, ww_prev, wr_prev, p_prev, link_prev;
  Tensor cw, psi, u, a, ww, mem, link, p, cr, wr;
  LinkWeights dirs;
};

double kernel_composed_loss(const std::vector<Tensor>& xi, const std::vector<Tensor>& cot,
                            AllocationVariant v, std::vector<Tensor>& d_xi) {
  Tensor mem = Tensor::zeros({kM, kN, kW}), u = Tensor::zeros({kM, kN}),
         ww = Tensor::zeros({kM, kN}), wr = Tensor::zeros({kM, kR, kN}),
         p = Tensor::zeros({kM, kN}), link = Tensor::zeros({kM, kN, kN});
  std::vector<StepTape> tape(kT);
  double loss = 0;
  for (int64_t t = 0; t < kT; ++t) {
    StepTape& s = tape[t];
    s.mem_prev = mem, s.u_prev = u, s.ww_prev = ww, s.wr_prev = wr, s.p_prev = p,
    s.link_prev = link;
    s.parts = interface_split_forward(xi[t], kR, kW);
    s.cw = content_weighting_forward(mem, s.parts.write_key, s.parts.write_strength);
    s.psi = retention_forward(s.parts.free_gates, wr);
    s.u = usage_forward(u, ww, s.psi);
    s.a = allocation_forward(s.u, v);
    s.ww = write_weighting_forward(s.a, s.cw.reshape({kM, kN}), s.parts.allocation_gate,
                                   s.parts.write_gate);
    s.mem = memory_update_forward(mem, s.ww, s.parts.erase, s.parts.write_vector);
    s.link = link_update_forward(link, p, s.ww);
    s.p = precedence_update_forward(p, s.ww);
    s.dirs = link_weights_forward(s.link, wr);
    s.cr = content_weighting_forward(s.mem, s.parts.read_keys, s.parts.read_strengths);
    s.wr = read_weights_forward(s.parts.read_modes, s.dirs.backward, s.cr, s.dirs.forward);
    Tensor reads = read_vectors_forward(s.mem, s.wr);
    for (int64_t i = 0; i < reads.numel(); ++i) loss += double(cot[t].f32()[i]) * reads.f32()[i];
    mem = s.mem, u = s.u, ww = s.ww, wr = s.wr, p = s.p, link = s.link;
  }
  // Gradients of the state leaving step t, filled by steps t and t + 1.
  Tensor d_mem = Tensor::zeros({kM, kN, kW}), d_u = Tensor::zeros({kM, kN}),
         d_wr = Tensor::zeros({kM, kR, kN}), d_p = Tensor::zeros({kM, kN}),
         d_link = Tensor::zeros({kM, kN, kN});
  for (int64_t t = kT - 1; t >= 0; --t) {
    StepTape& s = tape[t];
    InterfaceParts dp{
        Tensor::zeros_like(s.parts.read_keys),  Tensor::zeros_like(s.parts.read_strengths),
        Tensor::zeros_like(s.parts.write_key),  Tensor::zeros_like(s.parts.write_strength),
        Tensor::zeros_like(s.parts.erase),      Tensor::zeros_like(s.parts.write_vector),
        Tensor::zeros_like(s.parts.free_gates), Tensor::zeros_like(s.parts.allocation_gate),
        Tensor::zeros_like(s.parts.write_gate), Tensor::zeros_like(s.parts.read_modes)};
    Tensor d_mem_prev = Tensor::zeros({kM, kN, kW}), d_u_prev = Tensor::zeros({kM, kN}),
           d_wr_prev = Tensor::zeros({kM, kR, kN}), d_p_prev = Tensor::zeros({kM, kN}),
           d_link_prev = Tensor::zeros({kM, kN, kN});
    Tensor d_ww = Tensor::zeros({kM, kN}), d_cr = Tensor::zeros_like(s.cr),
           d_f = Tensor::zeros_like(s.cr), d_b = Tensor::zeros_like(s.cr),
           d_a = Tensor::zeros({kM, kN}), d_cw = Tensor::zeros({kM, kN}),
           d_psi = Tensor::zeros({kM, kN});
    read_vectors_backward(d_mem, d_wr, cot[t], s.mem, s.wr);
    read_weights_backward(dp.read_modes, d_b, d_cr, d_f, d_wr, s.parts.read_modes, s.dirs.backward,
                          s.cr, s.dirs.forward);
    content_weighting_backward(d_mem, dp.read_keys, dp.read_strengths, d_cr, s.mem,
                               s.parts.read_keys, s.parts.read_strengths, s.cr);
    link_weights_backward(d_link, d_wr_prev, d_f, d_b, s.link, s.wr_prev);
    precedence_update_backward(d_p_prev, d_ww, d_p, s.p_prev, s.ww);
    link_update_backward(d_link_prev, d_p_prev, d_ww, d_link, s.link_prev, s.p_prev, s.ww);
    memory_update_backward(d_mem_prev, d_ww, dp.erase, dp.write_vector, d_mem, s.mem_prev, s.ww,
                           s.parts.erase, s.parts.write_vector);
    write_weighting_backward(d_a, d_cw, dp.allocation_gate, dp.write_gate, d_ww, s.a,
                             s.cw.reshape({kM, kN}), s.parts.allocation_gate, s.parts.write_gate);
    allocation_backward(d_u, d_a, s.u, v);
    usage_backward(d_u_prev, d_psi, d_u, s.u_prev, s.ww_prev, s.psi);
    retention_backward(dp.free_gates, d_wr_prev, d_psi, s.parts.free_gates, s.wr_prev);
    Tensor d_cw3 = d_cw.reshape({kM, 1, kN});
    content_weighting_backward(d_mem_prev, dp.write_key, dp.write_strength, d_cw3, s.mem_prev,
                               s.parts.write_key, s.parts.write_strength, s.cw);
    interface_split_backward(d_xi[t], dp, xi[t], s.parts, kR, kW);
    d_mem = d_mem_prev, d_u = d_u_prev, d_wr = d_wr_prev, d_p = d_p_prev, d_link = d_link_prev;
  }
  return loss;
}

class ComposedStep : public ::testing::TestWithParam<AllocationVariant> {};

TEST_P(ComposedStep, GradientMatchesCentralDifferencesOfTheDoubleComposition) {
  const AllocationVariant v = GetParam();
  const bool eps_kernel = v == AllocationVariant::parallel_eps;
  std::vector<Tensor> xi, cot, d_xi;
  std::vector<VecD> xi_d, cot_d;
  for (int64_t t = 0; t < kT; ++t) {
    xi.push_back(random_tensor({kM, kX}, 1300 + t, -1.5f, 1.5f));
    cot.push_back(random_tensor({kM, kR, kW}, 1400 + t));
    d_xi.push_back(Tensor::zeros({kM, kX}));
    xi_d.push_back(to_double(xi.back()));
    cot_d.push_back(to_double(cot.back()));
  }
  const double loss = kernel_composed_loss(xi, cot, v, d_xi);
  Frozen fz;
  const double ref = ref_composed_loss(xi_d, cot_d, eps_kernel, fz, true);
  EXPECT_NEAR(loss, ref, 1e-5 + 1e-5 * std::fabs(ref));
  const double h = 1e-6;
  // Elements whose gradient is clearly non-zero, per step: the comparison below must not
  // be a comparison of zeros (a step whose interface never reaches the loss would pass).
  std::vector<int> informative(kT, 0);
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t e = 0; e < kM * kX; ++e) {
      const double keep = xi_d[t][e];
      xi_d[t][e] = keep + h;
      const double up = ref_composed_loss(xi_d, cot_d, eps_kernel, fz, false);
      xi_d[t][e] = keep - h;
      const double down = ref_composed_loss(xi_d, cot_d, eps_kernel, fz, false);
      xi_d[t][e] = keep;
      const double numeric = (up - down) / (2 * h), analytic = d_xi[t].f32()[e];
      // Looser than the op table's default: a float chain of ~40 ops over three
      // steps against double central differences.
      EXPECT_NEAR(analytic, numeric, 5e-5 + 2e-3 * std::fabs(numeric))
          << to_string(v) << ": step " << t << ", interface element " << e % kX << " of memory "
          << e / kX;
      informative[t] += std::fabs(numeric) > 1e-3;
    }
  // Seen: 18, 32 and 33 of 56 (at step 0 the memory is empty, so the read and write
  // keys carry no gradient); a quarter per step is the floor.
  for (int64_t t = 0; t < kT; ++t)
    EXPECT_GE(informative[t], kM * kX / 4)
        << "step " << t << ": " << informative[t] << " of " << kM * kX
        << " interface elements have a gradient above 1e-3";
}

// The composition must exercise the usage path: the steps before 2 and 3
// write something, so the usages there are neither zero nor tied and the
// allocation backward carries gradient (otherwise the check above would be
// blind to it).
TEST(ComposedStepSanity, EarlierStepsWriteSoTheUsageIsExercised) {
  std::vector<VecD> xi_d, cot_d;
  for (int64_t t = 0; t < kT; ++t) {
    xi_d.push_back(to_double(random_tensor({kM, kX}, 1300 + t, -1.5f, 1.5f)));
    cot_d.push_back(to_double(random_tensor({kM, kR, kW}, 1400 + t)));
  }
  Frozen fz;
  ref_composed_loss(xi_d, cot_d, false, fz, true);
  for (int64_t t = 1; t < kT; ++t) {
    const VecD& w = fz.write_prev[t];  // w^w of step t − 1, seen by the usage of step t
    EXPECT_GT(*std::max_element(w.begin(), w.end()), 1e-2) << "step " << t - 1 << " wrote nothing";
  }
}

// Every variant the registry lists (a hand-written list here once left `network` out).
INSTANTIATE_TEST_SUITE_P(Variants, ComposedStep,
                         ::testing::ValuesIn(allocation_variants().begin(),
                                             allocation_variants().end()),
                         [](const ::testing::TestParamInfo<AllocationVariant>& info) {
                           std::string s(to_string(info.param));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace mare::test
