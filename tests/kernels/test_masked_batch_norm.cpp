// Batch norm with a row mask (padding, SPEC §4.2): masked rows take no part in
// the statistics, output 0 and get no gradient; a mask of ones, or none, is the
// unmasked op. The op table (tests/kernels/op_cases.cpp) adds central
// differences and the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

struct BnRun {
  NormResult fwd;
  Tensor running_mean, running_var;
  Tensor d_x, d_gamma, d_beta;
};

// Forward (fresh running statistics) and backward with gradients starting at 1.
BnRun run_bn(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& d_out,
             bool training, const Tensor& mask) {
  const int64_t c = x.dim(-1);
  BnRun r;
  r.running_mean = Tensor::from_vector(std::vector<float>(c, 0.25f), {c});
  r.running_var = Tensor::from_vector(std::vector<float>(c, 1.5f), {c});
  r.fwd = batch_norm_forward(x, gamma, beta, r.running_mean, r.running_var, training, 0.1f, 1e-5f,
                             mask);
  r.d_x = Tensor::full(x.shape(), 1.0f);
  r.d_gamma = Tensor::full({c}, 1.0f);
  r.d_beta = Tensor::full({c}, 1.0f);
  batch_norm_backward(r.d_x, r.d_gamma, r.d_beta, d_out, x, gamma, r.fwd.mean, r.fwd.rstd, training,
                      mask);
  return r;
}

// Rows `keep` of a [rows, c] view of t.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& keep) {
  const int64_t c = t.dim(-1);
  std::vector<float> v = t.to_vector(), out;
  for (int64_t r : keep) out.insert(out.end(), v.begin() + r * c, v.begin() + (r + 1) * c);
  return Tensor::from_vector(out, {static_cast<int64_t>(keep.size()), c});
}

class MaskedBatchNorm : public ::testing::TestWithParam<bool> {};  // training?

const std::vector<float> kMask = {1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0};  // 12 rows
const std::vector<int64_t> kReal = {0, 2, 3, 5, 6, 7, 9, 10};

TEST_P(MaskedBatchNorm, PaddedRowsDoNotInfluenceAnything) {
  const bool training = GetParam();
  Tensor x = random_tensor({3, 4, 5}, 1, -2, 2), gamma = random_tensor({5}, 2, 0.5, 1.5),
         beta = random_tensor({5}, 3), d_out = random_tensor({3, 4, 5}, 4);
  Tensor mask = Tensor::from_vector(kMask, {12});
  // The same batch with wild values in the padded rows (x and d_out).
  Tensor x2 = x.clone(), d_out2 = d_out.clone();
  for (int64_t r = 0; r < 12; ++r)
    if (kMask[r] == 0)
      for (int64_t j = 0; j < 5; ++j) {
        x2.f32()[r * 5 + j] = 1e6f * (j + 1) - 3e5f * r;
        d_out2.f32()[r * 5 + j] = -7e4f * (j + 2);
      }
  BnRun a = run_bn(x, gamma, beta, d_out, training, mask);
  BnRun b = run_bn(x2, gamma, beta, d_out2, training, mask);
  EXPECT_EQ(a.fwd.out.to_vector(), b.fwd.out.to_vector());
  EXPECT_EQ(a.fwd.mean.to_vector(), b.fwd.mean.to_vector());
  EXPECT_EQ(a.fwd.rstd.to_vector(), b.fwd.rstd.to_vector());
  EXPECT_EQ(a.running_mean.to_vector(), b.running_mean.to_vector());
  EXPECT_EQ(a.running_var.to_vector(), b.running_var.to_vector());
  EXPECT_EQ(a.d_x.to_vector(), b.d_x.to_vector());
  EXPECT_EQ(a.d_gamma.to_vector(), b.d_gamma.to_vector());
  EXPECT_EQ(a.d_beta.to_vector(), b.d_beta.to_vector());
  // Padded rows output 0 and their gradient is left as it was (1).
  std::vector<float> out = b.fwd.out.to_vector(), dx = b.d_x.to_vector();
  for (int64_t r = 0; r < 12; ++r)
    if (kMask[r] == 0)
      for (int64_t j = 0; j < 5; ++j) {
        EXPECT_EQ(out[r * 5 + j], 0.0f) << "row " << r;
        EXPECT_EQ(dx[r * 5 + j], 1.0f) << "row " << r;
      }
  // ... and the real rows did move (the test can fail).
  EXPECT_NE(dx[0], 1.0f);
}

