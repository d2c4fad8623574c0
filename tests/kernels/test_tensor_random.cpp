// Tensor basics and the Philox generator: known-answer vectors from the
// Random123 distribution, the documented counter layout, and fills.
#include <gtest/gtest.h>

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "kernels/tensor.h"

namespace mare {
namespace {

TEST(Tensor, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::zeros({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.f32()) % 64, 0u);
  }
}

TEST(Tensor, ShapesAndChecks) {
  Tensor t = Tensor::zeros({2, 3, 5});
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.shape().str(), "[2, 3, 5]");
  EXPECT_THROW(Tensor::zeros({1, 2, 3, 4, 5}), ShapeError);
  EXPECT_THROW(t.reshape({4, 8}), ShapeError);
  EXPECT_EQ(t.reshape({6, 5}).shape(), Shape({6, 5}));
  try {
    check_shape(t, {2, 3, 4}, "thing");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "thing: got shape [2, 3, 5], expected [2, 3, 4]");
  }
  EXPECT_THROW(Tensor::from_vector({1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(t.i32(), std::invalid_argument);
}

TEST(Tensor, CopiesAreExplicit) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3});
  Tensor shallow = a, deep = a.clone();
  a.f32()[0] = 9;
  EXPECT_EQ(shallow.f32()[0], 9);
  EXPECT_EQ(deep.f32()[0], 1);
  Tensor c = Tensor::zeros({3});
  c.copy_from(a);
  EXPECT_EQ(c.to_vector(), a.to_vector());
  EXPECT_THROW(c.copy_from(Tensor::zeros({4})), ShapeError);
}

TEST(Tensor, ItemsReadsScalarsAndNaNForUndefined) {
  const std::vector<float> v =
      Tensor::items({Tensor::full({1}, 2.5f), Tensor(), Tensor::from_vector({-1.0f}, {1, 1})});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 2.5f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -1.0f);
  EXPECT_THROW(Tensor::items({Tensor::zeros({2})}), ShapeError);
  EXPECT_THROW(Tensor::items({Tensor::from_indices({1}, {1})}), std::invalid_argument);
}

TEST(Tensor, CudaWithoutBackendIsAClearError) {
  if (cuda_compiled()) GTEST_SKIP() << "CUDA backend compiled in";
  EXPECT_THROW(Tensor::zeros({2}, Device::cuda), std::runtime_error);
}

// Known-answer tests from Random123's kat_vectors (philox4x32, 10 rounds).
TEST(Philox, KnownAnswers) {
  using P = r123::Philox4x32_R<10>;
  P rng;
  P::ctr_type c0 = {{0, 0, 0, 0}};
  P::key_type k0 = {{0, 0}};
  auto r0 = rng(c0, k0);
  EXPECT_EQ(r0[0], 0x6627e8d5u);
  EXPECT_EQ(r0[1], 0xe169c58du);
  EXPECT_EQ(r0[2], 0xbc57ac4cu);
  EXPECT_EQ(r0[3], 0x9b00dbd8u);
  P::ctr_type c1 = {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
  P::key_type k1 = {{0xa4093822, 0x299f31d0}};
  auto r1 = rng(c1, k1);
  EXPECT_EQ(r1[0], 0xd16cfe09u);
  EXPECT_EQ(r1[1], 0x94fdccebu);
  EXPECT_EQ(r1[2], 0x5001e420u);
  EXPECT_EQ(r1[3], 0x24126ea1u);
}

TEST(Philox, CounterLayoutAsDocumented) {
  // key = {lo32(seed), hi32(seed)}, counter = {lo32(block), hi32(block), stream, 0}
  uint64_t seed = 0x0123456789abcdefull, block = 0x00000002fffffffeull;
  uint32_t stream = 77;
  using P = r123::Philox4x32_R<10>;
  P::ctr_type c = {{0xfffffffeu, 0x2u, stream, 0u}};
  P::key_type k = {{0x89abcdefu, 0x01234567u}};
  auto want = P()(c, k);
  auto got = philox_block(seed, stream, block);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], want[i]);
  // Element g of a uniform fill reads word g % 4 of block g / 4.
  uint64_t g = block * 4 + 3;
  EXPECT_EQ(philox_uniform(seed, stream, g), static_cast<float>(want[3] >> 8) * 0x1.0p-24f);
}

