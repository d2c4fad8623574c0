// The interface of the relation-extraction models (SPEC §4.1–4.5): a model reads
// a batch of documents (models/re_batch.h) and scores its entity pairs (RE) or
// tags its tokens (NER). One training step trains one task (SPEC §4.2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "models/autograd.h"
#include "models/layers.h"
#include "models/parameters.h"
#include "models/re_batch.h"

namespace mare {

class ModelSpec;

enum class ReTask { relations, entities };

// The mean of `steps` (i32 [N], halting's iterations per token) over the tokens that
// `token_mask` ([N], nonzero = real) keeps; 0 when `steps` is undefined or no token
// is real. Reads both from their device.
double mean_halting_steps(const Tensor& steps, const Tensor& token_mask);

struct ReOutput {
  ag::Var pair_logits;  // [P, relations] (ReTask::relations)
  ag::Var ner_logits;   // [B·T, ner_tags] (ReTask::entities)
  ag::Var aux_loss;  // [1] to add to the task loss (ponder cost, memory gate regulariser), or null
  // Halting: the iterations each token took, i32 [B·T], and the token mask [B·T], on
  // the model's device; undefined without halting. A training step never reads them
  // (on the GPU a read waits for the device); mean_steps() does, when asked.
  Tensor halting_steps, token_mask;
  // The mean iterations per real token (halting), 0 without halting.
  double mean_steps() const { return mean_halting_steps(halting_steps, token_mask); }
};

// What the data fixes about a model: vocabulary sizes, label sets, optional
// word2vec initialisation, and whether the gold entity tags are an input (only
// when NER is not trained, SPEC §4.2).
struct ReModelConfig {
  ReVocabSizes sizes;
  Tensor word_init;  // [words, d] or undefined
  bool entity_tag_input = true;
};

class ReModel {
 public:
  explicit ReModel(uint64_t seed) : params_(seed) {}
  virtual ~ReModel() = default;
  virtual ReOutput forward(const ReBatch& batch, ReTask task, nn::Context& ctx) = 0;
  virtual std::string describe() const = 0;
  virtual bool supports_ner() const { return true; }
  // Derives on the host what forward(batch, task) would otherwise build from the batch
  // inside the step (into batch.staged, on the batch's device): the trainer stages each
  // training batch before its step. The same numbers either way.
  virtual void stage(ReBatch& batch, ReTask task) const {
    (void)batch;
    (void)task;
  }
  ParameterSet& parameters() { return params_; }
  nn::Buffers& buffers() { return buffers_; }
  // Moves parameters and buffers to `device` (checkpoints go through the CPU).
  void to(Device device) {
    params_.to(device);
    for (auto& [name, t] : buffers_) t = t.to(device);
  }

 protected:
  ParameterSet params_;
  nn::Buffers buffers_;
};

std::unique_ptr<ReModel> build_re_model(const ModelSpec& spec, const ReModelConfig& config,
                                        uint64_t seed);

}  // namespace mare
