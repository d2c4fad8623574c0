// Dynamic memory allocation of the DNC (SPEC §3 step 4), in several variants
// behind one interface, selected by name.
//
// Semantics (DNC): û = ε + (1 − ε)·u with ε = 1e-6; order the slots by
// ascending û, ties broken by lower slot index first (the free list φ); then
//   a[φ_j] = (1 − û[φ_j]) · Π_{k<j} û[φ_k].
// Rule every variant keeps: the backward is the derivative with the order held
// fixed (no gradient through the order), computed without dividing by usage
// values (zeros never give NaN), and accumulated (+=) into d_usage.
// The NaN rule (usages come from a model, which may diverge): a NaN û comes
// after every number in the free list, NaNs among themselves by slot; ±∞ and
// negative usages are ordered as numbers. So a NaN slot's allocation is NaN
// and every other slot's is what it would be without the NaN slot, in every
// variant; its backward turns the gradient of the slots before it in the
// free list NaN. Every promise below holds for such usages too (the masks
// of `parallel` are selects, 1 where g = 0, so a NaN or ∞ factor of a slot
// that does not precede another never reaches its product); the GPU kernels
// follow the same rule (their test passes on an H100 and an H200).
//
// Variants:
//   sorted        a real sort of slot indices per memory (std::sort on (û, index)),
//                 exclusive cumulative product, scatter back. The reference.
//   parallel      the thesis's mask formulation (§3.3, eq. 3-20..3-23) with an
//                 exact tie-break: g[n][n'] = [û[n] > û[n'] or (û[n] = û[n'] and
//                 n > n')], a[n] = (1 − û[n]) Π_{n'} (1 − g + g·û[n']). O(N²) per
//                 memory, no data-dependent branches. Equal to `sorted`.
//   parallel-eps  the thesis's published kernel (appendix A.1) as written: the
//                 order comes from key[n] = n·ε' + (1 − ε')·u[n] (ε' = 1e-6) and
//                 the RAW usage u enters the product and (1 − u). Differs from
//                 `sorted` by O(1) when two usages of one memory are closer than
//                 about N·ε' (the offset reorders them), and by O(N·ε') otherwise.
//   rank          rank-then-product: ranks by O(N²) branch-free integer counting
//                 (the comparisons of `parallel`, each pair once), the usages
//                 placed in free-list order by the ranks, then the O(N)
//                 cumulative product of `sorted`; on the CPU sixteen memories
//                 side by side in SIMD lanes (counting and products).
//                 Bit-identical to `sorted` in forward and backward.
//   parallel-block  `parallel` evaluated many memories at a time so that every
//                 comparison, select and product is a SIMD operation across
//                 memories: blocks of 16 memories in a slot-major layout (one
//                 memory per lane; transposed in registers for N = 4 and N a
//                 multiple of 16 on AVX-512 builds), with register kernels for
//                 N = 4 (forward) and N = 16 (forward and backward) that compare
//                 each pair of slots once, and for N = 8 the 2-memories-per-
//                 register form. Bit-identical to `parallel` (same factors,
//                 same order), forward and backward.
//   network       `sorted` with a sorting network in place of the sort:
//                 Batcher's odd–even merge sort on (û, slot) keys, a block of
//                 memories side by side in SIMD lanes, O(N log² N)
//                 compare-exchanges per memory (packed integer keys in
//                 registers for N = 4 and 16 on AVX-512 builds; for
//                 16 < N ≤ 128 there, 64-bit keys (û, slot) sorted by groups
//                 of 16 in registers and bitonic merges); then the
//                 cumulative product of `sorted`. Bit-identical to `sorted`,
//                 forward and backward.
// On the CPU all variants run memories in chunks on the kernel threads, are
// deterministic (the same bytes at any thread count), and run with subnormals
// flushed to zero (see allocation.cpp). The same variants run on the GPU under
// the same names (kernels/cuda/allocation.cu; see kernels/memory/README.md).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kernels/tensor.h"

