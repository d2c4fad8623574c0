// Allocation variants on the CPU (see allocation.h for the equations).
//
// Forward, with s_j = û[φ_j] the usages in free-list order:
//   a[φ_j] = (1 − s_j) · P_j,   P_j = Π_{k<j} s_k
// Backward with the order held fixed, for L = Σ_j g_j a[φ_j]:
//   ∂L/∂s_k = P_k · (R_k − g_k),  R_k = Σ_{j>k} g_j (1 − s_j) Π_{k<m<j} s_m,
//   R_{N−1} = 0,  R_{k−1} = g_k (1 − s_k) + s_k R_k
// (one reverse sweep, no division), then ∂û/∂u = 1 − ε. The mask variants
// (parallel, parallel-eps, parallel-block) use the same derivative in mask form:
// ∂a[n]/∂û[k] = (1 − û[n]) · g[n][k] · Π_{n'≠k} φ[n][n'] with the product
// without k taken from prefix and suffix products, again without division.
//
// Rule: every variant computes û with the same expression (hat() below), so
// that ties and near-ties are the same ties for all of them; this file is
// compiled without floating-point contraction so that the SIMD and scalar
// paths round identically (parallel-block is bit-identical to parallel, rank
// and network to sorted; tests/kernels/test_allocation.cpp checks them).
#pragma GCC optimize("fp-contract=off")
// GCC 12's "__Y is used uninitialized" from inside avx512fintrin.h (its
// _mm512_undefined_* self-initialisation), the false positive kernels/CMakeLists.txt
// silences in its "maybe" form; here it also comes in the definite form once
// transpose16 is inlined into a path that leaves the loop early.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/memory/allocation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/names.h"
#include "kernels/ops/common.h"

#if defined(__SSE__)
#include <immintrin.h>
#endif

namespace mare {
using namespace detail;

namespace {

constexpr float kEps = kAllocationEpsilon;
constexpr float kOneMinusEps = 1.0f - kAllocationEpsilon;

// û = ε + (1 − ε)·u: keeps every usage strictly inside (0, 1].
inline float hat(float u) {
  return kEps + kOneMinusEps * u;
}

// parallel-eps ordering key of appendix A.1: n·ε' + (1 − ε')·u[n].
inline float eps_key(int64_t n, float u) {
  return static_cast<float>(n) * kEps + kOneMinusEps * u;
}

// Products of many usages below 1 reach the subnormal range (N = 128: a
// product of up to 127 factors), where x86 multiplies take a microcode assist
// ~100 times slower than a normal multiply. Every variant therefore runs with
// subnormal results and inputs flushed to zero (FTZ and DAZ, as TensorFlow's
// CPU kernels do), restored on exit: values below 1.2e-38 become 0, the same
// for all variants, far below every tolerance.
class FlushSubnormals {
 public:
#if defined(__SSE__)
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | 0x8040u);
  }  // FTZ | DAZ
  ~FlushSubnormals() {
    _mm_setcsr(saved_);
  }

 private:
  unsigned saved_;
#endif
};

// Software prefetch of the next block's rows (up to three arrays of `bytes`
// each), spread over a block's work a few cache lines per step() (all at once,
// a few hundred prefetches at the start of a block stalled it: more misses
// than the core tracks). steps: how often step() will be called per block.
struct Prefetch {
  const char* next[3] = {};
  const char* end[3] = {};
  bool write[3] = {};
  int64_t per = 0;  // lines per array and step
  void add(const float* p, bool w, int64_t bytes) {
    for (int i = 0; i < 3; ++i)
      if (!next[i]) {
        next[i] = reinterpret_cast<const char*>(p);
        end[i] = next[i] + bytes;
        write[i] = w;
        return;
      }
  }
  // The block of memories after the one at m0 (n slots each), of every array a
  // pass reads or writes: u; a (forward), or d_a and d_u (backward).
  void next_block(const float* u, const float* d_a, const float* d_u, const float* a, int64_t m0,
                  int64_t lanes, int64_t n) {
    const int64_t next = (m0 + lanes) * n, bytes = lanes * n * 4;
    add(u + next, false, bytes);
    if (a) add(a + next, true, bytes);
    if (d_a) add(d_a + next, false, bytes);
    if (d_u) add(d_u + next, true, bytes);
  }
  void pace(int64_t bytes, int64_t steps) {
    per = (bytes / 64 + steps - 1) / std::max<int64_t>(steps, 1);
  }
  void step() {
    for (int i = 0; i < 3; ++i)
      for (int64_t l = 0; l < per && next[i] < end[i]; ++l, next[i] += 64) {
        if (write[i])
          __builtin_prefetch(next[i], 1);
        else
          __builtin_prefetch(next[i]);
      }
  }
};

constexpr Named<AllocationVariant> kVariantNames[] = {
    {AllocationVariant::sorted, "sorted"},
    {AllocationVariant::parallel, "parallel"},
    {AllocationVariant::parallel_eps, "parallel-eps"},
    {AllocationVariant::rank, "rank"},
    {AllocationVariant::parallel_block, "parallel-block"},
    {AllocationVariant::network, "network"}};

constexpr auto kVariants = [] {
  std::array<AllocationVariant, std::size(kVariantNames)> v{};
  for (size_t i = 0; i < v.size(); ++i) v[i] = kVariantNames[i].value;
  return v;
}();

void check_usage(const Tensor& usage, const char* op) {
  check_defined(usage, op);
  check_rank(usage, 2, op);
  check_dtype(usage, DType::f32, op);
}

// The NaN rule of the free list (allocation.h): a NaN after every number,
// NaNs among themselves by slot. For a pair with at least one NaN: whether
// slot k precedes slot n.
inline bool nan_precedes(float uk, int64_t k, float un, int64_t n) {
  return std::isnan(un) && (!std::isnan(uk) || k < n);
}

// Slot `k` precedes slot `n` in the free list (g[n][k] = 1): ascending û,
// ties to the lower index, NaNs last. A strict weak order for every float, as
// std::sort requires (a comparison that is false both ways for a NaN is not).
inline bool precedes(float uk, int64_t k, float un, int64_t n) {
  if (std::isnan(uk) || std::isnan(un)) return nan_precedes(uk, k, un, n);
  return uk < un || (uk == un && k < n);
}

// ------------------------------------------------------------- sorted / rank
// Free list of one memory by a real sort of indices. uh: [N] û values.
void sort_order(const float* uh, int64_t n, int32_t* order) {
  std::iota(order, order + n, 0);
  std::sort(order, order + n, [uh](int32_t a, int32_t b) { return precedes(uh[a], a, uh[b], b); });
}

// a[φ_j] = (1 − s_j) · Π_{k<j} s_k for a given free list.
inline void ordered_product(const float* uh, const int32_t* order, int64_t n, float* a) {
  float p = 1.0f;
  for (int64_t j = 0; j < n; ++j) {
    const float s = uh[order[j]];
    a[order[j]] = (1.0f - s) * p;
    p *= s;
  }
}

// d_u[φ_k] += (1 − ε) · P_k · (R_k − g_k), the reverse sweep of the header.
// prefix: scratch [N].
inline void ordered_product_backward(const float* uh, const int32_t* order, int64_t n,
                                     const float* d_a, float* d_u, float* prefix) {
  float p = 1.0f;
  for (int64_t j = 0; j < n; ++j) {
    prefix[j] = p;
    p *= uh[order[j]];
  }
  float r = 0.0f;
  for (int64_t k = n - 1; k >= 0; --k) {
    const int32_t slot = order[k];
    const float s = uh[slot], g = d_a[slot];
    d_u[slot] += kOneMinusEps * (prefix[k] * (r - g));
    r = g * (1.0f - s) + s * r;
  }
}

// free_lists (optional, [rows, n]): where the forward keeps each memory's free
// list, and where the backward reads it instead of sorting again.
void ordered_forward(const float* u, float* a, int64_t rows, int64_t n,
                     int32_t* free_lists = nullptr) {
  std::vector<float> uh(n);
  std::vector<int32_t> scratch(n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < n; ++i) uh[i] = hat(u[m * n + i]);
    int32_t* order = free_lists != nullptr ? free_lists + m * n : scratch.data();
    sort_order(uh.data(), n, order);
    ordered_product(uh.data(), order, n, a + m * n);
  }
}

void ordered_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n,
                      const int32_t* free_lists = nullptr) {
  std::vector<float> uh(n), prefix(n);
  std::vector<int32_t> scratch(n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < n; ++i) uh[i] = hat(u[m * n + i]);
    const int32_t* order = scratch.data();
    if (free_lists != nullptr)
      order = free_lists + m * n;
    else
      sort_order(uh.data(), n, scratch.data());
    ordered_product_backward(uh.data(), order, n, d_a + m * n, d_u + m * n, prefix.data());
  }
}

// `sorted` on `count` memories from memory m0: the forward into a (d_a, d_u
// unused), or the backward into d_u (a unused).
template <bool kBackward>
void ordered_at(const float* u, const float* d_a, float* d_u, float* a, int64_t m0, int64_t count,
                int64_t n) {
  if constexpr (kBackward)
    ordered_backward(u + m0 * n, d_a + m0 * n, d_u + m0 * n, count, n);
  else
    ordered_forward(u + m0 * n, a + m0 * n, count, n);
}

// ------------------------------------------------------------- parallel
// The mask formulation materialised per memory, transposed so that the loops
// run over rows i (contiguous, no dependency between rows):
//   phi_t[k·N + i] = φ[i][k] = 1 − g[i][k] + g[i][k]·vals[k]      (eq. 3-20..3-22)
// vals: what enters the product (û for parallel, raw u for parallel-eps);
// cmp: what the mask compares (û, or the ε-offset keys of A.1).
// special: whether cmp holds a NaN or ±∞. Then g follows the NaN rule of
// precedes() pair by pair and φ is a select (g ? vals[k] : 1): where g = 0
// and vals[k] is ±∞ or NaN, 1 − g + g·vals[k] would be NaN (0·∞), the select
// is 1. For finite rows the two agree, and the arithmetic form vectorises.
template <bool kEpsKernel>
void fill_phi(const float* vals, const float* cmp, int64_t n, bool special, float* phi_t,
              float* g_t) {
  if (special) {
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < n; ++i) {
        const bool either = std::isnan(cmp[k]) || std::isnan(cmp[i]);
        const bool g = i != k && (either       ? nan_precedes(cmp[k], k, cmp[i], i)
                                  : kEpsKernel ? (cmp[i] - cmp[k]) > 0.0f
                                               : precedes(cmp[k], k, cmp[i], i));
        g_t[k * n + i] = g ? 1.0f : 0.0f;
        phi_t[k * n + i] = g ? vals[k] : 1.0f;
      }
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    float* phi = phi_t + k * n;
    float* gk = g_t + k * n;
    auto set = [&](int64_t i, bool g) {
      gk[i] = g ? 1.0f : 0.0f;
      phi[i] = (1.0f - gk[i]) + gk[i] * vals[k];
    };
    if constexpr (kEpsKernel) {
      for (int64_t i = 0; i < n; ++i) set(i, (cmp[i] - cmp[k]) > 0.0f);  // A.1: key[i] − key[k] > 0
    } else {  // g[i][k] = [slot k precedes slot i]: ties go to the lower index
      for (int64_t i = 0; i < k; ++i) set(i, cmp[k] < cmp[i]);
      set(k, false);
      for (int64_t i = k + 1; i < n; ++i) set(i, cmp[k] <= cmp[i]);
    }
  }
}

