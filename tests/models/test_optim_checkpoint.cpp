// Adam, clipping, L2, schedules against hand computations and against the
// original scalar loops; parameter sets on a device; checkpoints round trip
// (parameters, Adam state, extra state such as batch-norm statistics) and
// refuse damaged or mismatched files with a message naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "models/checkpoint.h"
#include "models/optim.h"
#include "tests/gpu_required.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

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

// The training step as models/optim.cpp computed it before the kernels (one
// scalar loop per part, the norm as one running double sum): the kernels must
// give the same bits, since the GRPU reproduction was run with these loops.
struct OriginalStep {
  std::vector<std::vector<float>> w, m, v;
  int64_t t = 0;
  void step(std::vector<std::vector<float>> g, float lr, float l2, double clip) {
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    if (l2 > 0)
      for (size_t k = 0; k < w.size(); ++k)
        for (size_t i = 0; i < w[k].size(); ++i) g[k][i] += 2.0f * l2 * w[k][i];
    double sq = 0.0;
    for (auto& gk : g)
      for (float x : gk) sq += static_cast<double>(x) * x;
    double norm = std::sqrt(sq);
    if (clip > 0 && norm > clip) {
      float s = static_cast<float>(clip / norm);
      for (auto& gk : g)
        for (float& x : gk) x *= s;
    }
    ++t;
    const double c1 = 1.0 - std::pow(static_cast<double>(b1), static_cast<double>(t));
    const double c2 = 1.0 - std::pow(static_cast<double>(b2), static_cast<double>(t));
    for (size_t k = 0; k < w.size(); ++k)
      for (size_t i = 0; i < w[k].size(); ++i) {
        m[k][i] = b1 * m[k][i] + (1 - b1) * g[k][i];
        v[k][i] = b2 * v[k][i] + (1 - b2) * g[k][i] * g[k][i];
        double mhat = m[k][i] / c1, vhat = v[k][i] / c2;
        w[k][i] -= static_cast<float>(lr * mhat / (std::sqrt(vhat) + eps));
      }
  }
};

// Gradients of step t: parameter k from Philox stream 50 + 10·t + k.
Tensor gradient(const Shape& shape, int64_t t, size_t k) {
  Tensor g = Tensor::empty(shape);
  fill_uniform(g, 3, static_cast<uint32_t>(50 + 10 * t + k), -2.0f, 2.0f);
  return g;
}

TEST(Adam, StepsAreBitIdenticalToTheOriginalLoops) {
  for (float l2 : {0.0f, 0.01f})
    for (double clip : {0.0, 1.0}) {
      ParameterSet ps(11);
      ps.add("a", {7, 5}, Init::glorot_uniform);
      ps.add("b", {5}, Init::uniform_small);
      ps.add("c", {300}, Init::glorot_uniform);
      Adam adam(ps, {.l2 = l2, .clip_norm = static_cast<float>(clip)});
      OriginalStep ref;
      for (const ag::Var& p : ps.all()) {
        ref.w.push_back(p->value.to_vector());
        ref.m.emplace_back(p->value.numel(), 0.0f);
        ref.v.emplace_back(p->value.numel(), 0.0f);
      }
      for (int64_t t = 1; t <= 12; ++t) {
        std::vector<std::vector<float>> g;
        for (size_t k = 0; k < ps.all().size(); ++k) {
          const ag::Var& p = ps.all()[k];
          p->grad = gradient(p->value.shape(), t, k);
          g.push_back(p->grad.to_vector());
        }
        adam.step(1e-2f);
        ref.step(g, 1e-2f, l2, clip);
      }
      for (size_t k = 0; k < ps.all().size(); ++k) {
        EXPECT_TRUE(same_bits(ps.all()[k]->value.to_vector(), ref.w[k]))
            << "l2 " << l2 << " clip " << clip << " parameter " << k;
        EXPECT_TRUE(same_bits(adam.second_moments()[k].to_vector(), ref.v[k]));
      }
    }
}

