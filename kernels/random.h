// Counter-based random numbers: Philox 4x32-10 (Random123), keyed by
// (seed, stream, counter), so every draw can be recomputed anywhere — on the
// host or by a CUDA thread — from its indices alone.
//
// Counter layout (the CUDA backend must use exactly this):
//   key     = { lo32(seed), hi32(seed) }
//   counter = { lo32(block), hi32(block), stream, 0 }
//   philox4x32_10(counter, key) -> 4 words w[0..3]
// A fill of n elements starting at element offset `o` gives element j the global
// index g = o + j and reads:
//   uniform, bernoulli: word w[g % 4] of block g / 4;
//                       u = (w >> 8) * 2^-24, in [0, 1) with 24 random bits;
//                       bernoulli(p) is 1 when u < p.
//   normal:             words w[2(g%2)] and w[2(g%2)+1] of block g / 2;
//                       u1 = ((w_a >> 8) + 1) * 2^-24 in (0, 1], u2 = (w_b >> 8) * 2^-24,
//                       z = sqrt(-2 ln u1) * cos(2 pi u2), evaluated in double and
//                       rounded to float (Box–Muller, cosine branch only).
// Uniform and Bernoulli draws are exact integer arithmetic and bit-identical on
// every device; normal draws are identical wherever double log/cos agree to the
// last bit before rounding to float.
//
// Stream numbers used by the harness are listed in kStream* below.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/tensor.h"

namespace mare {

// Streams reserved by the harness. Parameter i (in registration order) uses
// kStreamParamBase + i; dropout call sites use kStreamDropoutBase + site id.
inline constexpr uint32_t kStreamData = 1;
inline constexpr uint32_t kStreamShuffle = 2;
inline constexpr uint32_t kStreamDropoutBase = 1u << 16;
inline constexpr uint32_t kStreamParamBase = 1u << 24;

std::array<uint32_t, 4> philox_block(uint64_t seed, uint32_t stream, uint64_t block);

// 24-bit uniform in [0, 1) for global index g (see the layout above).
float philox_uniform(uint64_t seed, uint32_t stream, uint64_t g);
// The uniforms of global indices first .. first + n - 1: out[j] is
// philox_uniform(seed, stream, first + j), each block computed once for its four
// words, sixteen consecutive blocks at a time in a loop the compiler vectorises (a
// fill or a dropout mask: a quarter of the Philox work, in SIMD lanes).
void philox_uniforms(uint64_t seed, uint32_t stream, uint64_t first, int64_t n, float* out);
// Standard normal for global index g.
float philox_normal(uint64_t seed, uint32_t stream, uint64_t g);

// Fills: element j of t receives the draw at global index offset + j.
void fill_uniform(Tensor& t, uint64_t seed, uint32_t stream, float lo, float hi,
                  uint64_t offset = 0);
void fill_normal(Tensor& t, uint64_t seed, uint32_t stream, float mean, float stddev,
                 uint64_t offset = 0);
void fill_bernoulli(Tensor& t, uint64_t seed, uint32_t stream, float p, uint64_t offset = 0);

// A small sequential helper for host-side sampling (data order, synthetic
// tasks): draws consecutive global indices of one (seed, stream).
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint32_t stream) : seed_(seed), stream_(stream) {}
  float uniform() { return philox_uniform(seed_, stream_, next_++); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Integer in [0, n), by 32-bit multiply-shift (bias below 2^-32 * n).
  uint32_t below(uint32_t n);
  uint64_t position() const { return next_; }
  // Continues from global index `position` (a resumed run picks up where it was).
  void seek(uint64_t position) { next_ = position; }

 private:
  uint64_t seed_;
  uint32_t stream_;
  uint64_t next_ = 0;
};

}  // namespace mare