// Whether any of v[0 .. n) is NaN or ±∞.
inline bool any_nonfinite(const float* v, int64_t n) {
  return !std::all_of(v, v + n, [](float x) { return std::isfinite(x); });
}

// a[i] = (1 − vals[i]) · Π_k φ[i][k]   (eq. 3-23), rounded in this order:
// p = 1 − vals[i], then p·φ[i][k] for ascending k (a factor of exactly 1
// leaves p as it is, so the vector forms skip it with a masked multiply and no
// blend). The N products advance together over k.
// phi_t, g_t: [N, N] scratch; p: [N] scratch.
template <bool kEpsKernel>
void mask_forward_row(const float* vals, const float* cmp, int64_t n, float* a, float* phi_t,
                      float* g_t, float* p) {
  fill_phi<kEpsKernel>(vals, cmp, n, any_nonfinite(cmp, n), phi_t, g_t);
  for (int64_t i = 0; i < n; ++i) p[i] = 1.0f - vals[i];
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) p[i] *= phi_t[k * n + i];
  for (int64_t i = 0; i < n; ++i) a[i] = p[i];
}

// d_vals[k] += Σ_i d_a[i] · ∂a[i]/∂vals[k]:
//   ∂a[i]/∂vals[i] = −Π_k φ[i][k],
//   ∂a[i]/∂vals[k] = (1 − vals[i]) · g[i][k] · (Π_{k'<k} φ[i][k']) · (Π_{k'>k} φ[i][k'])
// with prefix and suffix products (no division). The sums into d_vals run row
// by row in ascending i (within a row: the diagonal term first, then k
// descending), the order parallel-block reproduces lane by lane.
// scratch: 4·N² + 3·N floats.
template <bool kEpsKernel>
void mask_backward_row(const float* vals, const float* cmp, int64_t n, const float* d_a,
                       float* d_vals, float* scratch) {
  float *phi_t = scratch, *g_t = phi_t + n * n, *pre_t = g_t + n * n, *term_t = pre_t + (n + 1) * n,
        *c = term_t + n * n, *suffix = c + n;
  const bool special = any_nonfinite(cmp, n);
  fill_phi<kEpsKernel>(vals, cmp, n, special, phi_t, g_t);
  for (int64_t i = 0; i < n; ++i) pre_t[i] = 1.0f;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) pre_t[(k + 1) * n + i] = pre_t[k * n + i] * phi_t[k * n + i];
  for (int64_t i = 0; i < n; ++i) {
    c[i] = d_a[i] * (1.0f - vals[i]);
    suffix[i] = 1.0f;
  }
  for (int64_t k = n - 1; k >= 0; --k)
    for (int64_t i = 0; i < n; ++i) {
      // g·x is NaN where g = 0 and x is ±∞ or NaN: a select for such rows.
      const float x = c[i] * (pre_t[k * n + i] * suffix[i]);
      term_t[k * n + i] = special ? (g_t[k * n + i] != 0.0f ? x : 0.0f) : g_t[k * n + i] * x;
      suffix[i] *= phi_t[k * n + i];
    }
  for (int64_t i = 0; i < n; ++i) {
    d_vals[i] -= d_a[i] * pre_t[n * n + i];
    for (int64_t k = n - 1; k >= 0; --k) d_vals[k] += term_t[k * n + i];
  }
}

// A memory's values and comparison keys: its usages and their ε-keys (the ε kernel),
// or the clamped usages û for both.
template <bool kEpsKernel>
void row_keys(const float* um, int64_t n, float* vals, float* cmp) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kEpsKernel) {
      vals[i] = um[i];
      cmp[i] = eps_key(i, um[i]);
    } else {
      vals[i] = cmp[i] = hat(um[i]);
    }
  }
}

template <bool kEpsKernel>
void mask_forward(const float* u, float* a, int64_t rows, int64_t n) {
  std::vector<float> vals(n), cmp(n), phi_t(n * n), g_t(n * n), p(n);
  for (int64_t m = 0; m < rows; ++m) {
    row_keys<kEpsKernel>(u + m * n, n, vals.data(), cmp.data());
    mask_forward_row<kEpsKernel>(vals.data(), cmp.data(), n, a + m * n, phi_t.data(), g_t.data(),
                                 p.data());
  }
}

template <bool kEpsKernel>
void mask_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n) {
  std::vector<float> vals(n), cmp(n), d_vals(n), scratch(4 * n * n + 3 * n);
  for (int64_t m = 0; m < rows; ++m) {
    const float* um = u + m * n;
    row_keys<kEpsKernel>(um, n, vals.data(), cmp.data());
    std::fill(d_vals.begin(), d_vals.end(), 0.0f);
    mask_backward_row<kEpsKernel>(vals.data(), cmp.data(), n, d_a + m * n, d_vals.data(),
                                  scratch.data());
    // parallel-eps differentiates the raw usage; parallel goes through û.
    const float chain = kEpsKernel ? 1.0f : kOneMinusEps;
    for (int64_t i = 0; i < n; ++i) d_u[m * n + i] += chain * d_vals[i];
  }
}

// ------------------------------------------------------------- parallel-block
// `parallel` on kLanes memories at once, slot-major ("lane blocks"): vector
// h[k] holds û of slot k of the block's memories, one memory per lane, so
// every compare, select and product is one SIMD operation across memories
// (GCC vector extensions in the build's register width). The products multiply the
// same factors in the same order as mask_forward_row / mask_backward_row
// (factors of exactly 1 are skipped, which does not change a float product),
// hence the results are bit-identical to `parallel`. Padding lanes of the last
// block hold u = 0 and are never written back.
// One block per vector register of the build (kAllocationLanes: 16 lanes on
// AVX-512, 8 on AVX, 4 otherwise; wider vectors measured 35x slower on an SSE2
// build, lowered lane by lane in scalar code).
constexpr int64_t kLanes = kAllocationLanes;
using vf = float __attribute__((vector_size(kLanes * sizeof(float))));
using vi = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));

inline vf splat(float x) {
  return vf{} + x;
}

#if defined(__AVX512F__)
// In-register transpositions between 16 memories of N slots (memory-major, as
// stored) and N lane vectors (slot-major). N = 4: four registers of four
// memories each; N = 16: a 16 × 16 transpose (an involution).
[[gnu::always_inline]] inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {  // s[4g + q], 128-bit lane L: rows 4g..4g+3 of column 4L + q
    r[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int q = 0; q < 4; ++q) {
    const __m512 x = _mm512_shuffle_f32x4(r[q], r[4 + q], 0x44),
                 y = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0x44),
                 x2 = _mm512_shuffle_f32x4(r[q], r[4 + q], 0xEE),
                 y2 = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0xEE);
    t[q] = _mm512_shuffle_f32x4(x, y, 0x88);
    t[4 + q] = _mm512_shuffle_f32x4(x, y, 0xDD);
    t[8 + q] = _mm512_shuffle_f32x4(x2, y2, 0x88);
    t[12 + q] = _mm512_shuffle_f32x4(x2, y2, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// N = 4: a[j] holds memories 4j..4j+3 as stored, one memory per 128-bit
// lane. A 4 × 4 transpose inside every 128-bit lane (in-lane shuffles only)
// gives r[k] = slot k of all 16 memories, memory 4q + j at lane 4j + q (any
// fixed placement serves: lanes are independent); the same transpose undoes
// it.
[[gnu::always_inline]] inline void transpose4_lanes(const __m512 a[4], __m512 r[4]) {
  const __m512 t0 = _mm512_unpacklo_ps(a[0], a[1]), t1 = _mm512_unpackhi_ps(a[0], a[1]),
               t2 = _mm512_unpacklo_ps(a[2], a[3]), t3 = _mm512_unpackhi_ps(a[2], a[3]);
  r[0] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  r[1] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  r[2] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  r[3] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}
[[gnu::always_inline]] inline void to_lanes4(const __m512 a[4], __m512 r[4]) {
  transpose4_lanes(a, r);
}
[[gnu::always_inline]] inline void from_lanes4(const __m512 r[4], __m512 a[4]) {
  transpose4_lanes(r, a);
}
#endif

// x[k] = slot k of the block's `lanes` memories: lane l holds memory
// lane_memory(l) (below; l itself except for the N = 4 transposition),
// x[k][l] = src[lane_memory(l)·n + k]; lanes past `lanes` hold 0.
void to_lanes(const float* src, int64_t lanes, int64_t n, vf* x) {
#if defined(__AVX512F__)
  if (lanes == kLanes && n == 4) {
    __m512 a[4], r[4];
    for (int j = 0; j < 4; ++j) a[j] = _mm512_loadu_ps(src + 16 * j);
    to_lanes4(a, r);
    for (int k = 0; k < 4; ++k) std::memcpy(&x[k], &r[k], sizeof(vf));
    return;
  }
  if (lanes == kLanes && n % 16 == 0) {
    for (int64_t k0 = 0; k0 < n; k0 += 16) {
      __m512 r[16];
      for (int l = 0; l < 16; ++l) r[l] = _mm512_loadu_ps(src + l * n + k0);
      transpose16(r);
      for (int k = 0; k < 16; ++k) std::memcpy(&x[k0 + k], &r[k], sizeof(vf));
    }
    return;
  }
#endif
  for (int64_t k = 0; k < n; ++k) x[k] = splat(0.0f);
  for (int64_t l = 0; l < lanes; ++l)
    for (int64_t k = 0; k < n; ++k) x[k][l] = src[l * n + k];
}

// The inverse: dst[lane_memory(l)·n + k] = x[k][l] for the block's `lanes` memories.
void from_lanes(const vf* x, int64_t lanes, int64_t n, float* dst) {
#if defined(__AVX512F__)
  if (lanes == kLanes && n == 4) {
    __m512 a[4], r[4];
    for (int k = 0; k < 4; ++k) std::memcpy(&r[k], &x[k], sizeof(vf));
    from_lanes4(r, a);
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dst + 16 * j, a[j]);
    return;
  }
  if (lanes == kLanes && n % 16 == 0) {
    for (int64_t k0 = 0; k0 < n; k0 += 16) {
      __m512 r[16];
      for (int k = 0; k < 16; ++k) std::memcpy(&r[k], &x[k0 + k], sizeof(vf));
      transpose16(r);
      for (int l = 0; l < 16; ++l) _mm512_storeu_ps(dst + l * n + k0, r[l]);
    }
    return;
  }
#endif
  for (int64_t l = 0; l < lanes; ++l)
    for (int64_t k = 0; k < n; ++k) dst[l * n + k] = x[k][l];
}

