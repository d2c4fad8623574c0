// Allocation of the DNC on the GPU (SPEC §3 step 4): the six variants of
// kernels/memory/allocation.h under the same names, forward and backward.
//
// Semantics as on the CPU: û = ε + (1 − ε)·u, free list φ = slots by ascending
// û (ties to the lower slot), a[φ_j] = (1 − û[φ_j]) Π_{k<j} û[φ_k]; the backward
// holds the order fixed, never divides by a usage, and accumulates into d_usage.
//
// Variants and their kernels (u: [M, N], one row per memory):
//   sorted          a real sort per memory, then one lane per memory walks the
//                   sorted slots: exclusive cumulative product and scatter back
//                   (ordered_*: a warp per memory stages the row in shared memory
//                   for N ≤ 512, one thread per memory above); for 2 ≤ N ≤ 128 the
//                   sort and the sweep are one kernel (sorted_fused_kernel: the
//                   sorted pairs stay in registers, the running product passes
//                   from lane to lane). N ≤ 256: cub::WarpMergeSort, one
//                   (logical) warp per memory, of the pairs (û, slot) under precedes() (a strict
//                   total order: ties to the lower slot, the NaN rule), the way torch.sort sorts
//                   many short rows in registers and shared memory; W = the power of two ≥ N lanes
//                   for N ≤ 32 (so 32 / W memories a warp), ⌈N / 32⌉ pairs a lane above. N > 256:
//                   cub::DeviceSegmentedRadixSort::SortPairs over (û, slot) with
//                   one segment per memory (stable, slots entering in ascending
//                   order: ties keep the lower slot first). N = 1 needs no sort.
//                   Until 2026-11-27 every N took the segmented radix sort: 5.9 ms
//                   forward at seq 1000, batch 32 on an H100 at every N, 15× the
//                   sort-based allocation of PyTorch on the same data, which made
//                   every "speedup over sorted" a speedup over a slow baseline.
//                   (cub::DeviceSegmentedSort was not used: above 500 segments it
//                   copies group sizes to the host and synchronises the stream.)
//   rank            one thread per (memory, slot) counts the slots that precede it
//                   (the comparisons of `parallel`) and scatters itself into the
//                   free list; then the same ordered kernels as `sorted`. Same
//                   order, same kernels: bit-identical to `sorted`.
//   network         one thread per memory sorts its (û, slot) pairs with the
//                   compare-exchanges of Batcher's odd–even merge sort (the network
//                   of the CPU; ties to the lower slot), in global scratch; then the
//                   same ordered kernels as `sorted`: bit-identical to `sorted`.
//   parallel        one thread per (memory, slot n): a[n] = (1 − û[n]) Π_{n'} φ[n][n'],
//                   φ = û[n'] where slot n' precedes n and 1 otherwise (selects,
//                   no data-dependent branch), factors in ascending n'. Backward:
//                   one thread per (memory, slot k) sums over the rows i in
//                   ascending order the mask derivative of the CPU
//                   (mask_backward_row): −d_a[k] Π_k' φ[k][k'] at i = k, otherwise
//                   [k precedes i] · d_a[i](1 − û[i]) · (Π_{k'<k} φ[i][k'] · Π_{k'>k} φ[i][k'])
//                   with the prefix ascending and the suffix descending; O(N²)
//                   per thread, no scratch.
//   parallel-eps    the same kernels on the published formulation (appendix A.1):
//                   order from key[n] = n·ε' + (1 − ε')·u[n], mask (key[i] − key[k]) > 0,
//                   raw u in the product and in 1 − u, no (1 − ε) chain factor.
//   parallel-block  `parallel` for small N: one warp holds 32 / W memories, W =
//                   the power of two ≥ N (W ≤ 32), one slot per lane; partners
//                   come from __shfl_sync within the W-lane segment instead of
//                   memory, the prefix and suffix products of the backward are
//                   built lane by lane with shuffles in the order of `parallel`.
//                   For N > 32 it runs the `parallel` kernels.
// Rounding: every product and sum of this file uses __fmul_rn / __fadd_rn /
// __fsub_rn, which nvcc never fuses into an FMA, so û, the ε-keys and all products
// round exactly as the CPU (allocation.cpp is compiled without contraction):
// `parallel` and `parallel-block` give the same bits, as do `sorted`, `rank` and `network`,
// and ties or near-ties of û are the same ties as on the CPU. One difference
// remains: the CPU flushes subnormal products to zero, the GPU keeps them (values
// below 1.2e-38). No atomics; every sum has a fixed order.
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/warp/warp_merge_sort.cuh>

#include <algorithm>
#include <utility>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

constexpr float kEps = kAllocationEpsilon;
constexpr float kOneMinusEps = 1.0f - kAllocationEpsilon;
constexpr unsigned kFullMask = 0xffffffffu;

