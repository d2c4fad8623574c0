// The tape: gradients of composed functions (with fan-out, reshape, split and
// concat) against central differences, and the bookkeeping rules.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kernels/random.h"
#include "models/functions.h"
#include "models/registry.h"

namespace mare {
namespace {

Tensor rnd(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s);
  fill_uniform(t, seed, 1, -1, 1);
  return t;
}

// Central differences of a float scalar function of `p`, compared with the
// tape's gradient. Float evaluation: step 1e-2 and tolerance 2e-3 (the ops
// themselves are checked in double precision in the op table; this checks the
// wiring of the tape).
void expect_tape_matches_differences(const std::vector<ag::Var>& params,
                                     const std::function<ag::Var()>& loss_fn) {
  for (const ag::Var& p : params) p->grad = Tensor();
  ag::backward(loss_fn());
  for (const ag::Var& p : params) {
    ASSERT_TRUE(p->grad.defined()) << p->name << " received no gradient";
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      float keep = p->value.f32()[i];
      const float h = 1e-2f;
      p->value.f32()[i] = keep + h;
      double up = loss_fn()->value.item();
      p->value.f32()[i] = keep - h;
      double down = loss_fn()->value.item();
      p->value.f32()[i] = keep;
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(p->grad.f32()[i], numeric, 2e-3 + 2e-3 * std::fabs(numeric))
          << p->name << "[" << i << "]";
    }
  }
}

TEST(Autograd, ComposedGraphWithFanOut) {
  ag::Var x = ag::constant(rnd({4, 3}, 1));
  ag::Var w1 = ag::leaf(rnd({3, 5}, 2), "w1"), b1 = ag::leaf(rnd({5}, 3), "b1");
  ag::Var w2 = ag::leaf(rnd({5, 3}, 4), "w2");
  Tensor targets = Tensor::from_indices({0, 2, 1, 2}, {4});
  auto loss = [&] {
    ag::Var h = ag::tanh(ag::bias_add(ag::matmul(x, w1), b1));
    ag::Var hh = ag::add(h, ag::mul(h, h));  // h used three times
    ag::Var z = ag::matmul(hh, w2);
    return ag::add(ag::cross_entropy(z, targets),
                   ag::scale(ag::mse(z, ag::constant(rnd({4, 3}, 5))), 0.5f));
  };
  expect_tape_matches_differences({w1, b1, w2}, loss);
}

TEST(Autograd, ReshapeSplitConcatRoute) {
  ag::Var a = ag::leaf(rnd({2, 6}, 6), "a");
  auto loss = [&] {
    auto parts = ag::split(ag::reshape(a, {2, 3, 2}), {1, 2}, 1);
    ag::Var joined = ag::concat({ag::sigmoid(parts[1]), parts[0]}, 1);
    return ag::mse(joined, ag::constant(rnd({2, 3, 2}, 7)));
  };
  expect_tape_matches_differences({a}, loss);
}

TEST(Autograd, AttentionLayerWithProjections) {
  ag::Var x = ag::constant(rnd({6, 4}, 8));
  ag::Var wq = ag::leaf(rnd({4, 4}, 9), "wq"), wk = ag::leaf(rnd({4, 4}, 10), "wk"),
          wv = ag::leaf(rnd({4, 4}, 11), "wv");
  Tensor mask = Tensor::from_vector({1, 1, 0, 1, 1, 1}, {2, 3});
  auto loss = [&] {
    auto proj = [&](const ag::Var& w) { return ag::reshape(ag::matmul(x, w), {2, 3, 4}); };
    ag::Var o = ag::attention(proj(wq), proj(wk), proj(wv), 2, mask);
    return ag::mse(o, ag::constant(rnd({2, 3, 4}, 12)));
  };
  expect_tape_matches_differences({wq, wk, wv}, loss);
}

TEST(Autograd, NothingRecordedWithoutGradients) {
  ag::Var a = ag::constant(rnd({2, 2}, 1)), b = ag::constant(rnd({2, 2}, 2));
  ag::Var c = ag::matmul(a, b);
  EXPECT_FALSE(c->requires_grad);
  EXPECT_TRUE(c->inputs.empty());
  EXPECT_FALSE(c->backward_fn);
}

TEST(Autograd, LossMustBeScalar) {
  ag::Var a = ag::leaf(rnd({2, 2}, 1));
  EXPECT_THROW(ag::backward(ag::relu(a)), std::invalid_argument);
}

TEST(Registry, ParsesNamesAndRejectsUnknowns) {
  ModelSpec s = ModelSpec::parse("ntcre+cpd+alloc=sorted");
  EXPECT_EQ(s.base, "ntcre");
  EXPECT_EQ(s.switches.at("cpd"), "on");
  EXPECT_EQ(s.switches.at("alloc"), "sorted");
  EXPECT_EQ(s.canonical(), "ntcre+alloc=sorted+cpd");
  EXPECT_THROW(ModelSpec::parse("mlp++x"), std::invalid_argument);
  EXPECT_THROW(build_classifier(ModelSpec::parse("nosuch"), 2, 2, 1), std::invalid_argument);
  EXPECT_THROW(build_classifier(ModelSpec::parse("mlp+bogus"), 2, 2, 1), std::invalid_argument);
  EXPECT_THROW(build_classifier(ModelSpec::parse("mlp+hidden=x"), 2, 2, 1), std::invalid_argument);
  auto m = build_classifier(ModelSpec::parse("mlp+hidden=8+layers=1"), 3, 2, 1);
  EXPECT_EQ(m->parameters().count(), 3 * 8 + 8 + 8 * 2 + 2);
}

TEST(Parameters, SameSeedSameWeightsOtherSeedOther) {
  auto a = build_classifier(ModelSpec::parse("mlp"), 2, 2, 7);
  auto b = build_classifier(ModelSpec::parse("mlp"), 2, 2, 7);
  auto c = build_classifier(ModelSpec::parse("mlp"), 2, 2, 8);
  EXPECT_EQ(a->parameters().all()[0]->value.to_vector(),
            b->parameters().all()[0]->value.to_vector());
  EXPECT_NE(a->parameters().all()[0]->value.to_vector(),
            c->parameters().all()[0]->value.to_vector());
}

}  // namespace
}  // namespace mare
