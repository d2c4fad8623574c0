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
#include "kernels/random.h"
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

// d loss / d parameters against central differences, tensor by tensor, with no
// entry or tensor skipped. The model runs in float, so a loss L carries rounding
// of about ulp(L) = |L|·2⁻²³ and a central difference at step h an error of about
// ulp(L)/h: a gradient entry below ~1e-4 cannot be resolved one entry at a time.
// Hence two checks per parameter tensor:
//  1. along whole-tensor directions, where the step can be large (central or,
//     for a kink on one side, one-sided differences): the analytic
//     direction u = a/‖a‖ (the numeric derivative along u must be ‖a‖, which
//     checks the norm and that a points where the loss rises) and two fixed
//     random unit directions r (the numeric derivative must be a·r, which
//     catches a zeroed gradient: its projection is not zero). Tolerance 5 % of
//     the expected value (of ‖a‖ along r) plus 4·ulp(L)/h.
//  2. entry by entry (every entry of a tensor of ≤ 48, else 48 spread evenly)
//     when the numeric vector stands above its noise (‖n‖ ≥ 10·ulp(L)/1e-3·√k):
//     cosine ≥ 0.99 and norms within 5 %.
// Kinks (ReLU, max, the halting decisions; layer norm on small embeddings is
// sharply curved) are handled by the step, not by skipping: each derivative is
// taken at several steps (entries 1e-3, 3e-4, 1e-4; directions 3e-2 down to 1e-4,
// as far as their noise stays within 2 % of the expected value) and the one
// closest to the analytic value counts. ReModelGradientCheck shows
// that a zeroed or 10 % scaled gradient of any tensor with a gradient fails.
struct TensorGradients {
  std::string name;
  std::vector<double> analytic, numeric;  // at the checked entries
  double norm = 0;                        // ‖a‖ over the whole tensor
  double along_a = 0, along_a_h = 0;      // numeric derivative along a/‖a‖, its step
  double a_dot_r[2] = {0, 0}, along_r[2] = {0, 0}, along_r_h[2] = {0, 0};
};
struct ModelGradients {
  double ulp = 0;  // of the loss
  std::vector<TensorGradients> tensors;
};

inline ModelGradients gradients_both_ways(ReModel& m, const ReBatch& b, ReTask task) {
  m.parameters().zero_grad();
  // Batch-norm running statistics move on every training forward; keep them fixed.
  std::map<std::string, Tensor> saved;
  for (auto& [k, t] : m.buffers()) saved[k] = t.clone();
  auto restore = [&] {
    for (auto& [k, t] : m.buffers()) t.copy_from(saved[k]);
  };
  const ag::Var loss = task_loss(m, b, task);
  ModelGradients out;
  out.ulp = std::fabs(loss->value.item()) * std::ldexp(1.0, -23);
  ag::backward(loss);
  auto loss_at = [&] {
    restore();
    return static_cast<double>(task_loss(m, b, task)->value.item());
  };
  uint32_t stream = 900;
  for (const ag::Var& p : m.parameters().all()) {
    const Tensor grad = p->grad.defined() ? p->grad.clone() : Tensor::zeros_like(p->value);
    const int64_t n = p->value.numel();
    TensorGradients c;
    c.name = p->name;
    // 1. Whole-tensor directions.
    const Tensor keep = p->value.clone();
    const double at_zero = loss_at();
    // The derivative along unit direction v at the step closest to `expected`, among
    // the steps whose rounding noise (4·ulp/h) is within 2 % of the scale (the
    // larger of `scale` and what the largest step measures: a zeroed gradient
    // expects 0, and must not be matched by noise); the largest step always.
    auto along = [&](const std::vector<double>& v, double expected, double scale, double& at_h) {
      double best = 0, largest_step = 0;
      bool first = true;
      for (double h : {3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4}) {
        if (!first && 4 * out.ulp / h > 0.02 * std::max(scale, std::fabs(largest_step))) break;
        for (int64_t e = 0; e < n; ++e) p->value.f32()[e] = keep.f32()[e] + float(h * v[e]);
        const double up = loss_at();
        for (int64_t e = 0; e < n; ++e) p->value.f32()[e] = keep.f32()[e] - float(h * v[e]);
        const double down = loss_at();
        // Central, and one-sided for a kink on the other side (max pooling and ReLU
        // make the CNN piecewise linear: moving a whole tensor meets kinks soon).
        for (const double d : {(up - down) / (2 * h), (up - at_zero) / h, (at_zero - down) / h}) {
          if (first) largest_step = d;
          if (first || std::fabs(d - expected) < std::fabs(best - expected)) best = d, at_h = h;
          first = false;
        }
      }
      p->value.copy_from(keep);
      return best;
    };
    std::vector<double> a(n);
    for (int64_t e = 0; e < n; ++e) a[e] = grad.f32()[e];
    for (double x : a) c.norm += x * x;
    c.norm = std::sqrt(c.norm);
    if (c.norm > 0) {
      std::vector<double> u(n);
      for (int64_t e = 0; e < n; ++e) u[e] = a[e] / c.norm;
      c.along_a = along(u, c.norm, c.norm, c.along_a_h);
    }
    for (int k = 0; k < 2; ++k) {
      Tensor r = Tensor::empty({n});
      fill_uniform(r, stream++, 0, -1.0f, 1.0f);
      std::vector<double> v(n);
      double len = 0;
      for (int64_t e = 0; e < n; ++e) len += double(r.f32()[e]) * r.f32()[e];
      len = std::sqrt(len);
      for (int64_t e = 0; e < n; ++e) {
        v[e] = r.f32()[e] / len;
        c.a_dot_r[k] += a[e] * v[e];
      }
      c.along_r[k] =
          along(v, c.a_dot_r[k], std::max(std::fabs(c.a_dot_r[k]), 0.2 * c.norm), c.along_r_h[k]);
    }
    // 2. Entry by entry.
    const int64_t picks = std::min<int64_t>(n, 48);
    for (int64_t q = 0; q < picks; ++q) {
      const int64_t e = q * n / picks;
      const float was = p->value.f32()[e];
      double best = 0;
      bool first = true;
      for (float h : {1e-3f, 3e-4f, 1e-4f}) {
        p->value.f32()[e] = was + h;
        const double up = loss_at();
        p->value.f32()[e] = was - h;
        const double down = loss_at();
        p->value.f32()[e] = was;
        const double numeric = (up - down) / (2.0 * static_cast<double>(h));
        if (first || std::fabs(numeric - a[e]) < std::fabs(best - a[e])) best = numeric;
        first = false;
      }
      c.analytic.push_back(a[e]);
      c.numeric.push_back(best);
    }
    out.tensors.push_back(std::move(c));
  }
  restore();
  return out;
}