// The memory (offset in its block) that lane l of to_lanes / from_lanes holds.
inline int64_t lane_memory(int64_t l, int64_t lanes, int64_t n) {
#if defined(__AVX512F__)
  if (lanes == kLanes && n == 4) return 4 * (l % 4) + l / 4;  // transpose4_lanes
#endif
  (void)lanes;
  (void)n;
  return l;
}

// û of a block, in place.
inline void hat_lanes(vf* x, int64_t n) {
  for (int64_t k = 0; k < n; ++k) x[k] = splat(kEps) + splat(kOneMinusEps) * x[k];
}

// Whether any lane of x[0 .. n) is NaN. The lane forms compare with NaN
// false both ways; the forward products come out as under the NaN rule
// anyway (a NaN slot's own product is NaN, and no NaN precedes a number), the
// backward sums and the ranks do not: blocks with a NaN take the scalar
// reference of their variant (mask_backward, ordered_*), which follows the rule.
inline bool lanes_have_nan(const vf* x, int64_t n) {
  vi any{};
  for (int64_t k = 0; k < n; ++k) any |= x[k] != x[k];
  for (int64_t l = 0; l < kLanes; ++l)
    if (any[l]) return true;
  return false;
}

// Rows i0 .. i0+T−1 of a block: out[i] = (1 − û[i]) · Π_k φ[i][k], from
// 1 − û[i] the factors in ascending k with T products advancing together (k
// outermost, the tile in registers). Partners before the tile tie-break with ≤, after it with <;
// the tile's own slots by their index.
template <int T>
inline void forward_tile(const vf* __restrict h, int64_t n, int64_t i0, vf* __restrict out) {
  vf hi[T], p[T];
  for (int t = 0; t < T; ++t) {
    hi[t] = h[i0 + t];
    p[t] = splat(1.0f) - hi[t];
  }
  for (int64_t k = 0; k < i0; ++k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) p[t] = hk <= hi[t] ? p[t] * hk : p[t];
  }
#pragma GCC unroll 16
  for (int d = 0; d < T; ++d) {
    const vf hk = h[i0 + d];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      if (d < t) p[t] = hk <= hi[t] ? p[t] * hk : p[t];
      if (d > t) p[t] = hk < hi[t] ? p[t] * hk : p[t];
    }
  }
  for (int64_t k = i0 + T; k < n; ++k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) p[t] = hk < hi[t] ? p[t] * hk : p[t];
  }
  for (int t = 0; t < T; ++t) out[i0 + t] = p[t];
}

// The forward of one block: h = û [N], out = a [N].
template <int kN>
inline void forward_lanes(const vf* __restrict h, int64_t n_runtime, vf* __restrict out) {
  const int64_t n = kN > 0 ? kN : n_runtime;
  int64_t i0 = 0;
  if constexpr (kN > 0 && kN <= 8) {
    forward_tile<kN>(h, n, 0, out);
    return;
  }
  for (; i0 + 8 <= n; i0 += 8) forward_tile<8>(h, n, i0, out);
  for (; i0 + 2 <= n; i0 += 2) forward_tile<2>(h, n, i0, out);
  for (; i0 < n; ++i0) forward_tile<1>(h, n, i0, out);
}

template <int kN>
void block_forward_lanes(const float* u, float* a, int64_t rows, int64_t n_runtime) {
  const int64_t n = kN > 0 ? kN : n_runtime;
  std::vector<vf> heap(kN > 0 ? 0 : 2 * n);
  vf local[kN > 0 ? 2 * kN : 1];
  vf* h = kN > 0 ? local : heap.data();
  vf* out = h + n;
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    to_lanes(u + m0 * n, lanes, n, h);
    hat_lanes(h, n);
    forward_lanes<kN>(h, n, out);
    from_lanes(out, lanes, n, a + m0 * n);
  }
}

#if defined(__AVX512F__)
// N = 4 in registers: row i starts from 1 − û_i and takes the other three
// slots in ascending k by masked multiplies (mask: slot k precedes slot i,
// [û_k < û_i] for k > i and [û_k ≤ û_i] for k < i, as fill_phi), as
// mask_forward_row. Twelve comparisons rather than six and their complements:
// the same count, and NaN compares as in the scalar form.
void block_forward4_avx512(const float* u, float* a, int64_t rows) {
  const __m512 one = _mm512_set1_ps(1.0f), eps = _mm512_set1_ps(kEps),
               ome = _mm512_set1_ps(kOneMinusEps);
  // B blocks per call, each phase for all B before the next: the 4 × 4
  // transpositions (one shuffle per cycle on this machine's cores) then
  // overlap the other blocks' arithmetic (2 blocks: 33 -> 29 cycles a block
  // in a standalone test).
  auto kernel = [&]<int B>(const float* src, float* dst) {
    __m512 x[B][4], h[B][4], r[B][4];
#pragma GCC unroll 2
    for (int b = 0; b < B; ++b) {
      for (int j = 0; j < 4; ++j) x[b][j] = _mm512_loadu_ps(src + 64 * b + 16 * j);
      to_lanes4(x[b], h[b]);
      for (int k = 0; k < 4; ++k) h[b][k] = _mm512_add_ps(eps, _mm512_mul_ps(ome, h[b][k]));
    }
#pragma GCC unroll 2
    for (int b = 0; b < B; ++b)
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        r[b][i] = _mm512_sub_ps(one, h[b][i]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          if (k == i) continue;
          const __mmask16 g = k > i ? _mm512_cmp_ps_mask(h[b][k], h[b][i], _CMP_LT_OQ)
                                    : _mm512_cmp_ps_mask(h[b][k], h[b][i], _CMP_LE_OQ);
          r[b][i] = _mm512_mask_mul_ps(r[b][i], g, r[b][i], h[b][k]);
        }
      }
#pragma GCC unroll 2
    for (int b = 0; b < B; ++b) {
      from_lanes4(r[b], x[b]);
      for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dst + 64 * b + 16 * j, x[b][j]);
    }
  };
  const int64_t full = rows / kLanes * kLanes;
  int64_t m0 = 0;
  for (; m0 + 2 * kLanes <= full; m0 += 2 * kLanes)
    kernel.template operator()<2>(u + 4 * m0, a + 4 * m0);
  if (m0 < full) kernel.template operator()<1>(u + 4 * m0, a + 4 * m0);
  if (full < rows) block_forward_lanes<4>(u + 4 * full, a + 4 * full, rows - full, 4);
}

// N = 16 in registers: every row from 1 − û_i, then the other slots in
// ascending k by masked multiplies, each mask compared where it is used (240
// comparisons, no masks kept: storing the 120 pairs and their complements is
// as many operations and spills the mask registers), fully unrolled so that
// the sixteen independent products interleave.
void block_forward16_avx512(const float* u, float* a, int64_t rows) {
  const __m512 one = _mm512_set1_ps(1.0f), eps = _mm512_set1_ps(kEps),
               ome = _mm512_set1_ps(kOneMinusEps);
  const int64_t full = rows / kLanes * kLanes;
  for (int64_t m0 = 0; m0 < full; m0 += kLanes) {
    __m512 h[16];
    for (int l = 0; l < 16; ++l) h[l] = _mm512_loadu_ps(u + (m0 + l) * 16);
    transpose16(h);
    for (int k = 0; k < 16; ++k) h[k] = _mm512_add_ps(eps, _mm512_mul_ps(ome, h[k]));
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      r[i] = _mm512_sub_ps(one, h[i]);
#pragma GCC unroll 16
      for (int k = 0; k < 16; ++k) {
        if (k == i) continue;
        const __mmask16 g = k > i ? _mm512_cmp_ps_mask(h[k], h[i], _CMP_LT_OQ)
                                  : _mm512_cmp_ps_mask(h[k], h[i], _CMP_LE_OQ);
        r[i] = _mm512_mask_mul_ps(r[i], g, r[i], h[k]);
      }
    }
    transpose16(r);
    for (int l = 0; l < 16; ++l) _mm512_storeu_ps(a + (m0 + l) * 16, r[l]);
  }
  if (full < rows) block_forward_lanes<16>(u + 16 * full, a + 16 * full, rows - full, 16);
}
#endif

// Backward of one block, rows i0 .. i0+T−1 of mask_backward_row at once: for
// each row the prefix products pre[t][k] = Π_{k'<k} φ[i][k'] (ascending), the
// diagonal term, then the suffix products (descending) with the terms
//   dh[k] += g[i][k] · (c_i · (pre[k] · suffix)),  c_i = d_a[i](1 − û[i]),
// rows in ascending order per lane (row i's diagonal term, then its k
// descending), as mask_backward_row adds them.
template <int T>
inline void backward_tile(const vf* __restrict h, const vf* __restrict da, int64_t n, int64_t i0,
                          vf* __restrict dh, vf* __restrict pre) {
  vf hi[T], run[T];
  for (int t = 0; t < T; ++t) {
    hi[t] = h[i0 + t];
    run[t] = splat(1.0f);
  }
  // Ascending k: pre[t·n + k] = the product before k.
  for (int64_t k = 0; k < i0; ++k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) {
      pre[t * n + k] = run[t];
      run[t] = hk <= hi[t] ? run[t] * hk : run[t];
    }
  }
#pragma GCC unroll 16
  for (int d = 0; d < T; ++d) {
    const vf hk = h[i0 + d];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      pre[t * n + i0 + d] = run[t];
      if (d < t) run[t] = hk <= hi[t] ? run[t] * hk : run[t];
      if (d > t) run[t] = hk < hi[t] ? run[t] * hk : run[t];
    }
  }
  for (int64_t k = i0 + T; k < n; ++k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) {
      pre[t * n + k] = run[t];
      run[t] = hk < hi[t] ? run[t] * hk : run[t];
    }
  }
  // Descending k, the T rows together: every dh[k] receives at most one
  // addition per row, here in row order t = 0 .. T−1, and the rows before and
  // after the tile come from the tiles before and after it: the per-lane order
  // of mask_backward_row.
  vf c[T], suf[T];
  for (int t = 0; t < T; ++t) {
    c[t] = da[i0 + t] * (splat(1.0f) - hi[t]);
    suf[t] = splat(1.0f);
  }
  auto step = [&](int t, int64_t k, const vf& hk, bool le) {
    const auto g = le ? hk <= hi[t] : hk < hi[t];
    const vf term = c[t] * (pre[t * n + k] * suf[t]);
    dh[k] = g ? dh[k] + term : dh[k];
    suf[t] = g ? suf[t] * hk : suf[t];
  };
  for (int64_t k = n - 1; k >= i0 + T; --k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) step(t, k, hk, false);
  }
  // The tile's own slots, k = i0+T−1 down to i0; at k = i0 + d, row d adds
  // its diagonal term −d_a[i]·Π_k φ[i][k] there instead (after the rows
  // before it, before the rows after it: row order per lane).
#pragma GCC unroll 16
  for (int d = T - 1; d >= 0; --d) {
    const vf hk = h[i0 + d];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      if (d < t) step(t, i0 + d, hk, true);
      if (d == t) dh[i0 + d] = dh[i0 + d] - da[i0 + d] * run[d];
      if (d > t) step(t, i0 + d, hk, false);
    }
  }
  for (int64_t k = i0 - 1; k >= 0; --k) {
    const vf hk = h[k];
    for (int t = 0; t < T; ++t) step(t, k, hk, true);
  }
}

