// NTCRE's memory recorder and `mare inspect memory`; `mare bench iteration`.
//   - recording changes nothing: the same logits and gradients with and without it;
//   - recorded usages lie in [0, 1] and are the controller's state after each call,
//     halted and padded tokens' memories are frozen in the recording too;
//   - `mare inspect memory` on a tiny NTCRE-CPD trained here writes memory.json,
//     the CSVs and the heatmaps, and refuses bad inputs with a clear error;
//   - `mare bench iteration --size default` writes the contract's JSON.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/bench_iteration.h"
#include "experiments/data/generators.h"
#include "experiments/re_trainer.h"
#include "kernels/random.h"
#include "models/memory_mixer.h"
#include "tests/cli_binary.h"
#include "tests/models/re_model_checks.h"
#include "tests/temp_dir.h"

#ifndef MARE_CLI_BINARY
#error "MARE_CLI_BINARY (path of the mare binary) must be defined by the build"
#endif

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.f32(), b.f32(), sizeof(float) * static_cast<size_t>(a.numel())) == 0;
}

// ---- the recorder ----------------------------------------------------------

struct Pass {
  Tensor logits;
  std::vector<Tensor> grads;
};

Pass train_pass(ReModel& m, const ReBatch& b, nn::MemoryRecording* rec) {
  for (const ag::Var& p : m.parameters().all()) p->grad = Tensor();
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = 3;
  ctx.memory_recording = rec;
  ReOutput out = m.forward(b, ReTask::relations, ctx);
  ag::Var loss = ag::cross_entropy(out.pair_logits, b.labels);
  if (out.aux_loss) loss = ag::add(loss, out.aux_loss);
  Pass r{out.pair_logits->value.clone(), {}};
  ag::backward(loss);
  for (const ag::Var& p : m.parameters().all())
    r.grads.push_back(p->grad.defined() ? p->grad.clone() : Tensor());
  return r;
}

TEST(MemoryRecorder, RecordingChangesNeitherOutputsNorGradients) {
  for (const std::string name :
       {"NTCRE-CPD+d=8+heads=2+slots=3+read_heads=2", "NTCRE+d=8+heads=2+slots=4+read_heads=1"}) {
    auto a = test::build(name), b = test::build(name);
    const ReBatch batch = test::tiny_batch();
    nn::MemoryRecording rec;
    const Pass with = train_pass(*a, batch, &rec), without = train_pass(*b, batch, nullptr);
    EXPECT_FALSE(rec.steps.empty()) << name;
    EXPECT_TRUE(same_bytes(with.logits, without.logits)) << name;
    ASSERT_EQ(with.grads.size(), without.grads.size());
    for (size_t i = 0; i < with.grads.size(); ++i) {
      ASSERT_EQ(with.grads[i].defined(), without.grads[i].defined()) << name << " " << i;
      if (with.grads[i].defined()) {
        EXPECT_TRUE(same_bytes(with.grads[i], without.grads[i])) << name << " parameter " << i;
      }
    }
    // Evaluation mode too (batch-norm running statistics).
    nn::Context e1, e2;
    e1.memory_recording = &rec;
    const Tensor l1 = a->forward(batch, ReTask::relations, e1).pair_logits->value;
    const Tensor l2 = b->forward(batch, ReTask::relations, e2).pair_logits->value;
    EXPECT_TRUE(same_bytes(l1, l2)) << name;
  }
}