// ------------------------------------------------------------------ device helpers
__device__ __forceinline__ int64_t grid_start() {
  return blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return int64_t(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float mul(float a, float b) {
  return __fmul_rn(a, b);
}

// û = ε + (1 − ε)·u, rounded as allocation.cpp's hat().
__device__ __forceinline__ float hat(float u) {
  return __fadd_rn(kEps, __fmul_rn(kOneMinusEps, u));
}

// parallel-eps ordering key of appendix A.1: n·ε' + (1 − ε')·u[n] (allocation.cpp's eps_key).
__device__ __forceinline__ float eps_key(int n, float u) {
  return __fadd_rn(__fmul_rn(static_cast<float>(n), kEps), __fmul_rn(kOneMinusEps, u));
}

// What the mask formulation multiplies (û, or raw u for parallel-eps) and what it
// compares (û, or the ε-offset key), for slot k of a memory row um.
template <bool kEpsKernel>
__device__ __forceinline__ float mask_value(const float* __restrict__ um, int k) {
  return kEpsKernel ? um[k] : hat(um[k]);
}
template <bool kEpsKernel>
__device__ __forceinline__ float mask_key(const float* __restrict__ um, int k) {
  return kEpsKernel ? eps_key(k, um[k]) : hat(um[k]);
}

// g[i][k]: slot k precedes slot i in the free list. Exact: ascending key, ties to
// the lower slot. A.1: (key[i] − key[k]) > 0 (equal keys precede neither way).
// Both: a NaN key after every number, NaN keys among themselves by slot (the
// NaN rule of allocation.h, as allocation.cpp's precedes()).
template <bool kEpsKernel>
__device__ __forceinline__ bool precedes(float key_k, int k, float key_i, int i) {
  if (isnan(key_k) || isnan(key_i)) return isnan(key_i) && (!isnan(key_k) || k < i);
  if constexpr (kEpsKernel)
    return __fsub_rn(key_i, key_k) > 0.0f;
  else
    return k < i ? key_k <= key_i : (k > i && key_k < key_i);
}

// ------------------------------------------------------------------ sorted / rank
// Sort inputs: keys[m·N + i] = û, slots[m·N + i] = i (for N = 1: the free list itself).
__global__ void sort_inputs_kernel(const float* __restrict__ u, float* __restrict__ keys,
                                   int* __restrict__ slots, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int i = static_cast<int>(e);
    // A NaN key as the one positive quiet NaN: the radix sort puts it after
    // +∞, and its stability orders NaNs by slot (the NaN rule).
    if (keys != nullptr) {
      const float h = hat(u[i]);
      keys[i] = isnan(h) ? __int_as_float(0x7FC00000) : h;
    }
    slots[i] = i % n;
  }
}

// One (û, slot) pair of a free list, and precedes() as the sort's order.
struct FreeSlot {
  float key;
  int slot;
};
struct SlotPrecedes {
  __device__ __forceinline__ bool operator()(const FreeSlot& a, const FreeSlot& b) const {
    return precedes<false>(a.key, a.slot, b.key, b.slot);
  }
};

// One memory's free list sorted by one logical warp of kLanes lanes, kItems
// pairs a lane (kLanes · kItems ≥ N), held in the lanes' registers: lane l
// holds the sorted positions [l·kItems, (l + 1)·kItems). A block of kSortBlock
// threads holds kSortBlock / kLanes memories; every lane takes part in the sort
// (pairs past N and memories past `rows` are padding: a NaN key at slot
// INT_MAX, after every real pair), and only real pairs may be written back.
// Given the free lists a forward kept ([rows, N]), the pairs are read in that
// order and nothing is sorted.
constexpr int kSortBlock = 128;
template <int kItems, int kLanes>
struct WarpSortedRow {
  using Sort = cub::WarpMergeSort<FreeSlot, kItems, kLanes>;
  static constexpr int kPerBlock = kSortBlock / kLanes;
  using Temp = typename Sort::TempStorage[kPerBlock];

  int lane;
  int64_t m;  // the memory
  bool live;  // m < rows
  FreeSlot items[kItems];

  __device__ WarpSortedRow(const float* __restrict__ u, const int* __restrict__ kept, int64_t rows,
                           int n, Temp& temp) {
    const int group = threadIdx.x / kLanes;
    lane = threadIdx.x % kLanes;
    m = int64_t(blockIdx.x) * kPerBlock + group;
    live = m < rows;
    for (int j = 0; j < kItems; ++j) {
      const int i = lane * kItems + j;
      // The slot at position i of a kept list (clamped into the row as slot_at below).
      const int slot = kept != nullptr && live && i < n ? min(max(kept[m * n + i], 0), n - 1) : i;
      if (live && i < n)
        items[j] = FreeSlot{hat(u[m * n + slot]), slot};
      else
        items[j] = FreeSlot{__int_as_float(0x7FC00000), 0x7FFFFFFF};
    }
    if (kept == nullptr)
      Sort(temp[group]).Sort(items, SlotPrecedes{});  // uniform: a kernel argument
  }
  // Is item j of this lane a real pair (not padding) of a real memory?
  __device__ bool real(int j, int n) const { return live && lane * kItems + j < n; }
  static unsigned int blocks(int rows) {
    return static_cast<unsigned int>((int64_t(rows) + kPerBlock - 1) / kPerBlock);
  }
};

// The warp shapes (kItems, kLanes) of WarpSortedRow by N: W = the power of two
// ≥ N lanes for N ≤ 32, then 32 lanes of ⌈N / 32⌉ pairs, up to N = 256. Calls
// launch(WarpShape<kItems, kLanes>{}) and returns true, or false above 256.
template <int kItems_, int kLanes_>
struct WarpShape {
  static constexpr int kItems = kItems_, kLanes = kLanes_;
};
constexpr int kWarpSortMax = 256;
template <class Launch>
bool with_warp_shape(int n, Launch&& launch) {
  if (n <= 4)
    launch(WarpShape<1, 4>{});
  else if (n <= 8)
    launch(WarpShape<1, 8>{});
  else if (n <= 16)
    launch(WarpShape<1, 16>{});
  else if (n <= 32)
    launch(WarpShape<1, 32>{});
  else if (n <= 64)
    launch(WarpShape<2, 32>{});
  else if (n <= 128)
    launch(WarpShape<4, 32>{});
  else if (n <= kWarpSortMax)
    launch(WarpShape<8, 32>{});
  else
    return false;
  return true;
}

// The free list of each memory into order [M·N].
template <int kItems, int kLanes>
__global__ void warp_sort_order_kernel(const float* __restrict__ u, int* __restrict__ order,
                                       int64_t rows, int n) {
  using Row = WarpSortedRow<kItems, kLanes>;
  __shared__ typename Row::Temp temp;
  const Row row(u, nullptr, rows, n, temp);
  for (int j = 0; j < kItems; ++j)
    if (row.real(j, n)) order[row.m * n + row.lane * kItems + j] = row.items[j].slot;
}

// `sorted` whole, for N ≤ kFusedSortedMax: a logical warp per memory sorts its
// pairs (WarpSortedRow) and keeps them in registers. The sweeps of the ordered
// kernels then run across the lanes in order, each lane continuing its
// predecessor's running product (or, backward, its successor's r) received by
// a shuffle: the same operations in the same order as one thread walking the
// list, so the same bits, without staging the row or a free list in memory.
// Forward: a[φ_j] = (1 − s_j)·p_j, p_{j+1} = p_j·s_j. Backward:
// d_u[φ_k] += (1 − ε)·P_k·(R_k − g_k), R_{k−1} = g_k(1 − s_k) + s_k R_k.
// kept (optional): free lists a forward kept, read instead of sorting; keep
// (optional, forward): where this forward keeps its free lists.
constexpr int kFusedSortedMax = 128;
template <int kItems, int kLanes, bool kBackward>
__global__ void sorted_fused_kernel(const float* __restrict__ u, const float* __restrict__ d_a,
                                    float* __restrict__ out, const int* __restrict__ kept,
                                    int* __restrict__ keep, int64_t rows, int n) {
  using Row = WarpSortedRow<kItems, kLanes>;
  __shared__ typename Row::Temp temp;
  const Row row(u, kept, rows, n, temp);
  const int lane = row.lane, first = lane * kItems;  // this lane's first sorted position
  const int64_t m = row.m;
  if (keep != nullptr)
    for (int j = 0; j < kItems; ++j)
      if (row.real(j, n)) keep[m * n + first + j] = row.items[j].slot;
  // Running products: prefix[j] = p before item j; the chain passes lane to lane.
  float prefix[kItems];
  float p = 1.0f;
  for (int l = 0; l < kLanes; ++l) {
    if (lane == l)
      for (int j = 0; j < kItems; ++j) {
        prefix[j] = p;
        if (first + j < n) p = mul(p, row.items[j].key);
      }
    p = __shfl_sync(0xffffffffu, p, l, kLanes);
  }
  if constexpr (!kBackward) {
    for (int j = 0; j < kItems; ++j)
      if (row.real(j, n)) out[m * n + row.items[j].slot] = mul(1.0f - row.items[j].key, prefix[j]);
  } else {
    float g[kItems], term[kItems];
    for (int j = 0; j < kItems; ++j) g[j] = row.real(j, n) ? d_a[m * n + row.items[j].slot] : 0.0f;
    float r = 0.0f;
    for (int l = kLanes - 1; l >= 0; --l) {
      if (lane == l)
        for (int j = kItems - 1; j >= 0; --j) {
          if (first + j >= n) continue;
          const float sj = row.items[j].key;
          term[j] = mul(kOneMinusEps, mul(prefix[j], __fsub_rn(r, g[j])));
          r = __fadd_rn(mul(g[j], 1.0f - sj), mul(sj, r));
        }
      r = __shfl_sync(0xffffffffu, r, l, kLanes);
    }
    for (int j = 0; j < kItems; ++j)
      if (row.real(j, n)) {
        float* d = out + m * n + row.items[j].slot;
        *d = __fadd_rn(*d, term[j]);
      }
  }
}

template <int kItems, int kLanes, bool kBackward>
void sorted_fused(const float* u, const float* d_a, float* out, const int* kept, int* keep,
                  int rows, int n) {
  sorted_fused_kernel<kItems, kLanes, kBackward>
      <<<WarpSortedRow<kItems, kLanes>::blocks(rows), kSortBlock, 0, stream()>>>(u, d_a, out, kept,
                                                                                 keep, rows, n);
  MARE_LAUNCH_CHECK("sorted_fused_kernel");
}

// `sorted` forward (d_a null) or backward by sorted_fused for 2 ≤ N ≤ 128
// (false otherwise: the free list, then the ordered sweeps); kept / keep as
// sorted_fused_kernel's.
template <bool kBackward>
bool sorted_fused_pass(const float* u, const float* d_a, float* out, const int* kept, int* keep,
                       int rows, int n) {
  if (n < 2 || n > kFusedSortedMax || rows == 0) return false;
  return with_warp_shape(n, [&](auto shape) {
    using S = decltype(shape);
    if constexpr (S::kItems * S::kLanes <= kFusedSortedMax)
      sorted_fused<S::kItems, S::kLanes, kBackward>(u, d_a, out, kept, keep, rows, n);
  });
}

// The free lists by warp_sort_order_kernel for N ≤ 256 (false above).
bool warp_sorted_free_lists(const float* u, int rows, int n, int* order) {
  return with_warp_shape(n, [&](auto shape) {
    using S = decltype(shape);
    warp_sort_order_kernel<S::kItems, S::kLanes>
        <<<WarpSortedRow<S::kItems, S::kLanes>::blocks(rows), kSortBlock, 0, stream()>>>(u, order,
                                                                                         rows, n);
    MARE_LAUNCH_CHECK("warp_sort_order_kernel");
  });
}

// offsets[m] = m·N for m ≤ rows: segment m is [offsets[m], offsets[m + 1]).
__global__ void segment_offsets_kernel(int* __restrict__ offsets, int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride())
    offsets[e] = static_cast<int>(e) * n;
}

