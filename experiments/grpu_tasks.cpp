// Generators of the GRPU's sequence tasks (see experiments/grpu_tasks.h).
#include "experiments/grpu_tasks.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/random.h"

namespace mare {

namespace {

struct Kind {
  float lo, hi;
  bool product;
};

Kind kind_of(const std::string& name) {
  if (name == "addition" || name == "conditional") return {0.0f, 1.0f, false};
  if (name == "multiplication") return {0.5f, 1.5f, true};
  throw std::invalid_argument("unknown sequence task '" + name +
                              "' (known: addition, multiplication, conditional)");
}

SequenceSet generate(PhiloxStream& rng, const Kind& kind, int64_t n, int64_t min_len,
                     int64_t max_len) {
  SequenceSet set{min_len, max_len, {}};
  set.samples.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    SequenceSample s;
    int64_t len = min_len + rng.below(static_cast<uint32_t>(max_len - min_len + 1));
    s.values.resize(len);
    s.controls.assign(len, 0.0f);
    for (float& v : s.values) v = rng.uniform(kind.lo, kind.hi);
    int64_t a = rng.below(static_cast<uint32_t>(len));
    int64_t b = rng.below(static_cast<uint32_t>(len - 1));
    if (b >= a) ++b;
    s.controls.front() = -1.0f;
    s.controls.back() = -1.0f;
    s.controls[a] = 1.0f;
    s.controls[b] = 1.0f;
    s.target = kind.product ? s.values[a] * s.values[b] : s.values[a] + s.values[b];
    set.samples.push_back(std::move(s));
  }
  return set;
}

}  // namespace

int64_t curriculum_phase(int64_t epoch, int64_t epochs) {
  return std::min<int64_t>(curriculum_phases() - 1, (epoch - 1) * curriculum_phases() / epochs);
}

bool is_sequence_task(const std::string& name) {
  return name == "addition" || name == "multiplication" || name == "conditional";
}

SequenceTask make_sequence_task(const std::string& name, uint64_t seed, int64_t samples,
                                int64_t test_samples, bool curriculum) {
  Kind kind = kind_of(name);
  if (samples < 1 || test_samples < 1)
    throw std::invalid_argument(name + ": --samples and the test set must be ≥ 1");
  SequenceTask t;
  t.name = name;
  t.shape.target = kind.product ? "prod" : "sum";
  t.shape.conditional = name == "conditional";
  t.shape.clip = kind.product ? 100.0f : 500.0f;
  PhiloxStream rng(seed, kStreamData);
  t.test = generate(rng, kind, test_samples, 50, 55);
  if (curriculum)
    for (int64_t p = 0; p < curriculum_phases(); ++p)
      t.train.push_back(generate(rng, kind, samples, phase_min_length(p), phase_min_length(p) + 5));
  else
    t.train.push_back(generate(rng, kind, samples, 50, 55));
  return t;
}

SequenceBatch make_sequence_batch(const SequenceSet& set, const std::vector<int64_t>& idx,
                                  size_t begin, size_t end, Tensor* targets) {
  const int64_t B = static_cast<int64_t>(end - begin);
  int64_t T = 0;
  for (size_t i = begin; i < end; ++i)
    T = std::max<int64_t>(T, static_cast<int64_t>(set.samples[idx[i]].values.size()));
  SequenceBatch batch{Tensor::zeros({T, B}), Tensor::zeros({T, B}), Tensor::zeros({T, B})};
  if (targets) *targets = Tensor::empty({B, 1});
  for (int64_t b = 0; b < B; ++b) {
    const SequenceSample& s = set.samples[idx[begin + b]];
    for (size_t t = 0; t < s.values.size(); ++t) {
      batch.values.f32()[t * B + b] = s.values[t];
      batch.controls.f32()[t * B + b] = s.controls[t];
      batch.mask.f32()[t * B + b] = 1.0f;
    }
    if (targets) targets->f32()[b] = s.target;
  }
  return batch;
}

}  // namespace mare
