// The tape column: every wrapper of models/functions.h run through the tape,
// its gradients against central differences of the wrapper's own (float)
// forward, with the contraction L = Σ_k Σ_i g_k[i] · out_k[i] (a fixed random
// cotangent g_k per output that the loss uses) taken in double. The op table
// (tests/kernels) ties each kernel pair to a double reference; this column
// checks what the wrappers add: which input gets which gradient, constants left
// alone, several outputs of one node, outputs the loss does not use.
//
// A wrapper declared in models/functions.h without a case here fails the
// suite (the header is read at test time), as an op without a case fails the
// op table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "models/functions.h"
#include "tests/kernels/op_table.h"

#ifndef MARE_SOURCE_DIR_DEFAULT
#define MARE_SOURCE_DIR_DEFAULT "."
#endif

namespace mare {
namespace {

using test::random_tensor;
using Vars = std::vector<ag::Var>;

struct TapeCase {
  TapeCase(std::string name_, std::string wrapper_, std::vector<Tensor> inputs_,
           std::vector<bool> differentiable_, std::function<Vars(const Vars&)> apply_,
           std::vector<bool> used_ = {})
      : name(std::move(name_)),
        wrapper(std::move(wrapper_)),
        inputs(std::move(inputs_)),
        differentiable(std::move(differentiable_)),
        apply(std::move(apply_)),
        used(std::move(used_)) {}
  std::string name;     // "<wrapper>/<variant>", unique
  std::string wrapper;  // the function of models/functions.h it covers
  std::vector<Tensor> inputs;
  std::vector<bool> differentiable;  // per input: a leaf, or a constant
  std::function<Vars(const Vars&)> apply;
  std::vector<bool> used;  // per output; empty: every output (the others get no gradient)
  float step = 1e-3f;
  // Float forward evaluated at ±step: rounding of O(1e-7 · |L|) over 2·step
  // (every case passes at a fifth of these).
  double atol = 5e-4, rtol = 5e-3;
};

void PrintTo(const TapeCase& c, std::ostream* os) {
  *os << c.name;
}

// Moves values within `gap` of a kink away from it, so that central
// differences see a smooth function.
Tensor away_from(Tensor t, std::vector<float> kinks, float gap = 2e-2f) {
  for (int64_t i = 0; i < t.numel(); ++i)
    for (float k : kinks)
      if (std::fabs(t.f32()[i] - k) < gap) t.f32()[i] = k + (t.f32()[i] >= k ? gap : -gap);
  return t;
}

Tensor rnd(const Shape& s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return random_tensor(s, seed, lo, hi);
}

std::vector<bool> all(size_t n) {
  return std::vector<bool>(n, true);
}

// ------------------------------------------------------------------ cases

TapeCase unary(const std::string& name, Tensor x, ag::Var (*fn)(const ag::Var&)) {
  return {name + "/[3, 5]", name, {x}, {true}, [fn](const Vars& v) { return Vars{fn(v[0])}; }};
}

std::vector<TapeCase> linalg_and_elementwise() {
  std::vector<TapeCase> cs;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      cs.push_back(
          {std::string("matmul/3x4x2") + (ta ? "/ta" : "") + (tb ? "/tb" : ""),
           "matmul",
           {rnd(ta ? Shape{4, 3} : Shape{3, 4}, 1), rnd(tb ? Shape{2, 4} : Shape{4, 2}, 2)},
           all(2),
           [ta, tb](const Vars& v) { return Vars{ag::matmul(v[0], v[1], ta, tb)}; }});
  cs.push_back({"matmul/constant_b",
                "matmul",
                {rnd({2, 3}, 3), rnd({3, 4}, 4)},
                {true, false},
                [](const Vars& v) { return Vars{ag::matmul(v[0], v[1])}; }});
  cs.push_back({"batched_matmul/2x3x4x2/ta/tb",
                "batched_matmul",
                {rnd({2, 4, 3}, 5), rnd({2, 2, 4}, 6)},
                all(2),
                [](const Vars& v) { return Vars{ag::batched_matmul(v[0], v[1], true, true)}; }});
  cs.push_back({"batched_matmul/2x3x4x2",
                "batched_matmul",
                {rnd({2, 3, 4}, 7), rnd({2, 4, 2}, 8)},
                {false, true},
                [](const Vars& v) { return Vars{ag::batched_matmul(v[0], v[1])}; }});
  cs.push_back({"bias_add/[2, 3, 4]",
                "bias_add",
                {rnd({2, 3, 4}, 9), rnd({4}, 10)},
                all(2),
                [](const Vars& v) { return Vars{ag::bias_add(v[0], v[1])}; }});
  cs.push_back({"add/[3, 4]", "add", {rnd({3, 4}, 11), rnd({3, 4}, 12)}, all(2), [](const Vars& v) {
                  return Vars{ag::add(v[0], v[1])};
                }});
  cs.push_back({"add/same_var_twice", "add", {rnd({3, 4}, 13)}, all(1), [](const Vars& v) {
                  return Vars{ag::add(v[0], v[0])};
                }});
  cs.push_back(
      {"mul/[3, 4]", "mul", {rnd({3, 4}, 14), rnd({3, 4}, 15)}, {true, false}, [](const Vars& v) {
         return Vars{ag::mul(v[0], v[1])};
       }});
  cs.push_back({"mul/square", "mul", {rnd({3, 4}, 16)}, all(1), [](const Vars& v) {
                  return Vars{ag::mul(v[0], v[0])};
                }});
  {
    // Rows 0 and 2 of a, rows 1 and 3 of b; and one Var on both sides (every row's
    // gradient reaches it once); a constant b takes nothing.
    const Tensor keep = Tensor::from_vector({1, 0, 1, 0}, {4});
    cs.push_back({"select_rows/[4, 3]",
                  "select_rows",
                  {rnd({4, 3}, 23), rnd({4, 3}, 24)},
                  all(2),
                  [keep](const Vars& v) { return Vars{ag::select_rows(keep, v[0], v[1])}; }});
    cs.push_back(
        {"select_rows/same_var", "select_rows", {rnd({4, 3}, 25)}, all(1), [keep](const Vars& v) {
           return Vars{ag::select_rows(keep, v[0], v[0])};
         }});
    cs.push_back({"select_rows/constant_b",
                  "select_rows",
                  {rnd({2, 2, 3}, 26), rnd({2, 2, 3}, 27)},
                  {true, false},
                  [keep](const Vars& v) { return Vars{ag::select_rows(keep, v[0], v[1])}; }});
  }
  cs.push_back({"scale_rows/[4, 3]",
                "scale_rows",
                {rnd({4, 3}, 28), rnd({4}, 29)},
                all(2),
                [](const Vars& v) { return Vars{ag::scale_rows(v[0], v[1])}; }});
  cs.push_back({"scale_rows/constant_factors",
                "scale_rows",
                {rnd({2, 2, 3}, 30), rnd({4}, 31)},
                {true, false},
                [](const Vars& v) { return Vars{ag::scale_rows(v[0], v[1])}; }});
  cs.push_back({"scale/[2, 5]", "scale", {rnd({2, 5}, 17)}, all(1), [](const Vars& v) {
                  return Vars{ag::scale(v[0], -1.5f)};
                }});
  cs.push_back(unary("relu", away_from(rnd({3, 5}, 18), {0}), ag::relu));
  cs.push_back(unary("relu6", away_from(rnd({3, 5}, 19, -2, 8), {0, 6}), ag::relu6));
  cs.push_back(unary("sigmoid", rnd({3, 5}, 20, -4, 4), ag::sigmoid));
  cs.push_back(unary("tanh", rnd({3, 5}, 21, -2, 2), ag::tanh));
  cs.push_back(unary("oneplus", rnd({3, 5}, 22, -4, 4), ag::oneplus));
  cs.push_back(
      unary("hard_sigmoid", away_from(rnd({3, 5}, 23, -4, 4), {-2.5f, 2.5f}), ag::hard_sigmoid));
  for (bool training : {true, false})
    cs.push_back(
        {std::string("dropout/[4, 6]/p0.3/") + (training ? "train" : "eval"),
         "dropout",
         {rnd({4, 6}, 24)},
         all(1),
         [training](const Vars& v) { return Vars{ag::dropout(v[0], 0.3f, training, 5, 7, 11)}; }});
  return cs;
}

std::vector<TapeCase> softmax_and_norm() {
  std::vector<TapeCase> cs;
  Tensor mask = Tensor::from_vector({1, 0, 1, 1, 1,  //
                                     0, 0, 0, 0, 0,  //
                                     1, 1, 0, 1, 1},
                                    {3, 5});
  for (bool masked : {false, true}) {
    Tensor m = masked ? mask : Tensor();
    std::string v = masked ? "/masked" : "/plain";
    cs.push_back({"softmax" + v, "softmax", {rnd({3, 5}, 30, -3, 3)}, all(1), [m](const Vars& x) {
                    return Vars{ag::softmax(x[0], m)};
                  }});
    cs.push_back(
        {"log_softmax" + v, "log_softmax", {rnd({3, 5}, 31, -3, 3)}, all(1), [m](const Vars& x) {
           return Vars{ag::log_softmax(x[0], m)};
         }});
  }
  {
    Tensor offsets = Tensor::from_indices({0, 2, 3, 6}, {4});
    Tensor rows = Tensor::from_indices({0, 2, 1, 3, 4, 0}, {6});
    cs.push_back(
        {"logsumexp_sets/[5, 3]/3 sets",
         "logsumexp_sets",
         {rnd({5, 3}, 32, -2, 2)},
         all(1),
         [offsets, rows](const Vars& x) { return Vars{ag::logsumexp_sets(x[0], offsets, rows)}; }});
  }
  cs.push_back({"layer_norm/[3, 2, 4]",
                "layer_norm",
                {rnd({3, 2, 4}, 33, -2, 2), rnd({4}, 34, 0.5f, 1.5f), rnd({4}, 35)},
                all(3),
                [](const Vars& v) { return Vars{ag::layer_norm(v[0], v[1], v[2])}; }});
  for (bool training : {true, false})
    cs.push_back({std::string("batch_norm/[5, 3]/") + (training ? "train" : "eval"),
                  "batch_norm",
                  {rnd({5, 3}, 36, -2, 2), rnd({3}, 37, 0.5f, 1.5f), rnd({3}, 38)},
                  all(3),
                  [training](const Vars& v) {
                    // Fresh running statistics per evaluation: forward updates them.
                    Tensor mean = Tensor::from_vector({0.1f, -0.2f, 0.3f}, {3});
                    Tensor var = Tensor::from_vector({1.5f, 0.5f, 2.0f}, {3});
                    return Vars{ag::batch_norm(v[0], v[1], v[2], mean, var, training)};
                  }});
  return cs;
}

std::vector<TapeCase> conv_indexing_loss_attention() {
  std::vector<TapeCase> cs;
  for (bool bias : {false, true}) {
    std::string v = bias ? "/bias" : "/no_bias";
    cs.push_back(
        {"conv1d/x[2, 4, 3]/w[3, 3, 2]" + v,
         "conv1d",
         {rnd({2, 4, 3}, 40), rnd({3, 3, 2}, 41), rnd({2}, 42)},
         {true, true, bias},
         [bias](const Vars& x) { return Vars{ag::conv1d(x[0], x[1], bias ? x[2] : nullptr)}; }});
    cs.push_back({"depthwise_conv1d/x[2, 5, 3]/w[3, 3]" + v,
                  "depthwise_conv1d",
                  {rnd({2, 5, 3}, 43), rnd({3, 3}, 44), rnd({3}, 45)},
                  {true, true, bias},
                  [bias](const Vars& x) {
                    return Vars{ag::depthwise_conv1d(x[0], x[1], bias ? x[2] : nullptr)};
                  }});
  }
  {
    // Distinct values 0.1 apart: no tie within a step.
    std::vector<float> v(12);
    for (int i = 0; i < 12; ++i) v[i] = 0.1f * static_cast<float>((i * 5) % 12) - 0.6f;
    Tensor x = Tensor::from_vector(v, {3, 4});
    for (int axis : {0, 1})
      cs.push_back(
          {"max/[3, 4]/axis" + std::to_string(axis), "max", {x}, all(1), [axis](const Vars& a) {
             return Vars{ag::max(a[0], axis)};
           }});
  }
  {
    Tensor ids = Tensor::from_indices({3, 0, 3, 1}, {2, 2});  // a repeat accumulates
    cs.push_back({"embedding/table[5, 3]/ids[2, 2]",
                  "embedding",
                  {rnd({5, 3}, 46)},
                  all(1),
                  [ids](const Vars& t) { return Vars{ag::embedding(t[0], ids)}; }});
  }
  cs.push_back({"concat/axis1/[2, 3|1|2]/constant_middle",
                "concat",
                {rnd({2, 3}, 47), rnd({2, 1}, 48), rnd({2, 2}, 49)},
                {true, false, true},
                [](const Vars& v) {
                  return Vars{ag::concat({v[0], v[1], v[2]}, 1)};
                }});
  cs.push_back({"concat/axis0/[1|2, 3]",
                "concat",
                {rnd({1, 3}, 50), rnd({2, 3}, 51)},
                all(2),
                [](const Vars& v) {
                  return Vars{ag::concat({v[0], v[1]}, 0)};
                }});
  auto split3 = [](const Vars& v) { return ag::split(v[0], {1, 2, 3}, 1); };
  cs.push_back({"split/axis1/[2, 6]->1,2,3", "split", {rnd({2, 6}, 52)}, all(1), split3});
  cs.push_back({"split/axis1/[2, 6]->1,2,3/middle_unused",
                "split",
                {rnd({2, 6}, 53)},
                all(1),
                split3,
                {true, false, true}});
  cs.push_back({"split/axis0/[3, 2]->2,1/first_unused",
                "split",
                {rnd({3, 2}, 54)},
                all(1),
                [](const Vars& v) {
                  return ag::split(v[0], {2, 1}, 0);
                },
                {false, true}});
  {
    Tensor targets = Tensor::from_indices({0, 2, -1, 1}, {4});
    Tensor weights = Tensor::from_vector({0.5f, 2.0f, 1.0f}, {3});
    for (bool weighted : {false, true}) {
      Tensor w = weighted ? weights : Tensor();
      cs.push_back(
          {std::string("cross_entropy/[4, 3]/") + (weighted ? "weighted" : "unweighted"),
           "cross_entropy",
           {rnd({4, 3}, 55, -2, 2)},
           all(1),
           [targets, w](const Vars& v) { return Vars{ag::cross_entropy(v[0], targets, w)}; }});
    }
  }
  cs.push_back({"mse/[3, 4]", "mse", {rnd({3, 4}, 56), rnd({3, 4}, 57)}, all(2), [](const Vars& v) {
                  return Vars{ag::mse(v[0], v[1])};
                }});
  cs.push_back({"mse/constant_target",
                "mse",
                {rnd({3, 4}, 58), rnd({3, 4}, 59)},
                {true, false},
                [](const Vars& v) { return Vars{ag::mse(v[0], v[1])}; }});
  {
    Tensor key_mask = Tensor::from_vector({1, 1, 0, 1, 0, 1}, {2, 3});
    cs.push_back(
        {"attention/b2/i2/j3/d4/h2/masked",
         "attention",
         {rnd({2, 2, 4}, 60), rnd({2, 3, 4}, 61), rnd({2, 3, 4}, 62)},
         all(3),
         [key_mask](const Vars& v) { return Vars{ag::attention(v[0], v[1], v[2], 2, key_mask)}; }});
  }
  cs.push_back({"reshape/[2, 6]->[3, 4]", "reshape", {rnd({2, 6}, 63)}, all(1), [](const Vars& v) {
                  return Vars{ag::reshape(v[0], {3, 4})};
                }});
  cs.push_back({"column/[3, 4]/j2", "column", {rnd({3, 4}, 64)}, all(1), [](const Vars& v) {
                  return Vars{ag::column(v[0], 2)};
                }});
  return cs;
}

// The GRPU cell: inputs x_c, h_prev, w_gates, b_gates, w_cand, b_cand (x_vm
// and the mask are data held by the closure).
TapeCase grpu(const std::string& variant, int64_t B, int64_t ic, int64_t H, GrpuConfig cfg,
              std::vector<float> mask_values, uint64_t seed) {
  const int64_t S = H + cfg.fields(), iv = cfg.machine_inputs();
  Tensor mask = mask_values.empty() ? Tensor() : Tensor::from_vector(mask_values, {B});
  Tensor x_vm;
  if (iv > 0) {
    x_vm = rnd({B, iv}, seed + 1, 0.0f, 1.0f);
    if (cfg.cond)  // the control column takes the task's values −1, 0, 1
      for (int64_t b = 0; b < B; ++b) x_vm.f32()[b * iv + 1] = static_cast<float>(b % 3) - 1.0f;
  }
  return {"grpu_cell/" + variant,
          "grpu_cell",
          {rnd({B, ic}, seed), rnd({B, S}, seed + 2), rnd({ic + H, 2 * S}, seed + 3),
           rnd({2 * S}, seed + 4), rnd({ic + H, H}, seed + 5), rnd({H}, seed + 6)},
          {ic > 0, true, true, true, true, true},
          [=](const Vars& v) {
            return Vars{ag::grpu_cell(v[0], x_vm, v[1], v[2], v[3], v[4], v[5], mask, cfg)};
          }};
}

std::vector<TapeCase> recurrent() {
  std::vector<TapeCase> cs;
  cs.push_back(grpu("k2/read_sum", 3, 1, 2, GrpuConfig{}, {}, 100));
  GrpuConfig prod;
  prod.prod = true;
  cs.push_back(grpu("k3/prod/code/masked", 3, 2, 2, prod, {1, 0, 1}, 110));
  GrpuConfig text = prod;
  text.neutral_one = NeutralOne::text;
  cs.push_back(grpu("k3/prod/text", 2, 1, 3, text, {}, 120));
  GrpuConfig cond = prod;
  cond.cond = true;
  cs.push_back(grpu("k4/prod_cond/no_controller_input", 4, 0, 2, cond, {1, 1, 0, 1}, 130));
  GrpuConfig none;
  none.machine = false;
  cs.push_back(grpu("k0/plain_gru", 2, 2, 3, none, {}, 140));
  {
    const int64_t B = 3, I = 2, H = 3;
    Tensor mask = Tensor::from_vector({1, 0, 1}, {B});
    cs.push_back({"gru_cell/b3/i2/h3/masked",
                  "gru_cell",
                  {rnd({B, I}, 150), rnd({B, H}, 151), rnd({I + H, 2 * H}, 152), rnd({2 * H}, 153),
                   rnd({I + H, H}, 154), rnd({H}, 155)},
                  all(6),
                  [mask](const Vars& v) {
                    return Vars{ag::gru_cell(v[0], v[1], v[2], v[3], v[4], v[5], mask)};
                  }});
  }
  {
    const int64_t B = 3, I = 2, H = 2;
    Tensor mask = Tensor::from_vector({1, 1, 0}, {B});
    auto lstm = [mask](const Vars& v) {
      ag::LstmState s = ag::lstm_cell(v[0], v[1], v[2], v[3], v[4], mask);
      return Vars{s.h, s.c};
    };
    std::vector<Tensor> in = {rnd({B, I}, 160), rnd({B, H}, 161), rnd({B, H}, 162),
                              rnd({I + H, 4 * H}, 163), rnd({4 * H}, 164)};
    cs.push_back({"lstm_cell/b3/i2/h2/masked/h_and_c", "lstm_cell", in, all(5), lstm});
    cs.push_back(
        {"lstm_cell/b3/i2/h2/masked/h_only", "lstm_cell", in, all(5), lstm, {true, false}});
    cs.push_back(
        {"lstm_cell/b3/i2/h2/masked/c_only", "lstm_cell", in, all(5), lstm, {false, true}});
    cs.push_back(
        {"lstm_cell/constant_state", "lstm_cell", in, {false, false, false, true, true}, lstm});
  }
  return cs;
}

std::vector<TapeCase> all_tape_cases() {
  std::vector<TapeCase> cs;
  for (auto* family :
       {linalg_and_elementwise, softmax_and_norm, conv_indexing_loss_attention, recurrent})
    for (TapeCase& c : family()) cs.push_back(std::move(c));
  return cs;
}

// ------------------------------------------------------------------ checks

// Σ_k Σ_i g_k[i] · out_k[i] in double over the used outputs.
double contract(const Vars& outs, const std::vector<Tensor>& g, const std::vector<bool>& used) {
  double s = 0.0;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!used[k]) continue;
    for (int64_t i = 0; i < outs[k]->value.numel(); ++i)
      s += static_cast<double>(g[k].f32()[i]) * outs[k]->value.f32()[i];
  }
  return s;
}