// Through Adam::step (one adam_step): the gradients it leaves are the ones Adam
// used, clipped and with L2 added.
TEST(Optim, GlobalNormClippingScalesAllGradients) {
  auto clipped_grads = [](double clip) {
    auto ps = std::make_unique<ParameterSet>();
    ag::Var a = ps->add("a", {2}, Init::zeros), b = ps->add("b", {1}, Init::zeros);
    ps->add("no_gradient", {3}, Init::ones);  // counts as zero, stays without a gradient
    a->grad_buffer().f32()[0] = 3.0f;
    a->grad_buffer().f32()[1] = 0.0f;
    b->grad_buffer().f32()[0] = 4.0f;
    Adam adam(*ps, {.clip_norm = static_cast<float>(clip)});
    adam.step(0.01f);
    EXPECT_EQ(adam.last_grad_norm(), 5.0) << "clip " << clip;
    EXPECT_FALSE(ps->get("no_gradient")->grad.defined());
    return std::vector<float>{a->grad.f32()[0], a->grad.f32()[1], b->grad.f32()[0]};
  };
  const std::vector<float> one = clipped_grads(1.0);
  EXPECT_NEAR(one[0], 0.6, 1e-6);
  EXPECT_EQ(one[1], 0.0f);
  EXPECT_NEAR(one[2], 0.8, 1e-6);
  EXPECT_EQ(clipped_grads(10.0), (std::vector<float>{3, 0, 4}));  // below the limit: untouched
  EXPECT_EQ(clipped_grads(0.0), (std::vector<float>{3, 0, 4}));   // 0: only measures
}

// 2λw, not λw: the gradient itself after the L2 step; a parameter with no
// gradient (one the step's loss did not reach) gets none from L2 and stays put.
TEST(Optim, L2AddsTwiceLambdaWToTheGradient) {
  ParameterSet ps;
  ag::Var w = ps.add("w", {2}, Init::zeros), u = ps.add("u", {1}, Init::ones);
  w->value.f32()[0] = 1.0f;
  w->value.f32()[1] = -3.0f;
  w->grad_buffer().f32()[0] = 0.5f;  // u has no gradient
  Adam adam(ps, {.l2 = 0.25f});
  adam.step(0.01f);
  EXPECT_FLOAT_EQ(w->grad.f32()[0], 0.5f + 0.5f * 1.0f);  // λw would give 0.75
  EXPECT_FLOAT_EQ(w->grad.f32()[1], -1.5f);               // λw would give −0.75
  EXPECT_FALSE(u->grad.defined());
  EXPECT_EQ(u->value.f32()[0], 1.0f);
  EXPECT_EQ(adam.first_moments()[1].f32()[0], 0.0f);
  EXPECT_EQ(adam.second_moments()[1].f32()[0], 0.0f);
}

// Through Adam.step: its first moment after one step is (1 − β₁)·g, so it shows
// the gradient Adam saw (the weight update alone, ≈ lr·sign(g), cannot), and
// with clipping it shows that L2 comes before the clip.
TEST(Optim, AdamSeesL2BeforeClipping) {
  ParameterSet ps;
  ag::Var w = ps.add("w", {2}, Init::zeros);
  w->value.f32()[0] = 3.0f;
  w->value.f32()[1] = -4.0f;
  w->grad_buffer().fill(0.0f);
  Adam plain(ps, {.l2 = 0.25f});
  plain.step(0.01f);
  EXPECT_NEAR(plain.first_moments()[0].f32()[0], 0.1 * 2 * 0.25 * 3.0, 1e-7);   // 0.15
  EXPECT_NEAR(plain.first_moments()[0].f32()[1], 0.1 * 2 * 0.25 * -4.0, 1e-7);  // −0.2

  ParameterSet qs;
  ag::Var q = qs.add("q", {2}, Init::zeros);
  q->value.f32()[0] = 3.0f;
  q->value.f32()[1] = -4.0f;
  q->grad_buffer().fill(0.0f);
  Adam clipped(qs, {.l2 = 0.5f, .clip_norm = 1.0f});
  // g = 2·0.5·w = (3, −4), norm 5 (clipping before L2 would see norm 0).
  clipped.step(0.01f);
  EXPECT_EQ(clipped.last_grad_norm(), 5.0);  // as a float: 5 exactly
  EXPECT_NEAR(clipped.first_moments()[0].f32()[0], 0.1 * 0.6, 1e-7);
  EXPECT_NEAR(clipped.first_moments()[0].f32()[1], 0.1 * -0.8, 1e-7);
}

