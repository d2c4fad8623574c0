// `mare inspect step --model M --data KIND:DIR --out DIR`: the numbers of one
// training step of a relation-extraction model, for a check against an
// independent implementation (tests/peers/check_models.py runs one in PyTorch).
//
// The model is built as `mare train` builds it (same name grammar, same seed,
// entity tags an input exactly when NER is not trained), the batch is the one
// the trainer draws at step 0 (`--batching`, the RE or NER sampler), and the
// step runs in training mode: dropout as the model's switches say (pass
// `+dropout=0` for a deterministic comparison), batch norm on the batch's
// statistics. The loss is the trainer's (cross-entropy, class-weighted when the
// trainer would weight it, plus the model's auxiliary loss); its gradient is
// taken with respect to every parameter, before L2, clipping and Adam.
//
// Written under DIR (every array a float32 or int32 NPY v1.0 file, C order):
//   params/<name>.npy    every parameter before the step, by mare's name
//   grads/<name>.npy     its gradient (absent when the step does not reach it)
//   buffers/<name>.npy   batch-norm running statistics after the step
//   batch/<field>.npy    the batch's tensors (models/re_batch.h): words, mask,
//                        ngrams, chars, entity_tags, ner_targets, pair_doc,
//                        labels, head_offsets, head_rows, tail_offsets, tail_rows
//   outputs/<name>.npy   pair_logits or ner_logits, halting_steps (with cpd)
//   step.json            the model's configuration (d, heads, iterations,
//                        switches, vocabulary sizes, class count), the task,
//                        the losses, and the list of every file above with its
//                        shape and dtype
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tensor.h"

namespace mare {

struct InspectStepOptions {
  std::string model;  // registry name (aliases and switches as in `mare train`)
  std::string data;   // KIND:DIR
  uint64_t seed = 1;
  int batch = 4;
  std::string task = "re";             // re | ner
  std::string batching = "bran";       // the RE sampler (experiments/re_data.h)
  std::string class_weights = "auto";  // auto | on | off, as `mare train --class-weights`
  int max_tokens = 0;                  // as ReCorpusOptions::max_tokens
  std::filesystem::path out;
};

struct InspectStepResult {
  nlohmann::json index;                      // what step.json holds
  std::vector<std::filesystem::path> files;  // written, in order
};

InspectStepResult inspect_step(const InspectStepOptions& opt);

// A float32 or int32 tensor (on any device) as a NumPy .npy file (format v1.0,
// little-endian, C order). Throws std::runtime_error naming the file when it
// cannot be written.
void write_npy(const std::filesystem::path& path, const Tensor& t);

}  // namespace mare
