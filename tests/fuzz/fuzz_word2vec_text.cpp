// libFuzzer target: the word2vec text loader and writer (see fuzz_common.h for the rule).
#include <cstdint>
#include <string_view>

#include "experiments/data/word2vec.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mare::data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto e = mare_fuzz_parse([&] { return parse_word2vec_text(input, "fuzz.txt"); });
  if (!e) return 0;
  MARE_FUZZ_CHECK(e->values.size() == static_cast<std::size_t>(e->size()) * e->dim);
  mare_fuzz_round_trip("word2vec text", [&] {
    const std::string once = write_word2vec_text(*e);
    MARE_FUZZ_CHECK(write_word2vec_text(parse_word2vec_text(once, "rewritten.txt")) == once);
  });
  return 0;
}
