// What the relation-model tests share: a hand-built batch of two documents (one
// padded) and three pairs, tiny vocabularies, a model built from a registry name,
// the task loss, and the gradient check through the whole model.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "models/functions.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace mare::test {

inline ReVocabSizes tiny_sizes() {
  ReVocabSizes v;
  v.words = 12;
  v.ngrams = 9;
  v.chars = 7;
  v.entity_tags = 6;
  v.ner_tags = 5;
  v.relations = 3;
  v.max_distance = 6;
  return v;
}

inline Tensor ids(const std::vector<int32_t>& v, const Shape& s) {
  return Tensor::from_indices(v, s);
}

// Two documents of 5 and 3 tokens (the second padded), three pairs.
inline ReBatch tiny_batch() {
  ReBatch b;
  b.B = 2;
  b.T = 5;
  b.words = ids({2, 3, 4, 5, 6, 7, 8, 9, 0, 0}, {2, 5});
  b.mask = Tensor::from_vector({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5});
  std::vector<int32_t> grams, chars;
  for (int r = 0; r < 10; ++r) {
    const bool real = r != 8 && r != 9;
    for (int g = 0; g < 3; ++g) grams.push_back(real ? 1 + (r + g) % 8 : 0);
    for (int k = 0; k < 4; ++k) chars.push_back(real && k < 2 + r % 3 ? 1 + (r * 3 + k) % 6 : 0);
  }
  b.ngrams = ids(grams, {10, 3});
  b.chars = ids(chars, {10, 4});
  b.entity_tags = ids({2, 1, 4, 1, 1, 4, 5, 2, 0, 0}, {2, 5});
  b.ner_targets = ids({1, 0, 3, 0, 0, 3, 4, 1, -1, -1}, {10});
  b.P = 3;
  b.pair_doc = ids({0, 0, 1}, {3});
  b.labels = ids({1, 0, 2}, {3});
  b.head_offsets = ids({0, 1, 3, 4}, {4});
  b.head_rows = ids({0, 0, 2, 7}, {4});
  b.tail_offsets = ids({0, 1, 2, 4}, {4});
  b.tail_rows = ids({2, 4, 5, 6}, {4});
  b.head_pos = ids({0, 0, 2}, {3});
  b.tail_pos = ids({2, 4, 0}, {3});
  b.distance = {2, 4, 2};
  b.example_index = {0, 1, 2};
  return b;
}

inline std::unique_ptr<ReModel> build(const std::string& name, bool entity_tags = true) {
  ReModelConfig cfg;
  cfg.sizes = tiny_sizes();
  cfg.entity_tag_input = entity_tags;
  return build_re_model(resolve_model(name), cfg, 7);
}

inline ag::Var task_loss(ReModel& m, const ReBatch& b, ReTask task) {
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = 3;
  ReOutput out = m.forward(b, task, ctx);
  ag::Var loss = task == ReTask::relations ? ag::cross_entropy(out.pair_logits, b.labels)
                                           : ag::cross_entropy(out.ner_logits, b.ner_targets);
  if (out.aux_loss) loss = ag::add(loss, ag::scale(out.aux_loss, 1e3f));  // make it visible
  return loss;
}

// d loss / d parameters against central differences. The model is float and
// piecewise smooth (ReLU, max, the halting decisions), and layer norm on small
// embeddings is sharply curved, so each entry is compared with central
// differences at two steps (1e-3 and 2.5e-4) and the closer one counts; a few
// entries may sit on a kink (at most 1 in 10), and over all entries the
// relative error must be one a wrong backward would not meet.
inline void expect_gradients_match(ReModel& m, const ReBatch& b, ReTask task) {
  m.parameters().zero_grad();
  // Batch-norm running statistics move on every training forward; keep them fixed.
  std::map<std::string, Tensor> saved;
  for (auto& [k, t] : m.buffers()) saved[k] = t.clone();
  auto restore = [&] {
    for (auto& [k, t] : m.buffers()) t.copy_from(saved[k]);
  };
  ag::backward(task_loss(m, b, task));
  double err2 = 0, norm2 = 0;
  int checked = 0, off = 0;
  std::string kinks;
  for (const ag::Var& p : m.parameters().all()) {
    const Tensor grad = p->grad.defined() ? p->grad.clone() : Tensor::zeros_like(p->value);
    const int64_t stride = std::max<int64_t>(1, p->value.numel() / 7);
    for (int64_t e = 0; e < p->value.numel(); e += stride) {
      const float keep = p->value.f32()[e];
      const double g = grad.f32()[e];
      double best = 0;
      for (float h : {1e-3f, 2.5e-4f}) {
        p->value.f32()[e] = keep + h;
        restore();
        const double up = task_loss(m, b, task)->value.item();
        p->value.f32()[e] = keep - h;
        restore();
        const double down = task_loss(m, b, task)->value.item();
        p->value.f32()[e] = keep;
        const double numeric = (up - down) / (2.0 * h);
        if (h == 1e-3f || std::fabs(numeric - g) < std::fabs(best - g)) best = numeric;
      }
      if (std::fabs(g - best) > 2e-3 + 5e-2 * std::fabs(best)) {
        ++off;
        kinks += p->name + "[" + std::to_string(e) + "] grad " + std::to_string(g) + " numeric " +
                 std::to_string(best) + "\n";
      } else {
        err2 += (g - best) * (g - best);
        norm2 += best * best;
      }
      ++checked;
    }
  }
  restore();
  EXPECT_GT(checked, 20);
  EXPECT_LE(off * 10, checked) << off << " of " << checked << " entries disagree:\n" << kinks;
  EXPECT_GT(std::sqrt(norm2), 1e-3);
  EXPECT_LT(std::sqrt(err2), 3e-2 * std::sqrt(norm2)) << "gradient norm " << std::sqrt(norm2);
}

}  // namespace mare::test
