// Comparisons shared by the allocation tests on the CPU (test_allocation.cpp)
// and on the GPU (test_allocation_cuda.cpp); tensors may be on either device.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kernels/memory/allocation.h"
#include "kernels/random.h"
#include "kernels/tensor.h"
#include "tests/kernels/op_table.h"

namespace mare::test {

// |got − ref| ≤ atol + rtol·|ref| everywhere, and finite.
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& ref, double atol,
                                        double rtol, const std::string& what) {
  std::vector<float> g = got.to_vector(), r = ref.to_vector();
  if (g.size() != r.size())
    return ::testing::AssertionFailure()
           << what << ": sizes differ (" << g.size() << " vs " << r.size() << " elements)";
  const int64_t n = got.dim(-1);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i]))
      return ::testing::AssertionFailure() << what << ": element " << i << " is " << g[i];
    const double err = std::fabs(double(g[i]) - r[i]), bound = atol + rtol * std::fabs(r[i]);
    if (!(err <= bound))
      return ::testing::AssertionFailure()
             << what << ": memory " << i / n << " slot " << i % n << ": " << g[i] << " vs " << r[i]
             << " (error " << err << " > " << bound << ")";
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult identical(const Tensor& a, const Tensor& b,
                                            const std::string& what) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  if (x.size() != y.size())
    return ::testing::AssertionFailure()
           << what << ": sizes differ (" << x.size() << " vs " << y.size() << " elements)";
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i]))
      return ::testing::AssertionFailure()
             << what << ": element " << i << ": " << x[i] << " != " << y[i];
  return ::testing::AssertionSuccess();
}

// The allocation of one memory in double precision, written straight from SPEC §3
// step 4 and sharing nothing with kernels/memory (no hat(), no precedes(), no
// cumulative-product code): the independent reference for the tricky rows (exact
// ties, near-ties, zeros, ones) of every variant on both devices.
//   DNC (every variant but parallel-eps): s = û = ε + (1 − ε)·u, the free list φ sorts
//   the slots by ascending û with ties to the lower index (a stable sort of 0..N−1),
//   a[φ_j] = (1 − s_j)·Π_{k<j} s_k with s_j = û[φ_j], and ∂û/∂u = 1 − ε.
//   parallel-eps (appendix A.1): φ sorts by the key (1 − ε')·u[n] + n·ε', s = u (raw),
//   and ∂s/∂u = 1.
// Backward with the order held fixed, term by term from the SPEC's partials:
//   ∂a_{φ_j}/∂s_j = −Π_{k<j} s_k,  ∂a_{φ_j}/∂s_k = (1 − s_j)·Π_{m<j, m≠k} s_m (k < j).
// O(N³) per memory: slow, and plain on purpose. The order comes from û in double, i.e.
// from u itself; the kernels order by û rounded to float, so a near-tie that the float
// rounding merged would be ordered by index there and by value here, and the check would
// report it. The tricky rows stay apart in float (0.5 and 0.5 + 2⁻²⁴ give û 0.50000048
// and 0.50000054; 0.1 + k·1e-8 and k·1e-8 give distinct û for k = 0..4).
struct ReferenceAllocation {
  std::vector<double> a;    // [N]
  std::vector<double> d_u;  // [N]: Σ_j g[φ_j]·∂a_{φ_j}/∂u
};

