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
#include "experiments/re_data.h"
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
    // Reads and allocation: this call's where the memory stepped; a frozen memory's are
    // those of its last step (token 1 in the third call), zeros before its first (7).
    const Tensor reads = mix.state().read_vectors->value;
    const int64_t rw = 2 * 6, n = 3;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < rw; ++k) {
        const float want = s.run.f32()[m] != 0.0f ? reads.f32()[m * rw + k]
                           : call == 0            ? 0.0f
                                       : rec.steps[call - 1].read_vectors.f32()[m * rw + k];
        EXPECT_EQ(s.read_vectors.f32()[m * rw + k], want) << "memory " << m;
      }
    for (int64_t k = 0; k < n; ++k) {
      EXPECT_EQ(s.allocation.f32()[7 * n + k], 0.0f);
      if (call == 2) {
        EXPECT_EQ(s.allocation.f32()[n + k], rec.steps[1].allocation.f32()[n + k]);
      }
    }
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

// The values of memory.json against SPEC §3, recomputed step by step from what it
// records (the test above checks shapes and headers): with M the memory after the
// step's write, w the write weights, u the usage, a the allocation, w^r the read
// weights and r the read vectors of one token's memory at iteration k,
//   11. r_h = Mᵀ w^r_h                                  (every head, every word)
//    4. a = the DNC allocation of u (ascending û = ε + (1 − ε)u, lower slot first)
//    7. M_k − M_{k−1} = w ⊙ (v − e ⊙ M_{k−1}) for one write vector v and one erase
//       vector e ∈ [0, 1] (solved from two slots, checked on the others)
//    3. u_k ≤ u_{k−1} + w_{k−1} − u_{k−1} ⊙ w_{k−1} (the retention ψ is in [0, 1])
// and a memory that did not run (halted, padded) keeps its state. On the valid split
// (--split), and through --data for a run whose corpus has moved.
double at(const nlohmann::json& v) {
  return v.get<double>();
}

