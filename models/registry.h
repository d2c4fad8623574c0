// The model registry: builds a model from a name such as `mlp+hidden=32` or,
// as models land, `ntcre+cpd+alloc=sorted` (SPEC §4). A name is a base model
// followed by `+switch` or `+key=value` parts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "models/autograd.h"
#include "models/parameters.h"

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

struct ModelInfo {
  std::string_view name;
  std::string_view task_kind;  // which task interface it serves
  std::string_view summary;
};
std::span<const ModelInfo> model_registry();

// Models that map feature vectors [N, F] to class logits [N, C].
class Classifier {
 public:
  explicit Classifier(uint64_t seed) : params_(seed) {}
  virtual ~Classifier() = default;
  virtual ag::Var forward(const ag::Var& x, bool training) = 0;
  ParameterSet& parameters() { return params_; }

 protected:
  ParameterSet params_;
};

std::unique_ptr<Classifier> build_classifier(const ModelSpec& spec, int64_t features,
                                             int64_t classes, uint64_t seed);

// Models that read a batch of (value, control) sequences and predict one number
// per sequence (the GRPU and its baselines, SPEC §4.6).
struct SequenceBatch {
  Tensor values;    // [T, B] the numbers
  Tensor controls;  // [T, B] the markers −1, 0, 1
  Tensor mask;      // [T, B] 1 while t < the row's length, then 0 (rows are padded at the end)
};

// What a sequence task asks of a model.
struct SequenceTaskShape {
  std::string target = "sum";  // the GRPU's output field: "sum" or "prod"
  bool conditional = false;    // everything to the machine; `cond` gates execution
  float clip = 500.0f;         // the GRPU machine state's clip
};

class SequenceModel {
 public:
  explicit SequenceModel(uint64_t seed) : params_(seed) {}
  virtual ~SequenceModel() = default;
  // [B, 1]: one prediction per sequence, read after its last step.
  virtual ag::Var forward(const SequenceBatch& batch) = 0;
  // One line on the structure (sizes, fields), for manifests and `mare train`.
  virtual std::string describe() const = 0;
  ParameterSet& parameters() { return params_; }

 protected:
  ParameterSet params_;
};

std::unique_ptr<SequenceModel> build_sequence_model(const ModelSpec& spec,
                                                    const SequenceTaskShape& task, uint64_t seed);

}  // namespace mare