// rank[i] = #{k : slot k precedes slot i}; order[m·N + rank] = i. One thread per
// (memory, slot); count = M·N.
__global__ void rank_order_kernel(const float* __restrict__ u, int* __restrict__ order,
                                  int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), m = idx / n, i = idx % n;
    const float* um = u + int64_t(m) * n;
    const float ui = hat(um[i]);
    int rank = 0;
    for (int k = 0; k < n; ++k) rank += precedes<false>(hat(um[k]), k, ui, i);
    order[int64_t(m) * n + rank] = i;
  }
}

// The free list of each memory by a sorting network, one thread per memory:
// keys [M·N] (scratch) and order [M·N] start as (û, slot) and are sorted in
// place by (û, slot) with the compare-exchanges of Batcher's odd–even merge
// sort for N inputs (the network for the next power of two, comparators
// inside [0, N); allocation.cpp's batcher_network). rows = M.
__global__ void network_order_kernel(const float* __restrict__ u, float* __restrict__ keys,
                                     int* __restrict__ order, int64_t rows, int n) {
  int p2 = 1;
  while (p2 < n) p2 *= 2;
  for (int64_t m = grid_start(); m < rows; m += grid_stride()) {
    float* km = keys + m * n;
    int* om = order + m * n;
    for (int i = 0; i < n; ++i) {
      km[i] = hat(u[m * n + i]);
      om[i] = i;
    }
    for (int p = 1; p < p2; p *= 2)
      for (int k = p; k >= 1; k /= 2)
        for (int j = k % p; j + k < p2; j += 2 * k)
          for (int i = 0; i < k && i + j + k < n; ++i) {
            if ((i + j) / (2 * p) != (i + j + k) / (2 * p)) continue;
            const int lo = i + j, hi = i + j + k;
            const float a = km[lo], b = km[hi];
            const int sa = om[lo], sb = om[hi];
            if (precedes<false>(b, sb, a, sa)) {
              km[lo] = b;
              km[hi] = a;
              om[lo] = sb;
              om[hi] = sa;
            }
          }
  }
}