void expect_dnc_steps(const nlohmann::json& j) {
  const int64_t N = j["slots"], W = j["word"], R = j["read_heads"];
  const size_t K = j["steps"].size(), T = j["steps"][0]["usage"].size();
  int reads = 0, allocations = 0, writes = 0;
  for (size_t k = 0; k < K; ++k) {
    const nlohmann::json& s = j["steps"][k];
    for (size_t i = 0; i < T; ++i) {
      SCOPED_TRACE("iteration " + std::to_string(k + 1) + ", token " + std::to_string(i));
      const nlohmann::json& M = s["memory"][i];
      for (int64_t h = 0; h < R; ++h)
        for (int64_t c = 0; c < W; ++c) {
          double r = 0;
          for (int64_t n = 0; n < N; ++n) r += at(s["read_weights"][i][h][n]) * at(M[n][c]);
          EXPECT_NEAR(at(s["read_vectors"][i][h][c]), r, 1e-5 * (1 + std::fabs(r)));
          ++reads;
        }
      // Allocation: the DNC's sorted form, in double.
      std::vector<double> uh(N);
      std::vector<int64_t> order(N);
      for (int64_t n = 0; n < N; ++n) {
        uh[n] = 1e-6 + (1 - 1e-6) * at(s["usage"][i][n]);
        order[n] = n;
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return uh[x] < uh[y]; });
      double prod = 1;
      for (int64_t q = 0; q < N; ++q) {
        const int64_t n = order[q];
        EXPECT_NEAR(at(s["allocation"][i][n]), (1 - uh[n]) * prod, 1e-5) << "slot " << n;
        prod *= uh[n];
        ++allocations;
      }
      const bool ran = at(s["run"][i]) > 0;
      if (k == 0 && !ran) continue;
      const nlohmann::json* prev = k == 0 ? nullptr : &j["steps"][k - 1];
      auto before = [&](int64_t n, int64_t c) {
        return prev ? at((*prev)["memory"][i][n][c]) : 0.0;
      };
      if (!ran) {  // frozen: the state it had
        for (int64_t n = 0; n < N; ++n) {
          EXPECT_EQ(at(s["usage"][i][n]), at((*prev)["usage"][i][n]));
          for (int64_t c = 0; c < W; ++c) EXPECT_EQ(at(M[n][c]), before(n, c));
        }
        continue;
      }
      if (prev)
        for (int64_t n = 0; n < N; ++n) {
          const double u0 = at((*prev)["usage"][i][n]), w0 = at((*prev)["write_weights"][i][n]);
          EXPECT_LE(at(s["usage"][i][n]), u0 + w0 - u0 * w0 + 1e-6) << "slot " << n;
        }
      // The write: the two slots written most give v and e, the others must follow.
      std::vector<int64_t> by_w(N);
      for (int64_t n = 0; n < N; ++n) by_w[n] = n;
      std::sort(by_w.begin(), by_w.end(), [&](int64_t x, int64_t y) {
        return at(s["write_weights"][i][x]) > at(s["write_weights"][i][y]);
      });
      const int64_t a = by_w[0], b = by_w[1];
      const double wa = at(s["write_weights"][i][a]), wb = at(s["write_weights"][i][b]);
      if (wa < 0.05 || wb < 0.05) continue;
      for (int64_t c = 0; c < W; ++c) {
        const double da = (at(M[a][c]) - before(a, c)) / wa, db = (at(M[b][c]) - before(b, c)) / wb;
        const double gap = before(b, c) - before(a, c);
        double e = 0, v = da;
        if (prev) {
          if (std::fabs(gap) < 0.05) continue;  // e not determined by these two slots
          e = (da - db) / gap;
          v = da + e * before(a, c);
          EXPECT_GE(e, -1e-3) << "word " << c;
          EXPECT_LE(e, 1 + 1e-3) << "word " << c;
        }
        for (int64_t n = 0; n < N; ++n) {
          const double w = at(s["write_weights"][i][n]);
          const double predicted = before(n, c) + w * (v - e * before(n, c));
          EXPECT_NEAR(at(M[n][c]), predicted, 1e-3 * (1 + std::fabs(predicted)))
              << "slot " << n << " word " << c;
        }
        ++writes;
      }
    }
  }
  EXPECT_GT(reads, 0);
  EXPECT_GT(allocations, 0);
  EXPECT_GT(writes, 0) << "no write could be checked";
}

TEST(InspectMemory, ValuesFollowTheDncStepByStep) {
  const fs::path run = trained_run();
  const fs::path out = scratch() / "inspect_valid";
  const Outcome o = run_mare({"inspect", "memory", run.string(), "--doc", "1", "--split", "valid",
                              "--out", out.string(), "--no-plots"});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "memory.json"));
  // --split: the valid split's document 1 (the run's corpus, as the trainer loads it).
  const nlohmann::json config = nlohmann::json::parse(slurp(run / "manifest.json"))["config"];
  ReCorpusOptions copt;
  copt.source = config["data"];
  copt.max_tokens = config["max_tokens"];
  copt.seed = config["seed"];
  const ReCorpus corpus = ReCorpus::load(copt);
  EXPECT_EQ(j["split"], "valid");
  EXPECT_EQ(j["document"]["id"], corpus.valid.documents[1].id);
  EXPECT_EQ(j["document"]["tokens"].size(), static_cast<size_t>(corpus.valid.features[1].length));
  expect_dnc_steps(j);
  // The CSVs hold the JSON's values (9 significant digits).
  std::ifstream csv(out / "memory_read_vectors.csv");
  std::string line;
  std::getline(csv, line);
  int rows = 0;
  while (std::getline(csv, line)) {
    int k, i, h, c;
    double v;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d,%d,%d,%d,%lf", &k, &i, &h, &c, &v), 5) << line;
    EXPECT_NEAR(v, at(j["steps"][k - 1]["read_vectors"][i][h][c]), 1e-8 * (1 + std::fabs(v)));
    ++rows;
  }
  EXPECT_EQ(rows, static_cast<int>(j["steps"].size() * j["steps"][0]["usage"].size() *
                                   j["read_heads"].get<size_t>() * j["word"].get<size_t>()));

  // --data: a copy of the run whose corpus has moved reads the one given.
  const fs::path moved = scratch() / "moved_run";
  fs::create_directories(moved);
  nlohmann::json m = nlohmann::json::parse(slurp(run / "manifest.json"));
  m["config"]["data"] = "synth-cdr:" + (scratch() / "no_longer_here").string();
  std::ofstream(moved / "manifest.json") << m.dump();
  fs::copy_file(run / "checkpoint.bin", moved / "checkpoint.bin",
                fs::copy_options::overwrite_existing);
  const fs::path out2 = scratch() / "inspect_moved";
  const std::vector<std::string> args = {"inspect",     "memory",    moved.string(), "--doc",
                                         "1",           "--split",   "valid",        "--out",
                                         out2.string(), "--no-plots"};
  Outcome refused = run_mare(args);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("no_longer_here"), std::string::npos) << refused.err;
  std::vector<std::string> with_data = args;
  with_data.insert(with_data.end(), {"--data", config["data"].get<std::string>()});
  const Outcome o2 = run_mare(with_data);
  ASSERT_EQ(o2.status, 0) << o2.err;
  nlohmann::json j2 = nlohmann::json::parse(slurp(out2 / "memory.json"));
  EXPECT_EQ(j2["data"], config["data"]);
  j2["run"] = j["run"];
  EXPECT_EQ(j2, j);
}