template <int kN>
void block_backward_lanes(const float* u, const float* d_a, float* d_u, int64_t rows,
                          int64_t n_runtime) {
  const int64_t n = kN > 0 ? kN : n_runtime;
  constexpr int kTile = 4;
  std::vector<vf> heap(kN > 0 ? 0 : (4 + kTile) * n);
  vf local[kN > 0 ? (4 + kTile) * kN : 1];
  vf* h = kN > 0 ? local : heap.data();
  vf *da = h + n, *dh = da + n, *du = dh + n, *pre = du + n;
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    to_lanes(u + m0 * n, lanes, n, h);
    hat_lanes(h, n);
    if (lanes_have_nan(h, n)) {
      mask_backward<false>(u + m0 * n, d_a + m0 * n, d_u + m0 * n, lanes, n);
      continue;
    }
    to_lanes(d_a + m0 * n, lanes, n, da);
    for (int64_t k = 0; k < n; ++k) dh[k] = splat(0.0f);
    int64_t i0 = 0;
    for (; i0 + kTile <= n; i0 += kTile) backward_tile<kTile>(h, da, n, i0, dh, pre);
    for (; i0 < n; ++i0) backward_tile<1>(h, da, n, i0, dh, pre);
    to_lanes(d_u + m0 * n, lanes, n, du);
    for (int64_t k = 0; k < n; ++k) du[k] = du[k] + splat(kOneMinusEps) * dh[k];
    from_lanes(du, lanes, n, d_u + m0 * n);
  }
}

// ------------------------------------------------------------- rank on lane blocks
// The ranks of a block's memories at once (one memory per lane), each pair of
// slots compared once: for i < k, g = [û_k < û_i] (slot k precedes slot i,
// else slot i precedes slot k, ties to the lower index), rank[i] += g and
// rank[k] += 1 − g. The counts are exact integers, so the free lists are
// those of a per-memory count (rank[i] = #{k : slot k precedes slot i},
// order[rank[i]] = i); the products then run per memory as for `sorted`.
void rank_lanes(const vf* __restrict h, int64_t n, vi* __restrict r, Prefetch& pf) {
  for (int64_t k = 0; k < n; ++k) r[k] = vi{};
  // Four rows at a time: their partners k after the tile are loaded once
  // (integer sums: the order of the additions does not matter).
  int64_t i0 = 0;
  for (; i0 + 4 <= n; i0 += 4) {
    vf hi[4];
    vi ri[4];
    for (int t = 0; t < 4; ++t) {
      hi[t] = h[i0 + t];
      ri[t] = r[i0 + t];  // Σ_{i' < i} (g_{i'i} − 1) so far (comparisons give −1 / 0)
    }
    for (int t = 0; t < 4; ++t)  // pairs inside the tile
      for (int d = t + 1; d < 4; ++d) {
        const vi g = h[i0 + d] < hi[t];  // −1 where slot i0 + d precedes slot i0 + t
        ri[t] -= g;
        ri[d] += g;
      }
    for (int64_t k = i0 + 4; k < n; ++k) {
      const vf hk = h[k];
      const vi g0 = hk < hi[0], g1 = hk < hi[1], g2 = hk < hi[2], g3 = hk < hi[3];
      ri[0] -= g0;
      ri[1] -= g1;
      ri[2] -= g2;
      ri[3] -= g3;
      r[k] += (g0 + g1) + (g2 + g3);
    }
    for (int t = 0; t < 4; ++t) r[i0 + t] = ri[t] + static_cast<int32_t>(i0 + t);
    pf.step();
  }
  for (int64_t i = i0; i < n; ++i) {
    const vf hi = h[i];
    vi ri = r[i];
    for (int64_t k = i + 1; k < n; ++k) {
      const vi g = h[k] < hi;  // −1 where slot k precedes slot i
      ri -= g;
      r[k] += g;
    }
    r[i] = ri + static_cast<int32_t>(i);
  }
}

// ordered_product and ordered_product_backward on lane vectors, the same
// operations per lane in the same order: s = the usages in free-list order,
// x = a in free-list order (forward) or the gradient in free-list order,
// (1 − ε)·P_k·(R_k − g_k), for g = d_a in free-list order (backward).
inline void ordered_product_lanes(const vf* s, int64_t n, vf* x) {
  const vf one = splat(1.0f);
  vf p = one;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = (one - s[j]) * p;
    p = p * s[j];
  }
}

inline void ordered_backward_lanes(const vf* s, const vf* g, int64_t n, vf* x) {
  const vf one = splat(1.0f);
  vf p = one;
  for (int64_t j = 0; j < n; ++j) {  // x: the prefix products
    x[j] = p;
    p = p * s[j];
  }
  vf rr = splat(0.0f);
  for (int64_t k = n - 1; k >= 0; --k) {  // x: the gradient in free-list order
    x[k] = splat(kOneMinusEps) * (x[k] * (rr - g[k]));
    rr = g[k] * (one - s[k]) + s[k] * rr;
  }
}

// The products of `sorted` on lane blocks: the usages in free-list order
// s[j] (lane l: û of slot φ_l[j], placed by the ranks), then the cumulative
// product (forward) or the prefix products and the reverse sweep (backward)
// of ordered_product / ordered_product_backward, the same operations per lane
// in the same order, a block of memories per vector operation.
template <bool kBackward>
void rank_blocks(const float* u, const float* d_a, float* d_u, float* a, int64_t rows, int64_t n) {
  std::vector<vf> h(n), s(n), x(n), y(n), g(n);
  std::vector<vi> r(n);
  // From N = 16 on, results go to (and d_a comes from) the stored layout
  // directly, lane by lane; below, through the block transpositions (faster there).
  const bool direct = n >= 16;
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    Prefetch pf;
    if (direct && m0 + 2 * kLanes <= rows) {  // the next block, over the counting
      pf.next_block(u, d_a, d_u, a, m0, kLanes, n);
      pf.pace(kLanes * n * 4, n / 4);
    }
    to_lanes(u + m0 * n, lanes, n, h.data());
    hat_lanes(h.data(), n);
    if (lanes_have_nan(h.data(), n)) {
      ordered_at<kBackward>(u, d_a, d_u, a, m0, lanes, n);
      continue;
    }
    rank_lanes(h.data(), n, r.data(), pf);
    for (int64_t i = 0; i < n; ++i)  // padding lanes (u = 0) are ranked too
      for (int64_t l = 0; l < kLanes; ++l) s[r[i][l]][l] = h[i][l];
    if constexpr (!kBackward) {
      ordered_product_lanes(s.data(), n, x.data());
      if (direct) {
        for (int64_t l = 0; l < lanes; ++l) {
          float* am = a + (m0 + lane_memory(l, lanes, n)) * n;
          for (int64_t i = 0; i < n; ++i) am[i] = x[r[i][l]][l];
        }
      } else {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t l = 0; l < kLanes; ++l) y[i][l] = x[r[i][l]][l];
        from_lanes(y.data(), lanes, n, a + m0 * n);
      }
    } else {
      if (direct) {  // d_a in free-list order
        for (int64_t l = 0; l < kLanes; ++l) {
          const float* gm = l < lanes ? d_a + (m0 + lane_memory(l, lanes, n)) * n : nullptr;
          for (int64_t i = 0; i < n; ++i) g[r[i][l]][l] = gm ? gm[i] : 0.0f;
        }
      } else {
        to_lanes(d_a + m0 * n, lanes, n, y.data());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t l = 0; l < kLanes; ++l) g[r[i][l]][l] = y[i][l];
      }
      ordered_backward_lanes(s.data(), g.data(), n, x.data());
      if (direct) {  // d_u += the gradient
        for (int64_t l = 0; l < lanes; ++l) {
          float* dm = d_u + (m0 + lane_memory(l, lanes, n)) * n;
          for (int64_t i = 0; i < n; ++i) dm[i] += x[r[i][l]][l];
        }
      } else {
        to_lanes(d_u + m0 * n, lanes, n, y.data());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t l = 0; l < kLanes; ++l) y[i][l] = y[i][l] + x[r[i][l]][l];
        from_lanes(y.data(), lanes, n, d_u + m0 * n);
      }
    }
  }
}

#if defined(__AVX512F__)
// Small memories, N dividing 16 (used for N = 8; N = 4 and 16 have the lane-block
// register kernels above): 16 / N whole memories per 512-bit register,
// one float lane per slot, so no transposition is needed. Partner j of slot i
// is k_j(i) = j + [j >= i] (the other slots in ascending order, as in the
// scalar product); `before` marks the lanes where k_j(i) < i, whose tie rule
// is ≤ instead of <. prod starts at 1 − û and takes the factors in ascending
// k, so the rounding is that of mask_forward_row.
template <int N>
void block_forward_avx512(const float* u, float* a, int64_t rows) {
  static_assert(16 % N == 0 && N >= 2);
  constexpr int64_t kPerRegister = 16 / N;
  __m512i partner[N - 1];
  __mmask16 before[N - 1];
  for (int j = 0; j < N - 1; ++j) {
    alignas(64) int32_t lanes[16];
    before[j] = 0;
    for (int lane = 0; lane < 16; ++lane) {
      const int i = lane % N, k = j + (j >= i ? 1 : 0);
      lanes[lane] = lane - i + k;
      if (k < i) before[j] = static_cast<__mmask16>(before[j] | (1u << lane));
    }
    partner[j] = _mm512_load_si512(lanes);
  }
  const __m512 eps = _mm512_set1_ps(kEps), one_minus_eps = _mm512_set1_ps(kOneMinusEps),
               one = _mm512_set1_ps(1.0f);
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  auto kernel = [&](__m512 v) {
    const __m512 h = _mm512_add_ps(eps, _mm512_mul_ps(one_minus_eps, v));  // û
    __m512 prod = _mm512_sub_ps(one, h);
    // For û positive and finite (every usage in [0, ∞)), p ≤ û ⇔ p < the next
    // float above û, whose bits are û's plus one: one comparison per partner
    // serves both tie rules. Otherwise (a negative, infinite or NaN usage) the
    // two comparisons.
    const __mmask16 positive_finite = _mm512_cmp_ps_mask(h, _mm512_setzero_ps(), _CMP_GT_OQ) &
                                      _mm512_cmp_ps_mask(h, inf, _CMP_LT_OQ);
    if (positive_finite == 0xFFFF) {
      const __m512 h_up =
          _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(h), _mm512_set1_epi32(1)));
      for (int j = 0; j < N - 1; ++j) {
        const __m512 p = _mm512_permutexvar_ps(partner[j], h);
        const __mmask16 g =
            _mm512_cmp_ps_mask(p, _mm512_mask_blend_ps(before[j], h, h_up), _CMP_LT_OQ);
        prod = _mm512_mask_mul_ps(prod, g, prod, p);
      }
    } else {
      for (int j = 0; j < N - 1; ++j) {
        const __m512 p = _mm512_permutexvar_ps(partner[j], h);
        const __mmask16 g = _mm512_cmp_ps_mask(p, h, _CMP_LT_OQ) |
                            _mm512_mask_cmp_ps_mask(before[j], p, h, _CMP_EQ_OQ);
        prod = _mm512_mask_mul_ps(prod, g, prod, p);
      }
    }
    return prod;
  };
  int64_t m = 0;
  for (; m + kPerRegister <= rows; m += kPerRegister)
    _mm512_storeu_ps(a + m * N, kernel(_mm512_loadu_ps(u + m * N)));
  if (m < rows) {  // the last, partly filled register: masked load and store
    const __mmask16 live = static_cast<__mmask16>((1u << ((rows - m) * N)) - 1u);
    _mm512_mask_storeu_ps(a + m * N, live, kernel(_mm512_maskz_loadu_ps(live, u + m * N)));
  }
}
#endif