// Slot φ_j of a free list. Every free list is a permutation (precedes() is a
// strict total order, NaNs included); the clamp keeps the row's writes inside
// the row whatever the order kernel left.
__device__ __forceinline__ int slot_at(const int* __restrict__ om, int j, int n) {
  return min(max(om[j], 0), n - 1);
}

// a[φ_j] = (1 − s_j) · Π_{k<j} s_k, one thread per memory; rows = M.
__global__ void ordered_forward_kernel(const float* __restrict__ u, const int* __restrict__ order,
                                       float* __restrict__ a, int64_t rows, int n) {
  for (int64_t m = grid_start(); m < rows; m += grid_stride()) {
    const float* um = u + m * n;
    const int* om = order + m * n;
    float* am = a + m * n;
    float p = 1.0f;
    for (int j = 0; j < n; ++j) {
      const int slot = slot_at(om, j, n);
      const float s = hat(um[slot]);
      am[slot] = mul(1.0f - s, p);
      p = mul(p, s);
    }
  }
}

// d_u[φ_k] += (1 − ε) · P_k · (R_k − g_k), R_{k−1} = g_k (1 − s_k) + s_k R_k: the
// reverse sweep of allocation.cpp, one thread per memory. prefix: scratch [M, N].
__global__ void ordered_backward_kernel(const float* __restrict__ u, const int* __restrict__ order,
                                        const float* __restrict__ d_a, float* __restrict__ d_u,
                                        float* __restrict__ prefix, int64_t rows, int n) {
  for (int64_t m = grid_start(); m < rows; m += grid_stride()) {
    const float* um = u + m * n;
    const int* om = order + m * n;
    const float* dam = d_a + m * n;
    float* dum = d_u + m * n;
    float* pm = prefix + m * n;
    float p = 1.0f;
    for (int j = 0; j < n; ++j) {
      pm[j] = p;
      p = mul(p, hat(um[slot_at(om, j, n)]));
    }
    float r = 0.0f;
    for (int k = n - 1; k >= 0; --k) {
      const int slot = slot_at(om, k, n);
      const float s = hat(um[slot]), g = dam[slot];
      dum[slot] = __fadd_rn(dum[slot], mul(kOneMinusEps, mul(pm[k], __fsub_rn(r, g))));
      r = __fadd_rn(mul(g, 1.0f - s), mul(s, r));
    }
  }
}

