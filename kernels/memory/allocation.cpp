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
// to sorted; tests/kernels/test_allocation.cpp checks both).
#pragma GCC optimize("fp-contract=off")

#include "kernels/memory/allocation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

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

constexpr std::array kVariants = {AllocationVariant::sorted, AllocationVariant::parallel,
                                  AllocationVariant::parallel_eps, AllocationVariant::rank,
                                  AllocationVariant::parallel_block};

void check_usage(const Tensor& usage, const char* op) {
  check_defined(usage, op);
  check_rank(usage, 2, op);
  check_dtype(usage, DType::f32, op);
}

// Slot `k` precedes slot `n` in the free list (g[n][k] = 1): ascending û,
// ties to the lower index.
inline bool precedes(float uk, int64_t k, float un, int64_t n) {
  return uk < un || (uk == un && k < n);
}

// ------------------------------------------------------------- sorted / rank
// Free list of one memory by a real sort of indices. uh: [N] û values.
void sort_order(const float* uh, int64_t n, int32_t* order) {
  std::iota(order, order + n, 0);
  std::sort(order, order + n, [uh](int32_t a, int32_t b) { return precedes(uh[a], a, uh[b], b); });
}

// Free list of one memory by ranks: rank[n] = #{k : g[n][k]} (branch-free
// counting, the comparisons of the mask formulation), order[rank[n]] = n.
void rank_order(const float* uh, int64_t n, int32_t* order) {
  for (int64_t i = 0; i < n; ++i) {
    const float ui = uh[i];
    int32_t r = 0;
    for (int64_t k = 0; k < i; ++k) r += uh[k] <= ui;
    for (int64_t k = i + 1; k < n; ++k) r += uh[k] < ui;
    order[r] = static_cast<int32_t>(i);
  }
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

template <bool kByRank>
void ordered_forward(const float* u, float* a, int64_t rows, int64_t n) {
  std::vector<float> uh(n);
  std::vector<int32_t> order(n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < n; ++i) uh[i] = hat(u[m * n + i]);
    if constexpr (kByRank)
      rank_order(uh.data(), n, order.data());
    else
      sort_order(uh.data(), n, order.data());
    ordered_product(uh.data(), order.data(), n, a + m * n);
  }
}

template <bool kByRank>
void ordered_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n) {
  std::vector<float> uh(n), prefix(n);
  std::vector<int32_t> order(n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < n; ++i) uh[i] = hat(u[m * n + i]);
    if constexpr (kByRank)
      rank_order(uh.data(), n, order.data());
    else
      sort_order(uh.data(), n, order.data());
    ordered_product_backward(uh.data(), order.data(), n, d_a + m * n, d_u + m * n, prefix.data());
  }
}

// ------------------------------------------------------------- parallel
// The mask formulation materialised per memory, transposed so that the loops
// run over rows i (contiguous, no dependency between rows):
//   phi_t[k·N + i] = φ[i][k] = 1 − g[i][k] + g[i][k]·vals[k]      (eq. 3-20..3-22)
// vals: what enters the product (û for parallel, raw u for parallel-eps);
// cmp: what the mask compares (û, or the ε-offset keys of A.1).
template <bool kEpsKernel>
void fill_phi(const float* vals, const float* cmp, int64_t n, float* phi_t, float* g_t) {
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

// a[i] = (1 − vals[i]) · Π_k φ[i][k]   (eq. 3-23). The N products advance
// together over k; each still takes its factors in ascending k.
// phi_t, g_t: [N, N] scratch; p: [N] scratch.
template <bool kEpsKernel>
void mask_forward_row(const float* vals, const float* cmp, int64_t n, float* a, float* phi_t,
                      float* g_t, float* p) {
  fill_phi<kEpsKernel>(vals, cmp, n, phi_t, g_t);
  for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) p[i] *= phi_t[k * n + i];
  for (int64_t i = 0; i < n; ++i) a[i] = (1.0f - vals[i]) * p[i];
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
  fill_phi<kEpsKernel>(vals, cmp, n, phi_t, g_t);
  for (int64_t i = 0; i < n; ++i) pre_t[i] = 1.0f;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) pre_t[(k + 1) * n + i] = pre_t[k * n + i] * phi_t[k * n + i];
  for (int64_t i = 0; i < n; ++i) {
    c[i] = d_a[i] * (1.0f - vals[i]);
    suffix[i] = 1.0f;
  }
  for (int64_t k = n - 1; k >= 0; --k)
    for (int64_t i = 0; i < n; ++i) {
      term_t[k * n + i] = g_t[k * n + i] * (c[i] * (pre_t[k * n + i] * suffix[i]));
      suffix[i] *= phi_t[k * n + i];
    }
  for (int64_t i = 0; i < n; ++i) {
    d_vals[i] -= d_a[i] * pre_t[n * n + i];
    for (int64_t k = n - 1; k >= 0; --k) d_vals[k] += term_t[k * n + i];
  }
}

