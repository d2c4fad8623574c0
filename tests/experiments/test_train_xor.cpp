// The end-to-end proof: an MLP learns xor to accuracy 1.0, the run directory
// has every file of SPEC §7, and the same seed gives a byte-identical
// result.json (timings live in timing.json).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/trainer.h"
#include "tests/experiments/run_checks.h"
#include "tests/gpu_required.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TrainOptions xor_options(const std::string& dir, uint64_t seed) {
  TrainOptions o;
  o.model = "mlp";
  o.task = "xor";
  o.seed = seed;
  o.out = ::mare::test::process_temp_dir() / dir;  // unique per process (mkdtemp)
  std::filesystem::remove_all(o.out);
  return o;
}

TEST(TrainXor, ReachesFullAccuracyAndWritesTheRunDirectory) {
  TrainOptions o = xor_options("mare_xor_a", 1);
  nlohmann::json r = train_classifier(o, nullptr);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["final"]["train_accuracy"].get<double>(), 1.0);
  EXPECT_EQ(r["final"]["test_accuracy"].get<double>(), 1.0);
  for (const char* f :
       {"manifest.json", "metrics.jsonl", "timing.json", "result.json", "checkpoint.bin"})
    EXPECT_TRUE(std::filesystem::exists(o.out / f)) << f;
  // One metrics line per epoch, each a JSON object.
  std::ifstream metrics(o.out / "metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["epoch"], ++lines);
  }
  EXPECT_EQ(lines, o.epochs);
  EXPECT_EQ(nlohmann::json::parse(slurp(o.out / "result.json")), r);
  EXPECT_EQ(slurp(o.out / "result.json").find("seconds"), std::string::npos);
  // The manifest records when the run started (UTC), for the reports' provenance.
  const auto manifest = nlohmann::json::parse(slurp(o.out / "manifest.json"));
  ASSERT_TRUE(manifest.contains("date"));
  EXPECT_TRUE(std::regex_match(manifest["date"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << manifest["date"];
  std::filesystem::remove_all(o.out);
}

// A loss that is not finite stops the run before backward: status "diverged", where
// it happened (epoch, step, loss) in result.json, nothing trained after it.
TEST(TrainXor, ALossThatIsNotFiniteStopsTheRunAndSaysWhere) {
  TrainOptions o = xor_options("mare_xor_diverged", 1);
  o.lr = std::numeric_limits<float>::infinity();  // the first update makes every weight ±inf
  nlohmann::json r = train_classifier(o, nullptr);
  EXPECT_EQ(r["status"], "diverged") << r.dump(2);
  ASSERT_TRUE(r.contains("diverged")) << r.dump(2);
  EXPECT_EQ(r["diverged"]["epoch"], 1);
  EXPECT_EQ(r["diverged"]["step"], 1);  // step 0 updated, step 1's loss is not finite
  EXPECT_FALSE(std::isfinite(std::stof(r["diverged"]["loss"].get<std::string>())));
  EXPECT_EQ(r["steps"], 1);
  EXPECT_EQ(nlohmann::json::parse(slurp(o.out / "result.json")), r);
  std::filesystem::remove_all(o.out);
}

TEST(TrainXor, SameSeedGivesByteIdenticalResult) {
  TrainOptions a = xor_options("mare_xor_b1", 3), b = xor_options("mare_xor_b2", 3);
  a.epochs = b.epochs = 20;
  train_classifier(a, nullptr);
  train_classifier(b, nullptr);
  EXPECT_EQ(slurp(a.out / "result.json"), slurp(b.out / "result.json"));
  EXPECT_EQ(slurp(a.out / "metrics.jsonl"), slurp(b.out / "metrics.jsonl"));
  TrainOptions c = xor_options("mare_xor_b3", 4);
  c.epochs = 20;
  train_classifier(c, nullptr);
  EXPECT_NE(slurp(a.out / "metrics.jsonl"), slurp(c.out / "metrics.jsonl"));
  for (auto* o : {&a, &b, &c}) std::filesystem::remove_all(o->out);
}

// The lifecycle every trainer shares: a run killed after an evaluation resumes from its
// last.ckpt (not from the start) to the bytes of an uninterrupted run.
TEST(TrainXor, KilledRunResumesToTheSameBytes) {
  TrainOptions a = xor_options("mare_xor_k1", 6), c = xor_options("mare_xor_k2", 6);
  a.epochs = c.epochs = 6;
  test::expect_killed_run_resumes(train_classifier, a, c, 4, {4, 5, 6});  // from epoch 3's state
  for (auto* o : {&a, &c}) std::filesystem::remove_all(o->out);
}

TEST(TrainXor, FinishedRunIsNotRepeatedUnlessForced) {
  TrainOptions o = xor_options("mare_xor_c", 5);
  o.epochs = 2;
  train_classifier(o, nullptr);
  auto stamp = std::filesystem::last_write_time(o.out / "result.json");
  std::string timing = slurp(o.out / "timing.json");
  train_classifier(o, nullptr);  // skipped: nothing rewritten
  EXPECT_EQ(std::filesystem::last_write_time(o.out / "result.json"), stamp);
  EXPECT_EQ(slurp(o.out / "timing.json"), timing);
  // Forced: it runs again from the start and writes its result again (a stale one put in
  // its place is replaced) with the same bytes; its metrics are written anew, not appended.
  const std::string result = slurp(o.out / "result.json");
  const std::string metrics = slurp(o.out / "metrics.jsonl");
  std::ofstream(o.out / "result.json", std::ios::trunc)
      << "{\"status\": \"completed\", \"stale\": true}\n";
  o.force = true;
  train_classifier(o, nullptr);
  EXPECT_EQ(slurp(o.out / "result.json"), result);
  EXPECT_EQ(slurp(o.out / "metrics.jsonl"), metrics);
  std::filesystem::remove_all(o.out);
}

TEST(TrainXor, BadOptionsAreRefused) {
  TrainOptions o = xor_options("mare_xor_d", 1);
  o.task = "nosuch";
  EXPECT_THROW(train_classifier(o, nullptr), std::invalid_argument);
  o.task = "xor";
  o.model = "mlp+layers=0";
  EXPECT_THROW(train_classifier(o, nullptr), std::invalid_argument);
  o.model = "mlp";
  o.schedule = "nonsense";
  EXPECT_THROW(train_classifier(o, nullptr), std::invalid_argument);
  std::filesystem::remove_all(o.out);
}

// `--device cuda` trains the MLP on the GPU (it ran on the CPU and wrote
// "device": "cpu"): xor to accuracy 1.0, the device in result.json and the
// manifest, the same bytes for the same seed. Skips without a GPU.
TEST(TrainXorCuda, TrainsOnTheGpu) {
  MARE_NEEDS_GPU();
  TrainOptions a = xor_options("mare_xor_cuda_a", 1), b = xor_options("mare_xor_cuda_b", 1);
  a.device = b.device = Device::cuda;
  const nlohmann::json r = train_classifier(a, nullptr);
  train_classifier(b, nullptr);
  EXPECT_EQ(r["device"], "cuda");
  EXPECT_EQ(nlohmann::json::parse(slurp(a.out / "manifest.json"))["device"], "cuda");
  EXPECT_EQ(r["final"]["test_accuracy"].get<double>(), 1.0);
  EXPECT_EQ(slurp(a.out / "result.json"), slurp(b.out / "result.json"));
}

}  // namespace
}  // namespace mare
