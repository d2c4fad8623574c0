// A model name as the registry reads it: a base model followed by `+switch` or
// `+key=value` parts (SPEC §4: `utre+ngram+transition+cpd`, `ntcre+cpd+alloc=sorted`).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace mare {

struct ModelSpec {
  std::string base;
  std::map<std::string, std::string> switches;  // "+cpd" -> {"cpd", "on"}

  static ModelSpec parse(const std::string& name);
  std::string canonical() const;  // base then switches in sorted order
  bool has(const std::string& key) const { return switches.count(key) > 0; }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
};

}  // namespace mare
