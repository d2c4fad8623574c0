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
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/tensor.h"

namespace mare {

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

}  // namespace mare
