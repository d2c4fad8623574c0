// The GRPU's synthetic sequence tasks (dissertation ch. 5; SPEC §4.6),
// generated from a seed (Philox stream kStreamData).
//
// A sample is a sequence of L pairs (value, control), L uniform in
// [min_length, max_length]. Controls: exactly two positions (uniform, distinct)
// are marked 1; the first and last positions are −1 unless marked (the
// original adding problem's end markers); every other position is 0.
//   addition:       values U[0, 1],     target = sum of the two marked values
//   multiplication: values U[0.5, 1.5], target = their product (GRPU clip 100)
//   conditional:    the addition data; the GRPU's controller sees nothing, the
//                   machine sees (value, control) and `cond` tests control = 1
// Draw order for one seed: the test set (always 50–55 steps), then the
// training set of each curriculum phase in turn, so the test set of a seed
// does not depend on the training options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "models/registry.h"

namespace mare {

struct SequenceSample {
  std::vector<float> values, controls;
  float target = 0.0f;
};

struct SequenceSet {
  int64_t min_length = 0, max_length = 0;
  std::vector<SequenceSample> samples;
};

// Lengths of curriculum phase p of 5: 10–15, 20–25, 30–35, 40–45, 50–55.
inline int64_t curriculum_phases() {
  return 5;
}
inline int64_t phase_min_length(int64_t phase) {
  return 10 + 10 * phase;
}
// The phase of a 1-based epoch when `epochs` are split into five equal phases.
int64_t curriculum_phase(int64_t epoch, int64_t epochs);

struct SequenceTask {
  std::string name;
  SequenceTaskShape shape;
  SequenceSet test;
  std::vector<SequenceSet> train;  // one set per phase (one phase without curriculum)
};

bool is_sequence_task(const std::string& name);
// samples: training sequences per phase; test_samples: test sequences.
SequenceTask make_sequence_task(const std::string& name, uint64_t seed, int64_t samples,
                                int64_t test_samples, bool curriculum);

// Samples idx[begin, end) of `set` as one time-major batch padded to the
// longest; targets: [B, 1].
SequenceBatch make_sequence_batch(const SequenceSet& set, const std::vector<int64_t>& idx,
                                  size_t begin, size_t end, Tensor* targets);

}  // namespace mare