template <bool kEpsKernel>
void mask_forward(const float* u, float* a, int64_t rows, int64_t n) {
  std::vector<float> vals(n), cmp(n), phi_t(n * n), g_t(n * n), p(n);
  for (int64_t m = 0; m < rows; ++m) {
    const float* um = u + m * n;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kEpsKernel) {
        vals[i] = um[i];
        cmp[i] = eps_key(i, um[i]);
      } else {
        vals[i] = cmp[i] = hat(um[i]);
      }
    }
    mask_forward_row<kEpsKernel>(vals.data(), cmp.data(), n, a + m * n, phi_t.data(), g_t.data(),
                                 p.data());
  }
}

template <bool kEpsKernel>
void mask_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n) {
  std::vector<float> vals(n), cmp(n), d_vals(n), scratch(4 * n * n + 3 * n);
  for (int64_t m = 0; m < rows; ++m) {
    const float* um = u + m * n;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kEpsKernel) {
        vals[i] = um[i];
        cmp[i] = eps_key(i, um[i]);
      } else {
        vals[i] = cmp[i] = hat(um[i]);
      }
    }
    std::fill(d_vals.begin(), d_vals.end(), 0.0f);
    mask_backward_row<kEpsKernel>(vals.data(), cmp.data(), n, d_a + m * n, d_vals.data(),
                                  scratch.data());
    // parallel-eps differentiates the raw usage; parallel goes through û.
    const float chain = kEpsKernel ? 1.0f : kOneMinusEps;
    for (int64_t i = 0; i < n; ++i) d_u[m * n + i] += chain * d_vals[i];
  }
}

// ------------------------------------------------------------- parallel-block
// `parallel` on kLanes memories at once, slot-major: uh[k * kLanes + l] is û of
// slot k of memory m0 + l. Every inner loop runs over the lanes, so the
// compiler turns it into SIMD compares, selects and products. The products
// multiply the same factors in the same order as mask_forward_row (factors of
// exactly 1 are skipped, which does not change a float product), hence the
// results are bit-identical to `parallel`. Padding lanes of the last block hold
// û = ε and are never written back.
constexpr int64_t kLanes = 16;

// uh: [N, kLanes] slot-major block; lanes valid rows starting at m0.
void load_block(const float* u, int64_t m0, int64_t lanes, int64_t n, float* uh) {
  for (int64_t l = 0; l < kLanes; ++l) {
    const float* um = u + (m0 + std::min(l, lanes - 1)) * n;
    for (int64_t k = 0; k < n; ++k) uh[k * kLanes + l] = l < lanes ? hat(um[k]) : kEps;
  }
}

// p[i][l] = Π_k φ[i][k] for every slot i of a block, k outermost: each
// product still takes its factors in ascending k. uh, p: [N, kLanes].
void block_products(const float* __restrict uh, int64_t n, float* __restrict p) {
  for (int64_t i = 0; i < n * kLanes; ++i) p[i] = 1.0f;
  for (int64_t k = 0; k < n; ++k) {
    const float* __restrict uk = uh + k * kLanes;
    for (int64_t i = 0; i < k; ++i)  // k after i: strictly smaller usage precedes
      for (int64_t l = 0; l < kLanes; ++l)
        p[i * kLanes + l] *= uk[l] < uh[i * kLanes + l] ? uk[l] : 1.0f;
    for (int64_t i = k + 1; i < n; ++i)  // k before i: ties precede too
      for (int64_t l = 0; l < kLanes; ++l)
        p[i * kLanes + l] *= uk[l] <= uh[i * kLanes + l] ? uk[l] : 1.0f;
  }
}

