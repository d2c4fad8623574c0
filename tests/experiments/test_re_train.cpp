// Training relation-extraction models end to end on a tiny synthetic CDR corpus:
// each model overfits a handful of documents to RE F1 1.0; the same seed gives
// the same bytes; a run killed between two checkpoints resumes to the same
// bytes; finished runs are skipped, a changed configuration is refused; bad
// configurations get clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "experiments/data/generators.h"
#include "experiments/re_trainer.h"
#include "experiments/run_lifecycle.h"
#include "kernels/parallel.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A unique directory per test process, removed at exit (suites may run concurrently).
const fs::path& scratch() {
  static const fs::path dir = ::mare::test::process_temp_dir() / "re_train";
  return dir;
}

// Six synthetic CDR documents; valid and test are copies of train, so that
// "overfits" is measured by the trainer's own evaluation.
const std::string& tiny_corpus() {
  static const std::string source = [] {
    const fs::path dir = scratch() / "cdr";
    data::GenerateOptions g;
    g.seed = 5;
    g.docs = 6;
    data::generate_synth_cdr(dir.string(), g);
    fs::copy_file(dir / "train.pubtator", dir / "valid.pubtator",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(dir / "train.pubtator", dir / "test.pubtator",
                  fs::copy_options::overwrite_existing);
    return "synth-cdr:" + dir.string();
  }();
  return source;
}

// train_re_model(o) refuses the run with an invalid_argument whose message holds `says`.
void expect_refused(const ReTrainOptions& o, const std::string& says) {
  try {
    train_re_model(o, nullptr);
    ADD_FAILURE() << "not refused; expected: " << says;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

ReTrainOptions options(const std::string& model, const std::string& run) {
  ReTrainOptions o;
  o.model = model;
  o.data = tiny_corpus();
  o.seed = 2;
  o.steps = 60;
  o.batch = 8;
  o.eval_batch = 6;
  o.eval_every = 20;
  o.lr = 3e-3f;
  o.l2 = 0.0f;
  o.max_tokens = 160;
  o.out = scratch() / run;
  return o;
}

struct Overfit {
  std::string model;
  int64_t steps;
};
class ReOverfit : public ::testing::TestWithParam<Overfit> {};

TEST_P(ReOverfit, ReachesRelationF1One) {
  ReTrainOptions o = options(
      GetParam().model, "overfit_" + std::to_string(std::hash<std::string>{}(GetParam().model)));
  o.steps = GetParam().steps;
  o.eval_every = GetParam().steps / 4;
  nlohmann::json r = train_re_model(o, nullptr);
  ASSERT_EQ(r["status"], "completed") << r.dump(2);
  EXPECT_EQ(r["test"]["relations"]["micro"]["f1"].get<double>(), 1.0) << r["test"].dump(2);
  // The best checkpoint on the training split too (the same documents here), and the
  // training sample's F1 in every metrics line (all six documents: fewer than 200).
  EXPECT_EQ(r["train"]["relations"]["micro"]["f1"].get<double>(), 1.0) << r["train"].dump(2);
  std::ifstream metrics(o.out / "metrics.jsonl");
  std::string last;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    ASSERT_TRUE(j.contains("train_f1")) << line;
    EXPECT_GE(j["train_f1"].get<double>(), 0.0);
    last = line;
  }
  const auto end = nlohmann::json::parse(last);
  EXPECT_EQ(end["train_f1"], end["valid_f1"]);  // train and valid are the same documents
  for (const char* f :
       {"manifest.json", "metrics.jsonl", "timing.json", "result.json", "checkpoint.bin"})
    EXPECT_TRUE(fs::exists(o.out / f)) << f;
  EXPECT_FALSE(fs::exists(o.out / "last.ckpt"));
  EXPECT_EQ(slurp(o.out / "result.json").find("seconds"), std::string::npos);
}

const std::string kTiny = "+d=16+heads=2+dropout=0+ner_prob=0";
INSTANTIATE_TEST_SUITE_P(
    Models, ReOverfit,
    ::testing::Values(Overfit{"cnn+d=16+pos_dim=4+char_dim=4+char_filters=8+filters=16+dropout=0",
                              240},
                      Overfit{"bran+iterations=1" + kTiny, 120},
                      // With L at zero (734efba) UTRE-CPD reached F1 0.96 at step 120 in
                      // CI's native build: the same F1 = 1 asked, a budget it meets.
                      Overfit{"UTRE-CPD+max_steps=2" + kTiny, 200},
                      Overfit{"NTCRE-CPD+max_steps=2+slots=4+read_heads=1" + kTiny, 400}),
    [](const ::testing::TestParamInfo<Overfit>& i) {
      return i.param.model.substr(0, i.param.model.find_first_of("+-"));
    });

TEST(ReTrain, SameSeedSameBytesAndResumeAfterAKill) {
  const std::string model = "UTRE-CPD+max_steps=2+d=8+heads=2+ner_prob=0.5";
  ReTrainOptions a = options(model, "det_a"), b = options(model, "det_b"),
                 c = options(model, "det_c");
  train_re_model(a, nullptr);
  train_re_model(b, nullptr);
  EXPECT_EQ(slurp(a.out / "result.json"), slurp(b.out / "result.json"));
  EXPECT_EQ(slurp(a.out / "metrics.jsonl"), slurp(b.out / "metrics.jsonl"));
  EXPECT_EQ(slurp(a.out / "checkpoint.bin"), slurp(b.out / "checkpoint.bin"));

  // Killed after the evaluation at step 40 wrote its metrics line, before its
  // last.ckpt: the run resumes from step 20's and must end with the same bytes.
  c.after_evaluation = [](int64_t step) {
    if (step == 40) throw std::runtime_error("killed");
  };
  EXPECT_THROW(train_re_model(c, nullptr), std::runtime_error);
  EXPECT_TRUE(fs::exists(c.out / "last.ckpt"));
  EXPECT_FALSE(fs::exists(c.out / "result.json"));
  // Resumed, not restarted: the finished steps are not taken again, so the first
  // evaluation of the resumed run is step 40's (a restart, which gives the same bytes
  // by determinism, would evaluate at 20 again).
  // It goes on at another thread count: the same bytes, but the thread count result.json
  // records, which is the resumed part's, as the manifest's last resumption says.
  std::vector<int64_t> evaluated;
  c.after_evaluation = [&](int64_t step) { evaluated.push_back(step); };
  const int threads_before = threads();
  const int threads_after = threads_before == 3 ? 2 : 3;
  set_threads(threads_after);
  nlohmann::json r = train_re_model(c, nullptr);
  set_threads(threads_before);
  EXPECT_EQ(evaluated, (std::vector<int64_t>{40, 60}));
  EXPECT_EQ(r["status"], "completed");
  nlohmann::json whole = nlohmann::json::parse(slurp(a.out / "result.json")),
                 resumed = nlohmann::json::parse(slurp(c.out / "result.json"));
  EXPECT_EQ(whole["threads"], threads_before);
  EXPECT_EQ(resumed["threads"], threads_after);
  resumed["threads"] = threads_before;
  EXPECT_EQ(whole, resumed);
  const nlohmann::json manifest = nlohmann::json::parse(slurp(c.out / "manifest.json"));
  EXPECT_EQ(manifest["threads"], threads_before);
  ASSERT_TRUE(manifest["resumed"].is_array() && manifest["resumed"].size() == 1) << manifest;
  EXPECT_EQ(manifest["resumed"][0]["threads"], threads_after);
  EXPECT_TRUE(manifest["resumed"][0].contains("date"));
  EXPECT_EQ(manifest["resumed"][0]["build"], manifest["build"]);
  EXPECT_EQ(slurp(a.out / "metrics.jsonl"), slurp(c.out / "metrics.jsonl"));
  EXPECT_EQ(slurp(a.out / "checkpoint.bin"), slurp(c.out / "checkpoint.bin"));
}

// --static-step: the halting loop to t_max under device masks; the same run, byte for
// byte (UTRE-CPD and NTCRE-CPD with its memories and their gate regulariser, halting
// early or not, NER steps among the RE ones); only the manifest says which step ran.
TEST(ReTrain, StaticStepTrainsTheSameBytes) {
  for (const std::string model : {"UTRE-CPD+max_steps=6+d=8+heads=2+ner_prob=0.5",
                                  "NTCRE-CPD+max_steps=6+d=8+heads=2+slots=4+read_heads=1"}) {
    const std::string tag = model.substr(0, 5);
    ReTrainOptions dynamic = options(model, "ss_dyn_" + tag),
                   fixed = options(model, "ss_static_" + tag);
    dynamic.steps = fixed.steps = 40;
    fixed.static_step = true;
    train_re_model(dynamic, nullptr);
    train_re_model(fixed, nullptr);
    for (const char* file : {"result.json", "metrics.jsonl", "checkpoint.bin", "last.ckpt"})
      EXPECT_EQ(slurp(dynamic.out / file), slurp(fixed.out / file)) << model << ": " << file;
    const nlohmann::json manifest = nlohmann::json::parse(slurp(fixed.out / "manifest.json"));
    EXPECT_EQ(manifest["step"], "static") << model;
    EXPECT_FALSE(nlohmann::json::parse(slurp(dynamic.out / "manifest.json")).contains("step"));
  }
}

// A time limit stops a run at an evaluation, with its last.ckpt; the same call
// continues it. Here the limit is past at once, so each call trains one window: three
// calls make the uninterrupted run's bytes.
TEST(ReTrain, TimeLimitPausesAtAnEvaluationAndTheSameCallContinues) {
  const std::string model = "UTRE-CPD+max_steps=2+d=8+heads=2+ner_prob=0.5";
  ReTrainOptions whole = options(model, "tl_whole"), part = options(model, "tl_part");
  train_re_model(whole, nullptr);
  part.time_limit = 1e-3;
  for (const int64_t step : {20, 40}) {
    const nlohmann::json r = train_re_model(part, nullptr);
    EXPECT_EQ(r["status"], "paused") << r;
    EXPECT_EQ(r["step"], step);
    EXPECT_TRUE(fs::exists(part.out / "last.ckpt"));
    EXPECT_FALSE(fs::exists(part.out / "result.json"));
  }
  const nlohmann::json r = train_re_model(part, nullptr);  // the last window ends the run
  EXPECT_EQ(r["status"], "completed");
  for (const char* file : {"result.json", "metrics.jsonl", "checkpoint.bin"})
    EXPECT_EQ(slurp(whole.out / file), slurp(part.out / file)) << file;
  const nlohmann::json manifest = nlohmann::json::parse(slurp(part.out / "manifest.json"));
  EXPECT_EQ(manifest["resumed"].size(), 2u);
  EXPECT_EQ(manifest["config"],
            nlohmann::json::parse(slurp(whole.out / "manifest.json"))["config"]);
}

TEST(ReTrain, DurationsAreParsedOrRefusedInWords) {
  EXPECT_DOUBLE_EQ(parse_duration("90", "x"), 90.0);
  EXPECT_DOUBLE_EQ(parse_duration("90s", "x"), 90.0);
  EXPECT_DOUBLE_EQ(parse_duration("10m", "x"), 600.0);
  EXPECT_DOUBLE_EQ(parse_duration("1.5h", "x"), 5400.0);
  for (const char* bad : {"", "m", "-5m", "0", "10 m", "ten", "5d", "inf", "nan"}) {
    try {
      parse_duration(bad, "--time-limit");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--time-limit: expected a duration such as 90, 90s, "
                                           "10m or 1.5h, got '" +
                                           std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

// --grad-norms: every metrics line also holds each reached parameter's mean gradient
// norm over its window; the training is the same bytes with or without it.
TEST(ReTrain, GradNormsAreADiagnosticOnly) {
  const std::string model = "UTRE-CPD+max_steps=2+d=8+heads=2+ner_prob=0.5";
  ReTrainOptions plain = options(model, "gn_plain"), traced = options(model, "gn_traced");
  plain.steps = traced.steps = 40;
  traced.grad_norms = true;
  train_re_model(plain, nullptr);
  train_re_model(traced, nullptr);
  EXPECT_EQ(slurp(plain.out / "result.json"), slurp(traced.out / "result.json"));
  EXPECT_EQ(slurp(plain.out / "checkpoint.bin"), slurp(traced.out / "checkpoint.bin"));
  std::ifstream a(plain.out / "metrics.jsonl"), b(traced.out / "metrics.jsonl");
  int lines = 0;
  for (std::string la, lb; std::getline(a, la) && std::getline(b, lb); ++lines) {
    nlohmann::json ja = nlohmann::json::parse(la), jb = nlohmann::json::parse(lb);
    ASSERT_TRUE(jb.contains("grad_norms")) << lb;
    const nlohmann::json norms = jb["grad_norms"];
    jb.erase("grad_norms");
    EXPECT_EQ(ja, jb);
    // The relation heads and the NER head are each reached by their task's steps
    // (ner_prob 0.5), the encoder by both; every norm is finite and positive.
    for (const char* name : {"biaffine.L", "ner.w", "embed.word.table", "halting.w"})
      EXPECT_TRUE(norms.contains(name)) << name << " " << norms.dump();
    for (const auto& [name, v] : norms.items()) {
      EXPECT_TRUE(std::isfinite(v.get<double>())) << name;
      EXPECT_GT(v.get<double>(), 0.0) << name;
    }
  }
  EXPECT_EQ(lines, 2);
}

// --null-margin tune changes decisions, not training: the same losses step by step as
// argmax; each metrics line has the margin chosen on validation and the argmax F1
// beside it; result.json scores train and test with the best checkpoint's margin.
TEST(ReTrain, TunedNullMarginDecidesAndDoesNotTrain) {
  const std::string model = "bran+iterations=1+d=8+heads=2+dropout=0+ner_prob=0";
  ReTrainOptions plain = options(model, "nm_plain"), tuned = options(model, "nm_tuned");
  plain.steps = tuned.steps = 40;
  tuned.null_margin = "tune";
  const nlohmann::json a = train_re_model(plain, nullptr), b = train_re_model(tuned, nullptr);
  EXPECT_FALSE(a.contains("null_margin"));
  ASSERT_TRUE(b.contains("null_margin")) << b.dump(2);
  EXPECT_EQ(b["null_margin"]["rule"], "tuned on validation");
  std::ifstream la(plain.out / "metrics.jsonl"), lb(tuned.out / "metrics.jsonl");
  int lines = 0;
  for (std::string x, y; std::getline(la, x) && std::getline(lb, y); ++lines) {
    const nlohmann::json ja = nlohmann::json::parse(x), jb = nlohmann::json::parse(y);
    EXPECT_EQ(ja["train_re_loss"], jb["train_re_loss"]);
    EXPECT_FALSE(ja.contains("valid_null_margin"));
    ASSERT_TRUE(jb.contains("valid_null_margin")) << y;
    EXPECT_EQ(jb["valid_argmax_f1"], ja["valid_f1"]);
    EXPECT_GE(jb["valid_f1"].get<double>(), jb["valid_argmax_f1"].get<double>());
  }
  EXPECT_EQ(lines, 2);
  // valid and test are the same documents here: the margin tuned on one scores the other.
  EXPECT_EQ(b["test"]["relations"]["micro"]["f1"], b["valid"]["relations"]["micro"]["f1"]);
  EXPECT_EQ(b["null_margin"]["test_argmax_f1"], b["null_margin"]["valid_argmax_f1"]);
  // A fixed margin far below every distance predicts a relation for every pair.
  ReTrainOptions fixed = options(model, "nm_fixed");
  fixed.steps = 20;
  fixed.null_margin = "-1e9";
  const nlohmann::json c = train_re_model(fixed, nullptr);
  EXPECT_EQ(c["null_margin"]["margin"].get<double>(), -1e9);
  EXPECT_EQ(c["test"]["relations"]["micro"]["recall"].get<double>(), 1.0);
  fixed.null_margin = "lots";
  fixed.out = scratch() / "nm_bad";
  expect_refused(fixed, "--null-margin lots: expected a number");
}

// The one grammar of --null-margin, a spec's null_margin and the trainer's option.
TEST(ReTrain, NullMarginGrammar) {
  ASSERT_TRUE(parse_null_margin("tune").has_value());
  EXPECT_TRUE(parse_null_margin("tune")->tune);
  EXPECT_TRUE(parse_null_margin("0")->is_argmax());
  EXPECT_EQ(parse_null_margin("-1e9")->margin, -1e9);
  EXPECT_EQ(parse_null_margin("2.5")->margin, 2.5);
  EXPECT_FALSE(parse_null_margin("2.5")->tune);
  // (Leading blanks are strtod's, as before the three copies became one: " 1" reads 1.)
  for (const char* bad : {"", "lots", "2x", "1 ", "nan", "inf", "1e999", "Tune"})
    EXPECT_FALSE(parse_null_margin(bad).has_value()) << "'" << bad << "'";
}

TEST(ReTrain, FinishedRunIsSkippedAndAnotherConfigurationRefused) {
  ReTrainOptions o = options("bran+iterations=1+d=8+heads=2", "skip");
  o.steps = 20;
  const nlohmann::json first = train_re_model(o, nullptr);
  const std::string bytes = slurp(o.out / "result.json");
  const auto stamp = fs::last_write_time(o.out / "result.json");
  EXPECT_EQ(train_re_model(o, nullptr), first);
  EXPECT_EQ(fs::last_write_time(o.out / "result.json"), stamp);
  ReTrainOptions other = o;
  // Options recorded only where they are not the default are compared too.
  other.batching = "balanced";
  expect_refused(other, "another configuration (batching: the default there, \"balanced\" now");
  other = o;
  other.grad_norms = true;
  expect_refused(other, "another configuration (grad_norms");
  other = o;
  other.lr = 1e-3f;
  expect_refused(other, "another configuration (lr");  // a finished run is not reused
  other.force = true;
  const nlohmann::json forced = train_re_model(other, nullptr);
  EXPECT_EQ(forced["status"], "completed");
  EXPECT_NE(slurp(o.out / "result.json"), bytes);  // lr differs, so do the weights
}

// A run is matched by the contents of its data, not by its path: a corpus generated again
// at the same path with another seed, an edited split, or another word2vec file under the
// same name is another run (refused, finished or started); the same contents again are
// the same run.
TEST(ReTrain, ARunIsMatchedByItsDataContentsNotItsPath) {
  const fs::path dir = scratch() / "regenerated";
  const auto generate = [&](uint64_t seed) {
    fs::remove_all(dir);
    data::GenerateOptions g;
    g.seed = seed;
    g.docs = 6;
    data::generate_synth_cdr(dir.string(), g);
  };
  generate(5);
  ReTrainOptions o = options("cnn+d=8+filters=8+char_filters=8", "by_contents");
  o.data = "pubtator:" + dir.string();
  o.steps = 20;
  const nlohmann::json first = train_re_model(o, nullptr);
  generate(5);  // the same bytes again: the finished run
  EXPECT_EQ(train_re_model(o, nullptr), first);
  generate(6);
  expect_refused(o, "holds a finished run of another configuration (data_sha256: ");
  {
    // A manifest from before the digest was recorded: matched by the path, as then.
    nlohmann::json manifest = nlohmann::json::parse(slurp(o.out / "manifest.json"));
    const nlohmann::json kept = manifest;
    manifest["config"].erase("data_sha256");
    std::ofstream(o.out / "manifest.json", std::ios::trunc) << manifest.dump(2);
    EXPECT_EQ(train_re_model(o, nullptr), first);
    std::ofstream(o.out / "manifest.json", std::ios::trunc) << kept.dump(2);
  }
  generate(5);
  {
    std::ofstream(dir / "test.pubtator", std::ios::app) << "\n";  // one byte more
  }
  expect_refused(o, "(data_sha256: ");

  // A started run: resumed on the same contents, refused on others (not by a tensor shape).
  generate(5);
  ReTrainOptions started = o;
  started.out = scratch() / "by_contents_started";
  started.after_evaluation = [](int64_t step) {
    if (step == 20) throw std::runtime_error("killed");  // after the checkpoint of step 10
  };
  started.eval_every = 10;
  started.steps = 30;
  EXPECT_THROW(train_re_model(started, nullptr), std::runtime_error);
  ASSERT_TRUE(fs::exists(started.out / "last.ckpt"));
  started.after_evaluation = nullptr;
  generate(6);
  expect_refused(started, "holds a started run of another configuration (data_sha256: ");

  // The word2vec file is read content too.
  generate(5);
  const fs::path vectors = scratch() / "vectors.txt";
  const auto write_vectors = [&](const char* value) {
    std::ofstream(vectors) << "1 8\nthe " << value << " 0 0 0 0 0 0 0\n";
  };
  write_vectors("0.5");
  ReTrainOptions w = o;
  w.out = scratch() / "by_contents_w2v";
  w.word2vec = vectors.string();
  w.force = false;
  const nlohmann::json with_vectors = train_re_model(w, nullptr);
  EXPECT_EQ(train_re_model(w, nullptr), with_vectors);
  write_vectors("0.25");
  expect_refused(w, "(data_sha256: ");
}

// A started (killed, unfinished) run of another configuration is refused too, and
// its state is left alone; --force starts it over.
TEST(ReTrain, AStartedRunOfAnotherConfigurationIsRefused) {
  ReTrainOptions o = options("bran+iterations=1+d=8+heads=2+ner_prob=0", "started");
  o.after_evaluation = [](int64_t step) {
    if (step == 40) throw std::runtime_error("killed");
  };
  EXPECT_THROW(train_re_model(o, nullptr), std::runtime_error);
  ASSERT_TRUE(fs::exists(o.out / "last.ckpt"));
  const std::string state = slurp(o.out / "last.ckpt");
  ReTrainOptions other = o;
  other.after_evaluation = nullptr;
  other.batch = 4;
  expect_refused(other, "holds a started run of another configuration (batch");
  EXPECT_EQ(slurp(o.out / "last.ckpt"), state);
  other.force = true;
  std::vector<int64_t> evaluated;
  other.after_evaluation = [&](int64_t step) { evaluated.push_back(step); };
  EXPECT_EQ(train_re_model(other, nullptr)["status"], "completed");
  EXPECT_EQ(evaluated, (std::vector<int64_t>{20, 40, 60}));  // from the start
}

// +multitask=sum trains RE and NER on every step (SPEC §4.2's alternative): in every
// evaluation window of 20 steps, 20 RE losses and 20 NER losses; one task a step
// (ner_prob 0.5) splits the 20 between them.
TEST(ReTrain, MultitaskSumTrainsBothTasksEveryStep) {
  auto lines_of = [](const fs::path& p) {
    std::vector<nlohmann::json> v;
    std::ifstream in(p);
    for (std::string l; std::getline(in, l);) v.push_back(nlohmann::json::parse(l));
    return v;
  };
  ReTrainOptions sum = options("bran+iterations=1+d=8+heads=2+multitask=sum", "mt_sum");
  ReTrainOptions one = options("bran+iterations=1+d=8+heads=2+ner_prob=0.5", "mt_one");
  train_re_model(sum, nullptr);
  train_re_model(one, nullptr);
  const auto s = lines_of(sum.out / "metrics.jsonl"), o = lines_of(one.out / "metrics.jsonl");
  ASSERT_EQ(s.size(), 3u);
  ASSERT_EQ(o.size(), 3u);
  for (const auto& line : s) {
    EXPECT_EQ(line["re_steps"], 20) << line.dump();
    EXPECT_EQ(line["ner_steps"], 20) << line.dump();
    EXPECT_GT(line["train_ner_loss"].get<double>(), 0.0) << line.dump();
  }
  for (const auto& line : o)
    EXPECT_EQ(line["re_steps"].get<int>() + line["ner_steps"].get<int>(), 20) << line.dump();
  EXPECT_EQ(nlohmann::json::parse(slurp(sum.out / "manifest.json"))["config"]["ner_trained"], true);
}

// --class-weights: auto weights the multiclass corpora (SemEval, CTD) and not CDR; on
// and off force it; the choice is recorded and changes the training (eq. 4-2).
TEST(ReTrain, ClassWeightsAutoOnOff) {
  auto weighted = [](const ReTrainOptions& o) {
    return nlohmann::json::parse(slurp(o.out / "manifest.json"))["config"]["class_weights"];
  };
  ReTrainOptions base = options("bran+iterations=1+d=8+heads=2+ner_prob=0", "cw_auto");
  base.steps = 20;
  // Balanced batches: a single-class batch (bran batching) has the same weighted and
  // unweighted mean loss, so only mixed batches show the weights.
  base.batching = "balanced";
  train_re_model(base, nullptr);
  EXPECT_EQ(weighted(base), false);  // CDR: binary, not weighted by default
  ReTrainOptions on = base, off = base;
  on.class_weights = "on";
  on.out = scratch() / "cw_on";
  off.class_weights = "off";
  off.out = scratch() / "cw_off";
  train_re_model(on, nullptr);
  train_re_model(off, nullptr);
  EXPECT_EQ(weighted(on), true);
  EXPECT_EQ(weighted(off), false);
  EXPECT_TRUE(slurp(off.out / "checkpoint.bin") == slurp(base.out / "checkpoint.bin"));
  EXPECT_TRUE(slurp(on.out / "checkpoint.bin") != slurp(base.out / "checkpoint.bin"));
  // SemEval (multiclass): auto weights it.
  const fs::path sem = scratch() / "semeval";
  data::generate_synth_semeval(sem.string(), {5, 6});
  ReTrainOptions s = base;
  s.data = "semeval:" + (sem / "subtask1.1").string();
  s.out = scratch() / "cw_semeval";
  s.steps = 2;
  s.eval_every = 2;
  train_re_model(s, nullptr);
  EXPECT_EQ(weighted(s), true);
}

// A corpus written by `mare data generate` (generate_corpus: generator.json beside its
// files) puts the generator's rule-based oracle beside every run on it; the same files
// without the marker are data like any other, with no oracle.
TEST(ReTrain, GeneratedCorporaPutTheirOracleBesideTheRun) {
  const fs::path ctd = scratch() / "ctd_marked", bare = scratch() / "ctd_bare";
  data::generate_corpus("synth-ctd", ctd.string(), {3, 6});
  fs::create_directories(bare);
  for (const char* f : {"train.tsv", "valid.tsv", "test.tsv"}) fs::copy_file(ctd / f, bare / f);
  auto references = [](const std::string& data, const std::string& run) {
    ReTrainOptions o = options("bran+iterations=1+d=8+heads=2+ner_prob=0", run);
    o.data = data;
    o.steps = 2;
    o.eval_every = 2;
    train_re_model(o, nullptr);
    return nlohmann::json::parse(slurp(o.out / "result.json"))["test_references"];
  };
  const nlohmann::json marked = references("bran-tsv:" + ctd.string(), "oracle_marked");
  ASSERT_TRUE(marked.contains("oracle_f1"));
  // The test split's oracle F1 that the generator wrote beside the corpus, to the bit.
  const nlohmann::json generator = nlohmann::json::parse(slurp(ctd / "generator.json"));
  EXPECT_EQ(marked["oracle_f1"], generator["oracle_f1"]["test"]) << generator.dump();
  EXPECT_GT(marked["oracle_f1"].get<double>(), 0.5);
  EXPECT_LE(marked["oracle_f1"].get<double>(), 1.0);
  EXPECT_FALSE(references("bran-tsv:" + bare.string(), "oracle_bare").contains("oracle_f1"));
}

// The static step reads its losses after the update instead of before backward: the
// same result.json for a run that diverges.
TEST(ReTrain, DivergenceIsRecordedWithItsStep) {
  std::string dynamic_result;
  for (const bool static_step : {false, true}) {
    ReTrainOptions o = options("UTRE-CPD+iterations=1+d=8+heads=2+ner_prob=0",
                               static_step ? "diverge_static" : "diverge");
    // A NaN step size makes every updated weight NaN, and the next loss NaN.
    o.lr = std::numeric_limits<float>::quiet_NaN();
    o.clip_norm = 0.0f;
    o.steps = 40;
    o.static_step = static_step;
    nlohmann::json r = train_re_model(o, nullptr);
    EXPECT_EQ(r["status"], "diverged") << r.dump(2);
    EXPECT_TRUE(r["diverged"].contains("step"));
    EXPECT_EQ(r["steps"].get<int64_t>(), 1);
    EXPECT_EQ(r["diverged"]["step"].get<int64_t>(), 1);
    EXPECT_FALSE(r.contains("test"));  // nothing is scored after a divergence
    ASSERT_TRUE(fs::exists(o.out / "result.json"));
    if (!static_step)
      dynamic_result = slurp(o.out / "result.json");
    else
      EXPECT_EQ(slurp(o.out / "result.json"), dynamic_result);
  }
}

TEST(ReTrain, BadConfigurationsAreRefusedClearly) {
  auto message = [](ReTrainOptions o) {
    try {
      train_re_model(o, nullptr);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  ReTrainOptions o = options("utre+bogus", "bad");
  EXPECT_NE(message(o).find("unknown switch 'bogus'"), std::string::npos);
  o.model = "utre+d=10+heads=4";
  EXPECT_NE(message(o).find("not divisible by heads"), std::string::npos);
  o.model = "mlp";
  EXPECT_NE(message(o).find("not a relation-extraction model"), std::string::npos);
  o.model = "bran";
  o.data = "synth-cdr:" + (scratch() / "no_such_dir").string();
  EXPECT_NE(message(o).find("no_such_dir"), std::string::npos);
  o.data = "conll:" + scratch().string();
  EXPECT_NE(message(o).find("conll"), std::string::npos);
  o.data = "";
  EXPECT_NE(message(o).find("--data"), std::string::npos);
  o.data = tiny_corpus();
  o.class_weights = "maybe";
  EXPECT_NE(message(o).find("--class-weights maybe: expected auto, on or off"), std::string::npos)
      << message(o);
}

// With a learning rate of 0 the validation F1 never improves: patience 2 stops the
// run after the third evaluation, and the best (first) checkpoint is what gets scored.
// The patience rule: at lr 0 every evaluation equals the first, so the run stops after
// exactly `patience` evaluations without improvement. (That its scores come from the best
// checkpoint needs weights that change: ResultsComeFromTheBestCheckpointNotTheLastWeights.)
TEST(ReTrain, EarlyStoppingAfterPatienceEvaluations) {
  ReTrainOptions o = options("bran+iterations=1+d=8+heads=2+ner_prob=0", "early");
  o.lr = 0.0f;
  o.steps = 100;
  o.eval_every = 10;
  o.patience = 2;
  const nlohmann::json r = train_re_model(o, nullptr);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["stopped_early"], true);
  EXPECT_EQ(r["steps"], 30);
  EXPECT_EQ(r["best_step"], 10);
  std::ifstream metrics(o.out / "metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) ++lines;
  EXPECT_EQ(lines, 3);
}

// train, valid and test are scored on the best-on-validation checkpoint, not on the
// last weights. With patience 1 the run stops at the first evaluation that does not
// improve, so its last weights are not its best; the NULL margin tuned on validation (a
// continuous function of the weights) tells the two apart where equal F1s cannot.
TEST(ReTrain, ResultsComeFromTheBestCheckpointNotTheLastWeights) {
  ReTrainOptions o = options("bran+iterations=1+d=8+heads=2+ner_prob=0", "best_reload");
  o.steps = 400;
  o.eval_every = 20;
  o.patience = 1;
  o.null_margin = "tune";
  const nlohmann::json r = train_re_model(o, nullptr);
  ASSERT_EQ(r["status"], "completed");
  ASSERT_EQ(r["stopped_early"], true)
      << "every evaluation improved: the test needs one that did not";
  const int best = r["best_step"].get<int>(), last = r["steps"].get<int>();
  ASSERT_LT(best, last);
  std::map<int, nlohmann::json> by_step;
  std::ifstream metrics(o.out / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    by_step[j["step"].get<int>()] = j;
  }
  ASSERT_TRUE(by_step.count(best) && by_step.count(last));
  const double margin = r["null_margin"]["margin"].get<double>();
  EXPECT_EQ(margin, by_step[best]["valid_null_margin"].get<double>());
  ASSERT_NE(by_step[best]["valid_null_margin"], by_step[last]["valid_null_margin"]);
  EXPECT_NE(margin, by_step[last]["valid_null_margin"].get<double>());
  EXPECT_EQ(r["valid"]["relations"]["micro"]["f1"], by_step[best]["valid_f1"]);
}

// SPEC §4.2: with NER trained (ner_prob > 0) the gold entity tags are not an input: the
// model has no entity-tag embedding at all. Without NER they are.
TEST(ReTrain, GoldEntityTagsAreAnInputOnlyWithoutNer) {
  for (const std::string family : {"bran+iterations=1", "UTRE-CPD+max_steps=2"}) {
    for (const double ner : {0.0, 0.5}) {
      ReTrainOptions o =
          options(family + "+d=8+heads=2+ner_prob=" + (ner > 0 ? "0.5" : "0"),
                  "tags_" + std::to_string(static_cast<int>(ner * 10)) + family.substr(0, 4));
      o.steps = 2;
      o.eval_every = 2;
      const nlohmann::json r = train_re_model(o, nullptr);
      ASSERT_EQ(r["status"], "completed");
      const auto manifest = nlohmann::json::parse(slurp(o.out / "manifest.json"));
      EXPECT_EQ(manifest["config"]["ner_trained"], ner > 0) << family;
      const bool has_tags =
          slurp(o.out / "checkpoint.bin").find("embed.entity_tag") != std::string::npos;
      EXPECT_EQ(has_tags, ner == 0) << family << " ner_prob " << ner;
    }
  }
}

// The manifest records the build a run came from: version, commit (12 hex digits, -dirty
// with uncommitted changes), build type, compiler and the libraries' versions; timing.json
// the steps' times.
TEST(ReTrain, ManifestRecordsTheBuildAndTimingTheSteps) {
  ReTrainOptions o = options("bran+iterations=1+d=8+heads=2+ner_prob=0", "manifest_build");
  o.steps = 1;
  o.eval_every = 1;
  ASSERT_EQ(train_re_model(o, nullptr)["status"], "completed");
  const auto b = nlohmann::json::parse(slurp(o.out / "manifest.json")).at("build");
  EXPECT_TRUE(std::regex_match(b.at("git_commit").get<std::string>(),
                               std::regex("([0-9a-f]{12}(-dirty)?)|unknown")))
      << b.dump();
  EXPECT_TRUE(std::regex_match(b.at("version").get<std::string>(), std::regex(R"(\d+\.\d+\.\d+)")));
  EXPECT_FALSE(b.at("build_type").get<std::string>().empty());
  EXPECT_TRUE(std::regex_match(b.at("compiler").get<std::string>(), std::regex(R"(\S+ [\d.]+)")));
  for (const char* lib : {"eigen", "cli11", "nlohmann_json"})
    EXPECT_TRUE(std::regex_match(b.at("libraries").at(lib).get<std::string>(),
                                 std::regex(R"(\d+(\.\d+)*)")))
        << lib;
  EXPECT_TRUE(b.at("cuda_compiled").is_boolean());
  // timing.json: this process's steps, its wall time, the mean per step and the quantiles
  // of the step times in order (the whole run's evaluations are in the wall time).
  o.out = scratch() / "manifest_build_timing";
  o.steps = 4;
  o.eval_every = 2;
  ASSERT_EQ(train_re_model(o, nullptr)["status"], "completed");
  const auto t = nlohmann::json::parse(slurp(o.out / "timing.json"));
  EXPECT_EQ(t.at("steps_this_process"), 4);
  const double wall = t.at("wall_seconds").get<double>();
  EXPECT_GT(wall, 0.0);
  EXPECT_NEAR(t.at("seconds_per_step").get<double>(), wall / 4, 1e-9 * wall);
  const auto& q = t.at("step_seconds_quantiles");
  double last = 0.0;
  for (const char* k : {"min", "p25", "median", "p75", "max"}) {
    EXPECT_GE(q.at(k).get<double>(), last) << k;
    last = q.at(k).get<double>();
  }
  EXPECT_GT(q.at("min").get<double>(), 0.0);
  EXPECT_LE(q.at("max").get<double>(), wall);
}

// metrics.jsonl's train_f1 sample: every document of a small split, at most 200 of a
// large one, evenly spaced from the first (gaps of n / 200 rounded down or up).
TEST(ReTrain, TheTrainingSampleIsAtMost200EvenlySpacedDocuments) {
  EXPECT_EQ(train_sample(6), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(train_sample(200).size(), 200u);
  const std::vector<int> s = train_sample(500);
  ASSERT_EQ(s.size(), 200u);
  EXPECT_EQ(s.front(), 0);
  EXPECT_EQ(s.back(), 497);
  for (std::size_t i = 1; i < s.size(); ++i) {
    EXPECT_GE(s[i] - s[i - 1], 2);
    EXPECT_LE(s[i] - s[i - 1], 3);
  }
  EXPECT_TRUE(train_sample(0).empty());
}

}  // namespace
}  // namespace mare
