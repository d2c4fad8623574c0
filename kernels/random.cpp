// Philox 4x32-10 fills on the host. See random.h for the counter layout.
#include "kernels/random.h"

#include <Random123/philox.h>

#ifdef MARE_WITH_CUDA
#include "kernels/backend.h"
#endif

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mare {

namespace {
// One block's four words, with the counter and key laid out as random.h says.
inline r123::Philox4x32_R<10>::ctr_type philox_words(uint64_t seed, uint32_t stream,
                                                     uint64_t block) {
  using Philox = r123::Philox4x32_R<10>;
  const Philox::ctr_type ctr = {
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), stream, 0u}};
  const Philox::key_type key = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  return Philox()(ctr, key);
}
}  // namespace

std::array<uint32_t, 4> philox_block(uint64_t seed, uint32_t stream, uint64_t block) {
  const auto r = philox_words(seed, stream, block);
  return {r[0], r[1], r[2], r[3]};
}

static inline float u24(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1.0p-24f;
}

namespace {
// kLanes consecutive blocks, word w of block + l in out[4 l + w]: philox_block's
// words, in a loop the compiler vectorises across the blocks.
constexpr int kLanes = 16;

void philox_lanes(uint64_t seed, uint32_t stream, uint64_t block, uint32_t* out) {
  for (int l = 0; l < kLanes; ++l) {
    const auto words = philox_words(seed, stream, block + static_cast<uint64_t>(l));
    for (int w = 0; w < 4; ++w) out[4 * l + w] = words[w];
  }
}
}  // namespace

float philox_uniform(uint64_t seed, uint32_t stream, uint64_t g) {
  return u24(philox_block(seed, stream, g / 4)[g % 4]);
}

void philox_uniforms(uint64_t seed, uint32_t stream, uint64_t first, int64_t n, float* out) {
  uint32_t words[4 * kLanes];
  for (int64_t j = 0; j < n;) {
    const uint64_t g = first + static_cast<uint64_t>(j);
    const int skip = static_cast<int>(g % 4);  // words of the first block before g
    philox_lanes(seed, stream, g / 4, words);
    const int64_t take = std::min<int64_t>(4 * kLanes - skip, n - j);
    for (int64_t t = 0; t < take; ++t) out[j + t] = u24(words[skip + t]);
    j += take;
  }
}

float philox_normal(uint64_t seed, uint32_t stream, uint64_t g) {
  auto w = philox_block(seed, stream, g / 2);
  int lane = static_cast<int>(g % 2) * 2;
  double u1 = (static_cast<double>(w[lane] >> 8) + 1.0) * 0x1.0p-24;
  double u2 = static_cast<double>(w[lane + 1] >> 8) * 0x1.0p-24;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// True when t is on the GPU (the fill then runs in kernels/cuda/random.cu).
static bool check_f32_on_cuda(const Tensor& t, const char* what) {
  check_defined(t, what);
  check_dtype(t, DType::f32, what);
  return t.device() == Device::cuda;
}

// A fill of a GPU tensor runs in kernels/cuda/random.cu (not counted among the
// op dispatches); a host tensor's element j gets value(offset + j).
#ifdef MARE_WITH_CUDA
#define MARE_FILL_ON_CUDA(what, call) \
  if (check_f32_on_cuda(t, what)) return cuda_backend().call
#else
#define MARE_FILL_ON_CUDA(what, call) check_f32_on_cuda(t, what)
#endif

template <class Value>
static void fill_host(Tensor& t, uint64_t offset, Value value) {
  float* p = t.f32();
  for (int64_t j = 0, n_j = t.numel(); j < n_j; ++j) p[j] = value(offset + j);
}

// Element j gets value(uniform of offset + j), the uniforms drawn a buffer at a time.
template <class Value>
static void fill_from_uniforms(Tensor& t, uint64_t seed, uint32_t stream, uint64_t offset,
                               Value value) {
  float* p = t.f32();
  for (int64_t j = 0, n_j = t.numel(); j < n_j; j += 1024) {
    const int64_t m = std::min<int64_t>(1024, n_j - j);
    philox_uniforms(seed, stream, offset + static_cast<uint64_t>(j), m, p + j);
    for (int64_t i = j; i < j + m; ++i) p[i] = value(p[i]);
  }
}

void fill_uniform(Tensor& t, uint64_t seed, uint32_t stream, float lo, float hi, uint64_t offset) {
  MARE_FILL_ON_CUDA("fill_uniform", fill_uniform(t, seed, stream, lo, hi, offset));
  fill_from_uniforms(t, seed, stream, offset, [&](float u) { return lo + (hi - lo) * u; });
}

void fill_normal(Tensor& t, uint64_t seed, uint32_t stream, float mean, float stddev,
                 uint64_t offset) {
  MARE_FILL_ON_CUDA("fill_normal", fill_normal(t, seed, stream, mean, stddev, offset));
  fill_host(t, offset, [&](uint64_t i) { return mean + stddev * philox_normal(seed, stream, i); });
}

void fill_bernoulli(Tensor& t, uint64_t seed, uint32_t stream, float prob, uint64_t offset) {
  MARE_FILL_ON_CUDA("fill_bernoulli", fill_bernoulli(t, seed, stream, prob, offset));
  fill_from_uniforms(t, seed, stream, offset, [&](float u) { return u < prob ? 1.0f : 0.0f; });
}

#undef MARE_FILL_ON_CUDA

uint32_t PhiloxStream::below(uint32_t n) {
  uint64_t g = next_++;
  uint32_t w = philox_block(seed_, stream_, g / 4)[g % 4];
  return static_cast<uint32_t>((static_cast<uint64_t>(w) * n) >> 32);
}

}  // namespace mare