void block_forward(const float* u, float* a, int64_t rows, int64_t n) {
#if defined(__AVX512F__)
  if (n == 8) return block_forward_avx512<8>(u, a, rows);
  if (n == 4) return block_forward4_avx512(u, a, rows);
  if (n == 16) return block_forward16_avx512(u, a, rows);
#endif
  if (n == 4) return block_forward_lanes<4>(u, a, rows, n);
  if (n == 16) return block_forward_lanes<16>(u, a, rows, n);
  return block_forward_lanes<0>(u, a, rows, n);
}

#if defined(__AVX512F__)
// Backward for N dividing 16 (used for N = 8) in the register layout of
// block_forward_avx512:
// lane x of a memory accumulates d û[x] over the rows i in ascending order,
// the diagonal term −d_a[x]·Π_k φ[x][k] at i = x, otherwise
//   g[i][x] · (c_i · (Π_{k<x} φ[i][k] · Π_{k>x} φ[i][k])),  c_i = d_a[i](1 − û[i]),
// with the prefix and suffix products of row i built lane by lane in the same
// order as mask_backward_row, hence bit-identical to `parallel`.
template <int N>
void block_backward_avx512(const float* u, const float* d_a, float* d_u, int64_t rows) {
  static_assert(16 % N == 0 && N >= 2);
  constexpr int64_t kPerRegister = 16 / N;
  __m512i slot_of[N];                        // lane -> lane of slot e of the same memory
  __mmask16 is_slot[N], below[N], above[N];  // lane x == e, x < e, x > e
  for (int e = 0; e < N; ++e) {
    alignas(64) int32_t lanes[16];
    is_slot[e] = below[e] = above[e] = 0;
    for (int lane = 0; lane < 16; ++lane) {
      const int x = lane % N;
      lanes[lane] = lane - x + e;
      const __mmask16 bit = static_cast<__mmask16>(1u << lane);
      if (x == e) is_slot[e] |= bit;
      if (x < e) below[e] |= bit;
      if (x > e) above[e] |= bit;
    }
    slot_of[e] = _mm512_load_si512(lanes);
  }
  const __m512 eps = _mm512_set1_ps(kEps), one_minus_eps = _mm512_set1_ps(kOneMinusEps),
               one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  auto kernel = [&](__m512 v, __m512 da, __m512 du) {
    const __m512 h = _mm512_add_ps(eps, _mm512_mul_ps(one_minus_eps, v));  // û
    const __m512 c = _mm512_mul_ps(da, _mm512_sub_ps(one, h));
    __m512 acc = zero;
    for (int i = 0; i < N; ++i) {
      const __m512 hi = _mm512_permutexvar_ps(slot_of[i], h);  // û[i] in every lane
      // g[i][x] = [slot x precedes slot i]: ≤ for x < i, < for x > i, 0 for x = i.
      const __mmask16 g = _mm512_mask_cmp_ps_mask(below[i], h, hi, _CMP_LE_OQ) |
                          _mm512_mask_cmp_ps_mask(above[i], h, hi, _CMP_LT_OQ);
      const __m512 phi = _mm512_mask_blend_ps(g, one, h);  // φ[i][x] in lane x
      // prefix[x] = (…(1·φ[i][0])·…)·φ[i][x−1], suffix[x] = (…(1·φ[i][N−1])·…)·φ[i][x+1]
      __m512 prefix = one, suffix = one;
      for (int k = 0; k < N - 1; ++k) {
        prefix =
            _mm512_mask_mul_ps(prefix, above[k], prefix, _mm512_permutexvar_ps(slot_of[k], phi));
        const int ks = N - 1 - k;
        suffix =
            _mm512_mask_mul_ps(suffix, below[ks], suffix, _mm512_permutexvar_ps(slot_of[ks], phi));
      }
      const __m512 full = _mm512_mul_ps(_mm512_permutexvar_ps(slot_of[N - 1], prefix),
                                        _mm512_permutexvar_ps(slot_of[N - 1], phi));
      const __m512 ci = _mm512_permutexvar_ps(slot_of[i], c);
      const __m512 term = _mm512_mul_ps(ci, _mm512_mul_ps(prefix, suffix));
      acc = _mm512_mask_add_ps(acc, g, acc, term);
      const __m512 self = _mm512_mul_ps(_mm512_permutexvar_ps(slot_of[i], da), full);
      acc = _mm512_mask_sub_ps(acc, is_slot[i], acc, self);
    }
    return _mm512_add_ps(du, _mm512_mul_ps(one_minus_eps, acc));
  };
  // Registers with a NaN take mask_backward (the NaN rule: see lanes_have_nan).
  auto has_nan = [](__m512 v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; };
  int64_t m = 0;
  for (; m + kPerRegister <= rows; m += kPerRegister) {
    const __m512 v = _mm512_loadu_ps(u + m * N);
    if (has_nan(v)) {
      mask_backward<false>(u + m * N, d_a + m * N, d_u + m * N, kPerRegister, N);
      continue;
    }
    _mm512_storeu_ps(d_u + m * N,
                     kernel(v, _mm512_loadu_ps(d_a + m * N), _mm512_loadu_ps(d_u + m * N)));
  }
  if (m < rows) {
    const __mmask16 live = static_cast<__mmask16>((1u << ((rows - m) * N)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(live, u + m * N);
    if (has_nan(v))
      mask_backward<false>(u + m * N, d_a + m * N, d_u + m * N, rows - m, N);
    else
      _mm512_mask_storeu_ps(d_u + m * N, live,
                            kernel(v, _mm512_maskz_loadu_ps(live, d_a + m * N),
                                   _mm512_maskz_loadu_ps(live, d_u + m * N)));
  }
}
#endif

#if defined(__AVX512F__)
// Backward for N = 4 and 16 in registers, lane blocks of 16 memories (transposed in
// and out): the 120 pair comparisons once, then row by row in ascending
// order the prefix products (ascending k), the diagonal term and the suffix
// pass (descending k) adding c_i · (prefix · suffix) where slot k precedes
// slot i: the per-lane order and rounding of mask_backward_row.
// AVX-512 (kLanes = 16): a block of 16 memories as stored -> x[k] = slot k of
// the 16 memories (N = 4 or 16).
template <int N>
[[gnu::always_inline]] inline void load_lanes_avx512(const float* src, __m512 x[N]) {
  if constexpr (N == 4) {
    __m512 a[4];
    for (int j = 0; j < 4; ++j) a[j] = _mm512_loadu_ps(src + 16 * j);
    to_lanes4(a, x);
  } else {
    for (int l = 0; l < 16; ++l) x[l] = _mm512_loadu_ps(src + l * 16);
    transpose16(x);
  }
}

template <int N>
[[gnu::always_inline]] inline void store_lanes_avx512(__m512 x[N], float* dst) {
  if constexpr (N == 4) {
    __m512 a[4];
    from_lanes4(x, a);
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dst + 16 * j, a[j]);
  } else {
    transpose16(x);
    for (int l = 0; l < 16; ++l) _mm512_storeu_ps(dst + l * 16, x[l]);
  }
}

// dst (a block of 16 memories as stored) += x (N lane vectors): x goes back
// to the stored layout and is added there, one add per element as in
// `du[k] + x[k]` on lanes, without transposing dst in and out.
template <int N>
[[gnu::always_inline]] inline void add_lanes_avx512(__m512 x[N], float* dst) {
  if constexpr (N == 4) {
    __m512 a[4];
    from_lanes4(x, a);
    for (int j = 0; j < 4; ++j)
      _mm512_storeu_ps(dst + 16 * j, _mm512_add_ps(_mm512_loadu_ps(dst + 16 * j), a[j]));
  } else {
    transpose16(x);
    for (int l = 0; l < 16; ++l)
      _mm512_storeu_ps(dst + l * 16, _mm512_add_ps(_mm512_loadu_ps(dst + l * 16), x[l]));
  }
}

template <int N>
void block_backward_regs_avx512(const float* u, const float* d_a, float* d_u, int64_t rows) {
  static_assert(N == 4 || N == 16);
  const __m512 one = _mm512_set1_ps(1.0f), eps = _mm512_set1_ps(kEps),
               ome = _mm512_set1_ps(kOneMinusEps);
  const int64_t full = rows / kLanes * kLanes;
  for (int64_t m0 = 0; m0 < full; m0 += kLanes) {
    __m512 h[N], da[N], acc[N];
    load_lanes_avx512<N>(u + m0 * N, h);
    __mmask16 nan = 0;
    for (int k = 0; k < N; ++k) nan |= _mm512_cmp_ps_mask(h[k], h[k], _CMP_UNORD_Q);
    if (nan) {  // the NaN rule: see lanes_have_nan
      mask_backward<false>(u + m0 * N, d_a + m0 * N, d_u + m0 * N, kLanes, N);
      continue;
    }
    for (int k = 0; k < N; ++k) h[k] = _mm512_add_ps(eps, _mm512_mul_ps(ome, h[k]));
    load_lanes_avx512<N>(d_a + m0 * N, da);
    __mmask16 lt[N][N];  // lt[i][k], i < k: [û_k < û_i]
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i)
#pragma GCC unroll 16
      for (int k = i + 1; k < N; ++k) lt[i][k] = _mm512_cmp_ps_mask(h[k], h[i], _CMP_LT_OQ);
    for (int k = 0; k < N; ++k) acc[k] = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      auto g = [&](int k) { return k > i ? lt[i][k] : static_cast<__mmask16>(~lt[k][i]); };
      __m512 pre[N];
      __m512 run = one;
#pragma GCC unroll 16
      for (int k = 0; k < N; ++k) {
        pre[k] = run;
        if (k != i) run = _mm512_mask_mul_ps(run, g(k), run, h[k]);
      }
      acc[i] = _mm512_sub_ps(acc[i], _mm512_mul_ps(da[i], run));
      const __m512 c = _mm512_mul_ps(da[i], _mm512_sub_ps(one, h[i]));
      __m512 suf = one;
#pragma GCC unroll 16
      for (int k = N - 1; k >= 0; --k) {
        if (k == i) continue;
        const __m512 term = _mm512_mul_ps(c, _mm512_mul_ps(pre[k], suf));
        acc[k] = _mm512_mask_add_ps(acc[k], g(k), acc[k], term);
        suf = _mm512_mask_mul_ps(suf, g(k), suf, h[k]);
      }
    }
    for (int k = 0; k < N; ++k) acc[k] = _mm512_mul_ps(ome, acc[k]);
    add_lanes_avx512<N>(acc, d_u + m0 * N);
  }
  if (full < rows)
    block_backward_lanes<N>(u + N * full, d_a + N * full, d_u + N * full, rows - full, N);
}
#endif