TEST(MemoryRecorder, StepsAreTheControllerStateAfterEachCall) {
  ParameterSet ps(5);
  nn::Buffers buffers;
  nn::MemoryConfig mc;
  mc.dim = 6;
  mc.heads = 2;
  mc.slots = 3;
  mc.read_heads = 2;
  nn::MemoryController mix(ps, buffers, "mix", mc);
  const int64_t B = 2, T = 4, M = B * T, d = 6;
  Tensor x0 = Tensor::empty({B, T, d});
  fill_uniform(x0, 9, 1, -1.0f, 1.0f);
  const Tensor mask = Tensor::from_vector({1, 1, 1, 1, 1, 1, 1, 0}, {B, T});
  nn::MemoryRecording rec;
  nn::Context ctx;
  ctx.training = true;
  ctx.memory_recording = &rec;
  mix.begin(B, T, ctx);
  ag::Var x = ag::constant(x0);
  for (int call = 0; call < 3; ++call) {
    Tensor run = Tensor::full({M}, 1.0f);
    if (call == 2) run.f32()[1] = 0.0f;  // token 1 halted before the third call
    x = mix(x, mask, run, ctx);
    ASSERT_EQ(rec.steps.size(), static_cast<size_t>(call + 1));
    const nn::MemoryRecording::Step& s = rec.steps.back();
    EXPECT_EQ(s.mixer, "mix");
    EXPECT_EQ(s.call, call);
    EXPECT_TRUE(same_bytes(s.usage, mix.state().usage->value));
    EXPECT_TRUE(same_bytes(s.memory, mix.state().memory->value));
    EXPECT_TRUE(same_bytes(s.write_weights, mix.state().write_weights->value));
    EXPECT_TRUE(same_bytes(s.read_weights, mix.state().read_weights->value));
    EXPECT_TRUE(same_bytes(s.read_vectors, mix.state().read_vectors->value));
    ASSERT_EQ(s.usage.shape(), Shape({M, 3}));
    for (int64_t i = 0; i < s.usage.numel(); ++i) {
      EXPECT_GE(s.usage.f32()[i], 0.0f);
      EXPECT_LE(s.usage.f32()[i], 1.0f);
    }
    // The padded token (7) never ran; token 1 did not run in the third call.
    EXPECT_EQ(s.run.f32()[7], 0.0f);
    EXPECT_EQ(s.run.f32()[1], call == 2 ? 0.0f : 1.0f);
    EXPECT_EQ(s.run.f32()[0], 1.0f);
  }
  // The memories grew (something was written) except the padded one, and the
  // halted token's memory is the one it had after the second call.
  const int64_t per = 3 * 6;
  double written = 0;
  for (int64_t k = 0; k < per; ++k) {
    written += std::fabs(rec.steps[0].memory.f32()[k]);
    EXPECT_EQ(rec.steps[2].memory.f32()[7 * per + k], 0.0f);
    EXPECT_EQ(rec.steps[2].memory.f32()[1 * per + k], rec.steps[1].memory.f32()[1 * per + k]);
  }
  EXPECT_GT(written, 0.0);
  for (int64_t n = 0; n < 3; ++n)
    EXPECT_EQ(rec.steps[2].usage.f32()[3 + n], rec.steps[1].usage.f32()[3 + n]);
  // begin() starts the call count again.
  mix.begin(B, T, ctx);
  mix(ag::constant(x0), mask, Tensor::full({M}, 1.0f), ctx);
  EXPECT_EQ(rec.steps.back().call, 0);
}

// ---- the mare binary ----------------------------------------------------------

