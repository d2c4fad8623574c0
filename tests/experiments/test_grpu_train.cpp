// The GRPU's tasks and runs (SPEC §4.6, §7): the generators keep the task's
// rules, the curriculum splits the epochs into five equal phases, a short run
// writes every file of the run directory with train and test MSE per epoch,
// and the same seed gives byte-identical result.json and metrics.jsonl.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/grpu_tasks.h"
#include "experiments/sequence_trainer.h"
#include "tests/experiments/run_checks.h"
#include "tests/gpu_required.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GrpuTasks, GeneratorsKeepTheRules) {
  for (const char* name : {"addition", "multiplication", "conditional"}) {
    SequenceTask t = make_sequence_task(name, 3, 200, 100, true);
    ASSERT_EQ(t.train.size(), 5u);
    EXPECT_EQ(t.test.samples.size(), 100u);
    bool product = std::string(name) == "multiplication";
    EXPECT_EQ(t.shape.target, product ? "prod" : "sum");
    EXPECT_EQ(t.shape.clip, product ? 100.0f : 500.0f);
    EXPECT_EQ(t.shape.conditional, std::string(name) == "conditional");
    for (int64_t p = 0; p < 5; ++p) ASSERT_EQ(t.train[p].min_length, 10 + 10 * p);
    std::vector<const SequenceSet*> sets = {&t.test};
    for (const SequenceSet& s : t.train) sets.push_back(&s);
    for (const SequenceSet* set : sets)
      for (const SequenceSample& s : set->samples) {
        int64_t len = static_cast<int64_t>(s.values.size());
        ASSERT_GE(len, set->min_length);
        ASSERT_LE(len, set->min_length + 5);
        int marked = 0;
        double expect = product ? 1.0 : 0.0;
        for (int64_t i = 0; i < len; ++i) {
          ASSERT_GE(s.values[i], product ? 0.5f : 0.0f);
          ASSERT_LT(s.values[i], product ? 1.5f : 1.0f);
          float c = s.controls[i];
          ASSERT_TRUE(c == -1.0f || c == 0.0f || c == 1.0f);
          if (c == 1.0f) {
            ++marked;
            expect = product ? expect * s.values[i] : expect + s.values[i];
          }
        }
        ASSERT_EQ(marked, 2);
        ASSERT_NEAR(s.target, expect, 1e-6);
      }
  }
  // The test set of a seed does not depend on the training options.
  SequenceTask a = make_sequence_task("addition", 9, 10, 50, false);
  SequenceTask b = make_sequence_task("addition", 9, 3200, 50, true);
  EXPECT_EQ(a.test.samples[17].values, b.test.samples[17].values);
  EXPECT_THROW(make_sequence_task("division", 1, 10, 10, false), std::invalid_argument);
}

TEST(GrpuTasks, CurriculumIsFiveEqualPhases) {
  EXPECT_EQ(curriculum_phase(1, 1000), 0);
  EXPECT_EQ(curriculum_phase(200, 1000), 0);
  EXPECT_EQ(curriculum_phase(201, 1000), 1);
  EXPECT_EQ(curriculum_phase(800, 1000), 3);
  EXPECT_EQ(curriculum_phase(801, 1000), 4);
  EXPECT_EQ(curriculum_phase(1000, 1000), 4);
  EXPECT_EQ(curriculum_phase(5, 5), 4);
  EXPECT_EQ(curriculum_phase(7, 10), 3);  // epochs 7 and 8 of 10 are the fourth phase
}

SequenceTrainOptions short_run(const std::string& dir, const std::string& model) {
  SequenceTrainOptions o;
  o.model = model;
  o.task = "addition";
  o.seed = 2;
  o.epochs = 5;
  o.batch = 10;
  o.samples = 30;
  o.test_samples = 20;
  o.curriculum = true;
  o.lr = 1e-2f;
  o.out = ::mare::test::process_temp_dir() / dir;  // unique per process (mkdtemp)
  std::filesystem::remove_all(o.out);
  return o;
}

