// Shared tolerance check for the stats tests: |actual − ref| <= atol + rtol·|ref|,
// with NaN and infinities refused explicitly (a NaN never passes by accident).
#pragma once

#include <cmath>
#include <iomanip>

#include <gtest/gtest.h>

namespace mare::stats::testing {

inline ::testing::AssertionResult near(double actual, double ref, double atol, double rtol) {
  if (!std::isfinite(actual) || !std::isfinite(ref)) {
    return ::testing::AssertionFailure()
           << "non-finite value: actual " << actual << ", ref " << ref;
  }
  const double bound = atol + rtol * std::fabs(ref);
  const double err = std::fabs(actual - ref);
  if (err <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::setprecision(17) << "actual " << actual << ", ref "
                                       << ref << ", |err| " << err << " > " << bound;
}

// Default for exact published values: 1e-10 absolute on quantities of order one.
inline ::testing::AssertionResult near_exact(double actual, double ref) {
  return near(actual, ref, 1e-10, 0.0);
}

}  // namespace mare::stats::testing