// The batched uniforms (dropout masks, fills) are the single-block function's words:
// any start (the word within a block; the last start's sixteen-block batches carry
// the counter's low word into its high one), any length (partial batches).
TEST(Philox, BatchedUniformsAreTheSingleBlockWords) {
  const uint64_t seed = 0x9e3779b97f4a7c15ull;
  const uint32_t stream = kStreamDropoutBase + 3;
  for (uint64_t first : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{4 * 0xfffffffeull + 2}}) {
    for (int64_t n : {0, 1, 2, 5, 63, 64, 65, 130, 1000}) {
      std::vector<float> u(static_cast<size_t>(n) + 1, -1.0f);
      philox_uniforms(seed, stream, first, n, u.data());
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(u[static_cast<size_t>(j)],
                  philox_uniform(seed, stream, first + static_cast<uint64_t>(j)))
            << "first " << first << " n " << n << " j " << j;
      EXPECT_EQ(u.back(), -1.0f) << "wrote past " << n << " uniforms";
    }
  }
  // A dropout mask over batches of 256 within chunks (21 000 elements: three chunks
  // of the op's split, on two threads): element j keeps, scaled by 1 / (1 - p), when
  // the uniform of offset + j is >= p.
  Tensor x = Tensor::empty({30, 700});
  fill_uniform(x, 4, 1, -1.0f, 1.0f);
  const int threads_before = threads();
  set_threads(2);
  const DropoutResult r = dropout_forward(x, 0.25f, seed, stream, 5);
  set_threads(threads_before);
  for (int64_t j = 0; j < x.numel(); ++j) {
    const float keep =
        philox_uniform(seed, stream, 5 + static_cast<uint64_t>(j)) >= 0.25f ? 1.0f / 0.75f : 0.0f;
    ASSERT_EQ(r.mask.f32()[j], keep) << "element " << j;
    ASSERT_EQ(r.out.f32()[j], x.f32()[j] * keep) << "element " << j;
  }
  // A fill of a Bernoulli mask reads the same words.
  Tensor bern = Tensor::empty({77});
  fill_bernoulli(bern, seed, stream, 0.3f, 9);
  for (int j = 0; j < 77; ++j)
    EXPECT_EQ(bern.f32()[j],
              philox_uniform(seed, stream, 9 + static_cast<uint64_t>(j)) < 0.3f ? 1.0f : 0.0f);
}

TEST(Philox, FillsAreReproducibleAndOffsetsCompose) {
  Tensor a = Tensor::empty({10}), b = Tensor::empty({10}), tail = Tensor::empty({4});
  fill_uniform(a, 5, 3, -1, 1);
  fill_uniform(b, 5, 3, -1, 1);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  fill_uniform(tail, 5, 3, -1, 1, 6);  // elements 6..9 of the same stream
  for (int j = 0; j < 4; ++j) EXPECT_EQ(tail.f32()[j], a.f32()[6 + j]);
  Tensor other = Tensor::empty({10});
  fill_uniform(other, 5, 4, -1, 1);  // another stream differs
  EXPECT_NE(other.to_vector(), a.to_vector());
}

TEST(Philox, DistributionsHaveTheRightMoments) {
  const int n = 200000;
  Tensor u = Tensor::empty({n}), z = Tensor::empty({n}), bern = Tensor::empty({n});
  fill_uniform(u, 1, 1, 0, 1);
  fill_normal(z, 1, 2, 0, 1);
  fill_bernoulli(bern, 1, 3, 0.3f);
  double su = 0, sz = 0, sz2 = 0, sb = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(u.f32()[i], 0.0f);
    ASSERT_LT(u.f32()[i], 1.0f);
    ASSERT_TRUE(std::isfinite(z.f32()[i]));
    su += u.f32()[i];
    sz += z.f32()[i];
    sz2 += z.f32()[i] * z.f32()[i];
    sb += bern.f32()[i];
  }
  // 5 standard errors: these fail by chance with probability ~1e-6.
  EXPECT_NEAR(su / n, 0.5, 5 * 0.2887 / std::sqrt(n));
  EXPECT_NEAR(sz / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(sz2 / n, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(sb / n, 0.3, 5 * std::sqrt(0.21 / n));
}

}  // namespace
}  // namespace mare
