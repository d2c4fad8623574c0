// exp_shifted: the C library's expf, four lanes at a time where the CPU runs
// glibc's FMA build of it (kernels/ops/exp.h says why and when).
//
// One lane, as __expf_fma computes it (x a float, every step in double):
//   kd = fma(x, 32/ln 2, 1.5·2^52)        the shift rounds x·32/ln 2 to an integer k,
//   ki = bits of kd                          whose low bits ki holds
//   kd = kd − 1.5·2^52                       k as a double
//   r  = fma(x, 32/ln 2, −kd)                x·32/ln 2 − k, |r| ≤ 1/2
//   s  = 2^((k mod 32)/32) with k div 32 added to its exponent bits
//   y  = fma(fma(r, C0, C1), r·r, fma(r, C2, 1)) · s,  then rounded to float.
// The constants (32/ln 2, C0–C2, the thresholds) are those of glibc 2.36's expf,
// read off this machine's libm; kTwoToTheIOver32 is 2^(i/32) correctly rounded
// (computed, and equal to the table libm holds after its i·2^47 offset).
// tests/kernels/test_exp.cpp compares with std::exp on a stride through every float.
#include "kernels/ops/exp.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MARE_EXP_X86 1
#endif

namespace mare::detail {
namespace {

void exp_scalar(const float* x, float shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift);
}

#ifdef MARE_EXP_X86

constexpr double kTwoToTheIOver32[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};
constexpr double kInvLn2N = 0x1.71547652b82fep+5;  // 32 / ln 2
constexpr double kShift = 0x1.8p+52;
constexpr double kC0 = 0x1.c6af84b912394p-20, kC1 = 0x1.ebfce50fac4f3p-13,
                 kC2 = 0x1.62e42ff0c52d6p-6;
constexpr float kZeroBelow = -0x1.9fe368p6f;  // x < log(2^-150): expf is +0

// The table as the lanes read it: bits of 2^(i/32) less i·2^47, so that adding
// ki·2^47 (ki's low 5 bits give i, the rest k div 32) lands on 2^(k/32).
struct Table {
  int64_t t[32];
  Table() {
    for (int i = 0; i < 32; ++i)
      t[i] = std::bit_cast<int64_t>(kTwoToTheIOver32[i]) - (int64_t{i} << 47);
  }
};
const Table& table() {
  static const Table t;
  return t;
}

// Four lanes: x (already shifted) -> expf(x); lanes whose x is outside the cubic's
// range are flagged in *special (bit l for lane l), their results left to the caller.
__attribute__((target("avx2,fma"))) inline __m128 exp4(__m128 xf, const long long* tab,
                                                       int* special) {
  const __m128i abstop =
      _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), _mm_set1_epi32(0x7ff));
  const __m128i out_of_range = _mm_cmpgt_epi32(abstop, _mm_set1_epi32(0x42a));
  const __m128 zero = _mm_cmplt_ps(xf, _mm_set1_ps(kZeroBelow));  // −inf included
  *special = _mm_movemask_ps(_mm_andnot_ps(zero, _mm_castsi128_ps(out_of_range)));
  const __m256d xd = _mm256_cvtps_pd(xf);
  const __m256d inv = _mm256_set1_pd(kInvLn2N), shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(xd, inv, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(xd, inv, kd);
  __m256i t = _mm256_i64gather_epi64(tab, _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(kC0), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  y = _mm256_mul_pd(_mm256_fmadd_pd(z, r2, y), s);
  return _mm_andnot_ps(zero, _mm256_cvtpd_ps(y));
}

__attribute__((target("avx2,fma"))) void exp_avx2(const float* x, float shift, float* y,
                                                  int64_t n) {
  const long long* tab = reinterpret_cast<const long long*>(table().t);
  const __m128 sh = _mm_set1_ps(shift);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 xf = _mm_sub_ps(_mm_loadu_ps(x + i), sh);
    int special = 0;
    _mm_storeu_ps(y + i, exp4(xf, tab, &special));
    if (special != 0) {
      alignas(16) float xs[4];
      _mm_store_ps(xs, xf);
      for (int l = 0; l < 4; ++l)
        if (special & (1 << l)) y[i + l] = std::exp(xs[l]);
    }
  }
  exp_scalar(x + i, shift, y + i, n - i);
}

// True where the lanes give std::exp's bits: the CPU has AVX2 and FMA (where glibc
// picks its FMA build) and a sample across the range agrees bit for bit.
bool avx2_agrees_with_libm() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  std::vector<float> in;
  for (float v = -110.0f; v < 90.0f; v += 0.0371f) in.push_back(v);
  for (uint32_t b = 0; b < (1u << 31); b += 0x10001u * 97u) {
    in.push_back(std::bit_cast<float>(b));
    in.push_back(-std::bit_cast<float>(b));
  }
  std::vector<float> lanes(in.size());
  exp_avx2(in.data(), 0.0f, lanes.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = std::exp(in[i]);
    if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(lanes[i]) &&
        !(std::isnan(want) && std::isnan(lanes[i])))
      return false;
  }
  return true;
}

// MARE_EXP_PATH=scalar keeps every exp on the C library's expf, as on a CPU without AVX2 and
// FMA (so that the tests run that path on any machine).
bool scalar_forced() {
  const char* v = std::getenv("MARE_EXP_PATH");
  return v && std::string(v) == "scalar";
}

bool use_avx2() {
  static const bool yes = !scalar_forced() && avx2_agrees_with_libm();
  return yes;
}

#endif  // MARE_EXP_X86

}  // namespace

void exp_shifted(const float* x, float shift, float* y, int64_t n) {
#ifdef MARE_EXP_X86
  if (use_avx2()) return exp_avx2(x, shift, y, n);
#endif
  exp_scalar(x, shift, y, n);
}

void row_sums_in_order(const float* x, int64_t rows, int64_t n, double* sums) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *a = x + r * n, *b = a + n, *c = b + n, *d = c + n;
    double sa = 0.0, sb = 0.0, sc = 0.0, sd = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      sa += a[j];
      sb += b[j];
      sc += c[j];
      sd += d[j];
    }
    sums[r] = sa;
    sums[r + 1] = sb;
    sums[r + 2] = sc;
    sums[r + 3] = sd;
  }
  for (; r < rows; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += x[r * n + j];
    sums[r] = s;
  }
}

const char* exp_path() {
#ifdef MARE_EXP_X86
  if (use_avx2()) return "avx2+fma";
#endif
  return "scalar";
}

}  // namespace mare::detail
