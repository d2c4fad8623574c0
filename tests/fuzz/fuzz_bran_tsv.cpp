// libFuzzer target: the BRAN TSV loader and writer (see fuzz_common.h for the rule).
#include <cstdint>
#include <string_view>

#include "experiments/data/bran_tsv.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mare::data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto docs = mare_fuzz_parse([&] { return parse_bran_tsv(input, "fuzz.tsv"); });
  if (!docs) return 0;
  mare_fuzz_round_trip("bran-tsv", [&] {
    const std::string once = write_bran_tsv(*docs);
    const std::string twice = write_bran_tsv(parse_bran_tsv(once, "rewritten.tsv"));
    MARE_FUZZ_CHECK(once == twice);
  });
  return 0;
}