#if defined(__AVX512F__)
// Small memories, N in {4, 8, 16}: 16 / N whole memories per 512-bit register,
// one float lane per slot, so no transposition is needed. Partner j of slot i
// is k_j(i) = j + [j >= i] (the other slots in ascending order, as in the
// scalar product); `before` marks the lanes where k_j(i) < i, whose tie rule
// is ≤ instead of <. prod starts at 1 and takes the factors in ascending k, so
// the rounding is that of mask_forward_row.
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
  auto kernel = [&](__m512 v) {
    const __m512 h = _mm512_add_ps(eps, _mm512_mul_ps(one_minus_eps, v));  // û
    // û is positive and finite, so p ≤ û  ⇔  p < next float above û: one
    // comparison per partner serves both tie rules.
    const __m512 h_up =
        _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(h), _mm512_set1_epi32(1)));
    __m512 prod = one;
    for (int j = 0; j < N - 1; ++j) {
      const __m512 p = _mm512_permutexvar_ps(partner[j], h);
      const __mmask16 g =
          _mm512_cmp_ps_mask(p, _mm512_mask_blend_ps(before[j], h, h_up), _CMP_LT_OQ);
      prod = _mm512_mul_ps(prod, _mm512_mask_blend_ps(g, one, p));
    }
    return _mm512_mul_ps(_mm512_sub_ps(one, h), prod);
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
  if (n == 4) return block_forward_avx512<4>(u, a, rows);
  if (n == 8) return block_forward_avx512<8>(u, a, rows);
  if (n == 16) return block_forward_avx512<16>(u, a, rows);
#endif
  std::vector<float> uh(n * kLanes), prod(n * kLanes), out(n * kLanes);
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    load_block(u, m0, lanes, n, uh.data());
    block_products(uh.data(), n, prod.data());
    for (int64_t i = 0; i < n * kLanes; ++i) out[i] = (1.0f - uh[i]) * prod[i];
    for (int64_t l = 0; l < lanes; ++l)
      for (int64_t k = 0; k < n; ++k) a[(m0 + l) * n + k] = out[k * kLanes + l];
  }
}

#if defined(__AVX512F__)
// Backward for N in {4, 8} in the register layout of block_forward_avx512:
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
  int64_t m = 0;
  for (; m + kPerRegister <= rows; m += kPerRegister)
    _mm512_storeu_ps(d_u + m * N, kernel(_mm512_loadu_ps(u + m * N), _mm512_loadu_ps(d_a + m * N),
                                         _mm512_loadu_ps(d_u + m * N)));
  if (m < rows) {
    const __mmask16 live = static_cast<__mmask16>((1u << ((rows - m) * N)) - 1u);
    _mm512_mask_storeu_ps(
        d_u + m * N, live,
        kernel(_mm512_maskz_loadu_ps(live, u + m * N), _mm512_maskz_loadu_ps(live, d_a + m * N),
               _mm512_maskz_loadu_ps(live, d_u + m * N)));
  }
}
#endif

// Backward of the block form: the mask-form derivative of mask_backward_row,
// evaluated on all lanes at once with prefix/suffix products per lane.
void block_backward(const float* u, const float* d_a, float* d_u, int64_t rows, int64_t n) {
#if defined(__AVX512F__)
  if (n == 4) return block_backward_avx512<4>(u, d_a, d_u, rows);
  if (n == 8) return block_backward_avx512<8>(u, d_a, d_u, rows);
#endif
  std::vector<float> uh(n * kLanes), da(n * kLanes), dh(n * kLanes), phi(n * kLanes),
      prefix((n + 1) * kLanes);
  alignas(64) float c[kLanes], suffix[kLanes];
  for (int64_t m0 = 0; m0 < rows; m0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - m0);
    load_block(u, m0, lanes, n, uh.data());
    for (int64_t l = 0; l < kLanes; ++l)
      for (int64_t k = 0; k < n; ++k) da[k * kLanes + l] = l < lanes ? d_a[(m0 + l) * n + k] : 0.0f;
    std::fill(dh.begin(), dh.end(), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float* ui = uh.data() + i * kLanes;
      for (int64_t l = 0; l < kLanes; ++l) prefix[l] = 1.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float* uk = uh.data() + k * kLanes;
        float* pk = prefix.data() + k * kLanes;
        float* fk = phi.data() + k * kLanes;
        for (int64_t l = 0; l < kLanes; ++l) {
          const bool g = k < i ? uk[l] <= ui[l] : (k > i && uk[l] < ui[l]);
          fk[l] = g ? uk[l] : 1.0f;
          pk[kLanes + l] = pk[l] * fk[l];
        }
      }
      for (int64_t l = 0; l < kLanes; ++l) {
        dh[i * kLanes + l] -= da[i * kLanes + l] * prefix[n * kLanes + l];
        c[l] = da[i * kLanes + l] * (1.0f - ui[l]);
        suffix[l] = 1.0f;
      }
      for (int64_t k = n - 1; k >= 0; --k) {
        const float* uk = uh.data() + k * kLanes;
        for (int64_t l = 0; l < kLanes; ++l) {
          const bool g = k < i ? uk[l] <= ui[l] : (k > i && uk[l] < ui[l]);
          const float term = c[l] * (prefix[k * kLanes + l] * suffix[l]);
          dh[k * kLanes + l] += g ? term : 0.0f;
          suffix[l] *= phi[k * kLanes + l];
        }
      }
    }
    for (int64_t l = 0; l < lanes; ++l)
      for (int64_t k = 0; k < n; ++k) d_u[(m0 + l) * n + k] += kOneMinusEps * dh[k * kLanes + l];
  }
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

}  // namespace