// The whole step is one op dispatch (on the GPU: a handful of launches and no
// read of the device) whatever the number of parameters.
TEST(Optim, AStepIsOneDispatchWhateverTheParameterCount) {
  for (int count : {1, 49, 130}) {
    ParameterSet ps(3);
    for (int k = 0; k < count; ++k) ps.add("p" + std::to_string(k), {3, 2}, Init::glorot_uniform);
    for (const ag::Var& p : ps.all()) p->grad_buffer().fill(0.5f);
    Adam adam(ps, {.l2 = 1e-3f, .clip_norm = 1.0f});
    const DispatchCounts before = dispatch_counts();
    adam.step(1e-2f);
    const DispatchCounts used = dispatch_counts() - before;
    EXPECT_EQ(used.ops, 1) << count << " parameters";
    EXPECT_EQ(used.device_reads, 0);
  }
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

// ------------------------------------------------------------------ parameter sets
TEST(Parameters, LiveOnOneDeviceAndRefuseReservedNames) {
  ParameterSet ps(1);
  EXPECT_EQ(ps.device(), Device::cpu);
  ag::Var w = ps.add("w", {2, 3}, Init::glorot_uniform);
  const std::vector<float> before = w->value.to_vector();
  ps.to(Device::cpu);  // already there: nothing changes
  EXPECT_EQ(w->value.to_vector(), before);
  EXPECT_THROW(ps.add("w", {1}, Init::zeros), std::invalid_argument);
  EXPECT_THROW(ps.add("adam.m/x", {1}, Init::zeros), std::invalid_argument);
  EXPECT_THROW(ps.add("extra/x", {1}, Init::zeros), std::invalid_argument);
  EXPECT_THROW(ps.add("", {1}, Init::zeros), std::invalid_argument);
  // A given initial value is copied, not shared.
  Tensor init = Tensor::from_vector({1.0f, 2.0f}, {2});
  ag::Var b = ps.add("b", init);
  init.f32()[0] = 9.0f;
  EXPECT_EQ(b->value.to_vector(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(ps.count(), 8);
}

TEST(Parameters, MovingToTheGpuKeepsTheValuesAndTheVars) {
  MARE_NEEDS_GPU();
  ParameterSet cpu(5), gpu(5, Device::cuda), moved(5);
  for (ParameterSet* ps : {&cpu, &gpu, &moved}) {
    ps->add("w", {4, 6}, Init::glorot_uniform);
    ps->add("e", {10, 3}, Init::uniform_small);
  }
  ag::Var held = moved.get("w");
  held->grad_buffer().fill(0.5f);
  moved.to(Device::cuda);
  EXPECT_EQ(moved.device(), Device::cuda);
  EXPECT_EQ(held->value.device(), Device::cuda);  // the Var a model holds sees the move
  EXPECT_EQ(held->grad.device(), Device::cuda);
  EXPECT_EQ(held->grad.to_vector(), std::vector<float>(24, 0.5f));
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(gpu.all()[k]->value.device(), Device::cuda);
    EXPECT_TRUE(same_bits(gpu.all()[k]->value.to_vector(), cpu.all()[k]->value.to_vector()));
    EXPECT_TRUE(same_bits(moved.all()[k]->value.to_vector(), cpu.all()[k]->value.to_vector()));
  }
}

TEST(Parameters, AdamOnTheGpuGivesTheCpuBits) {
  MARE_NEEDS_GPU();
  ParameterSet cpu(9), gpu(9);
  for (ParameterSet* ps : {&cpu, &gpu}) {
    ps->add("a", {40, 30}, Init::glorot_uniform);
    ps->add("b", {30}, Init::zeros);
  }
  gpu.to(Device::cuda);
  Adam ca(cpu, {.l2 = 0.01f, .clip_norm = 1.0f}), ga(gpu, {.l2 = 0.01f, .clip_norm = 1.0f});
  EXPECT_EQ(ga.first_moments()[0].device(), Device::cuda);
  for (int64_t t = 1; t <= 5; ++t) {
    for (size_t k = 0; k < 2; ++k) {
      Tensor g = gradient(cpu.all()[k]->value.shape(), t, k);
      cpu.all()[k]->grad = g;
      gpu.all()[k]->grad = g.to(Device::cuda);
    }
    ga.step(1e-2f);
    ca.step(1e-2f);
    EXPECT_EQ(ga.last_grad_norm(), ca.last_grad_norm());
  }
  for (size_t k = 0; k < 2; ++k)
    EXPECT_TRUE(same_bits(gpu.all()[k]->value.to_vector(), cpu.all()[k]->value.to_vector()));
  // An optimiser built before the move refuses to step.
  ParameterSet late(9);
  late.add("a", {2}, Init::ones);
  Adam stale(late);
  late.to(Device::cuda);
  late.all()[0]->grad_buffer().fill(1.0f);
  EXPECT_THROW(stale.step(0.1f), std::logic_error);
}

// ------------------------------------------------------------------ checkpoints
class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    temp = std::make_unique<test::TempDir>("ckpt");
    dir = temp->path();
    path = (dir / "model.ckpt").string();
  }
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
  // Loading `path` into make(2) (with an Adam and `extra` when asked) must throw
  // a CheckpointError naming the file and containing `needle`; the model must
  // be left as it was.
  void expect_refused(const std::string& needle, bool with_adam = false,
                      CheckpointExtra* extra = nullptr) {
    ParameterSet ps = make(2);
    Adam adam(ps);
    const std::vector<float> w0 = ps.get("w")->value.to_vector();
    try {
      load_checkpoint(path, ps, with_adam ? &adam : nullptr, extra);
      ADD_FAILURE() << "expected the checkpoint to be refused (" << needle << ")";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_EQ(ps.get("w")->value.to_vector(), w0) << "a refused load changed the model";
  }
  // A well-formed version-2 file holding exactly `tensors` (the format written
  // out by hand, as checkpoint.h documents it).
  static std::string craft(const std::vector<std::pair<std::string, Tensor>>& tensors) {
    std::string payload;
    auto put = [](std::string& out, auto v) {
      out.append(reinterpret_cast<const char*>(&v), sizeof(v));
    };
    put(payload, uint64_t{0});
    put(payload, static_cast<uint32_t>(tensors.size()));
    for (const auto& [name, t] : tensors) {
      put(payload, static_cast<uint32_t>(name.size()));
      payload += name;
      put(payload, uint32_t{t.dtype() == DType::f32 ? 0u : 1u});
      put(payload, static_cast<uint32_t>(t.rank()));
      for (int i = 0; i < t.rank(); ++i) put(payload, int64_t{t.dim(i)});
      payload.append(
          static_cast<const char*>(t.dtype() == DType::f32 ? static_cast<const void*>(t.f32())
                                                           : static_cast<const void*>(t.i32())),
          t.nbytes());
    }
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : payload) h = (h ^ c) * 1099511628211ull;
    std::string file = "MARECKPT";
    put(file, kCheckpointVersion);
    put(file, static_cast<uint64_t>(payload.size()));
    file += payload;
    put(file, h);
    return file;
  }
  std::unique_ptr<test::TempDir> temp;  // removed with its contents after each test
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
  // The same state gives the same bytes.
  const std::string first = bytes();
  save_checkpoint(path, b, &adam_b);
  EXPECT_EQ(bytes(), first);
}