// `mare report` finds an inspection folder among its inputs (memory.json) and counts
// it; with gnuplot it draws Fig. 4.2 from it.
TEST(InspectMemory, ReportReadsTheInspectionFolder) {
  const fs::path out = scratch() / "inspect_for_report";
  ASSERT_EQ(run_mare({"inspect", "memory", trained_run().string(), "--doc", "0", "--out",
                      out.string(), "--no-plots"})
                .status,
            0);
  const fs::path rep = scratch() / "inspect_report";
  const bool figures = have_gnuplot();
  std::vector<std::string> args = {"report",     out.string(), "--out",
                                   rep.string(), "--only",     "fig4.2"};
  if (!figures) args.push_back("--no-figures");
  const Outcome o = run_mare(args);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("0 runs, 0 benchmarks, 0 corpus statistics, 1 inspections"),
            std::string::npos)
      << o.out;
  if (!figures) GTEST_SKIP() << "gnuplot is not installed: the inspection was found, not drawn";
  EXPECT_NE(o.out.find("1 of 1 figures"), std::string::npos) << o.out;
  EXPECT_TRUE(fs::exists(rep / "figures" / "fig4.2.png"));
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

// --static-step: the same losses; the host reads only the loss (the trainer's divergence
// check), where the dynamic step also reads each halting iteration's decision; a staged
// batch leaves nothing for the step to build from host data.
TEST(BenchIteration, StaticStepReadsOnlyTheLoss) {
  std::map<bool, nlohmann::json> rows;
  for (bool fixed : {false, true}) {
    const fs::path json = scratch() / (fixed ? "static.json" : "dynamic.json");
    std::vector<std::string> args = {"bench",   "iteration",    "--models", "UTRE-CPD",   "--size",
                                     "default", "--iterations", "1",        "--warmup",   "1",
                                     "--shape", "semeval",      "--json",   json.string()};
    if (fixed) args.push_back("--static-step");
    const Outcome o = run_mare(args);
    ASSERT_EQ(o.status, 0) << o.err;
    const nlohmann::json j = nlohmann::json::parse(slurp(json));
    EXPECT_EQ(j["static_step"], fixed);
    ASSERT_EQ(j["rows"].size(), 1u);
    rows[fixed] = j["rows"][0];
  }
  EXPECT_EQ(rows[true]["last_loss"], rows[false]["last_loss"]);
  EXPECT_EQ(rows[true]["host_reads"], 1);
  EXPECT_EQ(rows[true]["host_tensors"], 0);
  EXPECT_GT(rows[false]["host_reads"].get<int64_t>(), 1);
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
