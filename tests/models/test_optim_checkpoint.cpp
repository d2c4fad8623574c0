// Adam, clipping, L2, schedules against hand computations; checkpoints round
// trip and refuse damaged files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "models/checkpoint.h"
#include "models/optim.h"

namespace mare {
namespace {

TEST(Adam, FirstStepsMatchHandComputation) {
  ParameterSet ps;
  ag::Var w = ps.add("w", {2}, Init::zeros);
  w->value.f32()[0] = 1.0f;
  w->value.f32()[1] = -2.0f;
  Adam adam(ps);
  // Step 1 with g = (0.5, −4): m̂ = g, v̂ = g², update = lr·g/(|g| + ε) ≈ lr·sign(g).
  w->grad_buffer().f32()[0] = 0.5f;
  w->grad_buffer().f32()[1] = -4.0f;
  adam.step(0.1f);
  EXPECT_NEAR(w->value.f32()[0], 1.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-6);
  EXPECT_NEAR(w->value.f32()[1], -2.0 + 0.1 * 4.0 / (4.0 + 1e-8), 1e-6);
  // Step 2 with g = (0.5, 0): m = (0.095, −0.36·..): computed in double here.
  w->grad_buffer().f32()[1] = 0.0f;
  double m1 = 0.9 * 0.5 * 0.1 + 0.1 * 0.5, v1 = 0.999 * 0.001 * 0.25 + 0.001 * 0.25;
  double m2 = 0.9 * (0.1 * -4.0), v2 = 0.999 * (0.001 * 16.0);
  double c1 = 1 - 0.81, c2 = 1 - 0.999 * 0.999;
  double e0 = 1.0 - 0.1 * 0.5 / 0.5 - 0.1 * (m1 / c1) / (std::sqrt(v1 / c2) + 1e-8);
  double e1 = -2.0 + 0.1 - 0.1 * (m2 / c1) / (std::sqrt(v2 / c2) + 1e-8);
  adam.step(0.1f);
  EXPECT_NEAR(w->value.f32()[0], e0, 1e-5);
  EXPECT_NEAR(w->value.f32()[1], e1, 1e-5);
  EXPECT_EQ(adam.steps(), 2);
}

TEST(Optim, GlobalNormClippingScalesAllGradients) {
  ParameterSet ps;
  ag::Var a = ps.add("a", {2}, Init::zeros), b = ps.add("b", {1}, Init::zeros);
  a->grad_buffer().f32()[0] = 3.0f;
  a->grad_buffer().f32()[1] = 0.0f;
  b->grad_buffer().f32()[0] = 4.0f;
  EXPECT_NEAR(clip_grad_norm(ps.all(), 1.0), 5.0, 1e-9);
  EXPECT_NEAR(a->grad.f32()[0], 0.6, 1e-6);
  EXPECT_NEAR(b->grad.f32()[0], 0.8, 1e-6);
  EXPECT_NEAR(clip_grad_norm(ps.all(), 10.0), 1.0, 1e-6);  // below the limit: untouched
  EXPECT_NEAR(b->grad.f32()[0], 0.8, 1e-6);
}

TEST(Optim, L2AddsTwiceLambdaW) {
  ParameterSet ps;
  ag::Var w = ps.add("w", {1}, Init::ones);
  w->grad_buffer().fill(0.0f);
  Adam adam(ps, {.l2 = 0.25f});
  adam.step(0.01f);
  // g = 2·0.25·1 = 0.5 > 0, so the first Adam step moves w down by ≈ lr.
  EXPECT_NEAR(w->value.f32()[0], 1.0 - 0.01, 1e-6);
}

TEST(Optim, Schedules) {
  EXPECT_FLOAT_EQ(LrSchedule::parse("constant", 0.1f).at(1000), 0.1f);
  LrSchedule w = LrSchedule::parse("warmup:4", 0.1f);
  EXPECT_FLOAT_EQ(w.at(0), 0.025f);
  EXPECT_FLOAT_EQ(w.at(3), 0.1f);
  EXPECT_FLOAT_EQ(w.at(10), 0.1f);
  LrSchedule s = LrSchedule::parse("step:10:0.5", 0.1f);
  EXPECT_FLOAT_EQ(s.at(9), 0.1f);
  EXPECT_FLOAT_EQ(s.at(10), 0.05f);
  EXPECT_FLOAT_EQ(s.at(25), 0.025f);
  EXPECT_THROW(LrSchedule::parse("cosine", 0.1f), std::invalid_argument);
  EXPECT_THROW(LrSchedule::parse("warmup:x", 0.1f), std::invalid_argument);
  EXPECT_THROW(LrSchedule::parse("step:10", 0.1f), std::invalid_argument);
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("mare_ckpt_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
    path = (dir / "model.ckpt").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  static ParameterSet make(uint64_t seed) {
    ParameterSet ps(seed);
    ps.add("w", {3, 4}, Init::glorot_uniform);
    ps.add("b", {4}, Init::glorot_uniform);
    return ps;
  }
  std::string bytes() {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& s) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << s;
  }
  void expect_refused(const std::string& needle) {
    ParameterSet ps = make(2);
    try {
      load_checkpoint(path, ps);
      FAIL() << "expected the checkpoint to be refused";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  std::filesystem::path dir;
  std::string path;
};

TEST_F(Checkpoint, RoundTripsParametersAndAdamState) {
  ParameterSet a = make(1);
  Adam adam(a);
  for (const ag::Var& p : a.all()) p->grad_buffer().fill(0.3f);
  adam.step(0.01f);
  save_checkpoint(path, a, &adam);
  ParameterSet b = make(2);
  Adam adam_b(b);
  load_checkpoint(path, b, &adam_b);
  for (size_t i = 0; i < a.all().size(); ++i) {
    EXPECT_EQ(a.all()[i]->value.to_vector(), b.all()[i]->value.to_vector());
    EXPECT_EQ(adam.first_moments()[i].to_vector(), adam_b.first_moments()[i].to_vector());
    EXPECT_EQ(adam.second_moments()[i].to_vector(), adam_b.second_moments()[i].to_vector());
  }
  EXPECT_EQ(adam_b.steps(), 1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(Checkpoint, RefusesDamage) {
  ParameterSet a = make(1);
  save_checkpoint(path, a);
  const std::string good = bytes();

  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  write(flipped);
  expect_refused("checksum mismatch");

  write(good.substr(0, good.size() - 5));
  expect_refused("truncated");

  write(good.substr(0, 6));
  expect_refused("bad magic");

  std::string wrong_magic = good;
  wrong_magic[0] = 'X';
  write(wrong_magic);
  expect_refused("bad magic");

  std::string other_version = good;
  other_version[8] = 9;
  write(other_version);
  expect_refused("version 9");

  write("");
  expect_refused("bad magic");
}

TEST_F(Checkpoint, RefusesOtherModels) {
  ParameterSet a = make(1);
  save_checkpoint(path, a);
  ParameterSet wider(3);
  wider.add("w", {3, 5}, Init::zeros);
  EXPECT_THROW(load_checkpoint(path, wider), CheckpointError);
  ParameterSet other(3);
  other.add("v", {3, 4}, Init::zeros);
  EXPECT_THROW(load_checkpoint(path, other), CheckpointError);
  EXPECT_THROW(load_checkpoint((dir / "missing").string(), other), CheckpointError);
}

}  // namespace
}  // namespace mare