inline double l2_norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// The comparison of the rule above, on gradients already taken.
inline void expect_same_gradients(const ModelGradients& g) {
  int entrywise = 0;
  double largest = 0;
  for (const TensorGradients& c : g.tensors) {
    largest = std::max(largest, c.norm);
    std::string entries;
    for (size_t k = 0; k < c.analytic.size() && k < 6; ++k)
      entries += " (" + std::to_string(c.analytic[k]) + ", " + std::to_string(c.numeric[k]) + ")";
    if (c.norm > 0) {
      EXPECT_NEAR(c.along_a, c.norm, 0.05 * c.norm + 4 * g.ulp / c.along_a_h)
          << c.name << ": the derivative along the analytic gradient is not its norm";
    }
    for (int k = 0; k < 2; ++k)
      EXPECT_NEAR(
          c.along_r[k], c.a_dot_r[k],
          0.05 * std::max(std::fabs(c.a_dot_r[k]), 0.2 * c.norm) + 4 * g.ulp / c.along_r_h[k])
          << c.name << ": the derivative along random direction " << k
          << " is not the analytic gradient's projection (analytic norm " << c.norm << ")";
    const double na = l2_norm(c.analytic), nn = l2_norm(c.numeric);
    const double noise = g.ulp / 1e-3 * std::sqrt(static_cast<double>(c.numeric.size()));
    if (nn < 10 * noise) continue;  // below float resolution entry by entry: 1. holds it
    double dot = 0;
    for (size_t k = 0; k < c.analytic.size(); ++k) dot += c.analytic[k] * c.numeric[k];
    const double cosine = na > 0 ? dot / (na * nn) : 0.0;
    EXPECT_GE(cosine, 0.99) << c.name << ": direction off; (analytic, numeric):" << entries;
    EXPECT_NEAR(na / nn, 1.0, 0.05)
        << c.name << ": norm " << na << " against " << nn << "; (analytic, numeric):" << entries;
    ++entrywise;
  }
  EXPECT_GT(largest, 1e-3) << "no parameter has a gradient worth checking";
  EXPECT_GT(entrywise, 0) << "no tensor could be checked entry by entry";
}

inline void expect_gradients_match(ReModel& m, const ReBatch& b, ReTask task) {
  expect_same_gradients(gradients_both_ways(m, b, task));
}

}  // namespace mare::test