// The same two sweeps with a warp per memory (N ≤ kWarpOrderedMax): the warp
// loads the row's usages, free list (and gradients) into shared memory with
// coalesced reads, lane 0 runs the sweep of the kernels above on shared memory
// (the same operations in the same order: the same bits), and the warp writes
// the row back coalesced. The one-thread-per-memory kernels chase two dependent
// global loads per slot (order, then u at that slot): at N = 128 they were
// latency-bound (0.2 ms forward, 0.4 ms backward for 32 000 memories on an H100).
constexpr int kWarpOrderedMax = 512;
constexpr int kOrderedWarps = 4;  // warps (memories) per block

__global__ void ordered_forward_warp_kernel(const float* __restrict__ u,
                                            const int* __restrict__ order, float* __restrict__ a,
                                            int64_t rows, int n) {
  extern __shared__ float ordered_shared[];  // per warp: u [n], slot [n], a [n]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* su = ordered_shared + int64_t(warp) * 3 * n;
  int* so = reinterpret_cast<int*>(su + n);
  float* sa = su + 2 * n;
  const int64_t m = int64_t(blockIdx.x) * kOrderedWarps + warp;
  if (m >= rows) return;  // whole warps leave together
  for (int i = lane; i < n; i += 32) {
    su[i] = u[m * n + i];
    so[i] = slot_at(order + m * n, i, n);
  }
  __syncwarp();
  if (lane == 0) {
    float p = 1.0f;
    for (int j = 0; j < n; ++j) {
      const int slot = so[j];
      const float s = hat(su[slot]);
      sa[slot] = mul(1.0f - s, p);
      p = mul(p, s);
    }
  }
  __syncwarp();
  for (int i = lane; i < n; i += 32) a[m * n + i] = sa[i];
}

__global__ void ordered_backward_warp_kernel(const float* __restrict__ u,
                                             const int* __restrict__ order,
                                             const float* __restrict__ d_a, float* __restrict__ d_u,
                                             int64_t rows, int n) {
  extern __shared__ float ordered_shared[];  // per warp: u, slot, d_a, prefix, term [n]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* su = ordered_shared + int64_t(warp) * 5 * n;
  int* so = reinterpret_cast<int*>(su + n);
  float* sg = su + 2 * n;
  float* sp = su + 3 * n;
  float* st = su + 4 * n;
  const int64_t m = int64_t(blockIdx.x) * kOrderedWarps + warp;
  if (m >= rows) return;
  for (int i = lane; i < n; i += 32) {
    su[i] = u[m * n + i];
    so[i] = slot_at(order + m * n, i, n);
    sg[i] = d_a[m * n + i];
  }
  __syncwarp();
  if (lane == 0) {
    float p = 1.0f;
    for (int j = 0; j < n; ++j) {
      sp[j] = p;
      p = mul(p, hat(su[so[j]]));
    }
    float r = 0.0f;
    for (int k = n - 1; k >= 0; --k) {
      const int slot = so[k];
      const float s = hat(su[slot]), g = sg[slot];
      st[slot] = mul(kOneMinusEps, mul(sp[k], __fsub_rn(r, g)));
      r = __fadd_rn(mul(g, 1.0f - s), mul(s, r));
    }
  }
  __syncwarp();
  for (int i = lane; i < n; i += 32) d_u[m * n + i] = __fadd_rn(d_u[m * n + i], st[i]);
}

void ordered_forward(const float* u, const int* order, float* a, int rows, int n) {
  if (n <= kWarpOrderedMax) {
    const unsigned int blocks =
        static_cast<unsigned int>((rows + kOrderedWarps - 1) / kOrderedWarps);
    const size_t shared = size_t(kOrderedWarps) * 3 * n * sizeof(float);
    ordered_forward_warp_kernel<<<blocks, 32 * kOrderedWarps, shared, stream()>>>(u, order, a, rows,
                                                                                  n);
    MARE_LAUNCH_CHECK("ordered_forward_warp_kernel");
    return;
  }
  launch("ordered_forward_kernel", rows, ordered_forward_kernel, u, order, a, rows, n);
}

