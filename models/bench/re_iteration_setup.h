// What the two training-iteration benchmarks share (bench_re_iteration, the
// Google Benchmark program here, and `mare bench iteration`): the synthetic
// batch at the thesis Table 4.15 shapes and the trainer's RE step. Header-only
// (models/ may not read data files or include experiments/, and the `mare`
// command must not link Google Benchmark).
//
// The batch: B documents (32 as the thesis) at the SemEval 2018 shape (T = 96
// tokens) or the BioCreative CDR shape (T = 398), random word/n-gram/char/
// entity-tag ids from a fixed seed; every document has 90–100% of T real tokens
// (document 0 exactly T), 2 entity pairs per document whose entities have 1–2
// mentions of 1–3 tokens. Class weights off, gold entity tags an input, RE
// steps only (the trainer's NER steps are a different, cheaper head).
//
// The step is exactly the RE step of experiments/re_trainer.cpp (on a batch the caller
// staged, ReModel::stage, as the trainer does): gradients reset, forward, cross-entropy on the
// pairs' logits plus the model's aux loss (the ponder cost), the loss read back (the trainer's
// divergence check), backward, and an Adam step (lr 5e-4; L2 and clipping are the Adam's options).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/random.h"
#include "kernels/tensor.h"
#include "models/functions.h"
#include "models/optim.h"
#include "models/re_model.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::bench {

inline constexpr uint64_t kReBenchSeed = 20181;
inline constexpr int64_t kReBenchBatch = 32;  // thesis Table 4.1
inline constexpr int64_t kReBenchPairsPerDoc = 2;
inline constexpr int64_t kReBenchGrams = 8;  // n-gram slots per token
inline constexpr int64_t kReBenchChars = 12;

struct ReDataShape {
  const char* name;
  int64_t T;
  int64_t relations;  // with NULL
};
// SemEval 2018 task 7: six relations + NULL; CDR: CID + NULL (thesis Table 4.15's
// mean lengths).
inline constexpr ReDataShape kReShapes[] = {{"semeval", 96, 7}, {"cdr", 398, 2}};

inline ReVocabSizes re_bench_vocab(const ReDataShape& s) {
  ReVocabSizes v;
  v.words = 20000;
  v.ngrams = 5000;
  v.chars = 100;
  v.entity_tags = 6;  // pad, O, B/I of two entity types
  v.ner_tags = 5;
  v.relations = s.relations;
  v.max_distance = s.T;
  return v;
}

