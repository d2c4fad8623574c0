// The GEMM precision setting (kernels/ops/linalg.h): its names, and on the GPU that
// `high` runs the products in TF32 (they move, by about the TF32 rounding, and stay
// the same bits run after run) while `highest` stays fp32. The GPU test skips with
// the reason where none can run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/ops/linalg.h"
#include "tests/gpu_required.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

TEST(MatmulPrecision, NamesRoundTripAndTheDefaultIsHighest) {
  EXPECT_EQ(matmul_precision(), MatmulPrecision::highest);
  for (const std::string& n : matmul_precision_names())
    EXPECT_EQ(to_string(parse_matmul_precision(n)), n);
  EXPECT_THROW(parse_matmul_precision("medium"), std::invalid_argument);
}

// Restores the default however the test ends.
struct PrecisionScope {
  explicit PrecisionScope(MatmulPrecision p) { set_matmul_precision(p); }
  ~PrecisionScope() { set_matmul_precision(MatmulPrecision::highest); }
};

TEST(MatmulPrecisionCuda, HighIsTf32AndHighestIsFp32) {
  MARE_NEEDS_GPU();
  // Large enough that cuBLAS takes a tensor-core kernel when TF32 is allowed (for a
  // small product the math mode only permits it, and a plain fp32 kernel may win).
  const Tensor a = random_tensor({256, 512}, 1), b = random_tensor({512, 256}, 2);
  const std::vector<float> cpu = matmul_forward(a, b).to_vector();
  const Tensor ga = a.to(Device::cuda), gb = b.to(Device::cuda);
  const std::vector<float> fp32 = matmul_forward(ga, gb).to(Device::cpu).to_vector();
  std::vector<float> tf32, again;
  {
    PrecisionScope high(MatmulPrecision::high);
    tf32 = matmul_forward(ga, gb).to(Device::cpu).to_vector();
    again = matmul_forward(ga, gb).to(Device::cpu).to_vector();
  }
  EXPECT_EQ(matmul_precision(), MatmulPrecision::highest);
  float scale = 0.0f;
  for (float v : cpu) scale = std::max(scale, std::fabs(v));
  double fp32_err = 0.0, tf32_err = 0.0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    fp32_err = std::max(fp32_err, double(std::fabs(fp32[i] - cpu[i])));
    tf32_err = std::max(tf32_err, double(std::fabs(tf32[i] - cpu[i])));
  }
  // fp32: sums of 512 products in another order, ~1e-6 of the scale. TF32: inputs
  // rounded to 11 significant bits (2^-11 relative each), ~1e-3 of the scale; it
  // must move the result (else the tensor cores were not used) but not beyond that.
  EXPECT_LT(fp32_err, 1e-5 * scale);
  EXPECT_GT(tf32_err, 1e-5 * scale) << "high gave fp32 results: TF32 was not used";
  EXPECT_LT(tf32_err, 1e-2 * scale);
  EXPECT_EQ(tf32, again) << "TF32 products must be the same bits run after run";
}

}  // namespace
}  // namespace mare::test