TEST(GrpuTrain, ALossThatIsNotFiniteStopsTheRunAndSaysWhere) {
  SequenceTrainOptions o = short_run("mare_grpu_diverged", "grpu+hidden=8");
  o.lr = std::numeric_limits<float>::infinity();  // the first update makes every weight ±inf
  nlohmann::json r = train_sequence_model(o, nullptr);
  EXPECT_EQ(r["status"], "diverged") << r.dump(2);
  ASSERT_TRUE(r.contains("diverged")) << r.dump(2);
  EXPECT_EQ(r["diverged"]["epoch"], 1);
  EXPECT_EQ(r["diverged"]["step"], 1);
  EXPECT_EQ(r["steps"], 1);
  // No evaluation ran: the final MSEs are NaN in memory, null in the file.
  EXPECT_EQ(nlohmann::json::parse(slurp(o.out / "result.json")).dump(), r.dump());
  std::filesystem::remove_all(o.out);
}

TEST(GrpuTrain, ShortRunWritesTheRunDirectory) {
  SequenceTrainOptions o = short_run("mare_grpu_a", "grpu+hidden=8");
  nlohmann::json r = train_sequence_model(o, nullptr);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["steps"], 5 * 3);
  for (const char* f :
       {"manifest.json", "metrics.jsonl", "timing.json", "result.json", "checkpoint.bin"})
    EXPECT_TRUE(std::filesystem::exists(o.out / f)) << f;
  std::ifstream metrics(o.out / "metrics.jsonl");
  std::string line;
  int epoch = 0;
  double last_test = 0.0;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["epoch"], ++epoch);
    EXPECT_EQ(j["phase"], epoch - 1);  // 5 epochs, 5 phases
    EXPECT_EQ(j["min_length"], 10 + 10 * (epoch - 1));
    EXPECT_GE(j["train_mse"].get<double>(), 0.0);
    last_test = j["test_mse"].get<double>();
  }
  EXPECT_EQ(epoch, 5);
  EXPECT_EQ(r["final"]["test_mse"].get<double>(), last_test);
  EXPECT_EQ(nlohmann::json::parse(slurp(o.out / "result.json")), r);
  EXPECT_EQ(slurp(o.out / "result.json").find("seconds"), std::string::npos);
  auto manifest = nlohmann::json::parse(slurp(o.out / "manifest.json"));
  EXPECT_EQ(manifest["parameters"], r["parameters"]);
  EXPECT_EQ(manifest["config"]["curriculum"], true);
  std::filesystem::remove_all(o.out);
}

TEST(GrpuTrain, SameSeedGivesByteIdenticalResult) {
  for (const char* model : {"grpu+hidden=6+prod", "bigru+hidden=4"}) {
    SequenceTrainOptions a = short_run("mare_grpu_b1", model), b = short_run("mare_grpu_b2", model);
    a.epochs = b.epochs = 3;
    train_sequence_model(a, nullptr);
    train_sequence_model(b, nullptr);
    EXPECT_EQ(slurp(a.out / "result.json"), slurp(b.out / "result.json")) << model;
    EXPECT_EQ(slurp(a.out / "metrics.jsonl"), slurp(b.out / "metrics.jsonl")) << model;
    // Another seed gives another run.
    SequenceTrainOptions c = short_run("mare_grpu_b3", model);
    c.epochs = 3;
    c.seed = 3;
    train_sequence_model(c, nullptr);
    EXPECT_NE(slurp(a.out / "metrics.jsonl"), slurp(c.out / "metrics.jsonl")) << model;
    for (auto* o : {&a, &b, &c}) std::filesystem::remove_all(o->out);
  }
}

