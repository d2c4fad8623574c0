// The device side of kernels/random.h: the same Philox 4x32-10 blocks and the
// same mapping from global index to draw, so a (seed, stream, index) gives the
// same bits on the host and on the GPU. Used by random.cu (fills) and
// elementwise.cu (dropout masks).
#pragma once

#include <cuda_runtime.h>
// Random123 needs CUDART_VERSION (from cuda_runtime.h) before its headers.
#include <Random123/philox.h>

#include <cstdint>

namespace mare::cuda {

__device__ inline uint32_t philox_word(uint64_t seed, uint32_t stream, uint64_t block, int lane) {
  r123::Philox4x32_R<10> rng;
  r123::Philox4x32_R<10>::ctr_type c = {
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), stream, 0u}};
  r123::Philox4x32_R<10>::key_type k = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  return rng(c, k)[lane];
}

// 24-bit uniform in [0, 1): word g % 4 of block g / 4 (exact on every device).
__device__ inline float philox_uniform(uint64_t seed, uint32_t stream, uint64_t g) {
  uint32_t w = philox_word(seed, stream, g / 4, static_cast<int>(g % 4));
  return static_cast<float>(w >> 8) * 0x1.0p-24f;
}

// Standard normal: words 2(g%2), 2(g%2)+1 of block g / 2, Box–Muller cosine
// branch in double, rounded to float (kernels/random.cpp, same expression).
__device__ inline float philox_normal(uint64_t seed, uint32_t stream, uint64_t g) {
  r123::Philox4x32_R<10> rng;
  uint64_t block = g / 2;
  r123::Philox4x32_R<10>::ctr_type c = {
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), stream, 0u}};
  r123::Philox4x32_R<10>::key_type k = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  auto w = rng(c, k);
  int lane = static_cast<int>(g % 2) * 2;
  double u1 = (static_cast<double>(w[lane] >> 8) + 1.0) * 0x1.0p-24;
  double u2 = static_cast<double>(w[lane + 1] >> 8) * 0x1.0p-24;
  constexpr double kTwoPi = 2.0 * 3.141592653589793;  // 2.0 * std::numbers::pi
  return static_cast<float>(__dmul_rn(sqrt(__dmul_rn(-2.0, log(u1))), cos(__dmul_rn(kTwoPi, u2))));
}

}  // namespace mare::cuda