// The bytes are the documented layout (craft writes it by hand).
TEST_F(Checkpoint, WritesTheDocumentedLayout) {
  ParameterSet a = make(1);
  save_checkpoint(path, a);
  EXPECT_EQ(bytes(), craft({{"w", a.get("w")->value}, {"b", a.get("b")->value}}));
}

// Optimiser state in the file is skipped when no Adam is asked for.
TEST_F(Checkpoint, WeightsAloneLoadFromAFullCheckpoint) {
  ParameterSet a = make(1);
  Adam adam(a);
  save_checkpoint(path, a, &adam);
  ParameterSet b = make(2);
  load_checkpoint(path, b);
  EXPECT_EQ(a.get("w")->value.to_vector(), b.get("w")->value.to_vector());
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

  std::string version_1 = good;
  version_1[8] = 1;
  write(version_1);
  expect_refused("version 1, this build reads version 2");

  write("");
  expect_refused("bad magic");
}

TEST_F(Checkpoint, RefusesAPaddedFile) {
  save_checkpoint(path, make(1));
  write(bytes() + std::string(3, '\0'));
  expect_refused("3 trailing bytes after the checksum");
}

TEST_F(Checkpoint, RefusesACorruptedSizeField) {
  save_checkpoint(path, make(1));
  const std::string good = bytes();
  std::string larger = good, smaller = good;
  larger[12] = static_cast<char>(larger[12] + 4);  // u64 payload_bytes at offset 12
  write(larger);
  expect_refused("truncated: the header promises");
  smaller[12] = static_cast<char>(smaller[12] - 4);
  write(smaller);
  expect_refused("4 trailing bytes after the checksum");
  std::string huge = good;
  huge[19] = static_cast<char>(0x7f);  // most significant byte
  write(huge);
  expect_refused("truncated");
}

