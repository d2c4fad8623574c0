// The one rule of every GPU test: without a usable GPU it skips and says why, in the
// CUDA runtime's words (e.g. "cudaErrorInsufficientDriver: CUDA driver version is
// insufficient for CUDA runtime version", "cudaErrorNoDevice: no CUDA-capable device
// is detected") or "this build has no CUDA backend". With MARE_REQUIRE_GPU=1 in the
// environment (reports/devices/gpu_report.sh sets it) the same condition is a failure:
// on a GPU machine a broken driver must not pass as a run of skipped tests.
//
//   TEST(Foo, OnTheGpu) { MARE_NEEDS_GPU(); ... }    // also in a fixture's SetUp()
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/tensor.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::test {

// "" when a GPU can be used (cuda_available()), otherwise why not.
inline std::string gpu_unavailable_reason() {
#ifdef MARE_WITH_CUDA
  if (cuda_available()) return "";
  const std::string why = cuda::no_device_reason();
  return why.empty() ? "the CUDA runtime lists a device but cuda_available() is false" : why;
#else
  return "this build has no CUDA backend (configured with MARE_CUDA=OFF, or without nvcc)";
#endif
}

// MARE_REQUIRE_GPU=1: a GPU test that cannot run fails instead of skipping.
inline bool gpu_required() {
  const char* v = std::getenv("MARE_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

// While one lives, fresh GPU allocations are filled with NaN (cuda::set_poison_allocations),
// so an output element a kernel forgets to write fails a finiteness check.
class PoisonedGpuAllocations {
 public:
  PoisonedGpuAllocations() {
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(true);
#endif
  }
  ~PoisonedGpuAllocations() {
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(false);
#endif
  }
  PoisonedGpuAllocations(const PoisonedGpuAllocations&) = delete;
  PoisonedGpuAllocations& operator=(const PoisonedGpuAllocations&) = delete;
};

}  // namespace mare::test

// Returns from the test (or SetUp) with a skip, or with a failure under
// MARE_REQUIRE_GPU=1, when no GPU can be used.
#define MARE_NEEDS_GPU()                                                           \
  do {                                                                             \
    const std::string mare_gpu_why_ = ::mare::test::gpu_unavailable_reason();      \
    if (!mare_gpu_why_.empty()) {                                                  \
      if (::mare::test::gpu_required())                                            \
        FAIL() << "MARE_REQUIRE_GPU=1, but no GPU can be used: " << mare_gpu_why_; \
      GTEST_SKIP() << "GPU test skipped: " << mare_gpu_why_                        \
                   << " (MARE_REQUIRE_GPU=1 turns this skip into a failure)";      \
    }                                                                              \
  } while (0)