// The shared run lifecycle (experiments/run_lifecycle.h) for sequence runs: a run
// killed after an evaluation resumes from its last state to the same bytes; a
// finished run is skipped; another configuration in its directory is refused
// unless forced.
TEST(GrpuTrain, KilledRunResumesToTheSameBytes) {
  // Resumed from epoch 3's state, not restarted (which gives the same bytes): the
  // epochs evaluated after the kill are 4 and 5 only.
  test::expect_killed_run_resumes(
      [](const SequenceTrainOptions& o, std::ostream* p) { return train_sequence_model(o, p); },
      short_run("mare_grpu_r1", "grpu+hidden=6"), short_run("mare_grpu_r2", "grpu+hidden=6"), 4,
      {4, 5});
}

TEST(GrpuTrain, FinishedRunIsSkippedAndAnotherConfigurationRefused) {
  SequenceTrainOptions o = short_run("mare_grpu_s", "gru+hidden=4");
  o.epochs = 2;
  const nlohmann::json first = train_sequence_model(o, nullptr);
  const auto stamp = std::filesystem::last_write_time(o.out / "result.json");
  EXPECT_EQ(train_sequence_model(o, nullptr), first);
  EXPECT_EQ(std::filesystem::last_write_time(o.out / "result.json"), stamp);
  SequenceTrainOptions other = o;
  other.batch = 5;
  try {
    train_sequence_model(other, nullptr);
    ADD_FAILURE() << "a finished run of another configuration was reused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another configuration (batch"), std::string::npos)
        << e.what();
  }
  other.force = true;
  EXPECT_EQ(train_sequence_model(other, nullptr)["batch"], 5);
  EXPECT_EQ(nlohmann::json::parse(slurp(o.out / "manifest.json"))["config"]["batch"], 5);
}

// `--device cuda` trains the sequence models on the GPU (it ran them on the CPU
// and wrote "device": "cpu"): every model family, the device recorded in
// result.json and manifest.json, the same bytes for the same seed, and MSEs
// beside the CPU's. Tolerance: the GPU's GEMMs and reductions sum in other
// orders (SPEC §2), and over 6 Adam steps at lr 1e-2 those roundings move the
// weights apart by far less than 1 % of the MSE. Skips without a GPU.
TEST(GrpuTrainCuda, EverySequenceModelTrainsOnTheGpu) {
  MARE_NEEDS_GPU();
  for (const char* model :
       {"grpu+hidden=6+prod", "gru+hidden=4", "bigru+hidden=4", "lstm+hidden=4"}) {
    SCOPED_TRACE(model);
    SequenceTrainOptions cpu = short_run("mare_grpu_cuda_c", model),
                         gpu = short_run("mare_grpu_cuda_g", model),
                         again = short_run("mare_grpu_cuda_a", model);
    cpu.epochs = gpu.epochs = again.epochs = 2;
    gpu.device = again.device = Device::cuda;
    const nlohmann::json c = train_sequence_model(cpu, nullptr);
    const nlohmann::json g = train_sequence_model(gpu, nullptr);
    train_sequence_model(again, nullptr);
    EXPECT_EQ(g["status"], "completed");
    EXPECT_EQ(c["device"], "cpu");
    EXPECT_EQ(g["device"], "cuda");
    EXPECT_EQ(nlohmann::json::parse(slurp(gpu.out / "manifest.json"))["device"], "cuda");
    EXPECT_EQ(slurp(gpu.out / "result.json"), slurp(again.out / "result.json"));
    EXPECT_EQ(slurp(gpu.out / "checkpoint.bin"), slurp(again.out / "checkpoint.bin"));
    for (const char* k : {"train_mse", "test_mse"}) {
      const double a = c["final"][k].get<double>(), b = g["final"][k].get<double>();
      EXPECT_NEAR(b, a, 1e-2 * a) << k;
    }
    for (const auto& o : {cpu, gpu, again}) std::filesystem::remove_all(o.out);
  }
}

}  // namespace
}  // namespace mare
