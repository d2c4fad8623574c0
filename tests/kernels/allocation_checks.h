// Comparisons shared by the allocation tests on the CPU (test_allocation.cpp)
// and on the GPU (test_allocation_cuda.cpp); tensors may be on either device.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace mare::test {

// |got − ref| ≤ atol + rtol·|ref| everywhere, and finite.
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& ref, double atol,
                                        double rtol, const std::string& what) {
  std::vector<float> g = got.to_vector(), r = ref.to_vector();
  if (g.size() != r.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
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
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i]))
      return ::testing::AssertionFailure()
             << what << ": element " << i << ": " << x[i] << " != " << y[i];
  return ::testing::AssertionSuccess();
}

}  // namespace mare::test
