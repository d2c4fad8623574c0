// The model interfaces of the small tasks: classifiers of feature vectors (mlp)
// and sequence models (the GRPU and its baselines). The relation-extraction
// interface is models/re_model.h.
#pragma once

#include <cstdint>
#include <string>

#include "models/autograd.h"
#include "models/parameters.h"
#include "models/sequence_types.h"

namespace mare {

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

// Models that read a batch of (value, control) sequences and predict one number
// per sequence (the GRPU and its baselines, SPEC §4.6).
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

}  // namespace mare