TEST_P(MaskedBatchNorm, EqualsUnmaskedBatchNormOfTheRealRows) {
  const bool training = GetParam();
  Tensor x = random_tensor({12, 5}, 5, -2, 2), gamma = random_tensor({5}, 6, 0.5, 1.5),
         beta = random_tensor({5}, 7), d_out = random_tensor({12, 5}, 8);
  BnRun masked = run_bn(x, gamma, beta, d_out, training, Tensor::from_vector(kMask, {12}));
  BnRun real = run_bn(take_rows(x, kReal), gamma, beta, take_rows(d_out, kReal), training, {});
  // Same sums in the same order: the same bits.
  EXPECT_EQ(take_rows(masked.fwd.out, kReal).to_vector(), real.fwd.out.to_vector());
  EXPECT_EQ(masked.fwd.mean.to_vector(), real.fwd.mean.to_vector());
  EXPECT_EQ(masked.fwd.rstd.to_vector(), real.fwd.rstd.to_vector());
  EXPECT_EQ(masked.running_mean.to_vector(), real.running_mean.to_vector());
  EXPECT_EQ(masked.running_var.to_vector(), real.running_var.to_vector());
  EXPECT_EQ(take_rows(masked.d_x, kReal).to_vector(), real.d_x.to_vector());
  EXPECT_EQ(masked.d_gamma.to_vector(), real.d_gamma.to_vector());
  EXPECT_EQ(masked.d_beta.to_vector(), real.d_beta.to_vector());
}

TEST_P(MaskedBatchNorm, MaskOfOnesIsNoMask) {
  const bool training = GetParam();
  Tensor x = random_tensor({2, 7, 3}, 9, -2, 2), gamma = random_tensor({3}, 10, 0.5, 1.5),
         beta = random_tensor({3}, 11), d_out = random_tensor({2, 7, 3}, 12);
  BnRun ones = run_bn(x, gamma, beta, d_out, training, Tensor::full({14}, 1.0f));
  BnRun none = run_bn(x, gamma, beta, d_out, training, {});
  EXPECT_EQ(ones.fwd.out.to_vector(), none.fwd.out.to_vector());
  EXPECT_EQ(ones.running_mean.to_vector(), none.running_mean.to_vector());
  EXPECT_EQ(ones.running_var.to_vector(), none.running_var.to_vector());
  EXPECT_EQ(ones.d_x.to_vector(), none.d_x.to_vector());
  EXPECT_EQ(ones.d_gamma.to_vector(), none.d_gamma.to_vector());
  EXPECT_EQ(ones.d_beta.to_vector(), none.d_beta.to_vector());
}

INSTANTIATE_TEST_SUITE_P(Modes, MaskedBatchNorm, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "train" : "eval";
                         });

TEST(MaskedBatchNormHand, StatisticsOverRealRowsOnly) {
  // One channel, rows 1, 3, 100(padded), 5: mean 3, biased var 8/3, unbiased 4.
  Tensor x = Tensor::from_vector({1, 3, 100, 5}, {4, 1});
  Tensor mask = Tensor::from_vector({1, 1, 0, 1}, {4});
  Tensor g = Tensor::full({1}, 2.0f), b = Tensor::full({1}, 0.5f);
  Tensor rm = Tensor::zeros({1}), rv = Tensor::full({1}, 1.0f);
  NormResult r = batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 0.0f, mask);
  EXPECT_EQ(r.mean.item(), 3.0f);
  EXPECT_FLOAT_EQ(r.rstd.item(), static_cast<float>(1.0 / std::sqrt(8.0 / 3.0)));
  EXPECT_FLOAT_EQ(rm.item(), 0.3f);
  EXPECT_FLOAT_EQ(rv.item(), 0.9f + 0.4f);
  std::vector<float> out = r.out.to_vector();
  const double s = std::sqrt(8.0 / 3.0);
  EXPECT_FLOAT_EQ(out[0], static_cast<float>(-2.0 / s * 2 + 0.5));
  EXPECT_FLOAT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_FLOAT_EQ(out[3], static_cast<float>(2.0 / s * 2 + 0.5));
  // Eval: running statistics, padded row still 0.
  NormResult e = batch_norm_forward(x, g, b, rm, rv, false, 0.1f, 0.0f, mask);
  EXPECT_EQ(e.out.to_vector()[2], 0.0f);
  EXPECT_NEAR(e.out.to_vector()[1], (3 - rm.item()) / std::sqrt(rv.item()) * 2 + 0.5, 1e-6);
  EXPECT_FLOAT_EQ(rm.item(), 0.3f);  // unchanged in eval
}