void ordered_backward(const float* u, const int* order, const float* g, float* du, int rows,
                      int n) {
  if (n <= kWarpOrderedMax) {
    const unsigned int blocks =
        static_cast<unsigned int>((rows + kOrderedWarps - 1) / kOrderedWarps);
    const size_t shared = size_t(kOrderedWarps) * 5 * n * sizeof(float);
    ordered_backward_warp_kernel<<<blocks, 32 * kOrderedWarps, shared, stream()>>>(u, order, g, du,
                                                                                   rows, n);
    MARE_LAUNCH_CHECK("ordered_backward_warp_kernel");
    return;
  }
  Workspace prefix(sizeof(float) * int64_t(rows) * n);
  launch("ordered_backward_kernel", rows, ordered_backward_kernel, u, order, g, du,
         prefix.as<float>(), rows, n);
}

// ------------------------------------------------------------------ parallel, parallel-eps
// a[i] = (1 − val[i]) · Π_k φ[i][k], φ[i][k] = g[i][k] ? val[k] : 1, rounded
// as the CPU's mask_forward_row: from 1 − val[i], the factors in ascending k.
// One thread per (memory, slot); count = M·N.
template <bool kEpsKernel>
__global__ void mask_forward_kernel(const float* __restrict__ u, float* __restrict__ a,
                                    int64_t count, int n) {
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), m = idx / n, i = idx % n;
    const float* um = u + int64_t(m) * n;
    const float key_i = mask_key<kEpsKernel>(um, i);
    float p = 1.0f - mask_value<kEpsKernel>(um, i);
    for (int k = 0; k < n; ++k) {
      const bool g = precedes<kEpsKernel>(mask_key<kEpsKernel>(um, k), k, key_i, i);
      p = mul(p, g ? mask_value<kEpsKernel>(um, k) : 1.0f);
    }
    a[idx] = p;
  }
}

// d_u[k] += chain · Σ_i (in ascending i) of
//   i = k:  −d_a[k] · Π_{k'} φ[k][k']                       (ascending product)
//   i ≠ k:  g[i][k] · (c_i · (Π_{k'<k} φ[i][k'] · Π_{k'>k} φ[i][k'])),  c_i = d_a[i](1 − val[i])
// (the prefix ascending, the suffix descending, as mask_backward_row). One
// thread per (memory, slot k); count = M·N.
template <bool kEpsKernel>
__global__ void mask_backward_kernel(const float* __restrict__ u, const float* __restrict__ d_a,
                                     float* __restrict__ d_u, int64_t count, int n) {
  constexpr float kChain = kEpsKernel ? 1.0f : kOneMinusEps;  // ∂val/∂u
  for (int64_t e = grid_start(); e < count; e += grid_stride()) {
    const int idx = static_cast<int>(e), m = idx / n, k = idx % n;
    const float* um = u + int64_t(m) * n;
    const float* dam = d_a + int64_t(m) * n;
    const float key_k = mask_key<kEpsKernel>(um, k);
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float key_i = mask_key<kEpsKernel>(um, i), da_i = dam[i];
      // Row i: running product ascending (prefix at k', full at the end) ...
      float run = 1.0f, prefix = 1.0f;
      for (int kk = 0; kk < n; ++kk) {
        if (kk == k) prefix = run;
        const bool g = precedes<kEpsKernel>(mask_key<kEpsKernel>(um, kk), kk, key_i, i);
        run = mul(run, g ? mask_value<kEpsKernel>(um, kk) : 1.0f);
      }
      // ... and the suffix descending.
      float suffix = 1.0f;
      for (int kk = n - 1; kk > k; --kk) {
        const bool g = precedes<kEpsKernel>(mask_key<kEpsKernel>(um, kk), kk, key_i, i);
        suffix = mul(suffix, g ? mask_value<kEpsKernel>(um, kk) : 1.0f);
      }
      const float c_i = mul(da_i, 1.0f - mask_value<kEpsKernel>(um, i));
      const float term = mul(c_i, mul(prefix, suffix));
      const bool g_ik = precedes<kEpsKernel>(key_k, k, key_i, i);
      acc = i == k ? __fsub_rn(acc, mul(da_i, run)) : __fadd_rn(acc, g_ik ? term : 0.0f);
    }
    d_u[idx] = __fadd_rn(d_u[idx], mul(kChain, acc));
  }
}

// ------------------------------------------------------------------ parallel-block
// kWidth lanes per memory (a power of two ≥ N, at most 32), 32 / kWidth memories
// per warp; lane x holds slot x of memory m0 + lane / kWidth. The loop bound is
// the same for the whole warp, so every lane takes part in every shuffle; lanes
// past the last memory or slot carry û = 1 and write nothing, and no live lane
// reads them (partners are k < N).
template <int kWidth, class Body>
__device__ void for_each_block_slot(const float* __restrict__ u, int64_t rows, int n, Body body) {
  constexpr int kPerWarp = 32 / kWidth;
  const int lane = threadIdx.x & 31, x = lane % kWidth;
  for (int64_t m0 = grid_start() / 32 * kPerWarp; m0 < rows; m0 += grid_stride() / 32 * kPerWarp) {
    const int64_t m = m0 + lane / kWidth;
    const bool live = m < rows && x < n;
    body(m * n + x, x, live, live ? hat(u[m * n + x]) : 1.0f);  // the slot, x, live, û
  }
}