TEST_F(Checkpoint, RefusesACorruptedChecksumField) {
  save_checkpoint(path, make(1));
  std::string s = bytes();
  s[s.size() - 3] ^= 0x01;  // inside the trailing u64 checksum
  write(s);
  expect_refused("checksum mismatch");
}

TEST_F(Checkpoint, RefusesMissingOptimizerState) {
  save_checkpoint(path, make(1));  // saved without Adam
  expect_refused("holds no optimizer state", /*with_adam=*/true);
}

TEST_F(Checkpoint, RefusesAnyMismatchByName) {
  // A superset of the model's parameters.
  ParameterSet wide(1);
  wide.add("w", {3, 4}, Init::glorot_uniform);
  wide.add("b", {4}, Init::glorot_uniform);
  wide.add("extra_bias", {4}, Init::zeros);
  save_checkpoint(path, wide);
  expect_refused("tensor 'extra_bias' in the checkpoint is not a parameter of the model");
  // A subset.
  ParameterSet narrow(1);
  narrow.add("w", {3, 4}, Init::glorot_uniform);
  save_checkpoint(path, narrow);
  expect_refused("no tensor 'b' in checkpoint");
  // Another shape, another dtype.
  ParameterSet wider(3);
  wider.add("w", {3, 5}, Init::zeros);
  wider.add("b", {4}, Init::zeros);
  save_checkpoint(path, wider);
  expect_refused("has shape [3, 5], the model expects [3, 4]");
  ParameterSet fresh = make(4);
  write(
      craft({{"w", Tensor::zeros({3, 4}, Device::cpu, DType::i32)}, {"b", fresh.get("b")->value}}));
  expect_refused("is i32, the model expects f32");
  // Optimiser state for a parameter the model lacks, or missing for one it has.
  Tensor w = fresh.get("w")->value, b = fresh.get("b")->value;
  write(craft({{"w", w},
               {"b", b},
               {"adam.m/w", w},
               {"adam.v/w", w},
               {"adam.m/b", b},
               {"adam.v/b", b},
               {"adam.m/z", b}}));
  expect_refused("optimizer state 'adam.m/z' matches no parameter", true);
  write(craft({{"w", w}, {"b", b}, {"adam.m/w", w}, {"adam.v/w", w}, {"adam.m/b", b}}));
  expect_refused("no optimizer state 'adam.v/b'", true);
  // Duplicates, and bytes after the last tensor.
  write(craft({{"w", w}, {"b", b}, {"w", w}}));
  expect_refused("tensor 'w' appears twice");
  EXPECT_THROW(load_checkpoint((dir / "missing").string(), fresh), CheckpointError);
}

TEST_F(Checkpoint, RefusesAMalformedPayload) {
  ParameterSet m = make(1);
  std::string s = craft({{"w", m.get("w")->value}, {"b", m.get("b")->value}});
  // Claim one tensor more than the payload holds, and fix the checksum.
  auto refresh = [](std::string& f) {
    std::string payload = f.substr(20, f.size() - 28);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : payload) h = (h ^ c) * 1099511628211ull;
    std::memcpy(f.data() + f.size() - 8, &h, 8);
  };
  s[28] = 3;  // u32 tensor_count after the u64 step
  refresh(s);
  write(s);
  expect_refused("truncated while reading name length");
  s[28] = 1;  // one tensor fewer: the second one is left over
  refresh(s);
  write(s);
  expect_refused("unread payload bytes after the last tensor");
}

