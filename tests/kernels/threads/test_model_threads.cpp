// A few training steps of every model family through the real trainers give the
// same bytes (checkpoint.bin, metrics.jsonl, and result.json except its
// "threads" field) at 1, 2, 3 and 7 threads. The work thresholds are scaled
// down so that the tiny models' ops are cut into many chunks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/data/generators.h"
#include "experiments/re_trainer.h"
#include "experiments/sequence_trainer.h"
#include "experiments/trainer.h"
#include "tests/kernels/threads/threads_check.h"
#include "tests/temp_dir.h"

namespace mare::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const fs::path& scratch() {
  static const fs::path dir = process_temp_dir() / "model_threads";
  return dir;
}

// The bytes a run leaves, result.json without its "threads" field (which records K).
struct RunBytes {
  std::string checkpoint, metrics, result;
  int threads_field = 0;
};

RunBytes read_run(const fs::path& dir) {
  RunBytes r;
  r.checkpoint = slurp(dir / "checkpoint.bin");
  r.metrics = slurp(dir / "metrics.jsonl");
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "result.json"));
  r.threads_field = j.value("threads", 0);
  j.erase("threads");
  r.result = j.dump();
  return r;
}

// Runs train(dir) at every thread count into its own directory; compares bytes.
void expect_same_runs(const std::string& name, const std::function<void(const fs::path&)>& train) {
  ThreadScope scope(1e-9);
  RunBytes ref;
  for (int k : thread_counts()) {
    set_threads(k);
    const fs::path dir = scratch() / (name + "_t" + std::to_string(k));
    train(dir);
    RunBytes got = read_run(dir);
    EXPECT_EQ(got.threads_field, k) << name << ": result.json records the thread count";
    if (k == thread_counts().front()) {
      ref = got;
      continue;
    }
    EXPECT_TRUE(got.checkpoint == ref.checkpoint)
        << name << ": checkpoint.bin differs at " << k << " threads from 1 thread";
    EXPECT_EQ(got.metrics, ref.metrics) << name << " at " << k << " threads";
    EXPECT_EQ(got.result, ref.result) << name << " at " << k << " threads";
  }
}

TEST(ModelThreads, MlpXor) {
  expect_same_runs("mlp", [](const fs::path& dir) {
    TrainOptions o;
    o.model = "mlp";
    o.task = "xor";
    o.seed = 3;
    o.epochs = 5;
    o.batch = 16;
    o.out = dir;
    train_classifier(o, nullptr);
  });
}

TEST(ModelThreads, GrpuAddition) {
  expect_same_runs("grpu", [](const fs::path& dir) {
    SequenceTrainOptions o;
    o.model = "grpu+hidden=12";
    o.task = "addition";
    o.seed = 3;
    o.epochs = 2;
    o.batch = 8;
    o.samples = 16;
    o.test_samples = 8;
    o.lr = 1e-3f;
    o.out = dir;
    train_sequence_model(o, nullptr);
  });
}

// Four synthetic CDR documents; valid and test are copies of train.
const std::string& tiny_corpus() {
  static const std::string source = [] {
    const fs::path dir = scratch() / "cdr";
    data::GenerateOptions g;
    g.seed = 5;
    g.docs = 4;
    data::generate_synth_cdr(dir.string(), g);
    fs::copy_file(dir / "train.pubtator", dir / "valid.pubtator",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(dir / "train.pubtator", dir / "test.pubtator",
                  fs::copy_options::overwrite_existing);
    return "synth-cdr:" + dir.string();
  }();
  return source;
}

class RelationModelThreads : public ::testing::TestWithParam<std::string> {};

TEST_P(RelationModelThreads, SameBytes) {
  const std::string model = GetParam();
  expect_same_runs(model.substr(0, model.find('+')), [&](const fs::path& dir) {
    ReTrainOptions o;
    o.model = model;
    o.data = tiny_corpus();
    o.seed = 2;
    o.steps = 4;
    o.batch = 4;
    o.eval_batch = 4;
    o.eval_every = 2;
    o.lr = 3e-3f;
    o.max_tokens = 96;
    o.out = dir;
    train_re_model(o, nullptr);
  });
}

// ner_prob 0.5: both tasks (and both heads) take part in the four steps.
const std::string kTiny = "+d=16+heads=2+ner_prob=0.5";
INSTANTIATE_TEST_SUITE_P(
    Models, RelationModelThreads,
    ::testing::Values("cnn+d=16+pos_dim=4+char_dim=4+char_filters=8+filters=16",
                      "bran+iterations=2" + kTiny, "UTRE-CPD+max_steps=2" + kTiny,
                      "NTCRE-CPD+max_steps=2+slots=4+read_heads=2" + kTiny),
    [](const ::testing::TestParamInfo<std::string>& i) {
      std::string s = i.param.substr(0, i.param.find('+'));
      for (char& c : s)
        if (c == '-') c = '_';
      return s;
    });

}  // namespace
}  // namespace mare::test