template <int kWidth>
__global__ void block_forward_kernel(const float* __restrict__ u, float* __restrict__ a,
                                     int64_t rows, int n) {
  for_each_block_slot<kWidth>(u, rows, n, [&](int64_t slot, int x, bool live, float h) {
    float prod = 1.0f - h;
    for (int k = 0; k < n; ++k) {
      const float hk = __shfl_sync(kFullMask, h, k, kWidth);
      const bool g = precedes<false>(hk, k, h, x);  // slot k precedes slot x
      prod = mul(prod, g ? hk : 1.0f);
    }
    if (live) a[slot] = prod;
  });
}

// Lane x accumulates d û[x] over the rows i in ascending order, exactly as
// mask_backward_kernel<false>: the row's φ[i][x] sits in lane x, the prefix
// (ascending) and suffix (descending) products are built lane by lane.
template <int kWidth>
__global__ void block_backward_kernel(const float* __restrict__ u, const float* __restrict__ d_a,
                                      float* __restrict__ d_u, int64_t rows, int n) {
  for_each_block_slot<kWidth>(u, rows, n, [&](int64_t slot, int x, bool live, float h) {
    const float da = live ? d_a[slot] : 0.0f;
    const float c = mul(da, 1.0f - h);
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float hi = __shfl_sync(kFullMask, h, i, kWidth);
      const bool g = precedes<false>(h, x, hi, i);  // slot x precedes slot i
      const float phi = g ? h : 1.0f;               // φ[i][x]
      float prefix = 1.0f, suffix = 1.0f;
      for (int k = 0; k + 1 < n; ++k) {  // prefix[x] = Π_{k<x} φ[i][k], ascending
        const float pk = __shfl_sync(kFullMask, phi, k, kWidth);
        prefix = x > k ? mul(prefix, pk) : prefix;
      }
      for (int k = n - 1; k > 0; --k) {  // suffix[x] = Π_{k>x} φ[i][k], descending
        const float pk = __shfl_sync(kFullMask, phi, k, kWidth);
        suffix = x < k ? mul(suffix, pk) : suffix;
      }
      const float full = mul(__shfl_sync(kFullMask, prefix, n - 1, kWidth),
                             __shfl_sync(kFullMask, phi, n - 1, kWidth));
      const float c_i = __shfl_sync(kFullMask, c, i, kWidth);
      const float da_i = __shfl_sync(kFullMask, da, i, kWidth);
      const float term = mul(c_i, mul(prefix, suffix));
      acc = x == i ? __fsub_rn(acc, mul(da_i, full)) : __fadd_rn(acc, g ? term : 0.0f);
    }
    if (live) d_u[slot] = __fadd_rn(d_u[slot], mul(kOneMinusEps, acc));
  });
}

// ------------------------------------------------------------------ host helpers
// The free list of every memory into order [M·N] (slots), by `sorted`, `rank`
// or `network`.
void free_lists(const float* u, int rows, int n, AllocationVariant variant, int* order) {
  const int64_t count = int64_t(rows) * n;
  if (variant == AllocationVariant::network) {
    Workspace keys(sizeof(float) * count);
    launch("network_order_kernel", rows, network_order_kernel, u, keys.as<float>(), order, rows, n);
    return;
  }
  if (variant == AllocationVariant::rank) {
    launch("rank_order_kernel", count, rank_order_kernel, u, order, count, n);
    return;
  }
  if (n == 1) {  // one slot: the free list is {0}, nothing to sort
    launch("sort_inputs_kernel", count, sort_inputs_kernel, u, nullptr, order, count, n);
    return;
  }
  if (rows == 0 || warp_sorted_free_lists(u, rows, n, order)) return;
  // sorted, N > 256: (û, slot) pairs, one segment per memory, stable sort by û.
  Workspace keys_in(sizeof(float) * count), keys_out(sizeof(float) * count),
      slots(sizeof(int) * count), offsets(sizeof(int) * (rows + 1));
  launch("sort_inputs_kernel", count, sort_inputs_kernel, u, keys_in.as<float>(), slots.as<int>(),
         count, n);
  launch("segment_offsets_kernel", rows + 1, segment_offsets_kernel, offsets.as<int>(), rows + 1,
         n);
  size_t temp_bytes = 0;
  MARE_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
      nullptr, temp_bytes, keys_in.as<float>(), keys_out.as<float>(), slots.as<int>(), order,
      static_cast<int>(count), rows, offsets.as<int>(), offsets.as<int>() + 1, 0,
      static_cast<int>(sizeof(float) * 8), stream()));
  // At least a few bytes: a null temp pointer would make the second call a size query.
  Workspace temp(std::max<size_t>(temp_bytes, 16));
  MARE_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
      temp.get(), temp_bytes, keys_in.as<float>(), keys_out.as<float>(), slots.as<int>(), order,
      static_cast<int>(count), rows, offsets.as<int>(), offsets.as<int>() + 1, 0,
      static_cast<int>(sizeof(float) * 8), stream()));
}

// The next power of two ≥ n (n ≤ 32).
int lane_width(int n) {
  int w = 1;
  while (w < n) w *= 2;
  return w;
}