// A model's batch-norm running statistics survive the round trip as extra state.
TEST_F(Checkpoint, RoundTripsBatchNormStatisticsAsExtraState) {
  auto make_bn = [](uint64_t seed, CheckpointExtra& buffers) {
    ParameterSet ps(seed);
    ps.add("bn.gamma", {4}, Init::ones);
    ps.add("bn.beta", {4}, Init::zeros);
    buffers["bn.running_mean"] = Tensor::zeros({4});
    buffers["bn.running_var"] = Tensor::full({4}, 1.0f);
    return ps;
  };
  CheckpointExtra trained_stats;
  ParameterSet trained = make_bn(1, trained_stats);
  for (uint32_t s = 0; s < 3; ++s) {  // a few training batches move the statistics
    Tensor x = Tensor::empty({8, 4});
    fill_uniform(x, 1, 30 + s, -1.0f, 3.0f);
    batch_norm_forward(x, trained.get("bn.gamma")->value, trained.get("bn.beta")->value,
                       trained_stats["bn.running_mean"], trained_stats["bn.running_var"], true);
  }
  trained_stats["step"] = Tensor::from_indices({7, 123456789}, {2});  // a counter, exact
  save_checkpoint(path, trained, nullptr, &trained_stats);

  CheckpointExtra loaded_stats;
  ParameterSet loaded = make_bn(2, loaded_stats);
  Tensor mean_before_load = loaded_stats["bn.running_mean"];  // a model's shallow copy
  loaded_stats["step"] = Tensor();                            // undefined: takes the file's
  load_checkpoint(path, loaded, nullptr, &loaded_stats);
  EXPECT_EQ(mean_before_load.to_vector(), trained_stats["bn.running_mean"].to_vector());
  EXPECT_NE(trained_stats["bn.running_mean"].to_vector(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(loaded_stats["bn.running_var"].to_vector(),
            trained_stats["bn.running_var"].to_vector());
  EXPECT_EQ(loaded_stats["step"].to_index_vector(), (std::vector<int32_t>{7, 123456789}));
  // Eval mode (running statistics) gives the same output.
  Tensor x = Tensor::empty({5, 4});
  fill_uniform(x, 1, 40, -1.0f, 1.0f);
  auto eval = [&](ParameterSet& ps, CheckpointExtra& st) {
    return batch_norm_forward(x, ps.get("bn.gamma")->value, ps.get("bn.beta")->value,
                              st["bn.running_mean"], st["bn.running_var"], false)
        .out.to_vector();
  };
  EXPECT_EQ(eval(loaded, loaded_stats), eval(trained, trained_stats));

  // Extra state must match by name both ways, and cannot be silently dropped.
  CheckpointExtra missing_one;
  ParameterSet again = make_bn(3, missing_one);  // no "step"
  try {
    load_checkpoint(path, again, nullptr, &missing_one);
    ADD_FAILURE() << "extra state the model does not expect was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("'extra/step' in the checkpoint is not expected"),
              std::string::npos)
        << e.what();
  }
  CheckpointExtra more = loaded_stats;
  more["other"] = Tensor::zeros({1});
  EXPECT_THROW(load_checkpoint(path, again, nullptr, &more), CheckpointError);
  try {
    load_checkpoint(path, again);
    ADD_FAILURE() << "extra state was dropped silently";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("holds extra state"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  CheckpointExtra wrong_dtype = loaded_stats;
  wrong_dtype["step"] = Tensor::zeros({2});
  EXPECT_THROW(load_checkpoint(path, again, nullptr, &wrong_dtype), CheckpointError);
}

TEST_F(Checkpoint, MovesBetweenDevices) {
  MARE_NEEDS_GPU();
  ParameterSet a = make(1);
  a.to(Device::cuda);
  Adam adam(a);
  for (const ag::Var& p : a.all()) p->grad_buffer().fill(0.3f);
  adam.step(0.01f);
  CheckpointExtra stats{{"mean", Tensor::full({3}, 0.25f, Device::cuda)}};
  save_checkpoint(path, a, &adam, &stats);
  // Into a CPU model: the bits of the GPU model.
  ParameterSet b = make(2);
  Adam adam_b(b);
  CheckpointExtra cpu_stats{{"mean", Tensor::zeros({3})}};
  load_checkpoint(path, b, &adam_b, &cpu_stats);
  EXPECT_EQ(cpu_stats["mean"].to_vector(), std::vector<float>(3, 0.25f));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(same_bits(b.all()[i]->value.to_vector(), a.all()[i]->value.to_vector()));
    EXPECT_TRUE(
        same_bits(adam_b.second_moments()[i].to_vector(), adam.second_moments()[i].to_vector()));
  }
  // Into another GPU model: the tensors stay on the GPU.
  ParameterSet c = make(3);
  c.to(Device::cuda);
  Adam adam_c(c);
  load_checkpoint(path, c, &adam_c, &stats);
  EXPECT_EQ(c.all()[0]->value.device(), Device::cuda);
  EXPECT_EQ(adam_c.first_moments()[0].device(), Device::cuda);
  EXPECT_TRUE(same_bits(c.all()[0]->value.to_vector(), a.all()[0]->value.to_vector()));
  EXPECT_EQ(adam_c.steps(), 1);
}

}  // namespace
}  // namespace mare