std::span<const AllocationVariant> allocation_variants() {
  return kVariants;
}

std::string_view to_string(AllocationVariant v) {
  switch (v) {
    case AllocationVariant::sorted:
      return "sorted";
    case AllocationVariant::parallel:
      return "parallel";
    case AllocationVariant::parallel_eps:
      return "parallel-eps";
    case AllocationVariant::rank:
      return "rank";
    case AllocationVariant::parallel_block:
      return "parallel-block";
  }
  return "?";
}

AllocationVariant parse_allocation_variant(std::string_view name) {
  for (AllocationVariant v : kVariants)
    if (to_string(v) == name) return v;
  std::string known;
  for (AllocationVariant v : kVariants)
    known += std::string(known.empty() ? "" : ", ") + std::string(to_string(v));
  throw std::invalid_argument("unknown allocation variant '" + std::string(name) +
                              "' (known: " + known + ")");
}

void allocation_forward_into(Tensor& out, const Tensor& usage, AllocationVariant variant) {
  check_usage(usage, "allocation_forward");
  check_same_shape(out, usage, "allocation_forward: out");
  MARE_CUDA_DISPATCH("allocation_forward", allocation_forward_into(out, usage, variant), &out,
                     &usage);
  const int64_t rows = usage.dim(0), n = usage.dim(1);
  const float* u = usage.f32();
  float* a = out.f32();
  for_memories(rows, n, variant, [&](int64_t first, int64_t count) {
    FlushSubnormals flush;  // per chunk: MXCSR is per thread
    const float* uc = u + first * n;
    float* ac = a + first * n;
    switch (variant) {
      case AllocationVariant::sorted:
        return ordered_forward<false>(uc, ac, count, n);
      case AllocationVariant::rank:
        return ordered_forward<true>(uc, ac, count, n);
      case AllocationVariant::parallel:
        return mask_forward<false>(uc, ac, count, n);
      case AllocationVariant::parallel_eps:
        return mask_forward<true>(uc, ac, count, n);
      case AllocationVariant::parallel_block:
        return block_forward(uc, ac, count, n);
    }
  });
}

Tensor allocation_forward(const Tensor& usage, AllocationVariant variant) {
  check_usage(usage, "allocation_forward");
  Tensor out = Tensor::empty(usage.shape(), usage.device());
  allocation_forward_into(out, usage, variant);
  return out;
}

void allocation_backward(Tensor& d_usage, const Tensor& d_out, const Tensor& usage,
                         AllocationVariant variant) {
  if (!d_usage.defined()) return;
  check_usage(usage, "allocation_backward");
  check_same_shape(d_out, usage, "allocation_backward: d_out");
  check_same_shape(d_usage, usage, "allocation_backward: d_usage");
  MARE_CUDA_DISPATCH("allocation_backward", allocation_backward(d_usage, d_out, usage, variant),
                     &d_usage, &d_out, &usage);
  const int64_t rows = usage.dim(0), n = usage.dim(1);
  const float *u = usage.f32(), *g = d_out.f32();
  float* du = d_usage.f32();
  for_memories(rows, n, variant, [&](int64_t first, int64_t count) {
    FlushSubnormals flush;
    const float *uc = u + first * n, *gc = g + first * n;
    float* duc = du + first * n;
    switch (variant) {
      case AllocationVariant::sorted:
        return ordered_backward<false>(uc, gc, duc, count, n);
      case AllocationVariant::rank:
        return ordered_backward<true>(uc, gc, duc, count, n);
      case AllocationVariant::parallel:
        return mask_backward<false>(uc, gc, duc, count, n);
      case AllocationVariant::parallel_eps:
        return mask_backward<true>(uc, gc, duc, count, n);
      case AllocationVariant::parallel_block:
        return block_backward(uc, gc, duc, count, n);
    }
  });
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
