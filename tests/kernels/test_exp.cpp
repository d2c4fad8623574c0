// exp_shifted (kernels/ops/exp.h) gives std::exp's bits: on a stride through every
// float (both signs, every exponent; the whole 2^32 was checked once on the
// development machine, 2026-11-28, AVX2+FMA path: no difference), around the
// cubic's edges, at every tail length, with a shift, in place.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "kernels/ops/exp.h"

namespace mare::detail {
namespace {

// The first element whose bits differ from std::exp(x[i] − shift), or −1.
int64_t first_difference(const std::vector<float>& x, float shift, const std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i] - shift);
    const bool same = std::bit_cast<uint32_t>(want) == std::bit_cast<uint32_t>(y[i]) ||
                      (std::isnan(want) && std::isnan(y[i]));
    if (!same) return static_cast<int64_t>(i);
  }
  return -1;
}

void expect_libm_bits(const std::vector<float>& x, float shift, const std::string& what) {
  std::vector<float> y(x.size(), -1.0f);
  exp_shifted(x.data(), shift, y.data(), static_cast<int64_t>(x.size()));
  const int64_t bad = first_difference(x, shift, y);
  EXPECT_EQ(bad, -1) << what << " (path " << exp_path() << "): exp(" << (bad < 0 ? 0 : x[bad])
                     << " - " << shift << ") = " << (bad < 0 ? 0 : y[bad]) << ", std::exp gives "
                     << (bad < 0 ? 0 : std::exp(x[bad] - shift));
}

TEST(ExpShifted, HasStdExpBitsOnAStrideThroughEveryFloat) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257)
    x.push_back(std::bit_cast<float>(uint32_t(b)));
  expect_libm_bits(x, 0.0f, "every 257th bit pattern");
}

TEST(ExpShifted, HasStdExpBitsWhereTheRangeEnds) {
  // Dense around the cubic's edges (|x| = 88, the overflow at 88.72, the underflows
  // at −103.28 and −103.97), zero, the infinities and NaN.
  std::vector<float> x = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(),
                          -1e-40f};
  for (float edge : {88.0f, -88.0f, 0x1.62e42ep6f, -0x1.9d1d9ep6f, -0x1.9fe368p6f}) {
    float v = edge;
    for (int k = 0; k < 2000; ++k) v = std::nextafter(v, -1e30f);
    for (int k = 0; k < 4000; ++k, v = std::nextafter(v, 1e30f)) x.push_back(v);
  }
  expect_libm_bits(x, 0.0f, "range edges");
}

TEST(ExpShifted, ShiftsFirstEveryTailLengthAndInPlace) {
  std::vector<float> base;
  for (int i = 0; i < 64; ++i) base.push_back(-20.0f + 0.77f * static_cast<float>(i));
  for (size_t n = 0; n <= 11; ++n) {
    const std::vector<float> x(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(n));
    expect_libm_bits(x, 3.3f, "n " + std::to_string(n) + ", shift 3.3");
  }
  // In place, a softmax row's use: masked scores at −inf give +0.
  std::vector<float> row = base;
  row[5] = row[6] = -std::numeric_limits<float>::infinity();
  const std::vector<float> before = row;
  exp_shifted(row.data(), 7.25f, row.data(), static_cast<int64_t>(row.size()));
  EXPECT_EQ(first_difference(before, 7.25f, row), -1) << "in place";
  EXPECT_EQ(std::bit_cast<uint32_t>(row[5]), 0u);
}

// Each row's sum is one scalar loop's, bit for bit, whatever the number of rows
// (the four-row blocks and the rest), on values whose sum depends on the order.
TEST(RowSumsInOrder, AreEachRowsScalarLoop) {
  std::vector<float> x;
  for (int i = 0; i < 7 * 13; ++i)
    x.push_back(std::ldexp(1.0f + 0.37f * static_cast<float>(i % 11), (i * 29) % 80 - 40));
  for (int64_t rows = 0; rows <= 7; ++rows) {
    std::vector<double> sums(static_cast<size_t>(rows), -1.0);
    row_sums_in_order(x.data(), rows, 13, sums.data());
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0.0;
      for (int64_t j = 0; j < 13; ++j) s += x[r * 13 + j];
      EXPECT_EQ(std::bit_cast<uint64_t>(sums[r]), std::bit_cast<uint64_t>(s))
          << rows << " rows, row " << r;
    }
  }
}

// The lanes run exactly where glibc runs its FMA build: an x86-64 CPU with AVX2 and
// FMA under glibc 2.28 or later (whose expf they reproduce; the check at first use
// must then pass, else the speed is silently lost). Elsewhere, the scalar calls.
TEST(ExpShifted, TakesTheLanesWhereGlibcRunsItsFmaBuild) {
  bool lanes_expected = false;
#if defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 28))
  lanes_expected = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  // MARE_EXP_PATH=scalar (run_all.sh test's portable build) takes the scalar calls anywhere.
  if (const char* v = std::getenv("MARE_EXP_PATH"); v && std::string(v) == "scalar")
    lanes_expected = false;
  EXPECT_EQ(std::string(exp_path()), lanes_expected ? "avx2+fma" : "scalar");
}

}  // namespace
}  // namespace mare::detail
