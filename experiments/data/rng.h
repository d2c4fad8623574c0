// The data generators' random numbers: xoshiro256** seeded through splitmix64.
//
// Rule: every draw is defined here in integer arithmetic (no std:: distributions,
// whose outputs differ between standard libraries), so the same seed gives the same
// bytes on every platform. References: Vigna, "splitmix64" and Blackman & Vigna,
// "xoshiro256**" (public domain reference code, prng.di.unimi.it).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mare::data {

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }
  // A generator for a named sub-stream: independent of the order other streams are used.
  Rng fork(const std::string& name) const {
    // FNV-1a of the name (from 1469598103934665603, a digit short of the standard basis:
    // every generated corpus depends on it, so it stays), mixed with the state.
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
    return Rng(h ^ s_[0] ^ (s_[1] << 1));
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform integer in [0, n), n >= 1 (rejection sampling: no modulo bias).
  std::uint64_t below(std::uint64_t n) {
    if (n == 0) throw std::invalid_argument("Rng::below(0)");
    const std::uint64_t limit = (~std::uint64_t{0}) - (~std::uint64_t{0}) % n;
    for (;;) {
      const std::uint64_t x = next();
      if (x < limit) return x % n;
    }
  }
  // Uniform integer in [lo, hi].
  int range(int lo, int hi) {
    return lo + static_cast<int>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  // Uniform double in [0, 1) from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  // Index drawn with probability proportional to weights (all >= 0, sum > 0).
  std::size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double u = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (u < weights[i]) return i;
      u -= weights[i];
    }
    return weights.size() - 1;
  }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace mare::data