// One launch of a kernel pair: forward (a = allocation(û); g unused) or backward
// (d_u += the gradient of ⟨g, allocation(û)⟩).
template <bool kBackward, bool kEps>
void mask_pass(const float* u, const float* g, float* out, int64_t count, int n) {
  if constexpr (kBackward)
    launch("mask_backward_kernel", count, mask_backward_kernel<kEps>, u, g, out, count, n);
  else
    launch("mask_forward_kernel", count, mask_forward_kernel<kEps>, u, out, count, n);
}

template <bool kBackward, int kWidth>
void block_pass(const float* u, const float* g, float* out, int rows, int n) {
  constexpr int kPerWarp = 32 / kWidth;
  const int64_t threads = (int64_t(rows) + kPerWarp - 1) / kPerWarp * 32;
  if constexpr (kBackward)
    launch("block_backward_kernel", threads, block_backward_kernel<kWidth>, u, g, out, rows, n);
  else
    launch("block_forward_kernel", threads, block_forward_kernel<kWidth>, u, out, rows, n);
}

// block_pass<kBackward, width> for the one of kWidths that equals `width`; false when none.
template <bool kBackward, int... kWidths>
bool block_pass_of_width(int width, const float* u, const float* g, float* out, int rows, int n,
                         std::integer_sequence<int, kWidths...>) {
  return ((width == kWidths && (block_pass<kBackward, kWidths>(u, g, out, rows, n), true)) || ...);
}

// Every variant's forward or backward pass over [rows, n] usages (count = rows · n > 0).
// The variants with a free list read kept lists (backward, when given: the sweep
// of `sorted` over them, the same bits for all three) or keep theirs (forward,
// when keep is given; returns true then). The mask variants ignore both.
template <bool kBackward>
bool allocation_pass(const float* u, const float* g, float* out, const int* kept, int* keep,
                     int64_t count, int rows, int n, AllocationVariant variant) {
  switch (variant) {
    case AllocationVariant::sorted:
    case AllocationVariant::rank:
    case AllocationVariant::network: {
      if (kBackward && kept != nullptr) {
        if (!sorted_fused_pass<true>(u, g, out, kept, nullptr, rows, n))
          ordered_backward(u, kept, g, out, rows, n);
        return false;
      }
      if (variant == AllocationVariant::sorted &&
          sorted_fused_pass<kBackward>(u, g, out, nullptr, keep, rows, n))
        return keep != nullptr;
      Workspace scratch(keep != nullptr ? 0 : sizeof(int) * count);
      int* order = keep != nullptr ? keep : scratch.as<int>();
      free_lists(u, rows, n, variant, order);
      if constexpr (kBackward)
        ordered_backward(u, order, g, out, rows, n);
      else
        ordered_forward(u, order, out, rows, n);
      return keep != nullptr;
    }
    case AllocationVariant::parallel:
      mask_pass<kBackward, false>(u, g, out, count, n);
      return false;
    case AllocationVariant::parallel_eps:
      mask_pass<kBackward, true>(u, g, out, count, n);
      return false;
    case AllocationVariant::parallel_block:
      if (n > 32 ||
          !block_pass_of_width<kBackward>(lane_width(n), u, g, out, rows, n,
                                          std::integer_sequence<int, 1, 2, 4, 8, 16, 32>{}))
        mask_pass<kBackward, false>(u, g, out, count, n);  // the slots no longer fit one warp
      return false;
  }
  return false;
}

}  // namespace

// ------------------------------------------------------------------ launchers
bool allocation_forward_into(Tensor& out, const Tensor& usage, AllocationVariant variant,
                             Tensor* free_lists) {
  require_cuda({&out, &usage}, "allocation_forward");
  if (free_lists != nullptr) require_cuda({free_lists}, "allocation_forward: free_lists");
  const int64_t count = to_int(usage.numel(), "allocation_forward: usage");
  if (count == 0)  // nothing to order: an empty list is every memory's list
    return free_lists != nullptr && allocation_keeps_free_list(variant, Device::cuda);
  return allocation_pass<false>(
      usage.f32(), nullptr, out.f32(), nullptr, free_lists != nullptr ? free_lists->i32() : nullptr,
      count, static_cast<int>(usage.dim(0)), static_cast<int>(usage.dim(1)), variant);
}

void allocation_backward(Tensor& d_usage, const Tensor& d_out, const Tensor& usage,
                         AllocationVariant variant, const Tensor* free_lists) {
  if (!d_usage.defined()) return;
  require_cuda({&d_usage, &d_out, &usage}, "allocation_backward");
  if (free_lists != nullptr) require_cuda({free_lists}, "allocation_backward: free_lists");
  const int64_t count = to_int(usage.numel(), "allocation_backward: usage");
  if (count == 0) return;
  allocation_pass<true>(usage.f32(), d_out.f32(), d_usage.f32(),
                        free_lists != nullptr ? free_lists->i32() : nullptr, nullptr, count,
                        static_cast<int>(usage.dim(0)), static_cast<int>(usage.dim(1)), variant);
}

}  // namespace mare::cuda