// The same contraction as a tape node: d out_k = g_k.
ag::Var contraction_node(const Vars& outs, const std::vector<Tensor>& g,
                         const std::vector<bool>& used) {
  Vars in;
  std::vector<Tensor> gs;
  for (size_t k = 0; k < outs.size(); ++k)
    if (used[k]) {
      in.push_back(outs[k]);
      gs.push_back(g[k]);
    }
  Tensor value = Tensor::from_vector({static_cast<float>(contract(outs, g, used))}, {1});
  return ag::record(value, in, [in, gs](ag::Node& self) {
    for (size_t k = 0; k < in.size(); ++k) {
      Tensor d = ag::grad_of(in[k]);
      if (!d.defined()) continue;
      for (int64_t i = 0; i < d.numel(); ++i) d.f32()[i] += gs[k].f32()[i] * self.grad.f32()[0];
    }
  });
}

class TapeColumn : public ::testing::TestWithParam<TapeCase> {};

TEST_P(TapeColumn, GradientsMatchCentralDifferences) {
  const TapeCase& c = GetParam();
  ASSERT_EQ(c.inputs.size(), c.differentiable.size());
  Vars vars;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    vars.push_back(c.differentiable[i] ? ag::leaf(c.inputs[i].clone(), "in" + std::to_string(i))
                                       : ag::constant(c.inputs[i].clone()));
  Vars outs = c.apply(vars);
  std::vector<bool> used = c.used.empty() ? all(outs.size()) : c.used;
  ASSERT_EQ(used.size(), outs.size());
  std::vector<Tensor> g;
  for (size_t k = 0; k < outs.size(); ++k) {
    for (float v : outs[k]->value.to_vector()) ASSERT_TRUE(std::isfinite(v)) << "output " << k;
    g.push_back(rnd(outs[k]->value.shape(), 1000 + k));
  }
  ag::backward(contraction_node(outs, g, used));

  // The forward at perturbed inputs, through the wrapper with constants.
  auto loss_at = [&] {
    Vars cs;
    for (const ag::Var& v : vars) cs.push_back(ag::constant(v->value));
    return contract(c.apply(cs), g, used);
  };
  for (size_t i = 0; i < vars.size(); ++i) {
    const ag::Var& v = vars[i];
    if (!c.differentiable[i]) {
      EXPECT_FALSE(v->grad.defined()) << "constant input " << i << " received a gradient";
      continue;
    }
    ASSERT_TRUE(v->grad.defined()) << "input " << i << " received no gradient";
    ASSERT_EQ(v->grad.shape(), v->value.shape()) << "input " << i;
    for (int64_t e = 0; e < v->value.numel(); ++e) {
      float& x = v->value.f32()[e];
      const float keep = x;
      x = keep + c.step;
      const double up_x = x, up = loss_at();
      x = keep - c.step;
      const double down_x = x, down = loss_at();
      x = keep;
      const double numeric = (up - down) / (up_x - down_x), tape = v->grad.f32()[e];
      EXPECT_LE(std::fabs(tape - numeric), c.atol + c.rtol * std::fabs(numeric))
          << "input " << i << "[" << e << "]: tape " << tape << ", central differences " << numeric;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<TapeCase>& info) {
  std::string s;
  for (char ch : info.param.name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Wrappers, TapeColumn, ::testing::ValuesIn(all_tape_cases()), case_name);

// The wrappers the header declares: lines `<type> <name>(` at namespace level.
std::set<std::string> declared_wrappers(const std::string& header) {
  std::ifstream in(header);
  EXPECT_TRUE(in) << "cannot read " << header;
  std::set<std::string> names;
  const std::regex decl(R"(^(?:std::vector<\w+>|[A-Z]\w*)\s+(\w+)\()");
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, decl)) names.insert(m[1]);
  return names;
}

TEST(TapeColumnCoverage, EveryWrapperHasACase) {
  const char* env = std::getenv("MARE_SOURCE_DIR");
  const std::string root = env ? env : MARE_SOURCE_DIR_DEFAULT;
  std::set<std::string> declared = declared_wrappers(root + "/models/functions.h");
  // The parse must see the header: a few names it cannot miss.
  for (const char* n : {"matmul", "split", "lstm_cell", "grpu_cell", "reshape"})
    EXPECT_TRUE(declared.count(n)) << n << " not found in models/functions.h";
  std::set<std::string> covered, names;
  for (const TapeCase& c : all_tape_cases()) {
    covered.insert(c.wrapper);
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
    EXPECT_TRUE(declared.count(c.wrapper)) << c.name << " covers an undeclared wrapper";
  }
  for (const std::string& w : declared)
    EXPECT_TRUE(covered.count(w)) << "ag::" << w << " has no case in the tape column";
}

}  // namespace
}  // namespace mare