namespace mare {

enum class AllocationVariant { sorted, parallel, parallel_eps, rank, parallel_block, network };

// Memories per lane block of `parallel-block` and `rank` in this build: one float per
// lane of the widest vector register it may use (16 on AVX-512, 8 on AVX, 4 otherwise;
// GCC lowers wider vector compares and selects lane by lane in scalar code). The
// benchmark's peak microbenchmarks use the same width.
#if defined(__AVX512F__)
inline constexpr int kAllocationLanes = 16;
#elif defined(__AVX__)
inline constexpr int kAllocationLanes = 8;
#else
inline constexpr int kAllocationLanes = 4;
#endif

inline constexpr float kAllocationEpsilon =
    1e-6f;  // ε of û = ε + (1 − ε)·u, and ε' of parallel-eps

// Every variant, in the order `mare bench allocation` prints them.
std::span<const AllocationVariant> allocation_variants();
std::string_view to_string(AllocationVariant v);
// "sorted" | "parallel" | "parallel-eps" | "rank" | "parallel-block" | "network"; throws
// std::invalid_argument listing the names otherwise.
AllocationVariant parse_allocation_variant(std::string_view name);
// The names of allocation_variants(), in that order (what --variants and --alloc take).
std::vector<std::string> allocation_variant_names();

// The variants that order the slots into a free list (the others mask).
constexpr bool allocation_has_free_list(AllocationVariant v) {
  return v == AllocationVariant::sorted || v == AllocationVariant::rank ||
         v == AllocationVariant::network;
}
// Whether allocation_forward_into writes the free lists of `v` on `device` (below):
// `sorted` on both devices; `rank` and `network` on the GPU only (the CPU's SIMD
// kernels order without a list, and keeping one would cost them a scatter).
constexpr bool allocation_keeps_free_list(AllocationVariant v, Device device) {
  return v == AllocationVariant::sorted || (device == Device::cuda && allocation_has_free_list(v));
}

// usage: [M, N] -> allocation: [M, N]
Tensor allocation_forward(const Tensor& usage, AllocationVariant variant);
// Same, into a preallocated out: [M, N] (what the benchmark times: no allocation).
// free_lists (optional; int32 [M, N] on usage's device): the variants with a free
// list write it there (row m: the slots of memory m in free-list order, φ) where
// that costs nothing more (allocation_keeps_free_list). Returns whether it did; the
// mask variants never do (they have no list).
// A backward given these lists does not order the slots again, as PyTorch's
// autograd keeps the indices of its sort.
bool allocation_forward_into(Tensor& out, const Tensor& usage, AllocationVariant variant,
                             Tensor* free_lists = nullptr);
// d_usage: [M, N] (accumulated; skipped when undefined), d_out: [M, N], usage:
// [M, N]. free_lists: null, or what allocation_forward_into wrote for this usage
// when it returned true (read by `sorted`, `rank`, `network`: the same bits as
// ordering again; the mask variants ignore it). Without them the order is
// recomputed from usage.
void allocation_backward(Tensor& d_usage, const Tensor& d_out, const Tensor& usage,
                         AllocationVariant variant, const Tensor* free_lists = nullptr);

// The slot order a variant uses for one memory (free list φ: φ[0] is the slot
// allocated first). usage: [N] values. For the sweep's disagreement counts and
// for tests.
void allocation_order(const float* usage, int64_t n, AllocationVariant variant, int32_t* order);

// Compare-exchanges per memory of `network` (Batcher's odd–even merge sort for
// n inputs: 4 -> 5, 16 -> 63, 128 -> 1471).
int64_t network_comparators(int64_t n);

// `network`'s wide path (AVX-512 builds, 16 < n ≤ 128; zeros elsewhere),
// compare-exchanges per memory: Batcher's 16-input network on every whole
// group of 16 slots on 32-bit keys (sixteen memories to a register) and on a
// partial last group on 64-bit keys, then the bitonic merges on 64-bit keys
// (eight memories to a register), padding to the next power of two included:
// n = 32 -> 126 + 0 + 80, 128 -> 504 + 0 + 1152, 100 -> 378 + 63 + 1152.
struct NetworkWideCounts {
  int64_t sort16_32 = 0, sort16_64 = 0, merge64 = 0;
};
NetworkWideCounts network_wide_comparators(int64_t n);

}  // namespace mare
