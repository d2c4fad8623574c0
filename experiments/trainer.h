// Training a Classifier on a ClassificationTask, writing a run directory.
//
// Per epoch: shuffle (Philox stream kStreamShuffle, Fisher–Yates), minibatch
// steps of cross-entropy + L2 + clipping + Adam, then an evaluation of the
// whole training and test sets appended to metrics.jsonl. A NaN or Inf loss
// stops the run with status "diverged" and the step where it happened.
// result.json holds no timings: the same seed, device and thread count give
// the same bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/random.h"
#include "kernels/tensor.h"

namespace mare {

class Adam;
class ParameterSet;
class RunLifecycle;

struct TrainOptions {
  std::string model = "mlp";
  std::string task = "xor";
  uint64_t seed = 1;
  int64_t epochs = 100;
  int64_t batch = 32;
  float lr = 1e-2f;
  std::string schedule = "constant";
  float clip_norm = 0.0f;
  float l2 = 0.0f;
  Device device = Device::cpu;  // where the model trains (the data is made on the host)
  std::filesystem::path out;
  bool force = false;  // rerun even when result.json exists
  // Called after each epoch's metrics line, before last.ckpt is written (tests kill a
  // run here, as for the other trainers).
  std::function<void(int64_t epoch)> after_evaluation;
};

// Runs (or, when the run directory already holds a result and !force, skips)
// the run; returns the contents of result.json. Refuses a device that cannot
// run here (`train: --device cuda: <why>`). Progress lines go to
// `progress` when it is non-null.
nlohmann::json train_classifier(const TrainOptions& opt, std::ostream* progress);

// What every manifest records about this build and machine.
nlohmann::json build_description();
// The manifest fields every training run has besides its configuration: command,
// seed, device, threads, parameter count and build_description().
// Throws std::invalid_argument "train: --device cuda: <why>" when `device`
// cannot run here (kernels/tensor.h: device_unavailable); every trainer calls it
// before it builds anything.
void require_training_device(Device device);
nlohmann::json training_manifest(uint64_t seed, const std::string& device, int64_t parameters);

// The pieces that the epoch trainers (train_classifier, train_sequence_model) share.
// An epoch's order of n examples: 0 … n−1 permuted by Fisher–Yates from `shuffle`.
void shuffle_epoch(std::vector<int64_t>& order, int64_t n, PhiloxStream& shuffle);
// The divergence rule of every trainer, applied before backward: a loss that is not
// finite stops the run with nothing updated. Returns true, with `diverged_at` holding
// the step, the loss and the fields of `where` (the epoch, or the task of the step),
// when `loss` is not finite.
bool stops_on_divergence(float loss, int64_t step, const nlohmann::json& where,
                         nlohmann::json& diverged_at);
// A resumed epoch-trained run: loads the parameters and the optimiser saved after
// its last finished epoch, sets the epoch to go on with, the step, and the shuffle
// stream's position; returns the saved state (for fields a trainer adds).
nlohmann::json resume_epoch_run(RunLifecycle& life, ParameterSet& params, Adam& adam,
                                PhiloxStream& shuffle, int64_t& first_epoch, int64_t& step);
// The fields of result.json that every epoch-trained run has ("diverged": `diverged_at`,
// when the status says so).
nlohmann::json epoch_run_result(const std::string& status, const std::string& model,
                                const std::string& task, uint64_t seed, Device device,
                                int64_t steps, int64_t parameters,
                                const nlohmann::json& diverged_at);
// The end of an epoch-trained run: checkpoint.bin (with the optimiser), timing.json,
// then result.json (`result`), which it returns.
nlohmann::json finish_epoch_run(RunLifecycle& life, const ParameterSet& params, Adam& adam,
                                double wall_seconds, int64_t steps,
                                const std::vector<double>& epoch_seconds, nlohmann::json result);

}  // namespace mare