// Backward of the block form: on AVX-512 builds the lane-block register
// kernels for N = 4 and 16 and the 2-memories-per-register form for N = 8
// (for N = 4 the lane blocks measured 1.8x faster than that form on an AMD
// EPYC Zen 4); lane blocks otherwise.
void block_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n) {
#if defined(__AVX512F__)
  if (n == 8) return block_backward_avx512<8>(u, d_a, d_u, rows);
  if (n == 4) return block_backward_regs_avx512<4>(u, d_a, d_u, rows);
  if (n == 16) return block_backward_regs_avx512<16>(u, d_a, d_u, rows);
#endif
  if (n == 4) return block_backward_lanes<4>(u, d_a, d_u, rows, n);
  if (n == 16) return block_backward_lanes<16>(u, d_a, d_u, rows, n);
  return block_backward_lanes<0>(u, d_a, d_u, rows, n);
}

// ------------------------------------------------------------- network
// `sorted` with the sort done by a sorting network, a block of memories at a
// time (one memory per lane, slot-major like parallel-block): Batcher's
// odd–even merge sort, whose comparators do not depend on the data, so every
// compare-exchange is one SIMD operation across memories. O(N log² N)
// comparators per memory where rank and the mask forms do O(N²) work
// (N = 4: 5, 16: 63, 32: 191, 64: 543, 128: 1471). The usages in free-list
// order then go through the products of `sorted` (ordered_product /
// ordered_product_backward: the same operations in the same order), hence the
// results are bit-identical to `sorted`, forward and backward.
//
// Keys: (û, slot) compared lexicographically, so ties go to the lower slot and
// the order is the free list whatever the network. On AVX-512 builds the
// register kernels for N = 4 and 16 pack the pair into one 32-bit integer,
//   key = bits(û) << 4 | slot,
// exact and order-preserving while 2^-31 ≤ û < 2 (every such û has 0x3 as
// its top four bits, which the shift drops; it holds for every usage u in
// [0, 2): û ≥ ε = 1e-6); a compare-exchange is then one compare (its mask
// kept) and an unsigned min and max, the sorted û come back from the keys,
// and the results return to their slots by replaying the recorded exchanges
// backwards. With AVX512-VBMI2 the packing and the unpacking are one
// concatenating shift each (vpshldd / vpshrdd). A block with any usage
// outside [+0, 2) (negative, −0, NaN, ≥ 2), found by one OR over its bits,
// takes the general path: float compare with the slot as tie-break, the slots
// carried through the network, results placed per lane by them. For
// 16 < N ≤ 128 the wide path below (network_wide_avx512) sorts with another
// network (Batcher's 16-input one per group of 16, then bitonic merges) on
// 64-bit keys; any network serves, the keys being distinct.
struct Comparator {
  int32_t lo, hi;  // positions compared; the smaller key goes to lo
};

// Batcher's odd–even merge sort for n inputs: the network for the next power
// of two, keeping the comparators inside [0, n) (the padding would hold keys
// above every real one, which no comparator moves). Calls f(lo, hi) in order.
template <class F>
constexpr void batcher_network(int64_t n, F&& f) {
  int64_t p2 = 1;
  while (p2 < n) p2 *= 2;
  for (int64_t p = 1; p < p2; p *= 2)
    for (int64_t k = p; k >= 1; k /= 2)
      for (int64_t j = k % p; j + k < p2; j += 2 * k)
        for (int64_t i = 0; i < k && i + j + k < n; ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) f(i + j, i + j + k);
}

std::vector<Comparator> batcher_comparators(int64_t n) {
  std::vector<Comparator> c;
  batcher_network(n, [&](int64_t lo, int64_t hi) {
    c.push_back({static_cast<int32_t>(lo), static_cast<int32_t>(hi)});
  });
  return c;
}

// The comparators a generator gen(f) calls f(lo, hi) with, in order, as a
// compile-time array (gen: a captureless lambda, so that its type names it).
template <class Gen>
constexpr int comparator_count() {
  int count = 0;
  Gen{}([&](int64_t, int64_t) { ++count; });
  return count;
}
template <class Gen>
constexpr auto comparator_array(Gen gen) {
  std::array<Comparator, comparator_count<Gen>()> c{};
  int i = 0;
  gen([&](int64_t lo, int64_t hi) {
    c[i++] = {static_cast<int32_t>(lo), static_cast<int32_t>(hi)};
  });
  return c;
}

template <int N>
constexpr auto batcher_array() {
  return comparator_array([](auto&& f) { batcher_network(N, f); });
}

// After the sort: s[j] = û of slot φ[j] and slot[j] = φ[j] per lane, for the
// block of `lanes` memories at m0; the products of `sorted` in free-list order,
// the results placed per lane by slot into a copy of the block's rows as
// stored (scratch in L1: placing them straight into the stored rows, scattered
// over many cache lines, took half the time at N = 128) that then goes out in
// one sequential pass. x, g: scratch of n vectors; y: of kLanes·n floats.
template <bool kBackward>
void network_finish(const vf* s, const vi* slot, vf* x, vf* g, float* y, int64_t m0, int64_t lanes,
                    int64_t n, const float* d_a, float* d_u, float* a) {
  const int64_t count = lanes * n;
  int64_t row[kLanes];  // lane l's row in y
  for (int64_t l = 0; l < lanes; ++l) row[l] = lane_memory(l, lanes, n) * n;
  // x (free-list order) -> y (slot order), position by position over the lanes.
  auto place = [&] {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < lanes; ++l) y[row[l] + slot[j][l]] = x[j][l];
  };
  if constexpr (!kBackward) {
    ordered_product_lanes(s, n, x);
    place();
    std::memcpy(a + m0 * n, y, count * sizeof(float));
  } else {
    std::memcpy(y, d_a + m0 * n, count * sizeof(float));
    for (int64_t j = 0; j < n; ++j) {  // d_a in free-list order
      g[j] = splat(0.0f);
      for (int64_t l = 0; l < lanes; ++l) g[j][l] = y[row[l] + slot[j][l]];
    }
    ordered_backward_lanes(s, g, n, x);
    place();
    float* du = d_u + m0 * n;  // d_u += the gradient, element by element
    for (int64_t e = 0; e < count; ++e) du[e] += y[e];
  }
}

// The general path on lane blocks: d_a / d_u null for the forward (into a),
// a null for the backward (d_u += the gradient).
template <bool kBackward>
void network_blocks(const float* u, const float* d_a, float* d_u, float* a, int64_t rows,
                    int64_t n) {
  const std::vector<Comparator> net = batcher_comparators(n);
  std::vector<vf> s(n), x(n), g(n);
  std::vector<vi> slot(n);
  std::vector<float> y(kLanes * n);
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    to_lanes(u + m0 * n, lanes, n, s.data());
    hat_lanes(s.data(), n);
    if (lanes_have_nan(s.data(), n)) {
      ordered_at<kBackward>(u, d_a, d_u, a, m0, lanes, n);
      continue;
    }
    for (int64_t k = 0; k < n; ++k) slot[k] = vi{} + static_cast<int32_t>(k);
    for (const Comparator& c : net) {  // s[j] = û of slot φ[j], slot[j] = φ[j]
      const vf va = s[c.lo], vb = s[c.hi];
      const vi ia = slot[c.lo], ib = slot[c.hi];
      const vi swap = (va > vb) | ((va == vb) & (ia > ib));
      s[c.lo] = swap ? vb : va;
      s[c.hi] = swap ? va : vb;
      slot[c.lo] = swap ? ib : ia;
      slot[c.hi] = swap ? ia : ib;
    }
    network_finish<kBackward>(s.data(), slot.data(), x.data(), g.data(), y.data(), m0, lanes, n,
                              d_a, d_u, a);
  }
}

// network_blocks on `count` memories from memory m0 (d_a, d_u, a null as in
// network_blocks): the tails and the blocks the packed keys cannot hold.
template <bool kBackward>
void network_blocks_at(const float* u, const float* d_a, float* d_u, float* a, int64_t m0,
                       int64_t count, int64_t n) {
  network_blocks<kBackward>(u + m0 * n, d_a ? d_a + m0 * n : nullptr, d_u ? d_u + m0 * n : nullptr,
                            a ? a + m0 * n : nullptr, count, n);
}

#if defined(__AVX512F__)
// The packed 32-bit keys of the header: bits(û) << 4 | k (k < 16), and back
// to û (key >> 4 | 0x3 << 28); with AVX512-VBMI2 one concatenating shift each.
inline __m512i pack_key(__m512 h, int k) {
  const __m512i bits = _mm512_castps_si512(h);
#if defined(__AVX512VBMI2__)
  // (bits:k << 28) << 4, upper half
  return _mm512_shldi_epi32(bits, _mm512_set1_epi32(static_cast<int32_t>(uint32_t(k) << 28)), 4);
#else
  return _mm512_or_si512(_mm512_slli_epi32(bits, 4), _mm512_set1_epi32(k));
#endif
}
inline __m512 unpack_key(__m512i key) {
  const __m512i three = _mm512_set1_epi32(3);
#if defined(__AVX512VBMI2__)
  return _mm512_castsi512_ps(_mm512_shrdi_epi32(key, three, 4));  // (3:key) >> 4, lower half
#else
  return _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_srli_epi32(key, 4), _mm512_slli_epi32(three, 28)));
#endif
}

// Whether the keys can hold a block's usages u[0 .. n) (lane vectors, before
// û): every u in [+0, 2) ⇔ no usage has bit 31 or 30 set, tested on the OR of
// all of them, three inputs per ternary-logic operation.
inline bool packable(const __m512* u, int64_t n) {
  __m512i any = _mm512_castps_si512(u[0]);
  int64_t k = 1;
  for (; k + 2 <= n; k += 2)
    any = _mm512_ternarylogic_epi32(any, _mm512_castps_si512(u[k]), _mm512_castps_si512(u[k + 1]),
                                    0xFE);
  for (; k < n; ++k) any = _mm512_or_si512(any, _mm512_castps_si512(u[k]));
  return !_mm512_test_epi32_mask(any, _mm512_set1_epi32(static_cast<int32_t>(0xC0000000u)));
}

