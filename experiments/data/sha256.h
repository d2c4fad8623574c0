// SHA-256 (FIPS 180-4): the checksums the corpus releases are verified with.
//
// A plain, readable implementation (one 64-byte block at a time); the corpora are a few
// megabytes, read once per load.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mare::data {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest as 64 lowercase hex digits; the object must not be updated afterwards.
  std::string hex();

 private:
  void block(const unsigned char* p);
  std::array<uint32_t, 8> h_;
  unsigned char buffer_[64];
  std::size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
};

// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace mare::data
