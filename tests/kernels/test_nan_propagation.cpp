// A NaN that reaches a normalising op comes out as NaN: a diverged model must
// not look like a masked row (std::max skips NaN, so "every position masked"
// is decided by the mask, never by the maximum).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/ops.h"

namespace mare {
namespace {

const float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(NanPropagation, SoftmaxOfANanRowIsNan) {
  const Tensor x = Tensor::from_vector({kNan, kNan, kNan, 0.5f, 1.0f, 2.0f}, {2, 3});
  for (const Tensor& y : {softmax_forward(x), log_softmax_forward(x)}) {
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(y.f32()[j])) << j;
    for (int j = 3; j < 6; ++j) EXPECT_TRUE(std::isfinite(y.f32()[j])) << j;
  }
  // A row excluded by its mask is still all zeros.
  const Tensor mask = Tensor::from_vector({0, 0, 0, 1, 1, 1}, {2, 3});
  const Tensor y = softmax_forward(x, mask);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(y.f32()[j], 0.0f) << j;
}

TEST(NanPropagation, CrossEntropyOfNanLogitsIsNan) {
  const Tensor logits = Tensor::from_vector({kNan, kNan, 0.1f, 0.2f}, {2, 2});
  const Tensor targets = Tensor::from_indices({0, 1}, {2});
  EXPECT_TRUE(std::isnan(cross_entropy_forward(logits, targets).loss.item()));
}

TEST(NanPropagation, AttentionWithNanScoresIsNan) {
  Tensor q = Tensor::full({1, 2, 2}, 1.0f), k = Tensor::full({1, 3, 2}, 1.0f),
         v = Tensor::full({1, 3, 2}, 1.0f);
  k.f32()[0] = kNan;
  k.f32()[2] = kNan;
  k.f32()[4] = kNan;
  const Tensor mask = Tensor::from_vector({1, 1, 1}, {1, 3});
  const AttentionResult r = attention_forward(q, k, v, 1, mask);
  EXPECT_TRUE(std::isnan(r.out.f32()[0]));
}

}  // namespace
}  // namespace mare
