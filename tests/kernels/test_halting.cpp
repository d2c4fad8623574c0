// The halting op (SPEC §4.4) on hand-computed cases: weights, step counts,
// remainders, the ponder cost and the gradient, exactly (the inputs are chosen
// so that every float operation is exact). The op table
// (tests/kernels/halting_cases.cpp) adds central differences and the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

constexpr float kEps = 0.01f;
const float kThreshold = 1.0f - kEps;  // 1 − ε in float, as the op computes it

// Column i of a [K, N] tensor.
std::vector<float> column(const Tensor& t, int64_t i) {
  std::vector<float> v = t.to_vector(), c;
  for (int64_t s = 0; s < t.dim(0); ++s) c.push_back(v[s * t.dim(1) + i]);
  return c;
}

// h as [K, N] from per-token columns.
Tensor from_columns(const std::vector<std::vector<float>>& cols) {
  const int64_t n = static_cast<int64_t>(cols.size()), k = static_cast<int64_t>(cols[0].size());
  std::vector<float> v(k * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < k; ++t) v[t * n + i] = cols[i][t];
  return Tensor::from_vector(v, {k, n});
}

TEST(Halting, HandComputedTokensAtTmax) {
  // An exact threshold crossing: 0.5 + (θ − 0.5) == θ in float (Sterbenz: θ − 0.5
  // is exact), and a sum one ulp below θ that does not cross.
  const float cross = kThreshold - 0.5f;
  ASSERT_EQ(0.5f + cross, kThreshold);
  const float below = std::nextafter(kThreshold, 0.0f) - 0.5f;
  ASSERT_EQ(0.5f + below, std::nextafter(kThreshold, 0.0f));
  Tensor h = from_columns({
      {0.995f, 0.5f, 0.5f},    // 0: h_1 ≥ 1 − ε: halts at step 1
      {0.25f, 0.5f, 0.125f},   // 1: never crosses: stops at t_max = 3
      {0.5f, cross, 0.75f},    // 2: S + h_2 == 1 − ε exactly: halts at 2
      {0.9f, 0.9f, 0.9f},      // 3: padding
      {0.5f, below, 0.75f},    // 4: one ulp below: goes on to t_max
      {0.25f, 0.25f, 0.875f},  // 5: crosses at 3 = t_max (1.375 ≥ θ)
  });
  Tensor mask = Tensor::from_vector({1, 1, 1, 0, 1, 1}, {6});
  HaltingResult r = halting_forward(h, mask, 3, kEps);

  EXPECT_EQ(column(r.p, 0), (std::vector<float>{1.0f, 0.0f, 0.0f}));
  EXPECT_EQ(column(r.p, 1), (std::vector<float>{0.25f, 0.5f, 0.25f}));
  EXPECT_EQ(column(r.p, 2), (std::vector<float>{0.5f, 0.5f, 0.0f}));
  EXPECT_EQ(column(r.p, 3), (std::vector<float>{0.0f, 0.0f, 0.0f}));
  const float r4 = 1.0f - (0.5f + below);
  EXPECT_EQ(column(r.p, 4), (std::vector<float>{0.5f, below, r4}));
  EXPECT_EQ(column(r.p, 5), (std::vector<float>{0.25f, 0.25f, 0.5f}));

  EXPECT_EQ(r.steps.dtype(), DType::i32);
  EXPECT_EQ(r.steps.to_index_vector(), (std::vector<int32_t>{1, 3, 2, 0, 3, 3}));
  EXPECT_EQ(r.remainder.to_vector(), (std::vector<float>{1.0f, 0.25f, 0.5f, 0.0f, r4, 0.5f}));
  EXPECT_EQ(r.halted.to_vector(), (std::vector<float>{1, 1, 1, 1, 1, 1}));
  // Weights of every real token sum to 1 (here exactly, every value is dyadic
  // but token 4's, whose sum is 0.5 + below + (1 − (0.5 + below)) = 1 in float).
  for (int64_t i : {0, 1, 2, 4, 5}) {
    float s = 0.0f;
    for (float v : column(r.p, i)) s += v;
    EXPECT_EQ(s, 1.0f) << "token " << i;
  }
  // ponder = mean over the 5 real tokens of steps + R.
  const double sum = (1 + 1.0) + (3 + 0.25) + (2 + 0.5) + (3 + static_cast<double>(r4)) + (3 + 0.5);
  EXPECT_EQ(r.ponder.shape(), Shape({1}));
  EXPECT_EQ(r.ponder.item(), static_cast<float>(sum / 5));
}

