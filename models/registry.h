// The model registry, a table like op_registry(): every model with its task
// kind, its switches (kind, default, help), the aliases the thesis uses
// (`UTRE-CPD` = `utre+ngram+transition+cpd`, …) and the named grids (the twelve
// rows of thesis Table 4.6). A model name is a base model or an alias followed
// by `+switch` or `+key=value` parts (SPEC §4); resolve_model() expands aliases
// and refuses an unknown switch or a bad value, naming the valid ones.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/interfaces.h"
#include "models/model_spec.h"

namespace mare {

struct SwitchInfo {
  enum class Kind { flag, integer, number, choice };
  std::string_view name;
  Kind kind;
  std::string_view default_value;  // flags: "off"
  std::string_view help;
  std::string_view choices = {};  // choice: "a|b|c"
};

struct ModelInfo {
  std::string_view name;
  std::string_view task_kind;  // classification | sequence | relation
  std::string_view summary;
  std::span<const SwitchInfo> switches;
};
std::span<const ModelInfo> model_registry();
const ModelInfo* find_model(std::string_view base);  // null when unknown
// The values of a choice switch of a model (`grpu`, `neutral_one`: code, text);
// throws std::logic_error when the model has no such choice switch.
std::vector<std::string> switch_choices(std::string_view model, std::string_view key);

struct AliasInfo {
  std::string_view alias;
  std::string_view expansion;
};
std::span<const AliasInfo> model_aliases();

// A named grid of model configurations (SPEC §4.5: `table4.6`).
struct GridRow {
  std::string_view label;  // the row of the published table ("1" … "UTRE-CPD" …)
  std::string_view model;  // registry name with switches
  bool needs_memory;       // NTCRE rows (they need the memory controller)
};
struct GridInfo {
  std::string_view name;
  std::string_view summary;
  std::span<const GridRow> rows;
};
std::span<const GridInfo> model_grids();

// Parses `name`, expands an alias (switches given after it are added to or
// override the alias's), and validates every switch against the table: known,
// of its kind, in its range (the error names the switch and the valid range).
ModelSpec resolve_model(const std::string& name);
// resolve_model, then the switches together: what no single switch shows (d
// divisible by heads). The builders call it; so does a sweep spec, once a
// cell's switches are all set.
ModelSpec validate_model(const std::string& name);

std::unique_ptr<Classifier> build_classifier(const ModelSpec& spec, int64_t features,
                                             int64_t classes, uint64_t seed);
std::unique_ptr<SequenceModel> build_sequence_model(const ModelSpec& spec,
                                                    const SequenceTaskShape& task, uint64_t seed);

}  // namespace mare
