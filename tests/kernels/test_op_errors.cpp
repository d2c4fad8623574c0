// Bad input to the ops' CPU entry points: each case must throw the documented
// exception type with a message naming the op (and, for shape errors, both
// shapes), and never crash, read or write out of bounds, or half-apply a
// backward before throwing. The half-applied check runs with non-zero cotangents into
// gradients that already hold non-zero values: a backward that wrote (or accumulated)
// part of its result before throwing changes them, where zeros into zeros would not.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

// Runs `fn`, expects it to throw E, and every one of `parts` in the message.
template <typename E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception naming " << (parts.empty() ? "" : parts[0]);
  } catch (const E& e) {
    std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << p << " in: " << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

void expect_unchanged(const Tensor& t, const std::vector<float>& before) {
  EXPECT_EQ(t.to_vector(), before) << "a throwing backward must not have written its gradient";
}

// A gradient buffer or cotangent with no zero entry (values in ±[0.5, 1.5]), so any
// write or accumulation into or from it shows.
Tensor nonzero(const Shape& shape, uint64_t seed) {
  std::vector<float> v = random_tensor(shape, seed).to_vector();
  for (float& x : v) x += x < 0 ? -0.5f : 0.5f;
  return Tensor::from_vector(v, shape);
}

// A loss's gradient (and the ponder cost's) is a [1] tensor on the device of the
// other arguments, which the GPU kernels read there; anything else is refused before
// a gradient is touched.
TEST(OpInputErrors, LossGradientsAreOneElementTensors) {
  const Tensor logits = random_tensor({3, 4}, 1), targets = Tensor::from_indices({0, 3, -1}, {3});
  const CrossEntropyResult r = cross_entropy_forward(logits, targets);
  Tensor d_logits = nonzero({3, 4}, 2);
  const std::vector<float> before = d_logits.to_vector();
  expect_error<ShapeError>(
      [&] { cross_entropy_backward(d_logits, Tensor::full({2}, 1.0f), r.probs, targets); },
      {"cross_entropy_backward: d_loss", "[2]", "[1]"});
  expect_error<std::invalid_argument>(
      [&] { cross_entropy_backward(d_logits, Tensor(), r.probs, targets); },
      {"cross_entropy_backward: d_loss", "undefined"});
  expect_unchanged(d_logits, before);
  const Tensor pred = random_tensor({2, 3}, 3), target = random_tensor({2, 3}, 4);
  Tensor d_pred = nonzero({2, 3}, 5), d_target = nonzero({2, 3}, 6);
  const std::vector<float> pred_before = d_pred.to_vector();
  expect_error<ShapeError>(
      [&] {
        mse_backward(d_pred, d_target, Tensor::full({1, 1}, 1.0f), pred, target);
      },
      {"mse_backward: d_loss", "[1, 1]", "[1]"});
  expect_unchanged(d_pred, pred_before);
  const Tensor h = Tensor::full({2, 3}, 0.5f);
  const HaltingResult fwd = halting_forward(h, Tensor(), 2);
  Tensor d_h = nonzero({2, 3}, 7);
  const std::vector<float> h_before = d_h.to_vector();
  expect_error<ShapeError>(
      [&] { halting_backward(d_h, Tensor(), Tensor::full({3}, 1.0f), h, fwd, Tensor()); },
      {"halting_backward: d_ponder", "[3]", "[1]"});
  expect_unchanged(d_h, h_before);
}

TEST(OpInputErrors, ConcatForwardChecksRanksBeforeShapes) {
  // A lower-rank piece: the axis (1) lies past its last dimension.
  std::vector<Tensor> xs = {random_tensor({2, 3}, 1), random_tensor({3}, 2)};
  expect_error<ShapeError>([&] { concat_forward(xs, 1); }, {"concat_forward", "[2, 3]", "[3]"});
  expect_error<ShapeError>([&] { concat_forward(xs, -1); }, {"concat_forward", "[2, 3]", "[3]"});
  // A higher-rank piece and a rank-1 first piece.
  std::vector<Tensor> ys = {random_tensor({4}, 3), random_tensor({4, 2}, 4)};
  expect_error<ShapeError>([&] { concat_forward(ys, 0); }, {"concat_forward", "[4]", "[4, 2]"});
  // Extents outside the axis still compared.
  std::vector<Tensor> zs = {random_tensor({2, 3}, 5), random_tensor({3, 3}, 6)};
  expect_error<ShapeError>([&] { concat_forward(zs, 1); }, {"concat_forward", "[2, 3]", "[3, 3]"});
  // An undefined piece.
  std::vector<Tensor> us = {random_tensor({2, 3}, 7), Tensor()};
  expect_error<std::invalid_argument>([&] { concat_forward(us, 1); },
                                      {"concat_forward", "piece 1", "undefined"});
  std::vector<Tensor> u0 = {Tensor(), random_tensor({2, 3}, 8)};
  expect_error<std::invalid_argument>([&] { concat_forward(u0, 1); },
                                      {"concat_forward", "piece 0", "undefined"});
}

TEST(OpInputErrors, EmbeddingBackwardRangeChecksIds) {
  Tensor d_table = nonzero({4, 2}, 31);
  Tensor d_out = nonzero({3, 2}, 32);
  const std::vector<float> before = d_table.to_vector();
  // The same check and message as embedding_forward, with this op's name.
  expect_error<std::out_of_range>(
      [&] {
        embedding_backward(d_table, d_out, Tensor::from_indices({1, 2, 4}, {3}));
      },
      {"embedding_backward", "id 4", "position 2", "4 rows"});
  expect_unchanged(d_table, before);
  expect_error<std::out_of_range>(
      [&] {
        embedding_backward(d_table, d_out, Tensor::from_indices({-1, 0, 0}, {3}));
      },
      {"embedding_backward", "id -1", "position 0"});
  expect_unchanged(d_table, before);
  // Forward gives the same message for the same id.
  expect_error<std::out_of_range>(
      [&] {
        embedding_forward(random_tensor({4, 2}, 9), Tensor::from_indices({1, 2, 4}, {3}));
      },
      {"embedding_forward", "id 4", "position 2", "4 rows"});
  // Shapes and dtypes.
  expect_error<ShapeError>(
      [&] {
        embedding_backward(d_table, Tensor::zeros({3, 3}), Tensor::from_indices({0, 1, 2}, {3}));
      },
      {"embedding_backward", "[3, 3]", "[3]"});
  Tensor flat = Tensor::zeros({8});
  expect_error<ShapeError>(
      [&] {
        embedding_backward(flat, d_out, Tensor::from_indices({0, 1, 2}, {3}));
      },
      {"embedding_backward", "[8]"});
  expect_error<std::invalid_argument>(
      [&] { embedding_backward(d_table, d_out, Tensor::zeros({3})); },
      {"embedding_backward", "i32"});
  // In-range ids still accumulate: rows 1 (twice) and 3 of d_out's rows 0, 1 and 2.
  embedding_backward(d_table, d_out, Tensor::from_indices({1, 1, 3}, {3}));
  const std::vector<float> g = d_out.to_vector();
  std::vector<float> want = before;
  for (int c = 0; c < 2; ++c) {
    want[1 * 2 + c] += g[0 * 2 + c];
    want[1 * 2 + c] += g[1 * 2 + c];
    want[3 * 2 + c] += g[2 * 2 + c];
  }
  EXPECT_EQ(d_table.to_vector(), want);
}

TEST(OpInputErrors, MaxBackwardChecksArgmax) {
  Tensor d_x = nonzero({2, 3}, 33);
  Tensor d_out = nonzero({2}, 34);
  const std::vector<float> before = d_x.to_vector();
  // An argmax past the axis (3 entries) or negative.
  expect_error<std::out_of_range>(
      [&] {
        max_backward(d_x, d_out, Tensor::from_indices({0, 3}, {2}), 1);
      },
      {"max_backward", "argmax 3", "position 1", "[2, 3]"});
  expect_unchanged(d_x, before);
  expect_error<std::out_of_range>(
      [&] {
        max_backward(d_x, d_out, Tensor::from_indices({-1, 0}, {2}), -1);
      },
      {"max_backward", "argmax -1", "position 0"});
  expect_unchanged(d_x, before);
  // Along axis 0 (2 entries) the value 2 is out of range too.
  expect_error<std::out_of_range>(
      [&] {
        max_backward(d_x, nonzero({3}, 35), Tensor::from_indices({0, 1, 2}, {3}), 0);
      },
      {"max_backward", "argmax 2", "position 2"});
  expect_unchanged(d_x, before);
  // Argmax of the wrong dtype or shape.
  expect_error<std::invalid_argument>([&] { max_backward(d_x, d_out, Tensor::zeros({2}), 1); },
                                      {"max_backward", "argmax", "i32"});
  expect_error<ShapeError>(
      [&] {
        max_backward(d_x, d_out, Tensor::from_indices({0, 0, 0}, {3}), 1);
      },
      {"max_backward", "[3]", "[2]"});
  // Valid argmax still routes the gradient: row 0 to column 2, row 1 to column 0.
  max_backward(d_x, d_out, Tensor::from_indices({2, 0}, {2}), 1);
  std::vector<float> want = before;
  want[0 * 3 + 2] += d_out.to_vector()[0];
  want[1 * 3 + 0] += d_out.to_vector()[1];
  EXPECT_EQ(d_x.to_vector(), want);
}

TEST(OpInputErrors, SplitBackwardChecksPieces) {
  Tensor d_x = nonzero({2, 6, 3}, 36);
  const std::vector<float> before = d_x.to_vector();
  auto run = [&](std::vector<Tensor> pieces) {
    return [&d_x, pieces] { split_backward(d_x, pieces, 1); };
  };
  uint64_t seed = 40;
  auto piece = [&seed](const Shape& shape) { return nonzero(shape, seed++); };
  // An undefined piece: named, not "axis out of range for rank 0".
  expect_error<std::invalid_argument>(run({piece({2, 1, 3}), Tensor(), piece({2, 3, 3})}),
                                      {"split_backward", "piece 1", "undefined"});
  expect_unchanged(d_x, before);
  // A piece that differs from d_x outside the axis.
  expect_error<ShapeError>(run({piece({2, 1, 3}), piece({3, 2, 3}), piece({2, 3, 3})}),
                           {"split_backward", "[3, 2, 3]", "[2, 6, 3]"});
  expect_unchanged(d_x, before);
  expect_error<ShapeError>(run({piece({2, 1, 3}), piece({2, 2, 4}), piece({2, 3, 3})}),
                           {"split_backward", "[2, 2, 4]", "[2, 6, 3]"});
  expect_unchanged(d_x, before);
  // A piece of another rank.
  expect_error<ShapeError>(run({piece({2, 3}), piece({2, 3, 3})}),
                           {"split_backward", "[2, 3]", "[2, 6, 3]"});
  expect_unchanged(d_x, before);
  // Pieces that do not cover the axis, short or long.
  expect_error<ShapeError>(run({piece({2, 1, 3}), piece({2, 2, 3})}),
                           {"split_backward", "cover 3 of 6", "[2, 6, 3]"});
  expect_unchanged(d_x, before);
  expect_error<ShapeError>(run({piece({2, 4, 3}), piece({2, 4, 3})}),
                           {"split_backward", "cover 8 of 6"});
  expect_unchanged(d_x, before);
  // An undefined d_x is skipped, whatever the pieces.
  Tensor none;
  EXPECT_NO_THROW(split_backward(none, {Tensor()}, 1));
}

TEST(OpInputErrors, ConcatBackwardNeedsEveryPiece) {
  // As documented in indexing.h: an undefined piece throws, since its extent
  // along the axis is what places the later pieces.
  Tensor d_out = nonzero({2, 5}, 50);
  std::vector<Tensor> d_xs = {nonzero({2, 3}, 51), Tensor()};
  const std::vector<float> before0 = d_xs[0].to_vector();
  expect_error<std::invalid_argument>([&] { concat_backward(d_xs, d_out, 1); },
                                      {"concat_backward", "piece 1", "undefined"});
  expect_unchanged(d_xs[0], before0);
  // Pieces that do not fit d_out outside the axis, or do not cover it.
  std::vector<Tensor> wide = {Tensor::zeros({3, 3}), Tensor::zeros({3, 2})};
  expect_error<ShapeError>([&] { concat_backward(wide, d_out, 1); },
                           {"concat_backward", "[3, 3]", "[2, 5]"});
  std::vector<Tensor> low = {Tensor::zeros({2, 3}), Tensor::zeros({2})};
  expect_error<ShapeError>([&] { concat_backward(low, d_out, 1); },
                           {"concat_backward", "[2]", "[2, 5]"});
  std::vector<Tensor> short_pieces = {nonzero({2, 3}, 52), nonzero({2, 1}, 53)};
  const std::vector<float> short0 = short_pieces[0].to_vector(),
                           short1 = short_pieces[1].to_vector();
  expect_error<ShapeError>([&] { concat_backward(short_pieces, d_out, 1); },
                           {"concat_backward", "cover 4 of 5"});
  expect_unchanged(short_pieces[0], short0);
  expect_unchanged(short_pieces[1], short1);
  std::vector<Tensor> any = {Tensor::zeros({2, 5})};
  expect_error<std::invalid_argument>([&] { concat_backward(any, Tensor(), 1); },
                                      {"concat_backward", "d_out", "undefined"});
  // Defined pieces that fit still receive their slices.
  std::vector<Tensor> ok = {Tensor::zeros({2, 3}), Tensor::zeros({2, 2})};
  concat_backward(ok, d_out, 1);
  const std::vector<float> g = d_out.to_vector();
  EXPECT_EQ(ok[0].to_vector(), (std::vector<float>{g[0], g[1], g[2], g[5], g[6], g[7]}));
  EXPECT_EQ(ok[1].to_vector(), (std::vector<float>{g[3], g[4], g[8], g[9]}));
}

TEST(OpInputErrors, Conv1dBackwardChecksWeightAgainstX) {
  Tensor x = random_tensor({1, 4, 3}, 10);
  Tensor d_x = nonzero({1, 4, 3}, 54), d_bias = nonzero({5}, 55);
  // w expects 2 input channels, x has 3.
  Tensor w = random_tensor({3, 2, 5}, 11), d_w = nonzero({3, 2, 5}, 56);
  const std::vector<float> bx = d_x.to_vector(), bw = d_w.to_vector(), bb = d_bias.to_vector();
  expect_error<ShapeError>(
      [&] {
        conv1d_backward(d_x, d_w, d_bias, nonzero({1, 4, 5}, 57), x, w);
      },
      {"conv1d_backward", "[3, 2, 5]", "[1, 4, 3]"});
  expect_unchanged(d_x, bx);
  expect_unchanged(d_w, bw);
  expect_unchanged(d_bias, bb);
  // Ranks, and the odd kernel that forward requires.
  Tensor none;
  expect_error<ShapeError>(
      [&] {
        conv1d_backward(d_x, none, none, Tensor::zeros({1, 4, 5}), x, Tensor::zeros({3, 3}));
      },
      {"conv1d_backward", "w", "[3, 3]"});
  expect_error<ShapeError>(
      [&] {
        conv1d_backward(none, none, none, Tensor::zeros({4, 5}), Tensor::zeros({4, 3}),
                        random_tensor({3, 3, 5}, 12));
      },
      {"conv1d_backward", "x", "[4, 3]"});
  expect_error<std::invalid_argument>(
      [&] {
        conv1d_backward(d_x, none, none, Tensor::zeros({1, 4, 5}), x, Tensor::zeros({2, 3, 5}));
      },
      {"conv1d_backward", "odd"});
}

TEST(OpInputErrors, DepthwiseConv1dBackwardChecksWeightAgainstX) {
  Tensor x = random_tensor({1, 4, 3}, 13);
  Tensor d_x = nonzero({1, 4, 3}, 58), d_bias = nonzero({3}, 59);
  Tensor w = random_tensor({3, 5}, 14), d_w = nonzero({3, 5}, 60);
  const std::vector<float> bx = d_x.to_vector(), bw = d_w.to_vector(), bb = d_bias.to_vector();
  expect_error<ShapeError>(
      [&] {
        depthwise_conv1d_backward(d_x, d_w, d_bias, nonzero({1, 4, 3}, 61), x, w);
      },
      {"depthwise_conv1d_backward", "[3, 5]", "[1, 4, 3]"});
  expect_unchanged(d_x, bx);
  expect_unchanged(d_w, bw);
  expect_unchanged(d_bias, bb);
  Tensor none;
  expect_error<ShapeError>(
      [&] {
        depthwise_conv1d_backward(d_x, none, none, Tensor::zeros({1, 4, 3}), x,
                                  Tensor::zeros({3, 3, 1}));
      },
      {"depthwise_conv1d_backward", "w", "[3, 3, 1]"});
  expect_error<ShapeError>(
      [&] {
        depthwise_conv1d_backward(none, none, none, Tensor::zeros({4, 3}), Tensor::zeros({4, 3}),
                                  Tensor::zeros({3, 3}));
      },
      {"depthwise_conv1d_backward", "x", "[4, 3]"});
  expect_error<std::invalid_argument>(
      [&] {
        depthwise_conv1d_backward(d_x, none, none, Tensor::zeros({1, 4, 3}), x,
                                  Tensor::zeros({2, 3}));
      },
      {"depthwise_conv1d_backward", "odd"});
}

TEST(OpInputErrors, BatchedMatmulBackwardChecksB) {
  Tensor a = random_tensor({2, 3, 4}, 15), d_a = nonzero({2, 3, 4}, 62);
  const std::vector<float> ba = d_a.to_vector();
  Tensor none;
  // b with a smaller batch than a (d_a = d_out·bᵀ would be computable for batch 0).
  Tensor b1 = random_tensor({1, 4, 5}, 16), d_b1 = nonzero({1, 4, 5}, 63);
  const std::vector<float> bb1 = d_b1.to_vector();
  expect_error<ShapeError>(
      [&] {
        batched_matmul_backward(d_a, d_b1, nonzero({2, 3, 5}, 64), a, b1);
      },
      {"batched_matmul_backward", "[2, 3, 4]", "[1, 4, 5]"});
  expect_unchanged(d_a, ba);
  expect_unchanged(d_b1, bb1);
  // b of rank 2, and rank 4.
  expect_error<ShapeError>(
      [&] {
        batched_matmul_backward(d_a, none, Tensor::zeros({2, 3, 5}), a, Tensor::zeros({4, 5}));
      },
      {"batched_matmul_backward", "b", "[4, 5]"});
  expect_error<ShapeError>(
      [&] {
        batched_matmul_backward(d_a, none, Tensor::zeros({2, 3, 5}), a,
                                Tensor::zeros({2, 4, 5, 1}));
      },
      {"batched_matmul_backward", "b", "[2, 4, 5, 1]"});
  // matmul_backward: ranks too.
  Tensor d_m = nonzero({3, 4}, 65);
  const std::vector<float> bm = d_m.to_vector();
  expect_error<ShapeError>(
      [&] {
        matmul_backward(d_m, none, nonzero({3, 5}, 66), random_tensor({3, 4}, 67),
                        random_tensor({2, 4, 5}, 68));
      },
      {"matmul_backward", "b", "[2, 4, 5]"});
  expect_unchanged(d_m, bm);
}

}  // namespace
}  // namespace mare::test
