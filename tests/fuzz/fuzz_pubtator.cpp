// libFuzzer target: the PubTator loader and writer (see fuzz_common.h for the rule).
#include <cstdint>
#include <string_view>

#include "experiments/data/pubtator.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mare::data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto docs = mare_fuzz_parse([&] { return parse_pubtator(input, "fuzz.pubtator"); });
  if (!docs) return 0;
  mare_fuzz_round_trip("pubtator", [&] {
    const std::string once = write_pubtator(*docs);
    const std::string twice = write_pubtator(parse_pubtator(once, "rewritten.pubtator"));
    MARE_FUZZ_CHECK(once == twice);
  });
  return 0;
}