// The register kernels, N = 4 or 16, on whole blocks of 16 memories (the
// packed keys of the header); the tail block and out-of-range blocks take
// network_blocks.
template <int N, bool kBackward>
void network_regs_avx512(const float* u, const float* d_a, float* d_u, float* a, int64_t rows) {
  static_assert(N == 4 || N == 16);
  static constexpr auto kNet = batcher_array<N>();
  constexpr int kC = static_cast<int>(kNet.size());
  const __m512 one = _mm512_set1_ps(1.0f), eps = _mm512_set1_ps(kEps),
               ome = _mm512_set1_ps(kOneMinusEps);
  const int64_t full = rows / kLanes * kLanes;
  for (int64_t m0 = 0; m0 < full; m0 += kLanes) {
    __m512 h[N];
    load_lanes_avx512<N>(u + m0 * N, h);
    if (!packable(h, N)) {
      network_blocks_at<kBackward>(u, d_a, d_u, a, m0, kLanes, N);
      continue;
    }
    __m512i key[N];
    for (int k = 0; k < N; ++k) {
      h[k] = _mm512_add_ps(eps, _mm512_mul_ps(ome, h[k]));
      key[k] = pack_key(h[k], k);
    }
    __mmask16 swap[kC];
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((swap[I] = _mm512_cmpgt_epu32_mask(key[kNet[I].lo], key[kNet[I].hi]),
        std::tie(key[kNet[I].lo], key[kNet[I].hi]) =
            std::pair{_mm512_min_epu32(key[kNet[I].lo], key[kNet[I].hi]),
                      _mm512_max_epu32(key[kNet[I].lo], key[kNet[I].hi])}),
       ...);
    }
    (std::make_index_sequence<kC>{});
    __m512 s[N], x[N];
    for (int j = 0; j < N; ++j) s[j] = unpack_key(key[j]);
    // Undoes the exchanges, last first: x in free-list order -> x in slot order.
    auto to_slots = [&]<std::size_t... I>(std::index_sequence<I...>) {
      constexpr int kLast = kC - 1;
      ((std::tie(x[kNet[kLast - I].lo], x[kNet[kLast - I].hi]) =
            std::pair{
                _mm512_mask_blend_ps(swap[kLast - I], x[kNet[kLast - I].lo], x[kNet[kLast - I].hi]),
                _mm512_mask_blend_ps(swap[kLast - I], x[kNet[kLast - I].hi],
                                     x[kNet[kLast - I].lo])}),
       ...);
    };
    if constexpr (!kBackward) {
      __m512 p = one;
      for (int j = 0; j < N; ++j) {
        x[j] = _mm512_mul_ps(_mm512_sub_ps(one, s[j]), p);
        p = _mm512_mul_ps(p, s[j]);
      }
      to_slots(std::make_index_sequence<kC>{});
      store_lanes_avx512<N>(x, a + m0 * N);
    } else {
      __m512 g[N];
      load_lanes_avx512<N>(d_a + m0 * N, g);
      [&]<std::size_t... I>(std::index_sequence<I...>) {  // d_a in free-list order
        ((std::tie(g[kNet[I].lo], g[kNet[I].hi]) =
              std::pair{_mm512_mask_blend_ps(swap[I], g[kNet[I].lo], g[kNet[I].hi]),
                        _mm512_mask_blend_ps(swap[I], g[kNet[I].hi], g[kNet[I].lo])}),
         ...);
      }
      (std::make_index_sequence<kC>{});
      __m512 p = one;
      for (int j = 0; j < N; ++j) {
        x[j] = p;
        p = _mm512_mul_ps(p, s[j]);
      }
      __m512 rr = _mm512_setzero_ps();
      for (int k = N - 1; k >= 0; --k) {
        x[k] = _mm512_mul_ps(ome, _mm512_mul_ps(x[k], _mm512_sub_ps(rr, g[k])));
        rr = _mm512_add_ps(_mm512_mul_ps(g[k], _mm512_sub_ps(one, s[k])), _mm512_mul_ps(s[k], rr));
      }
      to_slots(std::make_index_sequence<kC>{});
      add_lanes_avx512<N>(x, d_u + m0 * N);
    }
  }
  if (full < rows) network_blocks_at<kBackward>(u, d_a, d_u, a, full, rows - full, N);
}
#endif

#if defined(__AVX512F__)
// 16 < N ≤ 128: keys of 64 bits, bits(û) << 32 | slot, exact and
// order-preserving for every û > 0 (not NaN): ties go to the lower slot, every
// key differs, so any sorting network gives the free list. A compare-exchange
// is an unsigned 64-bit min and max, eight memories to a register; the slot
// rides along in the key. The network: Batcher's 16-input network on every
// aligned group of 16 positions (in registers), then bitonic merges of the
// sorted runs, "flip" form (all comparators ascending): to merge runs of p
// into runs of 2p, compare i with 2p − 1 − i, then i with i + k for k = p/2,
// ..., 1 (i & k = 0). Comparators with distance ≥ 16 keep positions ≡ r or
// 15 − r (mod 16) together, so each merge is two passes over the keys with
// every window in registers: the p/4 positions of one residue pair (flip and
// distances p/2 .. 16), then aligned groups of 16 (distances 8 .. 1). The
// keys of a block (two halves of eight memories, N padded with all-ones keys
// to the next power of two) stay in L1. Whole groups of 16 are sorted first
// on 32-bit keys (below), then widened. Blocks with a usage outside [+0, 2)
// take network_blocks. (On Zen 4 a 512-bit min or max of 64-bit lanes issues
// once a cycle, of 32-bit lanes twice: the merges are four times the cost per
// compare-exchange and memory of the 32-bit group sorts.)
namespace wide {

[[gnu::always_inline]] inline void cx(__m512i& a, __m512i& b) {
  const __m512i lo = _mm512_min_epu64(a, b);
  b = _mm512_max_epu64(a, b);
  a = lo;
}

// Merge of runs of P, the window of one residue pair: A[t] = w[t] (position
// r + 16t), B[t] = w[T + t] (position 15 − r + 16t), T = P / 8.
template <class F>
constexpr void merge_window(int p, F&& f) {
  const int t_count = p / 8;
  for (int t = 0; t < t_count / 2; ++t) {  // flip: i <-> 2P − 1 − i
    f(t, 2 * t_count - 1 - t);
    f(t_count + t, t_count - 1 - t);
  }
  for (int m = t_count / 4; m >= 1; m /= 2)  // distances 16m = P/2 .. 16
    for (int t = 0; t < t_count; ++t)
      if ((t & m) == 0) {
        f(t, t + m);
        f(t_count + t, t_count + t + m);
      }
}

// Distances 8, 4, 2, 1 inside an aligned group of 16.
template <class F>
constexpr void clean16(F&& f) {
  for (int k = 8; k >= 1; k /= 2)
    for (int i = 0; i < 16; ++i)
      if ((i & k) == 0) f(i, i + k);
}

struct Sort16 {
  static constexpr auto net = batcher_array<16>();
};
template <int P>
struct MergeWindow {
  static constexpr auto net = comparator_array([](auto&& f) { merge_window(P, f); });
};
struct Clean16 {
  static constexpr auto net = comparator_array([](auto&& f) { clean16(f); });
};

// The keys a memory of n slots (16 < n ≤ 128) is padded to: a power of two.
inline int64_t padded(int64_t n) {
  int64_t p2 = 32;
  while (p2 < n) p2 *= 2;
  return p2;
}

// Compare-exchanges per memory of a merge of runs of P into runs of 2P over
// p2 keys: the windows of the first pass, the groups of 16 of the second.
template <int P>
constexpr int64_t merge_comparators(int64_t p2) {
  return p2 / (2 * P) * 8 * static_cast<int64_t>(MergeWindow<P>::net.size()) +
         p2 / 16 * static_cast<int64_t>(Clean16::net.size());
}

// The same on 32-bit keys (sixteen memories to a register).
[[gnu::always_inline]] inline void cx32(__m512i& a, __m512i& b) {
  const __m512i lo = _mm512_min_epu32(a, b);
  b = _mm512_max_epu32(a, b);
  a = lo;
}

template <class Net, int kBits, std::size_t... I>
[[gnu::always_inline]] inline void apply(__m512i* r, std::index_sequence<I...>) {
  if constexpr (kBits == 64)
    (cx(r[Net::net[I].lo], r[Net::net[I].hi]), ...);
  else
    (cx32(r[Net::net[I].lo], r[Net::net[I].hi]), ...);
}
template <class Net, int kBits = 64>
[[gnu::always_inline]] inline void apply(__m512i* r) {
  apply<Net, kBits>(r, std::make_index_sequence<Net::net.size()>{});
}

// Runs of P -> runs of 2P over the p2 keys k.
template <int P>
void merge_level(__m512i* k, int64_t p2, Prefetch& pf) {
  constexpr int kT = P / 8;
  for (int64_t b = 0; b < p2; b += 2 * P)
    for (int r = 0; r < 8; ++r) {
      __m512i w[2 * kT];
      for (int t = 0; t < kT; ++t) {
        w[t] = k[b + r + 16 * t];
        w[kT + t] = k[b + 15 - r + 16 * t];
      }
      apply<MergeWindow<P>>(w);
      pf.step();
      for (int t = 0; t < kT; ++t) {
        k[b + r + 16 * t] = w[t];
        k[b + 15 - r + 16 * t] = w[kT + t];
      }
    }
  for (int64_t g0 = 0; g0 < p2; g0 += 16) {
    __m512i w[16];
    for (int t = 0; t < 16; ++t) w[t] = k[g0 + t];
    apply<Clean16>(w);
    pf.step();
    for (int t = 0; t < 16; ++t) k[g0 + t] = w[t];
  }
}

}  // namespace wide

