// Training a relation-extraction model (cnn, bran, utre; SPEC §4.1–4.4, §6) on a
// corpus (experiments/re_data.h), writing a run directory (SPEC §7) through the
// shared run lifecycle (experiments/run_lifecycle.h).
//
// One step trains one task (SPEC §4.2): NER with probability ner_prob (the
// model's switch; never for cnn), else RE on a BRAN batch (all positive or all
// negative pairs, probability 0.5 each); `+multitask=sum` trains RE + NER on every
// step instead (`batching = balanced` puts both pools in every RE batch). Loss: cross-entropy over
// the pairs' classes (class-weighted, eq. 4-2, for the multiclass corpora unless told otherwise) or
// over the tokens' BIO tags, plus β₂ · mean ponder cost with halting; then L2, global-norm clipping
// and Adam (thesis Table 4.1: lr 5e-4, clip 3, L2 1e-4, batch 32). Parameters
// that a step's task does not reach are left as they are by that step (no L2,
// no momentum), as TensorFlow does with variables that get no gradient.
//
// Every eval_every steps the validation split is scored (RE micro F1, per
// class, by distance; NER span F1) and a fixed sample of the training split (RE
// micro F1 of at most 200 documents evenly spaced in file order: train_f1, so
// that overfitting shows in every curve), a line goes to metrics.jsonl, the best
// parameters so far go to checkpoint.bin and the whole state to last.ckpt (a
// killed run resumes from there with the same final bytes). `patience`
// evaluations without a better validation F1 stop the run early. At the end the
// best checkpoint is scored on the whole training split, validation and test,
// into result.json (no
// timings: same seed, device and threads give the same bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tensor.h"

namespace mare {

struct ReTrainOptions {
  std::string model = "UTRE-CPD";  // registry name or alias, with +switches
  std::string data;                // KIND:DIR (experiments/re_data.h)
  uint64_t seed = 1;
  int64_t steps = 2000;
  int64_t batch = 32;
  int64_t eval_batch = 8;  // documents per evaluation batch
  float lr = 5e-4f;
  float clip_norm = 3.0f;
  float l2 = 1e-4f;
  int64_t eval_every = 100;
  int64_t patience = 0;                // evaluations without improvement before stopping; 0: never
  int max_tokens = 0;                  // 0: the corpus's default (CTD 500)
  std::string word2vec;                // optional word2vec file for the word embeddings
  std::string class_weights = "auto";  // class_weight_names(): auto (multiclass corpora) | on | off
  // How a pair's relation is decided (SPEC §6): "0" argmax; a number M: a relation
  // only when its logit exceeds NULL's by more than M (re_metrics.h, PairDecision);
  // "tune": the M that maximises validation F1, chosen at each evaluation, and the
  // best checkpoint's M scores train and test.
  std::string null_margin = "0";
  std::string batching = "bran";  // bran: whole batches from one pool | balanced
  // CDR's hypernym filter (re_data.h): none | train | all; empty: the corpus's default.
  std::string hypernym_filter;
  Device device = Device::cpu;
  std::filesystem::path out;
  bool force = false;
  // Diagnostics: each metrics.jsonl line also holds every parameter's gradient norm
  // (before L2 and clipping), averaged over the window's steps that reached it. Costs a
  // sum_squares over each gradient a step (on the GPU one reduction and one read each);
  // not part of the run's configuration, and the training is the same bytes with or
  // without it.
  bool grad_norms = false;
  // The static step (models/layers.h: Context::static_step): the halting loop runs to
  // t_max under device masks and the losses are read after the update (the divergence
  // check), so forward, backward and update read nothing they computed and do the same
  // work every time (what a CUDA graph of the step needs). The same bytes as the dynamic
  // step (tests/models/test_static_step.cpp, ReTrain tests), so not part of the config:
  // manifest.json says "step": "static".
  bool static_step = false;
  // Seconds this call may train (0: no limit): after an evaluation, when the next window
  // of eval_every steps and its evaluation would end past the limit (at the pace of the
  // last window), the run stops there with its last.ckpt and returns {"status":
  // "paused"}; the same call continues it, to the bytes of an uninterrupted run. Counted
  // from the call's start (data loading included); the final scoring is not limited.
  // Not part of the config.
  double time_limit = 0;
  // Called after each evaluation's metrics line, before last.ckpt is written
  // (tests throw from it to stand for a killed process). Not part of the config.
  std::function<void(int64_t step)> after_evaluation;
};

// What ReTrainOptions::class_weights (--class-weights) takes: auto, on, off.
std::vector<std::string> class_weight_names();

// ReTrainOptions::null_margin (--null-margin, a spec's null_margin) read: "tune", or a
// finite number (0: argmax). nullopt for anything else; the one grammar the trainer,
// the command line and a sweep spec accept.
struct NullMarginRule {
  bool tune = false;
  double margin = 0;  // when not tuned
  bool is_argmax() const { return !tune && margin == 0; }
};
std::optional<NullMarginRule> parse_null_margin(const std::string& text);

// The fixed sample of a training split of `documents` documents that metrics.jsonl's
// train_f1 scores: at most kTrainSampleDocs of them, evenly spaced in file order (the
// same for every run on the corpus, whatever the seed).
inline constexpr size_t kTrainSampleDocs = 200;
std::vector<int> train_sample(size_t documents);

// Runs, resumes or (when finished with the same configuration) skips the run;
// returns result.json's contents. Progress lines go to `progress` (one line
// rewritten in place when `tty`).
nlohmann::json train_re_model(const ReTrainOptions& opt, std::ostream* progress, bool tty = false);

}  // namespace mare
