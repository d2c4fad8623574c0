// The tape: gradients of composed functions (with fan-out, reshape, split and
// concat) against central differences, and the bookkeeping rules: nodes with
// several outputs (one backward call with every output's gradient), skipped
// nodes, and the release of the graph after backward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>

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

// add, bias_add and reshape hand the output's gradient itself to an intermediate input
// that has none yet (ag::hand_over_gradient): no zeros, no accumulation. A leaf keeps
// its own buffer, an input used twice gets the gradient twice, and the values are those
// of the accumulation (the tape against central differences above).
TEST(Autograd, AddHandsItsGradientToAFreshIntermediateInputOnly) {
  ag::Var x1 = ag::leaf(rnd({2, 3}, 11), "x1"), x2 = ag::leaf(rnd({2, 3}, 12), "x2");
  ag::Var h1 = ag::tanh(x1), h2 = ag::tanh(x2);
  ag::Var y = ag::add(h1, h2);
  ag::Var r = ag::reshape(y, {6});
  ag::backward(ag::mse(r, ag::constant(rnd({6}, 13))));
  ASSERT_TRUE(r->grad.defined() && y->grad.defined() && h1->grad.defined() && h2->grad.defined());
  EXPECT_EQ(y->grad.f32(), r->grad.f32());   // reshape handed its gradient to y
  EXPECT_EQ(h1->grad.f32(), y->grad.f32());  // add handed it on to its first input
  EXPECT_NE(h2->grad.f32(), y->grad.f32());  // ... and added it into the second's own buffer
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(h2->grad.f32()[i], h1->grad.f32()[i]) << i;
  EXPECT_NE(x1->grad.f32(), h1->grad.f32());  // tanh's backward wrote into the leaf's own

  // One Var twice: d(a + a) = 2 g, into a buffer of its own.
  ag::Var a = ag::tanh(ag::leaf(rnd({3}, 14), "z"));
  ag::Var twice = ag::add(a, a);
  ag::backward(ag::mse(twice, ag::constant(Tensor::zeros({3}))));
  ASSERT_TRUE(a->grad.defined());
  EXPECT_NE(a->grad.f32(), twice->grad.f32());
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(a->grad.f32()[i], 2 * twice->grad.f32()[i]) << i;
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

TEST(Autograd, LeafLossGetsGradientOne) {
  ag::Var a = ag::leaf(Tensor::from_vector({3.0f}, {1}));
  ag::backward(a);
  ag::backward(a);  // nothing to release: a leaf can be seeded again
  EXPECT_EQ(a->grad.item(), 1.0f);
}

// ------------------------------------------------------ multi-output nodes

// y0 = 2x, y1 = x² (elementwise) as one node; counts the calls of its backward
// and keeps the gradients it was given.
struct TwoOutputs {
  std::vector<ag::Var> out;
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  std::shared_ptr<std::vector<Tensor>> seen = std::make_shared<std::vector<Tensor>>();
};
TwoOutputs two_outputs(const ag::Var& x) {
  TwoOutputs r;
  Tensor y0 = Tensor::empty(x->value.shape()), y1 = Tensor::empty(x->value.shape());
  for (int64_t i = 0; i < x->value.numel(); ++i) {
    y0.f32()[i] = 2.0f * x->value.f32()[i];
    y1.f32()[i] = x->value.f32()[i] * x->value.f32()[i];
  }
  r.out = ag::record_multi({y0, y1}, {x},
                           [x, calls = r.calls, seen = r.seen](const std::vector<Tensor>& g) {
                             ++*calls;
                             *seen = g;
                             Tensor dx = ag::grad_of(x);
                             for (int64_t i = 0; i < dx.numel(); ++i) {
                               if (g[0].defined()) dx.f32()[i] += 2.0f * g[0].f32()[i];
                               if (g[1].defined())
                                 dx.f32()[i] += 2.0f * x->value.f32()[i] * g[1].f32()[i];
                             }
                           });
  return r;
}

// Σ c_i · v_i with fixed coefficients: d/dv = c, so gradients are known exactly.
ag::Var dot(const ag::Var& v, const std::vector<float>& c) {
  float s = 0.0f;
  for (int64_t i = 0; i < v->value.numel(); ++i) s += c[i] * v->value.f32()[i];
  return ag::record(Tensor::from_vector({s}, {1}), {v}, [v, c](ag::Node& self) {
    Tensor d = ag::grad_of(v);
    for (int64_t i = 0; i < d.numel(); ++i) d.f32()[i] += c[i] * self.grad.f32()[0];
  });
}

TEST(AutogradMultiOutput, OneBackwardCallWithEveryOutputsGradient) {
  ag::Var x = ag::leaf(Tensor::from_vector({0.5f, -1.0f, 2.0f}, {3}), "x");
  TwoOutputs t = two_outputs(x);
  ASSERT_EQ(t.out.size(), 2u);
  // Both outputs hang off one hidden op node.
  ASSERT_EQ(t.out[0]->inputs.size(), 1u);
  EXPECT_EQ(t.out[0]->inputs[0], t.out[1]->inputs[0]);
  EXPECT_FALSE(t.out[0]->inputs[0]->value.defined());
  ag::backward(ag::add(dot(t.out[0], {1, 2, 3}), dot(t.out[1], {-1, 1, 0.5f})));
  EXPECT_EQ(*t.calls, 1);
  ASSERT_EQ(t.seen->size(), 2u);
  EXPECT_EQ((*t.seen)[0].to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ((*t.seen)[1].to_vector(), (std::vector<float>{-1, 1, 0.5f}));
  // dx = 2·c0 + 2x·c1
  EXPECT_EQ(x->grad.to_vector(), (std::vector<float>{2 - 1, 4 - 2, 6 + 2}));
}

TEST(AutogradMultiOutput, AnOutputWithoutGradientArrivesUndefined) {
  for (int used : {0, 1}) {
    SCOPED_TRACE(used);
    ag::Var x = ag::leaf(Tensor::from_vector({0.5f, -1.0f}, {2}), "x");
    TwoOutputs t = two_outputs(x);
    ag::Var unused = t.out[1 - used];  // still alive, but not on the loss's path
    ag::backward(dot(t.out[used], {1, 1}));
    EXPECT_EQ(*t.calls, 1);
    ASSERT_EQ(t.seen->size(), 2u);
    EXPECT_TRUE((*t.seen)[used].defined());
    EXPECT_FALSE((*t.seen)[1 - used].defined());
    EXPECT_EQ(x->grad.to_vector(),
              used == 0 ? (std::vector<float>{2, 2}) : (std::vector<float>{1, -2}));
  }
  // An output dropped before backward counts as unused too.
  ag::Var x = ag::leaf(Tensor::from_vector({3.0f}, {1}), "x");
  TwoOutputs t = two_outputs(x);
  ag::Var y1 = t.out[1];
  t.out.clear();
  ag::backward(dot(y1, {1}));
  EXPECT_EQ(*t.calls, 1);
  EXPECT_FALSE((*t.seen)[0].defined());
  EXPECT_EQ(x->grad.to_vector(), (std::vector<float>{6}));
}

// A diamond whose two arms have different lengths (and one output used twice):
// the op's backward must wait for the longer arm.
TEST(AutogradMultiOutput, DiamondWaitsForEveryConsumer) {
  ag::Var x = ag::leaf(Tensor::from_vector({0.25f, -0.5f}, {2}), "x");
  TwoOutputs t = two_outputs(x);
  ag::Var long_arm = ag::scale(ag::scale(ag::scale(t.out[0], 2.0f), 2.0f), 2.0f);  // 8·y0
  ag::Var loss =
      ag::add(ag::add(dot(long_arm, {1, 1}), dot(t.out[1], {1, 1})), dot(t.out[0], {1, -1}));
  ag::backward(loss);
  EXPECT_EQ(*t.calls, 1);
  EXPECT_EQ((*t.seen)[0].to_vector(), (std::vector<float>{9, 7}));
  EXPECT_EQ((*t.seen)[1].to_vector(), (std::vector<float>{1, 1}));
  EXPECT_EQ(x->grad.to_vector(), (std::vector<float>{18 + 0.5f, 14 - 1.0f}));
}

TEST(AutogradMultiOutput, NoInputNeedsAGradientGivesConstants) {
  auto out =
      ag::record_multi({Tensor::zeros({2}), Tensor::zeros({3})}, {ag::constant(Tensor::zeros({1}))},
                       [](const std::vector<Tensor>&) { FAIL() << "recorded"; });
  ASSERT_EQ(out.size(), 2u);
  for (const ag::Var& v : out) {
    EXPECT_FALSE(v->requires_grad);
    EXPECT_TRUE(v->inputs.empty());
  }
  EXPECT_EQ(out[1]->value.numel(), 3);
}

// The op-node wrapper of a split / LSTM node, counting its backward calls.
std::shared_ptr<int> count_backward_calls(const ag::Var& output) {
  auto calls = std::make_shared<int>(0);
  ag::Var op = output->inputs.at(0);
  op->backward_fn = [calls, f = op->backward_fn](ag::Node& self) {
    ++*calls;
    f(self);
  };
  return calls;
}

TEST(AutogradMultiOutput, SplitRunsItsBackwardOnce) {
  ag::Var a = ag::leaf(rnd({2, 7}, 3), "a");
  auto parts = ag::split(a, {2, 1, 4}, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0]->inputs.at(0), parts[2]->inputs.at(0));
  auto calls = count_backward_calls(parts[0]);
  // Parts 0 and 2 used (part 2 twice), part 1 not: its slice gets zero.
  ag::Var loss = ag::add(ag::mse(parts[0], ag::constant(Tensor::zeros({2, 2}))),
                         ag::mse(ag::mul(parts[2], parts[2]), ag::constant(Tensor::zeros({2, 4}))));
  ag::backward(loss);
  EXPECT_EQ(*calls, 1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 0; j < 7; ++j) {
      float v = a->value.f32()[r * 7 + j], g = a->grad.f32()[r * 7 + j];
      if (j < 2)
        EXPECT_FLOAT_EQ(g, 2 * v / 4) << r << "," << j;
      else if (j == 2)
        EXPECT_EQ(g, 0.0f);
      else
        EXPECT_FLOAT_EQ(g, 2 * v * v * 2 * v / 8) << r << "," << j;
    }
}

TEST(AutogradMultiOutput, LstmCellRunsOneBackwardPerStep) {
  const int64_t B = 2, I = 3, H = 2;
  ag::Var w = ag::leaf(rnd({I + H, 4 * H}, 4), "w"), b = ag::leaf(rnd({4 * H}, 5), "b");
  ag::Var h = ag::constant(Tensor::zeros({B, H})), c = ag::constant(Tensor::zeros({B, H}));
  std::vector<std::shared_ptr<int>> calls;
  for (int t = 0; t < 3; ++t) {
    ag::LstmState s = ag::lstm_cell(ag::constant(rnd({B, I}, 10 + t)), h, c, w, b);
    EXPECT_EQ(s.h->inputs.at(0), s.c->inputs.at(0));
    calls.push_back(count_backward_calls(s.h));
    h = s.h;
    c = s.c;
  }
  ag::backward(ag::mse(h, ag::constant(Tensor::zeros({B, H}))));
  for (const auto& n : calls) EXPECT_EQ(*n, 1);
}

// -------------------------------------------------- skipping and releasing

// A node that nothing flowed into does not run its backward: the kernel rule
// "skip undefined gradients", one level up.
TEST(AutogradRules, NodesThatReceivedNoGradientAreSkipped) {
  ag::Var x = ag::leaf(rnd({3}, 1), "x");
  auto calls = std::make_shared<int>(0);
  ag::Var y = ag::record(x->value.clone(), {x}, [calls](ag::Node&) { ++*calls; });
  // z depends on y but passes nothing back to it.
  ag::Var z = ag::record(Tensor::from_vector({1.0f}, {1}), {y}, [](ag::Node&) {});
  ag::backward(z);
  EXPECT_EQ(*calls, 0);
  EXPECT_FALSE(y->grad.defined());
  EXPECT_FALSE(x->grad.defined());
}

TEST(AutogradRelease, BackwardFreesIntermediatesAndKeepsLeafGradients) {
  ag::Var w = ag::leaf(rnd({3, 2}, 1), "w");
  ag::Var x = ag::constant(rnd({4, 3}, 2));
  auto sentinel = std::make_shared<int>(0);  // held by a closure only
  std::weak_ptr<int> closure_state = sentinel;
  ag::Var h = ag::tanh(ag::matmul(x, w));
  ag::Var marked = ag::record(h->value, {h}, [h, sentinel](ag::Node& self) {
    Tensor d = ag::grad_of(h);
    for (int64_t i = 0; i < d.numel(); ++i) d.f32()[i] += self.grad.f32()[i];
  });
  sentinel.reset();
  auto parts = ag::split(marked, {1, 1}, 1);
  std::weak_ptr<ag::Node> h_node = h, op_node = parts[0]->inputs[0], part1 = parts[1];
  ag::Var loss = ag::mse(parts[0], ag::constant(Tensor::zeros({4, 1})));
  h.reset();
  marked.reset();
  parts.clear();
  ASSERT_FALSE(h_node.expired());
  ASSERT_FALSE(op_node.expired());
  ASSERT_FALSE(closure_state.expired());
  ag::backward(loss);
  // Only the caller's loss is left: no closure, no links.
  EXPECT_TRUE(h_node.expired());
  EXPECT_TRUE(op_node.expired());
  EXPECT_TRUE(part1.expired());
  EXPECT_TRUE(closure_state.expired());
  EXPECT_TRUE(loss->inputs.empty());
  EXPECT_FALSE(loss->backward_fn);
  EXPECT_TRUE(loss->released);
  ASSERT_TRUE(w->grad.defined());
  EXPECT_FALSE(w->released);
  EXPECT_TRUE(w->requires_grad);
}

TEST(AutogradRelease, SecondBackwardThroughAReleasedGraphThrows) {
  ag::Var w = ag::leaf(rnd({2, 2}, 1), "w");
  ag::Var y = ag::sigmoid(w);
  auto parts = ag::split(y, {1, 1}, 1);
  ag::Var target = ag::constant(Tensor::zeros({2, 1}));
  ag::Var loss = ag::mse(parts[0], target);
  ag::backward(loss);
  const std::vector<float> grad = w->grad.to_vector();
  // The same loss again.
  EXPECT_THROW(ag::backward(loss), std::logic_error);
  // A new loss over a released intermediate.
  EXPECT_THROW(ag::backward(ag::mse(y, ag::constant(Tensor::zeros({2, 2})))), std::logic_error);
  // A new loss over the other output of a released multi-output node: its
  // gradient would otherwise be dropped in silence.
  EXPECT_THROW(ag::backward(ag::mse(parts[1], target)), std::logic_error);
  try {
    ag::backward(loss);
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("released"), std::string::npos) << e.what();
  }
  // Nothing ran: the leaf's gradient is what the first backward left.
  EXPECT_EQ(w->grad.to_vector(), grad);
  // A fresh forward from the same leaves is fine.
  ag::backward(ag::mse(ag::split(ag::sigmoid(w), {1, 1}, 1)[1], target));
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
