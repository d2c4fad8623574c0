// exp over a run of floats, with the bits of the C library's expf.
//
// The softmaxes (attention, softmax) spend most of their time in one scalar
// expf call per element. glibc's expf (2.28 on; ARM's optimized-routines
// algorithm) evaluates in double: k = round(x·32/ln 2), r = x·32/ln 2 − k,
// 2^(k/32) from a 32-entry table and the exponent bits, a cubic in r, one
// rounding to float at the end. On a CPU with AVX2 and FMA it runs its FMA build,
// __expf_fma; exp_shifted runs the same operations, four lanes at a time, so every
// result is the same float: no result of any model moves. Where the CPU lacks AVX2
// or FMA (glibc then runs its SSE2 build, which rounds differently), or where a
// check at first use finds a value that std::exp gives otherwise (another C
// library), every element goes through std::exp. The arguments outside the cubic's
// range (|x| ≥ 88: overflow, underflow, ±inf, NaN) go through std::exp as well,
// except those below −103.97 (−inf included), whose expf is +0.
#pragma once

#include <cstdint>

namespace mare::detail {

// y[i] = std::exp(x[i] − shift) for i < n, x[i] − shift rounded to float first (as
// a scalar loop writes it). y may be x.
void exp_shifted(const float* x, float shift, float* y, int64_t n);

// sums[r] = Σ_j x[r·n + j] for r < rows, each in double and in index order (a
// softmax's denominators, with the bits of one scalar loop per row). The rows go
// four at a time, interleaved: one row's adds wait on each other, four rows' do not.
void row_sums_in_order(const float* x, int64_t rows, int64_t n, double* sums);

// "avx2+fma" where exp_shifted runs four lanes at a time, "scalar" where it calls
// std::exp for each element (a CPU without AVX2 and FMA, another libm, or
// MARE_EXP_PATH=scalar in the environment).
const char* exp_path();

}  // namespace mare::detail