inline ReferenceAllocation reference_allocation(const std::vector<double>& u,
                                                const std::vector<double>& g, bool parallel_eps) {
  const double eps = 1e-6;  // SPEC §3: ε = ε' = 1e-6
  const size_t n = u.size();
  std::vector<double> s(n), key(n);
  for (size_t i = 0; i < n; ++i) {
    s[i] = parallel_eps ? u[i] : eps + (1 - eps) * u[i];
    key[i] = parallel_eps ? (1 - eps) * u[i] + static_cast<double>(i) * eps : s[i];
  }
  std::vector<size_t> phi(n);
  std::iota(phi.begin(), phi.end(), size_t{0});
  std::stable_sort(phi.begin(), phi.end(), [&](size_t x, size_t y) { return key[x] < key[y]; });
  ReferenceAllocation r{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (size_t j = 0; j < n; ++j) {
    double prod = 1;
    for (size_t k = 0; k < j; ++k) prod *= s[phi[k]];
    r.a[phi[j]] = (1 - s[phi[j]]) * prod;
  }
  const double ds_du = parallel_eps ? 1.0 : 1 - eps;
  for (size_t j = 0; j < n; ++j) {
    const double gj = g[phi[j]];
    double own = -1;  // ∂a_{φ_j}/∂s_j
    for (size_t k = 0; k < j; ++k) own *= s[phi[k]];
    r.d_u[phi[j]] += gj * own * ds_du;
    for (size_t k = 0; k < j; ++k) {
      double partial = 1 - s[phi[j]];
      for (size_t m = 0; m < j; ++m)
        if (m != k) partial *= s[phi[m]];
      r.d_u[phi[k]] += gj * partial * ds_du;
    }
  }
  return r;
}

// The reference on the rows `rows` of usage [M, N] with cotangent g [M, N] (tensors on
// either device): {allocation, d_usage}, each [rows.size(), N] on the CPU.
inline std::pair<Tensor, Tensor> reference_allocation_rows(const Tensor& usage, const Tensor& g,
                                                           const std::vector<int64_t>& rows,
                                                           bool parallel_eps) {
  const int64_t n = usage.dim(1);
  const std::vector<float> u = usage.to_vector(), gv = g.to_vector();
  std::vector<float> a, d;
  for (int64_t row : rows) {
    const std::vector<double> ur(u.begin() + row * n, u.begin() + (row + 1) * n);
    const std::vector<double> gr(gv.begin() + row * n, gv.begin() + (row + 1) * n);
    const ReferenceAllocation ref = reference_allocation(ur, gr, parallel_eps);
    for (int64_t i = 0; i < n; ++i) {
      a.push_back(static_cast<float>(ref.a[i]));
      d.push_back(static_cast<float>(ref.d_u[i]));
    }
  }
  const Shape shape{static_cast<int64_t>(rows.size()), n};
  return {Tensor::from_vector(a, shape), Tensor::from_vector(d, shape)};
}

// The rows `rows` of t [M, N] (either device) as a new [rows.size(), N] CPU tensor.
inline Tensor select_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  const int64_t n = t.dim(1);
  const std::vector<float> v = t.to_vector();
  std::vector<float> out;
  for (int64_t row : rows) out.insert(out.end(), v.begin() + row * n, v.begin() + (row + 1) * n);
  return Tensor::from_vector(out, {static_cast<int64_t>(rows.size()), n});
}

// Usages outside [0, 1] and NaNs (a diverging model produces them) for N
// slots: 37 rows, two blocks of 16 memories and a tail. Rows 0–7: one or two
// NaNs (four signs and payloads) among usages in [0, 1]; 9–13: ±∞, negative
// values, a tie below 0, huge values; 14: every slot NaN; 15: NaNs and ties;
// rows 16–31 (the second block) stay in [0, 1]; the tail has a NaN and −∞.
inline float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline Tensor nonfinite_usages(int64_t n, uint64_t seed) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(), float_from_bits(0xFFC00000u),
                        float_from_bits(0x7F800001u), float_from_bits(0xFFFFFFFFu)};
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t rows = 2 * 16 + 5;
  Tensor u = random_tensor({rows, n}, seed, 0.0f, 1.0f);
  float* x = u.f32();
  PhiloxStream rng(seed, 3);
  auto at = [&](int64_t row) { return x + row * n + rng.below(static_cast<uint32_t>(n)); };
  for (int64_t r = 0; r < 8; ++r) *at(r) = nans[r % 4];
  for (int64_t r = 0; r < 4; ++r) *at(r) = nans[(r + 1) % 4];
  *at(9) = inf;
  *at(10) = -inf;
  *at(11) = -0.25f;
  *at(11) = -3.0f;
  *at(12) = 1e30f;
  *at(13) = 2.5f;
  x[13 * n] = x[13 * n + n - 1] = -0.5f;  // a tie below 0
  for (int64_t i = 0; i < n; ++i) x[14 * n + i] = nans[i % 4];
  for (int64_t i = 0; i < n; ++i) x[15 * n + i] = i % 2 ? 0.5f : nans[0];
  *at(33) = nans[3];
  *at(35) = -inf;
  return u;
}

