// The GRPU model (dissertation ch. 4; SPEC §4.6): the neutral-element forms at
// r = 0 and r = 1 (Table 4.1, eq. 4.16 and appendix A), the conditional's
// truth table at binary values (Table 4.4, eq. 4.18), hand-set weights that
// solve the addition (and conditional) tasks exactly, gradients of whole
// sequences (BPTT through the tape of fused cells, padded rows included)
// against central differences, and parameter counts against the GRU.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ops/grpu.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/grpu.h"
#include "models/recurrent_baselines.h"
#include "models/registry.h"

namespace mare {
namespace {

// Addition data written here (the models tests do not link the experiments'
// generators): n sequences of min_len..max_len pairs, two positions marked 1.
struct Data {
  SequenceBatch batch;
  Tensor target;  // [n, 1] sum of the marked values (+ offset)
};
Data addition_data(int64_t n, int64_t min_len, int64_t max_len, uint64_t seed, float offset = 0.0f,
                   bool product = false) {
  PhiloxStream rng(seed, 99);
  std::vector<int64_t> len(n);
  for (int64_t& l : len) l = min_len + rng.below(static_cast<uint32_t>(max_len - min_len + 1));
  const int64_t T = max_len;
  Data d{{Tensor::zeros({T, n}), Tensor::zeros({T, n}), Tensor::zeros({T, n})},
         Tensor::empty({n, 1})};
  for (int64_t b = 0; b < n; ++b) {
    int64_t a = rng.below(static_cast<uint32_t>(len[b])), c = a;
    while (c == a) c = rng.below(static_cast<uint32_t>(len[b]));
    for (int64_t t = 0; t < len[b]; ++t) {
      d.batch.values.f32()[t * n + b] = product ? rng.uniform(0.5f, 1.5f) : rng.uniform();
      d.batch.controls.f32()[t * n + b] = t == a || t == c ? 1.0f : (t == 0 ? -1.0f : 0.0f);
      d.batch.mask.f32()[t * n + b] = 1.0f;
    }
    float va = d.batch.values.f32()[a * n + b], vc = d.batch.values.f32()[c * n + b];
    d.target.f32()[b] = (product ? va * vc : va + vc) + offset;
  }
  return d;
}

SequenceTaskShape addition_shape() {
  return {};
}
SequenceTaskShape conditional_shape() {
  SequenceTaskShape s;
  s.conditional = true;
  return s;
}

TEST(GrpuNeutralElements, BothFormsGiveOneAtRZeroAndTheArgumentAtROne) {
  for (NeutralOne form : {NeutralOne::code, NeutralOne::text})
    for (float i : {-3.5f, -1.0f, 0.0f, 0.25f, 1.0f, 7.0f}) {
      EXPECT_EQ(grpu_neutral_one(i, 0.0f, form), 1.0f) << to_string(form) << " i=" << i;
      EXPECT_EQ(grpu_neutral_one(i, 1.0f, form), i) << to_string(form) << " i=" << i;
      EXPECT_EQ(grpu_neutral_zero(i, 0.0f), 0.0f);
      EXPECT_EQ(grpu_neutral_zero(i, 1.0f), i);
    }
  // Between 0 and 1 the two forms differ: code 1 − r + 2ir − ir², text 1 − r + ir².
  EXPECT_FLOAT_EQ(grpu_neutral_one(2.0f, 0.5f, NeutralOne::code), 1.0f - 0.5f + 2.0f - 0.5f);
  EXPECT_FLOAT_EQ(grpu_neutral_one(2.0f, 0.5f, NeutralOne::text), 1.0f - 0.5f + 0.5f);
  EXPECT_EQ(parse_neutral_one("text"), NeutralOne::text);
  EXPECT_THROW(parse_neutral_one("paper"), std::invalid_argument);
}

TEST(GrpuConditional, TruthTableOfTable44AtBinaryValues) {
  // Rows of Table 4.4: u_cond, h̃_cond, ũ_op -> u_op.
  const float table[8][4] = {{0, 0, 0, 0}, {0, 0, 1, 1}, {0, 1, 0, 0}, {0, 1, 1, 1},
                             {1, 0, 0, 0}, {1, 0, 1, 0}, {1, 1, 0, 0}, {1, 1, 1, 1}};
  for (const auto& row : table)
    EXPECT_EQ(grpu_cond_gate(row[2], row[0], row[1]), row[3])
        << "u_cond " << row[0] << " h_cond " << row[1] << " u_op " << row[2];
}

// One cell step with saturated gates: the cond field at control c (h̃_cond =
// [c = 1]) and the sum field's update under u_cond ∈ {0, 1}.
TEST(GrpuConditional, CellExecutesOnlyWhenTheConditionHolds) {
  GrpuConfig cfg;
  cfg.cond = true;  // fields: read, sum, cond
  const int64_t H = 1, K = 3, S = H + K;
  for (float u_cond : {0.0f, 1.0f})
    for (float control : {-1.0f, 0.0f, 1.0f}) {
      Tensor x_c = Tensor::zeros({1, 0});
      Tensor x_vm = Tensor::from_vector({0.75f, control}, {1, 2});
      Tensor h_prev = Tensor::from_vector({0.0f, 0.0f, 2.0f, 0.0f}, {1, S});
      Tensor wg = Tensor::zeros({H, 2 * S}), bg = Tensor::full({2 * S}, -60.0f);
      // r_read = r_sum = 1 (sum = value + previous sum), u_sum = 1, u_cond as given.
      bg.f32()[H + 0] = 60.0f;
      bg.f32()[H + 1] = 60.0f;
      bg.f32()[S + H + 1] = 60.0f;
      bg.f32()[S + H + 2] = u_cond == 1.0f ? 60.0f : -60.0f;
      Tensor wc = Tensor::zeros({H, H}), bc = Tensor::zeros({H});
      GrpuCellResult r = grpu_cell_forward(x_c, x_vm, h_prev, wg, bg, wc, bc, Tensor(), cfg);
      bool executes = u_cond == 0.0f || control == 1.0f;
      EXPECT_NEAR(r.h.f32()[H + 1], executes ? 2.75f : 2.0f, 1e-5f)
          << "u_cond " << u_cond << " control " << control;
      EXPECT_NEAR(r.cand.f32()[H + 2], control == 1.0f ? 1.0f : 0.0f, 1e-5f);
    }
}

// The machine candidate is clipped (appendix A: ±500) and no gradient passes
// the clip: a sum field at 600 with r_sum = u_sum = 1 becomes exactly 500 and
// its previous value gets no gradient; at 400 it passes through unclipped.
TEST(GrpuClip, ClipsTheCandidateAndStopsItsGradient) {
  GrpuConfig cfg;  // read, sum
  const int64_t H = 1, S = 3;
  for (float prev : {600.0f, 400.0f}) {
    Tensor x_c = Tensor::zeros({1, 1}), x_vm = Tensor::zeros({1, 1});
    Tensor h_prev = Tensor::from_vector({0.0f, 0.0f, prev}, {1, S});
    Tensor wg = Tensor::zeros({1 + H, 2 * S}), bg = Tensor::full({2 * S}, 60.0f);
    Tensor wc = Tensor::zeros({1 + H, H}), bc = Tensor::zeros({H});
    GrpuCellResult r = grpu_cell_forward(x_c, x_vm, h_prev, wg, bg, wc, bc, Tensor(), cfg);
    EXPECT_EQ(r.h.f32()[H + 1], prev > 500.0f ? 500.0f : prev);
    Tensor d_h = Tensor::from_vector({0.0f, 0.0f, 1.0f}, {1, S});
    Tensor d_h_prev = Tensor::zeros({1, S}), none;
    grpu_cell_backward(none, d_h_prev, none, none, none, none, d_h, x_c, h_prev, wg, wc, Tensor(),
                       r, cfg);
    EXPECT_NEAR(d_h_prev.f32()[H + 1], prev > 500.0f ? 0.0f : 1.0f, 1e-6f) << prev;
  }
}

// Hand-set weights: r_read = σ(80·control − 40) selects the value where the
// control is 1, r_sum = u_sum = u_read = 1: the sum field accumulates exactly
// the marked values.
TEST(GrpuHandSet, SolvesAdditionExactly) {
  GrpuModel model(ModelSpec::parse("grpu+hidden=2"), addition_shape(), 1);
  const int64_t H = 2, S = H + 2;
  for (const ag::Var& p : model.parameters().all()) p->value.zero();
  Tensor& wg = model.parameters().get("gates.w")->value;  // rows: control, h^c (2)
  Tensor& bg = model.parameters().get("gates.b")->value;
  wg.f32()[0 * 2 * S + H + 0] = 80.0f;  // r_read from the control
  bg.f32()[H + 0] = -40.0f;
  bg.f32()[H + 1] = 40.0f;      // r_sum
  bg.f32()[S + H + 0] = 40.0f;  // u_read
  bg.f32()[S + H + 1] = 40.0f;  // u_sum
  Data d = addition_data(1000, 50, 55, 5);
  double mse = ag::mse(model.forward(d.batch), ag::constant(d.target))->value.item();
  EXPECT_LT(mse, 1e-10);
}

// Multiplication needs the product field to start at 1 although the state
// starts at 0: the controller (H = 1) tells the first step from the others
// (h^c = 0, then tanh(40) = 1), and r_prod = σ(80·h^c − 40) leaves the prod
// field out of its own product only at the first step.
TEST(GrpuHandSet, SolvesMultiplicationExactly) {
  SequenceTaskShape shape;
  shape.target = "prod";
  shape.clip = 100.0f;
  GrpuModel model(ModelSpec::parse("grpu+hidden=1"), shape, 1);
  ASSERT_TRUE(model.config().prod);
  const int64_t H = 1, S = H + 3;  // read, sum, prod
  for (const ag::Var& p : model.parameters().all()) p->value.zero();
  Tensor& wg = model.parameters().get("gates.w")->value;  // rows: control, h^c
  Tensor& bg = model.parameters().get("gates.b")->value;
  for (int64_t j = 0; j < 2 * S; ++j) bg.f32()[j] = -40.0f;
  wg.f32()[0 * 2 * S + H + 0] = 80.0f;                            // r_read = [control = 1]
  wg.f32()[1 * 2 * S + H + 2] = 80.0f;                            // r_prod = [h^c = 1]
  bg.f32()[S + 0] = 40.0f;                                        // u^c
  bg.f32()[S + H + 2] = 40.0f;                                    // u_prod
  model.parameters().get("candidate.b")->value.f32()[0] = 40.0f;  // h̃^c = 1
  Data d = addition_data(500, 50, 55, 8, 0.0f, true);
  double mse = ag::mse(model.forward(d.batch), ag::constant(d.target))->value.item();
  EXPECT_LT(mse, 1e-10);
}

// The conditional machine alone (no controller input): u_cond = 1 gates the sum.
TEST(GrpuHandSet, SolvesTheConditionalTaskThroughCond) {
  GrpuModel model(ModelSpec::parse("grpu+hidden=1"), conditional_shape(), 1);
  ASSERT_TRUE(model.config().cond);
  const int64_t H = 1, S = H + 3;  // read, sum, cond
  for (const ag::Var& p : model.parameters().all()) p->value.zero();
  Tensor& bg = model.parameters().get("gates.b")->value;
  for (int64_t j = 0; j < 2 * S; ++j) bg.f32()[j] = -40.0f;
  bg.f32()[H + 0] = 40.0f;      // r_read
  bg.f32()[H + 1] = 40.0f;      // r_sum
  bg.f32()[S + H + 1] = 40.0f;  // u_sum
  bg.f32()[S + H + 2] = 40.0f;  // u_cond
  Data d = addition_data(300, 50, 55, 6);
  double mse = ag::mse(model.forward(d.batch), ag::constant(d.target))->value.item();
  // The comparator leaks ε = 1e-6 of the update at control ≠ 1 for ~50 steps.
  EXPECT_LT(mse, 1e-8);
}

// d MSE / d parameters through the whole sequence against central differences
// (float model, so a float step and a tolerance to match).
void expect_gradients_match(SequenceModel& model, const Data& d) {
  const SequenceBatch& batch = d.batch;
  const Tensor& target = d.target;
  auto loss = [&] {
    return static_cast<double>(ag::mse(model.forward(batch), ag::constant(target))->value.item());
  };
  model.parameters().zero_grad();
  ag::backward(ag::mse(model.forward(batch), ag::constant(target)));
  int checked = 0;
  double err2 = 0.0, norm2 = 0.0;
  for (const ag::Var& p : model.parameters().all()) {
    Tensor grad = p->grad.defined() ? p->grad.clone() : Tensor::zeros_like(p->value);
    for (int64_t e = 0; e < p->value.numel(); e += 3) {
      float keep = p->value.f32()[e];
      const float step = 1e-2f;
      p->value.f32()[e] = keep + step;
      double up = loss();
      p->value.f32()[e] = keep - step;
      double down = loss();
      p->value.f32()[e] = keep;
      double numeric = (up - down) / (2 * step);
      // Central differences in float with a 1e-2 step: O(step²) curvature and rounding.
      EXPECT_NEAR(grad.f32()[e], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << p->name << "[" << e << "]";
      err2 += (grad.f32()[e] - numeric) * (grad.f32()[e] - numeric);
      norm2 += numeric * numeric;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
  // Over all checked entries: a relative error that a wrong backward would not meet.
  EXPECT_GT(std::sqrt(norm2), 1e-2);
  EXPECT_LT(std::sqrt(err2), 1e-2 * std::sqrt(norm2)) << "gradient norm " << std::sqrt(norm2);
}

// Four sequences of 10–15 steps (padded rows included); the offset keeps the
// error, and so the gradients, away from zero.
Data short_set(uint64_t seed) {
  return addition_data(4, 10, 15, seed, 0.5f);
}

TEST(GrpuGradients, WholeSequencesMatchCentralDifferences) {
  for (const char* name :
       {"grpu+hidden=3", "grpu+hidden=3+prod", "grpu+hidden=2+prod+neutral_one=text"}) {
    GrpuModel model(ModelSpec::parse(name), addition_shape(), 4);
    SCOPED_TRACE(name);
    expect_gradients_match(model, short_set(3));
  }
  GrpuModel cond(ModelSpec::parse("grpu+hidden=2+prod"), conditional_shape(), 5);
  SCOPED_TRACE("conditional");
  expect_gradients_match(cond, short_set(3));
}

TEST(BaselineGradients, WholeSequencesMatchCentralDifferences) {
  SequenceTaskShape shape;
  for (const char* name : {"gru+hidden=3", "bigru+hidden=2", "lstm+hidden=3"}) {
    auto model = build_sequence_model(ModelSpec::parse(name), shape, 6);
    SCOPED_TRACE(name);
    expect_gradients_match(*model, short_set(7));
  }
}

TEST(GrpuParameters, CountsAndTheComparisonWithTheGru) {
  GrpuModel grpu(ModelSpec::parse("grpu"), addition_shape(), 1);  // H = 100, read + sum
  EXPECT_EQ(grpu.parameters().count(), grpu_parameter_count(100, 2, 1));
  EXPECT_EQ(grpu_parameter_count(100, 2, 1), 101 * 204 + 204 + 101 * 100 + 100);  // 31008
  // The dissertation's claim: fewer parameters than a GRU with the same state
  // size (H + K units); with H units only the GRU is the smaller one.
  for (int64_t k : {2, 3, 4}) {
    EXPECT_LT(grpu_parameter_count(100, k, 1), gru_cell_parameter_count(100 + k, 1)) << k;
    EXPECT_GT(grpu_parameter_count(100, k, 1), gru_cell_parameter_count(100, 1)) << k;
  }
  SequenceTaskShape shape;
  auto gru = build_sequence_model(ModelSpec::parse("gru"), shape, 1);
  auto bigru = build_sequence_model(ModelSpec::parse("bigru"), shape, 1);
  auto lstm = build_sequence_model(ModelSpec::parse("lstm"), shape, 1);
  EXPECT_EQ(gru->parameters().count(), gru_cell_parameter_count(100, 2) + 101);
  EXPECT_EQ(bigru->parameters().count(), 2 * gru_cell_parameter_count(100, 2) + 201);
  EXPECT_EQ(lstm->parameters().count(), lstm_cell_parameter_count(100, 2) + 101);
  // The BiGRU reference has about twice the GRPU's parameters (dissertation §5.1).
  EXPECT_NEAR(static_cast<double>(bigru->parameters().count()) / grpu.parameters().count(), 2.0,
              0.05);
}

TEST(GrpuModel, SwitchesAndErrors) {
  SequenceTaskShape mul;
  mul.target = "prod";
  mul.clip = 100.0f;
  GrpuModel m(ModelSpec::parse("grpu+hidden=4"), mul, 1);
  EXPECT_TRUE(m.config().prod);
  EXPECT_EQ(m.config().clip, 100.0f);
  EXPECT_EQ(m.output_field(), m.config().prod_field());
  EXPECT_THROW(GrpuModel(ModelSpec::parse("grpu+bogus"), mul, 1), std::invalid_argument);
  EXPECT_THROW(build_sequence_model(ModelSpec::parse("mlp"), mul, 1), std::invalid_argument);
}

}  // namespace
}  // namespace mare