TEST(Halting, FewerStepsThanTmaxLeavesTokensRunning) {
  // K = 2 < t_max = 3.
  Tensor h = from_columns({
      {0.25f, 0.5f},  // running: p = h, R = 0.25, halted 0
      {0.5f, 0.75f},  // halts at 2 (1.25 ≥ θ)
      {1.0f, 0.3f},   // halts at 1
  });
  HaltingResult r = halting_forward(h, Tensor(), 3);  // default ε = 0.01
  EXPECT_EQ(column(r.p, 0), (std::vector<float>{0.25f, 0.5f}));
  EXPECT_EQ(column(r.p, 1), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(column(r.p, 2), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(r.steps.to_index_vector(), (std::vector<int32_t>{2, 2, 1}));
  EXPECT_EQ(r.remainder.to_vector(), (std::vector<float>{0.25f, 0.5f, 1.0f}));
  EXPECT_EQ(r.halted.to_vector(), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(r.ponder.item(), static_cast<float>((2.25 + 2.5 + 2.0) / 3));

  // With a third step the running token halts at t_max; the others keep their
  // weights, steps and remainders (a prefix of the steps decides the same).
  Tensor h3 = from_columns({{0.25f, 0.5f, 0.125f}, {0.5f, 0.75f, 0.5f}, {1.0f, 0.3f, 0.5f}});
  HaltingResult r3 = halting_forward(h3, Tensor(), 3);
  EXPECT_EQ(column(r3.p, 0), (std::vector<float>{0.25f, 0.5f, 0.25f}));
  for (int64_t i : {1, 2}) {
    std::vector<float> p3 = column(r3.p, i), p2 = column(r.p, i);
    EXPECT_EQ(std::vector<float>(p3.begin(), p3.begin() + 2), p2) << "token " << i;
    EXPECT_EQ(p3[2], 0.0f) << "token " << i;
  }
  EXPECT_EQ(r3.steps.to_index_vector(), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(r3.halted.to_vector(), (std::vector<float>{1, 1, 1}));
}

TEST(Halting, TmaxOneHaltsEveryTokenAtOnce) {
  Tensor h = Tensor::from_vector({0.1f, 0.7f}, {1, 2});
  HaltingResult r = halting_forward(h, Tensor(), 1);
  EXPECT_EQ(r.p.to_vector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(r.steps.to_index_vector(), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(r.ponder.item(), 2.0f);
}

TEST(Halting, AllPaddingGivesZeroPonderAndNoGradient) {
  Tensor h = Tensor::from_vector({0.3f, 0.4f, 0.5f, 0.6f}, {2, 2});
  Tensor mask = Tensor::zeros({2});
  HaltingResult r = halting_forward(h, mask, 2);
  EXPECT_EQ(r.p.to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(r.steps.to_index_vector(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(r.halted.to_vector(), (std::vector<float>{1, 1}));
  EXPECT_EQ(r.ponder.item(), 0.0f);
  Tensor d_h = Tensor::full({2, 2}, 1.0f);
  halting_backward(d_h, Tensor::full({2, 2}, 3.0f), Tensor::full({1}, 1.0f), h, r, mask);
  EXPECT_EQ(d_h.to_vector(), (std::vector<float>{1, 1, 1, 1}));
}

TEST(Halting, HandComputedGradient) {
  // K = t_max = 3; tokens: halts at 1, stops at t_max, halts at 2, padding.
  Tensor h = from_columns(
      {{0.995f, 0.5f, 0.5f}, {0.25f, 0.5f, 0.125f}, {0.5f, 0.75f, 0.25f}, {0.9f, 0.9f, 0.9f}});
  Tensor mask = Tensor::from_vector({1, 1, 1, 0}, {4});
  HaltingResult r = halting_forward(h, mask, 3);
  ASSERT_EQ(r.steps.to_index_vector(), (std::vector<int32_t>{1, 3, 2, 0}));
  Tensor d_p = from_columns({{2, 4, 8}, {1, 2, 4}, {0.5f, 3, 16}, {5, 5, 5}});
  Tensor d_h = Tensor::zeros({3, 4});
  halting_backward(d_h, d_p, Tensor::full({1}, 2.0f), h, r, mask);  // c = d_ponder / 3 real tokens
  const float c = static_cast<float>(2.0 / 3);
  // token 0 (n = 1): nothing depends on h; token 1 (n = 3): d_p_t − d_p_3 − c
  // for t < 3; token 2 (n = 2): d_p_1 − d_p_2 − c; padding: nothing.
  EXPECT_EQ(column(d_h, 0), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(column(d_h, 1), (std::vector<float>{1.0f - (4.0f + c), 2.0f - (4.0f + c), 0.0f}));
  EXPECT_EQ(column(d_h, 2), (std::vector<float>{0.5f - (3.0f + c), 0.0f, 0.0f}));
  EXPECT_EQ(column(d_h, 3), (std::vector<float>{0, 0, 0}));

  // Undefined d_p: the ponder term alone.
  Tensor d_h2 = Tensor::zeros({3, 4});
  halting_backward(d_h2, Tensor(), Tensor::full({1}, 2.0f), h, r, mask);
  EXPECT_EQ(column(d_h2, 0), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(column(d_h2, 1), (std::vector<float>{-c, -c, 0}));
  EXPECT_EQ(column(d_h2, 2), (std::vector<float>{-c, 0, 0}));
  EXPECT_EQ(column(d_h2, 3), (std::vector<float>{0, 0, 0}));
}

TEST(Halting, RunningTokenGradientReachesEveryStep) {
  // K = 2 < t_max = 4; token 0 running, token 1 halted at 2.
  Tensor h = from_columns({{0.25f, 0.5f}, {0.5f, 0.75f}});
  HaltingResult r = halting_forward(h, Tensor(), 4);
  ASSERT_EQ(r.halted.to_vector(), (std::vector<float>{0, 1}));
  Tensor d_p = from_columns({{3, 5}, {7, 9}});
  Tensor d_h = Tensor::full({2, 2}, 1.0f);                              // accumulates
  halting_backward(d_h, d_p, Tensor::full({1}, 4.0f), h, r, Tensor());  // c = 4 / 2 = 2
  EXPECT_EQ(column(d_h, 0), (std::vector<float>{1 + 3 - 2, 1 + 5 - 2}));
  EXPECT_EQ(column(d_h, 1), (std::vector<float>{1 + 7 - (9 + 2), 1}));
}

// ------------------------------------------------------------- bad input
template <typename E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception naming " << parts[0];
  } catch (const E& e) {
    std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << p << " in: " << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(Halting, BadInputIsRefusedByName) {
  Tensor h = Tensor::full({2, 3}, 0.3f);
  expect_error<std::invalid_argument>([&] { halting_forward(h, Tensor(), 0); },
                                      {"halting_forward", "t_max"});
  expect_error<std::invalid_argument>([&] { halting_forward(h, Tensor(), 1); },
                                      {"halting_forward", "[2, 3]"});  // K > t_max
  expect_error<std::invalid_argument>(
      [&] {
        halting_forward(Tensor::zeros({0, 3}), Tensor(), 2);
      },
      {"halting_forward", "[0, 3]"});
  expect_error<std::invalid_argument>([&] { halting_forward(h, Tensor(), 2, 1.0f); },
                                      {"halting_forward", "eps"});
  expect_error<ShapeError>([&] { halting_forward(h, Tensor::zeros({4}), 2); },
                           {"halting_forward", "[4]", "[3]"});
  expect_error<ShapeError>([&] { halting_forward(Tensor::zeros({6}), Tensor(), 2); },
                           {"halting_forward"});
  expect_error<std::invalid_argument>(
      [&] {
        halting_forward(Tensor::zeros({2, 3}, Device::cpu, DType::i32), Tensor(), 2);
      },
      {"halting_forward"});

  HaltingResult r = halting_forward(h, Tensor(), 2);
  Tensor d_h = Tensor::full({2, 3}, 1.0f);
  expect_error<ShapeError>(
      [&] {
        halting_backward(d_h, Tensor::zeros({3, 2}), Tensor::full({1}, 1.0f), h, r, Tensor());
      },
      {"halting_backward", "[3, 2]", "[2, 3]"});
  // Step counts that no forward with these h could give: refused before any write.
  HaltingResult bad = r;
  bad.steps = Tensor::from_indices({1, 3, 2}, {3});
  expect_error<std::invalid_argument>(
      [&] {
        halting_backward(d_h, Tensor::full({2, 3}, 1.0f), Tensor::full({1}, 1.0f), h, bad,
                         Tensor());
      },
      {"halting_backward", "fwd.steps[1] = 3"});
  EXPECT_EQ(d_h.to_vector(), std::vector<float>(6, 1.0f))
      << "a throwing backward must not have written its gradient";
}

}  // namespace
}  // namespace mare::test