struct Outcome {
  int status = -1;
  std::string out, err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Outcome run_mare(const std::vector<std::string>& args) {
  static test::TempDir logs("inspect_cli");
  std::string cmd = quoted(::mare::test::cli_binary());
  for (const std::string& a : args) cmd += " " + quoted(a);
  cmd += " >" + quoted((logs / "stdout").string()) + " 2>" + quoted((logs / "stderr").string());
  const int raw = std::system(cmd.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.out = slurp(logs / "stdout");
  o.err = slurp(logs / "stderr");
  return o;
}

const fs::path& scratch() {
  // Created here: under ctest's shards a test may run without the ones that made it.
  static const fs::path dir = [] {
    fs::path d = test::process_temp_dir() / "inspect";
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// A tiny NTCRE-CPD trained for a few steps on four synthetic CDR documents.
const fs::path& trained_run() {
  static const fs::path run = [] {
    const fs::path data = scratch() / "cdr";
    data::GenerateOptions g;
    g.seed = 3;
    g.docs = 4;
    data::generate_synth_cdr(data.string(), g);
    ReTrainOptions o;
    o.model = "NTCRE-CPD+d=8+heads=2+slots=4+read_heads=2+dropout=0+ner_prob=0";
    o.data = "synth-cdr:" + data.string();
    o.seed = 1;
    o.steps = 4;
    o.batch = 4;
    o.eval_batch = 4;
    o.eval_every = 2;
    o.max_tokens = 60;
    o.out = scratch() / "run";
    train_re_model(o, nullptr);
    return o.out;
  }();
  return run;
}

// Is gnuplot on PATH (what `mare inspect memory` runs for the heatmaps)? A GPU
// node rarely has it: there the heatmap test skips and says so, as the figure
// tests do (the --no-plots test below still runs).
bool have_gnuplot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t b = 0; b <= dirs.size();) {
    const size_t e = std::min(dirs.find(':', b), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(b, e - b)) / "gnuplot";
    if (e > b && ::access(candidate.c_str(), X_OK) == 0) return true;
    b = e + 1;
  }
  return false;
}

TEST(InspectMemory, WritesJsonCsvAndHeatmaps) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (the heatmaps need it)";
  const fs::path out = scratch() / "inspect0";
  const Outcome o =
      run_mare({"inspect", "memory", trained_run().string(), "--doc", "0", "--out", out.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "memory.json"));
  EXPECT_EQ(j["split"], "test");
  EXPECT_EQ(j["slots"], 4);
  EXPECT_EQ(j["read_heads"], 2);
  EXPECT_EQ(j["word"], 8);
  const size_t tokens = j["document"]["tokens"].size();
  ASSERT_GT(tokens, 0u);
  const int iterations = j["iterations"];
  ASSERT_GE(iterations, 1);
  ASSERT_LE(iterations, 3);
  ASSERT_EQ(j["steps"].size(), static_cast<size_t>(iterations));
  for (const nlohmann::json& s : j["steps"]) {
    ASSERT_EQ(s["usage"].size(), tokens);
    ASSERT_EQ(s["memory"][0].size(), 4u);
    ASSERT_EQ(s["memory"][0][0].size(), 8u);
    ASSERT_EQ(s["read_weights"][0].size(), 2u);
    ASSERT_EQ(s["read_vectors"][0][1].size(), 8u);
    for (const nlohmann::json& u : s["usage"])
      for (const nlohmann::json& v : u) {
        EXPECT_GE(v.get<double>(), 0.0);
        EXPECT_LE(v.get<double>(), 1.0);
      }
  }
  // The first iteration writes (usage follows one iteration later, SPEC §3 step 3:
  // it is zero after the first and positive after the second).
  auto total = [&](int k, const char* field) {
    double sum = 0;
    for (const nlohmann::json& u : j["steps"][k][field])
      for (const nlohmann::json& v : u) sum += v.get<double>();
    return sum;
  };
  EXPECT_GT(total(0, "write_weights"), 0.0);
  EXPECT_EQ(total(0, "usage"), 0.0);
  if (iterations > 1) {
    EXPECT_GT(total(1, "usage"), 0.0);
  }
  EXPECT_FALSE(j["pairs"].empty());
  const std::string usage_csv = slurp(out / "memory_usage.csv");
  EXPECT_EQ(usage_csv.rfind("iteration,token,slot,value\n", 0), 0u) << usage_csv.substr(0, 80);
  // One line per iteration, token and slot, plus the header.
  EXPECT_EQ(std::count(usage_csv.begin(), usage_csv.end(), '\n'),
            static_cast<long>(1 + iterations * tokens * 4));
  EXPECT_EQ(slurp(out / "memory_memory.csv").rfind("iteration,token,slot,word,value\n", 0), 0u);
  EXPECT_EQ(slurp(out / "memory_read_weights.csv").rfind("iteration,token,head,slot,value\n", 0),
            0u);
  for (const char* f : {"memory_tokens.csv", "memory_write_weights.csv", "memory_allocation.csv",
                        "memory_read_vectors.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  for (const char* field : {"usage", "memory", "write_weights", "read_weights", "read_vectors"}) {
    const std::string png = slurp(out / ("heatmap_" + std::string(field) + ".png"));
    const std::string svg = slurp(out / ("heatmap_" + std::string(field) + ".svg"));
    EXPECT_EQ(png.substr(1, 3), "PNG") << field;
    EXPECT_NE(svg.find("<svg"), std::string::npos) << field;
  }
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_NE(e.path().filename().string()[0], '.') << "left behind: " << e.path();

  // The same document by its id gives the same recording.
  const std::string id = j["document"]["id"];
  const fs::path by_id = scratch() / "inspect_id";
  const Outcome o2 = run_mare({"inspect", "memory", trained_run().string(), "--doc", id, "--out",
                               by_id.string(), "--no-plots"});
  ASSERT_EQ(o2.status, 0) << o2.err;
  EXPECT_EQ(slurp(by_id / "memory.json"), slurp(out / "memory.json"));
  EXPECT_FALSE(fs::exists(by_id / "heatmap_usage.png"));
}

TEST(InspectMemory, BadInputsGiveClearErrors) {
  const fs::path run = trained_run();
  const fs::path out = scratch() / "bad_out";
  Outcome o =
      run_mare({"inspect", "memory", run.string(), "--doc", "no-such-doc", "--out", out.string()});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--doc 'no-such-doc'"), std::string::npos) << o.err;

  // Not a run directory.
  const fs::path empty = scratch() / "empty";
  fs::create_directories(empty);
  o = run_mare({"inspect", "memory", empty.string(), "--doc", "0", "--out", out.string()});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("manifest.json: not found"), std::string::npos) << o.err;

  // Not an NTCRE run.
  const fs::path utre = scratch() / "utre_run";
  fs::create_directories(utre);
  nlohmann::json m = nlohmann::json::parse(slurp(run / "manifest.json"));
  m["config"]["model"] = "UTRE-CPD+d=8+heads=2";
  std::ofstream(utre / "manifest.json") << m.dump();
  fs::copy_file(run / "checkpoint.bin", utre / "checkpoint.bin",
                fs::copy_options::overwrite_existing);
  o = run_mare({"inspect", "memory", utre.string(), "--doc", "0", "--out", out.string()});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("is not an NTCRE model"), std::string::npos) << o.err;

