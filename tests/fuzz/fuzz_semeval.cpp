// libFuzzer target: the SemEval 2018 Task 7 XML and relation loaders and writers. The
// input is "XML" or "XML\0RELATIONS" (see fuzz_common.h for the rule).
#include <cstdint>
#include <string_view>

#include "experiments/data/semeval.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mare::data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view xml = input.substr(0, nul);
  const auto docs = mare_fuzz_parse([&] {
    auto parsed = parse_semeval_xml(xml, "fuzz.xml");
    if (nul != std::string_view::npos)
      parse_semeval_relations(parsed, input.substr(nul + 1), "fuzz.relations.txt");
    return parsed;
  });
  if (!docs) return 0;
  mare_fuzz_round_trip("semeval", [&] {
    const std::string x1 = write_semeval_xml(*docs);
    const std::string r1 = write_semeval_relations(*docs);
    auto again = parse_semeval_xml(x1, "rewritten.xml");
    if (!r1.empty()) parse_semeval_relations(again, r1, "rewritten.relations.txt");
    MARE_FUZZ_CHECK(write_semeval_xml(again) == x1);
    MARE_FUZZ_CHECK(write_semeval_relations(again) == r1);
  });
  return 0;
}
