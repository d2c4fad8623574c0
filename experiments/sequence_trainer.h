// Training a SequenceModel (the GRPU and its baselines) on a sequence task
// (experiments/grpu_tasks.h), writing a run directory (SPEC §7); the setting of
// the dissertation's Table 5.1: MSE loss, Adam (lr 1e-4), batch 100, 32 or 10,
// 1000 or 3200 training sequences, 1000 epochs, optional curriculum.
//
// Per epoch: the phase's training set is shuffled (Philox stream
// kStreamShuffle, Fisher–Yates), one Adam step per minibatch on the batch's
// mean squared error, then the whole training set of the phase and the test set
// (always 50–55 steps) are evaluated and appended to metrics.jsonl as
// train_mse and test_mse (every `eval_every` epochs and after the last; the
// evaluation costs about 40% of an epoch). With `curriculum` the epochs are split into five
// equal phases of lengths 10–15, 20–25, 30–35, 40–45, 50–55. A NaN or Inf
// batch loss stops the run with status "diverged". result.json holds the
// final MSEs and no timings (same seed → same bytes). The run lifecycle is
// experiments/run_lifecycle.h: a finished run is skipped (another configuration
// in its directory is refused), and the state saved after every evaluation lets
// a killed run resume to the same bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/tensor.h"

namespace mare {

struct SequenceTrainOptions {
  std::string model = "grpu";  // registry name with +switches
  std::string task = "addition";
  uint64_t seed = 1;
  int64_t epochs = 1000;
  int64_t batch = 100;
  int64_t samples = 1000;       // training sequences (per curriculum phase)
  int64_t test_samples = 1000;  // test sequences
  bool curriculum = false;
  float lr = 1e-4f;
  float clip_norm = 0.0f;       // global gradient-norm clip (0: off, as the dissertation)
  Device device = Device::cpu;  // where the model trains (the data is made on the host)
  int64_t eval_every = 1;       // evaluate (and write a metrics line) every N epochs and at the end
  std::filesystem::path out;
  bool force = false;
  // Called after each evaluation's metrics line, before its state is saved (tests
  // throw from it to stand for a killed process). Not part of the configuration.
  std::function<void(int64_t epoch)> after_evaluation;
};

// Runs (or, when result.json exists and !force, skips) the run and returns the
// contents of result.json. `progress` (when non-null) hears of a resume and receives a
// status line per epoch, rewritten in place when `tty`; otherwise (a log) one every
// epochs/20 epochs and the last.
nlohmann::json train_sequence_model(const SequenceTrainOptions& opt, std::ostream* progress,
                                    bool tty = false);

}  // namespace mare