TEST(MaskedBatchNormHand, OneRealRowKeepsTheRunningVariance) {
  Tensor x = Tensor::from_vector({7, -1, 4, 9}, {2, 2});
  Tensor mask = Tensor::from_vector({0, 1}, {2});
  Tensor g = Tensor::full({2}, 3.0f), b = Tensor::from_vector({0.5f, -0.25f}, {2});
  Tensor rm = Tensor::zeros({2}), rv = Tensor::full({2}, 2.0f);
  NormResult r = batch_norm_forward(x, g, b, rm, rv, true, 0.5f, 1e-5f, mask);
  EXPECT_EQ(r.mean.to_vector(), (std::vector<float>{4, 9}));
  EXPECT_EQ(rm.to_vector(), (std::vector<float>{2, 4.5f}));  // (1 − 0.5)·0 + 0.5·mean
  EXPECT_EQ(rv.to_vector(), (std::vector<float>{2, 2}));     // unchanged
  EXPECT_EQ(r.out.to_vector(), (std::vector<float>{0, 0, 0.5f, -0.25f}));  // β on the real row
  Tensor d_x = Tensor::zeros({2, 2}), d_g = Tensor::zeros({2}), d_b = Tensor::zeros({2});
  batch_norm_backward(d_x, d_g, d_b, Tensor::from_vector({1, 2, 3, 4}, {2, 2}), x, g, r.mean,
                      r.rstd, true, mask);
  EXPECT_EQ(d_x.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(d_g.to_vector(), (std::vector<float>{0, 0}));
  EXPECT_EQ(d_b.to_vector(), (std::vector<float>{3, 4}));
}

TEST(MaskedBatchNormHand, NoRealRowChangesNothing) {
  Tensor x = random_tensor({3, 2}, 13), mask = Tensor::zeros({3});
  Tensor g = Tensor::full({2}, 1.0f), b = Tensor::full({2}, 0.5f);
  Tensor rm = Tensor::from_vector({0.1f, 0.2f}, {2}), rv = Tensor::from_vector({1.1f, 1.2f}, {2});
  NormResult r = batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, mask);
  EXPECT_EQ(r.out.to_vector(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(r.mean.to_vector(), (std::vector<float>{0, 0}));
  for (float v : r.rstd.to_vector()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(rm.to_vector(), (std::vector<float>{0.1f, 0.2f}));
  EXPECT_EQ(rv.to_vector(), (std::vector<float>{1.1f, 1.2f}));
  Tensor d_x = Tensor::full({3, 2}, 1.0f), d_g = Tensor::full({2}, 1.0f),
         d_b = Tensor::full({2}, 1.0f);
  batch_norm_backward(d_x, d_g, d_b, random_tensor({3, 2}, 14), x, g, r.mean, r.rstd, true, mask);
  EXPECT_EQ(d_x.to_vector(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(d_g.to_vector(), (std::vector<float>{1, 1}));
  EXPECT_EQ(d_b.to_vector(), (std::vector<float>{1, 1}));
}

TEST(MaskedBatchNormHand, WithoutMaskTrainingStillNeedsTwoRows) {
  Tensor x = Tensor::zeros({1, 3}), g = Tensor::full({3}, 1.0f), b = Tensor::zeros({3});
  Tensor rm = Tensor::zeros({3}), rv = Tensor::full({3}, 1.0f);
  EXPECT_THROW(batch_norm_forward(x, g, b, rm, rv, true), std::invalid_argument);
  // With a mask, one row is accepted (see norm.h).
  EXPECT_NO_THROW(batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, Tensor::full({1}, 1.0f)));
}

TEST(MaskedBatchNormHand, BadMaskIsRefusedByName) {
  Tensor x = Tensor::zeros({2, 3, 4}), g = Tensor::full({4}, 1.0f), b = Tensor::zeros({4});
  Tensor rm = Tensor::zeros({4}), rv = Tensor::full({4}, 1.0f);
  try {
    batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, Tensor::full({2, 3}, 1.0f));
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("batch_norm_forward: row_mask"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[6]"), std::string::npos) << m;
  }
  EXPECT_THROW(batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f,
                                  Tensor::zeros({6}, Device::cpu, DType::i32)),
               std::invalid_argument);
  Tensor d_x = Tensor::zeros({2, 3, 4});
  Tensor none;
  EXPECT_THROW(
      batch_norm_backward(d_x, none, none, Tensor::zeros({2, 3, 4}), x, g, Tensor::zeros({4}),
                          Tensor::full({4}, 1.0f), true, Tensor::full({5}, 1.0f)),
      ShapeError);
}

}  // namespace
}  // namespace mare::test
