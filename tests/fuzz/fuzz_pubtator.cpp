// libFuzzer target: the PubTator loader and writer (see fuzz_common.h for the rule).
#include <cstdint>
#include <string_view>

#include "experiments/data/error.h"
#include "experiments/data/pubtator.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mare::data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const auto docs = parse_pubtator(input, "fuzz.pubtator");
    const std::string once = write_pubtator(docs);
    const std::string twice = write_pubtator(parse_pubtator(once, "rewritten.pubtator"));
    MARE_FUZZ_CHECK(once == twice);
  } catch (const DataError&) {
  }
  return 0;
}