// Element by element equal, or both NaN (any payloads).
inline ::testing::AssertionResult same_or_both_nan(const Tensor& a, const Tensor& b,
                                                   const std::string& what) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  if (x.size() != y.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i]) && !(std::isnan(x[i]) && std::isnan(y[i])))
      return ::testing::AssertionFailure()
             << what << ": element " << i << ": " << x[i] << " vs " << y[i];
  return ::testing::AssertionSuccess();
}

// The free lists a forward keeps (allocation.h), for usages u and cotangent g on
// u's device: the forward that keeps them writes the same allocation bits as one
// that does not, and keeps them exactly when `keeps` says; kept lists are the
// free lists allocation_order gives for each memory; a backward given them writes
// the same bits as one that orders again, into a gradient that starts at 1 (NaNs
// as NaNs). A variant that keeps none is given `sorted`'s lists, which `rank` and
// `network` must read as their own and the mask variants must ignore.
inline ::testing::AssertionResult kept_free_lists_agree(const Tensor& u, const Tensor& g,
                                                        AllocationVariant v, bool keeps,
                                                        const std::string& what) {
  Tensor a_plain = allocation_forward(u, v);
  Tensor a = Tensor::empty(u.shape(), u.device());
  Tensor lists = Tensor::full(u.shape(), 0.0f, u.device());  // a wrong dtype first
  try {
    allocation_forward_into(a, u, v, &lists);
    return ::testing::AssertionFailure() << what << ": float free lists were accepted";
  } catch (const std::exception&) {
  }
  lists = Tensor::zeros(u.shape(), u.device(), DType::i32);
  const bool kept = allocation_forward_into(a, u, v, &lists);
  if (kept != keeps)
    return ::testing::AssertionFailure()
           << what << ": the forward " << (kept ? "kept" : "did not keep") << " its free lists";
  if (::testing::AssertionResult same = same_or_both_nan(a, a_plain, what + " forward"); !same)
    return same;
  if (!kept)
    allocation_forward_into(a, u, AllocationVariant::sorted, &lists);  // lists to ignore or read
  const std::vector<float> x = u.to_vector();
  const Tensor host_lists = lists.to(Device::cpu);
  const int32_t* got = host_lists.i32();
  const int64_t n = u.dim(1);
  std::vector<int32_t> order(n);
  for (int64_t m = 0; m < u.dim(0); ++m) {
    allocation_order(x.data() + m * n, n, AllocationVariant::sorted, order.data());
    for (int64_t j = 0; j < n; ++j)
      if (got[m * n + j] != order[j])
        return ::testing::AssertionFailure()
               << what << ": memory " << m << " position " << j << " of the kept list is slot "
               << got[m * n + j] << ", the free list's is " << order[j];
  }
  Tensor d_plain = Tensor::full(u.shape(), 1.0f, u.device());
  Tensor d = Tensor::full(u.shape(), 1.0f, u.device());
  allocation_backward(d_plain, g, u, v);
  allocation_backward(d, g, u, v, &lists);
  if (::testing::AssertionResult same =
          same_or_both_nan(d, d_plain, what + " backward given the kept lists");
      !same)
    return same;
  // Lists it reads or ignores: every memory's list reversed changes the gradient
  // of a variant with a list (on these rows) and no other.
  std::vector<int32_t> reversed(host_lists.i32(), host_lists.i32() + host_lists.numel());
  for (int64_t m = 0; m < u.dim(0); ++m)
    std::reverse(reversed.begin() + m * n, reversed.begin() + (m + 1) * n);
  const Tensor wrong = Tensor::from_indices(reversed, u.shape()).to(u.device());
  Tensor d_wrong = Tensor::full(u.shape(), 1.0f, u.device());
  allocation_backward(d_wrong, g, u, v, &wrong);
  const bool differs = !same_or_both_nan(d_wrong, d_plain, "");
  if (n > 1 && differs != allocation_has_free_list(v))
    return ::testing::AssertionFailure()
           << what << ": reversed lists " << (differs ? "changed" : "did not change")
           << " the backward";
  return ::testing::AssertionSuccess();
}

}  // namespace mare::test