  // No checkpoint.
  const fs::path bare = scratch() / "no_checkpoint";
  fs::create_directories(bare);
  fs::copy_file(run / "manifest.json", bare / "manifest.json",
                fs::copy_options::overwrite_existing);
  o = run_mare({"inspect", "memory", bare.string(), "--doc", "0", "--out", out.string()});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("checkpoint.bin: not found"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out / "memory.json"));
}

// ---- mare bench iteration ----------------------------------------------------

TEST(BenchIteration, SummaryStatistics) {
  const TimeSummary s = summarize_times({3.0, 1.0, 2.0, 6.0});
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.sd, std::sqrt(14.0 / 3.0));
  EXPECT_DOUBLE_EQ(summarize_times({4.0}).sd, 0.0);
}

TEST(BenchIteration, DefaultSizeWritesTheFourRowsAndRatios) {
  const fs::path json = scratch() / "iteration.json";
  const Outcome o = run_mare({"bench", "iteration", "--size", "default", "--iterations", "2",
                              "--shape", "semeval", "--json", json.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["size"], "default");
  EXPECT_TRUE(j["threads"].is_number_integer());
  ASSERT_EQ(j["rows"].size(), 4u);
  std::map<std::string, nlohmann::json> by;
  for (const nlohmann::json& r : j["rows"]) by[r["model"]] = r;
  for (const char* m : {"UTRE", "NTCRE", "UTRE-CPD", "NTCRE-CPD"}) {
    ASSERT_TRUE(by.count(m)) << m;
    const nlohmann::json& r = by[m];
    EXPECT_EQ(r["shape"], "semeval");
    EXPECT_EQ(r["tokens"], 96);
    EXPECT_EQ(r["batch"], 32);
    EXPECT_EQ(r["d"], 32);
    ASSERT_EQ(r["times_s"].size(), 2u);
    const double a = r["times_s"][0], b = r["times_s"][1];
    EXPECT_GT(a, 0.0);
    EXPECT_NEAR(r["mean_s"].get<double>(), (a + b) / 2, 1e-12);
    EXPECT_NEAR(r["median_s"].get<double>(), (a + b) / 2, 1e-12);
    EXPECT_NEAR(r["sd_s"].get<double>(), std::fabs(a - b) / std::sqrt(2.0), 1e-12);
  }
  EXPECT_TRUE(by["UTRE"]["ratio"].is_null());
  EXPECT_TRUE(by["UTRE-CPD"]["alloc"].is_null());
  EXPECT_EQ(by["NTCRE"]["alloc"], "sorted");
  EXPECT_NEAR(by["NTCRE"]["ratio"].get<double>(),
              by["NTCRE"]["mean_s"].get<double>() / by["UTRE"]["mean_s"].get<double>(), 1e-12);
  EXPECT_NEAR(by["NTCRE-CPD"]["ratio"].get<double>(),
              by["NTCRE-CPD"]["mean_s"].get<double>() / by["UTRE-CPD"]["mean_s"].get<double>(),
              1e-12);
}

// An NTCRE row with the memory's own switches is paired with the UTRE row without them,
// and every paired row carries the ratio of the two rows' GEMM flops.
TEST(BenchIteration, MemorySwitchesKeepThePartnerAndTheFlopsRatio) {
  const fs::path json = scratch() / "word.json";
  const Outcome o = run_mare({"bench", "iteration", "--models", "UTRE-CPD,NTCRE-CPD+word=8",
                              "--size", "default", "--iterations", "1", "--warmup", "0", "--shape",
                              "semeval", "--json", json.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  ASSERT_EQ(j["rows"].size(), 2u);
  const nlohmann::json &u = j["rows"][0], &n = j["rows"][1];
  EXPECT_EQ(n["model"], "NTCRE-CPD+word=8");
  ASSERT_FALSE(n["ratio"].is_null());
  EXPECT_NEAR(n["ratio"].get<double>(), n["mean_s"].get<double>() / u["mean_s"].get<double>(),
              1e-12);
  ASSERT_TRUE(n["ratio_gemm_flops"].is_number());
  EXPECT_DOUBLE_EQ(n["ratio_gemm_flops"].get<double>(),
                   n["gemm_flops"].get<double>() / u["gemm_flops"].get<double>());
  EXPECT_GT(n["ratio_gemm_flops"].get<double>(), 1.0);
  EXPECT_FALSE(u.contains("ratio_gemm_flops"));
}

TEST(BenchIteration, AllocVariantsAndErrors) {
  const fs::path json = scratch() / "alloc.json";
  Outcome o = run_mare({"bench", "iteration", "--models", "UTRE,NTCRE", "--size", "default",
                        "--iterations", "1", "--warmup", "0", "--shape", "semeval", "--alloc",
                        "sorted,parallel-block", "--json", json.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_TRUE(j["rows"][0]["alloc"].is_null());
  EXPECT_EQ(j["rows"][1]["alloc"], "sorted");
  EXPECT_EQ(j["rows"][2]["alloc"], "parallel-block");
  EXPECT_EQ(j["rows"][2]["model"], "NTCRE");
  EXPECT_FALSE(j["rows"][2]["ratio"].is_null());
  EXPECT_TRUE(j["rows"][2]["warmup_s"].empty());

  o = run_mare({"bench", "iteration", "--size", "huge"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--size 'huge': expected paper or default"), std::string::npos) << o.err;
  o = run_mare({"bench", "iteration", "--alloc", "bogus"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("bogus"), std::string::npos) << o.err;
  o = run_mare({"bench", "iteration", "--models", "grpu"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("not a relation-extraction model"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace mare