template <bool kBackward>
void network_wide_avx512(const float* u, const float* d_a, float* d_u, float* a, int64_t rows,
                         int64_t n) {
  const int64_t p2 = wide::padded(n);
  alignas(64) __m512i key[2][128];
  alignas(64) vf s[128], x[128], g[128];
  alignas(64) vi slot[128];
  alignas(64) float y[kLanes * 128];
  const __m512i ones = _mm512_set1_epi32(-1);
  const __m512 eps = _mm512_set1_ps(kEps), ome = _mm512_set1_ps(kOneMinusEps);
  const __m512i fifteen = _mm512_set1_epi32(15);
  const int64_t full = rows / kLanes * kLanes;
  for (int64_t m0 = 0; m0 < full; m0 += kLanes) {
    to_lanes(u + m0 * n, kLanes, n, s);
    if (!packable(reinterpret_cast<const __m512*>(s), n)) {
      network_blocks_at<kBackward>(u, d_a, d_u, a, m0, kLanes, n);
      continue;
    }
    const int64_t whole = n / 16 * 16;
    for (int64_t g0 = 0; g0 < whole; g0 += 16) {
      // A whole group of 16 slots: 32-bit keys bits(û) << 4 | (slot − g0), exact
      // for u in [0, 2) (the N = 16 register kernel's), sixteen memories to a
      // register (min and max of 32-bit lanes issue twice as often as those of
      // 64-bit lanes on Zen 4, at twice the lanes), then widened to the 64-bit keys.
      __m512i r[16];
      for (int t = 0; t < 16; ++t) {
        const __m512 h = _mm512_add_ps(eps, _mm512_mul_ps(ome, _mm512_load_ps(&s[g0 + t])));
        r[t] = pack_key(h, t);
      }
      wide::apply<wide::Sort16, 32>(r);
      for (int t = 0; t < 16; ++t) {
        const __m512i bits = _mm512_castps_si512(unpack_key(r[t]));
        const __m512i sl = _mm512_add_epi32(_mm512_and_si512(r[t], fifteen),
                                            _mm512_set1_epi32(static_cast<int32_t>(g0)));
        key[0][g0 + t] = _mm512_unpacklo_epi32(sl, bits);
        key[1][g0 + t] = _mm512_unpackhi_epi32(sl, bits);
      }
    }
    for (int64_t g0 = whole; g0 < p2; g0 += 16) {  // the partial group (64-bit keys), padding
      for (int64_t j = g0; j < std::min(n, g0 + 16); ++j)
        _mm512_store_ps(&s[j], _mm512_add_ps(eps, _mm512_mul_ps(ome, _mm512_load_ps(&s[j]))));
      for (int q = 0; q < 2; ++q) {  // memories 0, 1, 4, 5, ... (q = 0) and 2, 3, 6, 7, ...
        __m512i r[16];
        for (int t = 0; t < 16; ++t) {
          const int64_t j = g0 + t;
          if (j >= n) {
            r[t] = ones;
            continue;
          }
          const __m512i bits = _mm512_castps_si512(_mm512_load_ps(&s[j]));
          const __m512i sl = _mm512_set1_epi32(static_cast<int32_t>(j));
          r[t] = q == 0 ? _mm512_unpacklo_epi32(sl, bits) : _mm512_unpackhi_epi32(sl, bits);
        }
        if (g0 < n) wide::apply<wide::Sort16>(r);
        for (int t = 0; t < 16; ++t) key[q][g0 + t] = r[t];
      }
    }
    Prefetch pf;
    if (m0 + 2 * kLanes <= full) {  // two lines a merge window
      pf.next_block(u, d_a, d_u, a, m0, kLanes, n);
      pf.per = 2;
    }
    for (int q = 0; q < 2; ++q)
      for (int64_t p = 16; p < p2; p *= 2) {
        if (p == 16) wide::merge_level<16>(key[q], p2, pf);
        if (p == 32) wide::merge_level<32>(key[q], p2, pf);
        if (p == 64) wide::merge_level<64>(key[q], p2, pf);
      }
    for (int64_t j = 0; j < n; ++j) {  // back to memory order: high halves û, low halves slots
      const __m512 k0 = _mm512_castsi512_ps(key[0][j]), k1 = _mm512_castsi512_ps(key[1][j]);
      _mm512_store_ps(&s[j], _mm512_shuffle_ps(k0, k1, _MM_SHUFFLE(3, 1, 3, 1)));
      _mm512_store_si512(&slot[j],
                         _mm512_castps_si512(_mm512_shuffle_ps(k0, k1, _MM_SHUFFLE(2, 0, 2, 0))));
    }
    network_finish<kBackward>(s, slot, x, g, y, m0, kLanes, n, d_a, d_u, a);
  }
  if (full < rows) network_blocks_at<kBackward>(u, d_a, d_u, a, full, rows - full, n);
}
#endif

template <bool kBackward>
void network(const float* u, const float* d_a, float* d_u, float* a, int64_t rows, int64_t n) {
#if defined(__AVX512F__)
  if (n == 4) return network_regs_avx512<4, kBackward>(u, d_a, d_u, a, rows);
  if (n == 16) return network_regs_avx512<16, kBackward>(u, d_a, d_u, a, rows);
  if (n > 16 && n <= 128) return network_wide_avx512<kBackward>(u, d_a, d_u, a, rows, n);
#endif
  network_blocks<kBackward>(u, d_a, d_u, a, rows, n);
}

// Memories are independent: chunks of whole memories, f(first, count), the
// chunk size from (rows, N, variant) alone and a multiple of kLanes (the block
// form's lane groups; each lane is computed on its own anyway), so the bytes
// do not depend on the thread count.
template <class F>
void for_memories(int64_t rows, int64_t n, AllocationVariant v, F&& f) {
  const double nd = static_cast<double>(n);
  const double cost = v == AllocationVariant::sorted ? 8.0 * nd * std::log2(nd + 1.0) + 8.0 * nd
                                                     : 2.0 * nd * nd + 8.0 * nd;
  int64_t grain = rows;
  if (rows > 0 && split_work(rows * cost, kSplitWork)) {
    grain = grain_for(rows, cost, kSplitWork / 2);
    grain = std::min(rows, (grain + kLanes - 1) / kLanes * kLanes);
  }
  if (rows <= 0) return;
  parallel_for_chunks(rows, grain, [&](int64_t first, int64_t last) { f(first, last - first); });
}

// free_lists, when given, is int32 of usage's shape.
void check_free_lists(const Tensor* free_lists, const Tensor& usage, const char* op) {
  if (free_lists == nullptr) return;
  check_defined(*free_lists, op);
  check_dtype(*free_lists, DType::i32, op);
  check_same_shape(*free_lists, usage, op);
}

}  // namespace

std::span<const AllocationVariant> allocation_variants() {
  return kVariants;
}

std::string_view to_string(AllocationVariant v) {
  return name_of(kVariantNames, v);
}

AllocationVariant parse_allocation_variant(std::string_view name) {
  if (const AllocationVariant* v = value_of(kVariantNames, name)) return *v;
  throw std::invalid_argument("unknown allocation variant '" + std::string(name) +
                              "' (known: " + names_of(kVariantNames) + ")");
}

std::vector<std::string> allocation_variant_names() {
  return names_list(kVariantNames);
}

bool allocation_forward_into(Tensor& out, const Tensor& usage, AllocationVariant variant,
                             Tensor* free_lists) {
  check_usage(usage, "allocation_forward");
  check_same_shape(out, usage, "allocation_forward: out");
  check_free_lists(free_lists, usage, "allocation_forward: free_lists");
  MARE_CUDA_DISPATCH("allocation_forward", allocation_forward_into(out, usage, variant, free_lists),
                     &out, &usage, free_lists);
  const int64_t rows = usage.dim(0), n = usage.dim(1);
  const float* u = usage.f32();
  float* a = out.f32();
  // `sorted` keeps its lists; `rank` and `network` order by SIMD kernels that
  // never write one (keeping it would cost them a scatter), the masks have none.
  int32_t* lists = allocation_keeps_free_list(variant, Device::cpu) && free_lists != nullptr
                       ? free_lists->i32()
                       : nullptr;
  for_memories(rows, n, variant, [&](int64_t first, int64_t count) {
    FlushSubnormals flush;  // per chunk: MXCSR is per thread
    const float* uc = u + first * n;
    float* ac = a + first * n;
    switch (variant) {
      case AllocationVariant::sorted:
        return ordered_forward(uc, ac, count, n, lists == nullptr ? nullptr : lists + first * n);
      case AllocationVariant::rank:
        return rank_blocks<false>(uc, nullptr, nullptr, ac, count, n);
      case AllocationVariant::parallel:
        return mask_forward<false>(uc, ac, count, n);
      case AllocationVariant::parallel_eps:
        return mask_forward<true>(uc, ac, count, n);
      case AllocationVariant::parallel_block:
        return block_forward(uc, ac, count, n);
      case AllocationVariant::network:
        return network<false>(uc, nullptr, nullptr, ac, count, n);
    }
  });
  return lists != nullptr;
}

Tensor allocation_forward(const Tensor& usage, AllocationVariant variant) {
  check_usage(usage, "allocation_forward");
  Tensor out = Tensor::empty(usage.shape(), usage.device());
  allocation_forward_into(out, usage, variant);
  return out;
}

void allocation_backward(Tensor& d_usage, const Tensor& d_out, const Tensor& usage,
                         AllocationVariant variant, const Tensor* free_lists) {
  if (!d_usage.defined()) return;
  check_usage(usage, "allocation_backward");
  check_same_shape(d_out, usage, "allocation_backward: d_out");
  check_same_shape(d_usage, usage, "allocation_backward: d_usage");
  check_free_lists(free_lists, usage, "allocation_backward: free_lists");
  MARE_CUDA_DISPATCH("allocation_backward",
                     allocation_backward(d_usage, d_out, usage, variant, free_lists), &d_usage,
                     &d_out, &usage, free_lists);
  const int64_t rows = usage.dim(0), n = usage.dim(1);
  const float *u = usage.f32(), *g = d_out.f32();
  float* du = d_usage.f32();
  // Kept lists: the sweep of `sorted` over them, for every variant with a list
  // (`rank` and `network` are bit-identical to `sorted`).
  const int32_t* lists =
      allocation_has_free_list(variant) && free_lists != nullptr ? free_lists->i32() : nullptr;
  for_memories(rows, n, variant, [&](int64_t first, int64_t count) {
    FlushSubnormals flush;
    const float *uc = u + first * n, *gc = g + first * n;
    float* duc = du + first * n;
    if (lists != nullptr) return ordered_backward(uc, gc, duc, count, n, lists + first * n);
    switch (variant) {
      case AllocationVariant::sorted:
        return ordered_backward(uc, gc, duc, count, n);
      case AllocationVariant::rank:
        return rank_blocks<true>(uc, gc, duc, nullptr, count, n);
      case AllocationVariant::parallel:
        return mask_backward<false>(uc, gc, duc, count, n);
      case AllocationVariant::parallel_eps:
        return mask_backward<true>(uc, gc, duc, count, n);
      case AllocationVariant::parallel_block:
        return block_backward(uc, gc, duc, count, n);
      case AllocationVariant::network:
        return network<true>(uc, gc, duc, nullptr, count, n);
    }
  });
}

int64_t network_comparators(int64_t n) {
  int64_t c = 0;
  batcher_network(n, [&](int64_t, int64_t) { ++c; });
  return c;
}

NetworkWideCounts network_wide_comparators(int64_t n) {
  NetworkWideCounts c;
#if defined(__AVX512F__)
  if (n <= 16 || n > 128) return c;
  const int64_t p2 = wide::padded(n);
  const int64_t sort16 = static_cast<int64_t>(wide::Sort16::net.size());
  c.sort16_32 = n / 16 * sort16;
  c.sort16_64 = n % 16 ? sort16 : 0;
  c.merge64 = wide::merge_comparators<16>(p2) + (p2 >= 64 ? wide::merge_comparators<32>(p2) : 0) +
              (p2 >= 128 ? wide::merge_comparators<64>(p2) : 0);
#else
  (void)n;
#endif
  return c;
}

void allocation_order(const float* usage, int64_t n, AllocationVariant variant, int32_t* order) {
  std::vector<float> key(n);
  if (variant == AllocationVariant::parallel_eps) {
    // Ascending ε-offset key; the mask of A.1 ranks equal keys equally, the
    // sort breaks such (vanishingly rare) exact key ties by index.
    for (int64_t i = 0; i < n; ++i) key[i] = eps_key(i, usage[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) key[i] = hat(usage[i]);
  }
  sort_order(key.data(), n, order);
}

}  // namespace mare