// The synthetic batch (layout of models/re_batch.h) on `device`, the same bytes
// every run.
inline ReBatch synthetic_re_batch(const ReDataShape& s, const ReVocabSizes& v, Device device,
                                  int64_t batch = kReBenchBatch) {
  PhiloxStream rng(kReBenchSeed, 7);
  auto below = [&](int64_t n) { return static_cast<int64_t>(rng.below(static_cast<uint32_t>(n))); };
  auto ids = [device](const std::vector<int32_t>& x, const Shape& shape) {
    return Tensor::from_indices(x, shape).to(device);
  };
  const int64_t B = batch, T = s.T, N = B * T;
  constexpr int64_t G = kReBenchGrams, C = kReBenchChars;
  ReBatch b;
  b.B = B;
  b.T = T;
  std::vector<int32_t> words(N, 0), tags(N, 0), ner(N, -1), grams(N * G, 0), chars(N * C, 0);
  std::vector<float> mask(N, 0.0f);
  std::vector<int64_t> len(B);
  for (int64_t d = 0; d < B; ++d) {
    len[d] = d == 0 ? T : T - below(T / 10 + 1);
    for (int64_t i = 0; i < len[d]; ++i) {
      const int64_t r = d * T + i;
      mask[r] = 1.0f;
      words[r] = static_cast<int32_t>(1 + below(v.words - 1));
      tags[r] = 1;  // O
      ner[r] = 0;
      const int64_t g = 3 + below(G - 2), c = 2 + below(C - 1);
      for (int64_t k = 0; k < g; ++k)
        grams[r * G + k] = static_cast<int32_t>(1 + below(v.ngrams - 1));
      for (int64_t k = 0; k < c; ++k)
        chars[r * C + k] = static_cast<int32_t>(1 + below(v.chars - 1));
    }
  }
  // Pairs: head of type 0, tail of type 1, each entity 1–2 mentions of 1–3 tokens.
  RePairs pairs;
  auto mention_set = [&](int64_t d, int type, std::vector<int32_t>& rows,
                         std::vector<int64_t>& starts) {
    const int64_t m = 1 + below(2);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t w = 1 + below(3), at = below(len[d] - w + 1);
      starts.push_back(at);
      for (int64_t i = at; i < at + w; ++i) {
        const int64_t r = d * T + i;
        rows.push_back(static_cast<int32_t>(r));
        tags[r] = static_cast<int32_t>(2 + 2 * type + (i == at ? 0 : 1));
        ner[r] = static_cast<int32_t>(1 + 2 * type + (i == at ? 0 : 1));
      }
    }
  };
  for (int64_t d = 0; d < B; ++d) {
    for (int64_t p = 0; p < kReBenchPairsPerDoc; ++p) {
      std::vector<int64_t> hs, ts;
      mention_set(d, 0, pairs.head_rows, hs);
      mention_set(d, 1, pairs.tail_rows, ts);
      // Closest head/tail mention starts, as the data loader picks them.
      int64_t bh = hs[0], bt = ts[0];
      for (int64_t h : hs)
        for (int64_t t : ts)
          if (std::abs(h - t) < std::abs(bh - bt)) bh = h, bt = t;
      pairs.close_pair(d, static_cast<int32_t>(below(s.relations)), bh, bt);
      b.distance.push_back(static_cast<int>(std::abs(bh - bt)));
      b.example_index.push_back(static_cast<int64_t>(b.example_index.size()));
    }
  }
  b.words = ids(words, {B, T});
  b.mask = Tensor::from_vector(mask, {B, T}).to(device);
  b.ngrams = ids(grams, {N, G});
  b.chars = ids(chars, {N, C});
  b.entity_tags = ids(tags, {B, T});
  b.ner_targets = ids(ner, {N});
  pairs.pairs_into(b, device);
  return b;
}

inline int64_t real_tokens(const ReBatch& b) {
  const Tensor m = b.mask.to(Device::cpu);
  int64_t n = 0;
  for (int64_t i = 0; i < m.numel(); ++i) n += m.f32()[i] > 0;
  return n;
}

struct ReStepResult {
  double loss = 0.0;
  Tensor halting_steps, token_mask;  // the forward's (ReOutput), undefined without halting
  // Halting's mean iterations per real token (0 without halting): a read of the device,
  // made when asked (after the step's clock, by the benchmarks).
  double mean_steps() const { return mean_halting_steps(halting_steps, token_mask); }
};

// The trainer's RE step (experiments/re_trainer.cpp), lr 5e-4, dynamic or static
// (models/layers.h: Context::static_step); on the GPU it ends with a device
// synchronisation so a host clock covers the GPU work.
inline ReStepResult re_training_step(ReModel& model, Adam& adam, const ReBatch& batch,
                                     uint64_t step, bool static_step = false) {
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = kReBenchSeed;
  ctx.step = step;
  ctx.static_step = static_step;
  for (const ag::Var& p : model.parameters().all()) p->grad = Tensor();
  ReOutput out = model.forward(batch, ReTask::relations, ctx);
  ag::Var loss = ag::cross_entropy(out.pair_logits, batch.labels);
  if (out.aux_loss) loss = ag::add(loss, out.aux_loss);
  ReStepResult r;
  if (!static_step) r.loss = loss->value.item();
  r.halting_steps = out.halting_steps;
  r.token_mask = out.token_mask;
  ag::backward(loss);
  adam.step(5e-4f);
  if (static_step) r.loss = loss->value.item();  // after the update, as the trainer
#ifdef MARE_WITH_CUDA
  if (batch.mask.device() == Device::cuda) cuda::synchronize();
#endif
  return r;
}

}  // namespace mare::bench
