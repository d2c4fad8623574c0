// Experiment specs (experiments/sweep/spec.h): expansion into cells and runs, stable
// ids, and the file:line message of every malformed spec.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "experiments/sweep/spec.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using mare::sweep::load_sweep;
using mare::sweep::RunPlan;
using mare::sweep::SpecError;
using mare::sweep::SweepPlan;

namespace {

std::string write_spec(const std::string& name, const std::string& text) {
  const fs::path p = mare::test::process_temp_dir() / name;
  std::ofstream(p) << text;
  return p.string();
}

// The message of the SpecError that loading the spec throws ("" when none).
std::string load_error(const std::string& name, const std::string& text,
                       const std::string& profile = "smoke") {
  const std::string path = write_spec(name, text);
  try {
    load_sweep(path, profile);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

const char* kProfiles = R"(profiles:
  smoke: {steps: 2}
  default: {}
  paper: ~
)";

std::string relation_spec(const std::string& body) {
  return "name: t\ntable: \"4.6\"\ncommand: train\n"
         "data: {generator: synth-cdr, seed: 1, docs: 8}\n" +
         body + kProfiles;
}

}  // namespace

TEST(SweepSpec, NamedGridTimesSeedsWithSwitchesAndProfileOverrides) {
  const std::string path =
      write_spec("grid.yaml", relation_spec("grid: table4.6\nmodels: [bran]\n"
                                            "switches: {d: 8, heads: 2, ner_prob: 0}\n"
                                            "steps: 300\neval_every: 100\nbatching: balanced\n"
                                            "seeds: {from: 1, to: 3}\n"));
  const SweepPlan plan = load_sweep(path, "smoke");
  EXPECT_EQ(plan.name, "t");
  EXPECT_EQ(plan.table, "4.6");
  EXPECT_EQ(plan.profile, "smoke");
  ASSERT_EQ(plan.runs.size(), 13u * 3u);  // 12 grid rows + bran, 3 seeds each
  // Cells in spec order, then seeds.
  EXPECT_EQ(plan.runs[0].cell, "config1");
  EXPECT_EQ(plan.runs[0].seed, 1);
  EXPECT_EQ(plan.runs[2].seed, 3);
  EXPECT_EQ(plan.runs[7 * 3].cell, "UTRE-CPD");
  EXPECT_EQ(plan.runs[12 * 3].cell, "bran");
  const RunPlan& r = plan.runs[1 * 3 + 1];  // row 2 = utre+cpd, seed 2
  EXPECT_EQ(r.cell, "config2");
  EXPECT_EQ(r.kind, "train");
  EXPECT_EQ(r.done_file, "result.json");
  EXPECT_EQ(r.params["model"], "utre+cpd+d=8+heads=2+ner_prob=0");
  EXPECT_EQ(r.params["cpd"], true);
  EXPECT_EQ(r.params["d"], 8);
  EXPECT_EQ(r.params["steps"], 2);  // smoke's override
  EXPECT_EQ(r.params["grid_row"], "2");
  EXPECT_EQ(r.params["data"], "synth-cdr");
  const std::vector<std::string> want{"train",
                                      "--model",
                                      "utre+cpd+d=8+heads=2+ner_prob=0",
                                      "--data",
                                      "synth-cdr:{root}/data/synth-cdr-seed1-docs8",
                                      "--seed",
                                      "2",
                                      "--eval-every",
                                      "100",
                                      "--steps",
                                      "2",
                                      "--batching",
                                      "balanced",
                                      "--out",
                                      "{run}"};
  EXPECT_EQ(r.command, want);
  EXPECT_EQ(r.dir, "config2/seed2-" + r.id.substr(0, 8));
  ASSERT_EQ(plan.data.size(), 1u);
  EXPECT_EQ(plan.data[0].dir, "data/synth-cdr-seed1-docs8");
  const std::vector<std::string> gen{"data",   "generate", "synth-cdr", "--out", "{out}",
                                     "--seed", "1",        "--docs",    "8"};
  EXPECT_EQ(plan.data[0].command, gen);
  // bran has no cpd: the switches it lacks do not apply, those it has do.
  EXPECT_EQ(plan.runs[12 * 3].params["model"], "bran+d=8+heads=2+ner_prob=0");

  // A NULL margin: tune, or a number written as the other numbers are.
  for (const auto& [given, written] : {std::pair{"tune", "tune"}, std::pair{"2.25", "2.25"}}) {
    const SweepPlan m = load_sweep(
        write_spec("margin.yaml", relation_spec(std::string("model: bran\nnull_margin: ") + given +
                                                "\nseeds: [1]\n")),
        "smoke");
    const std::vector<std::string>& c = m.runs.at(0).command;
    const auto at = std::find(c.begin(), c.end(), "--null-margin");
    ASSERT_NE(at, c.end());
    EXPECT_EQ(*(at + 1), written);
  }

  const SweepPlan paper = load_sweep(path, "paper");
  EXPECT_EQ(paper.runs[4].params["steps"], 300);
  EXPECT_NE(paper.runs[4].id, r.id);
}

TEST(SweepSpec, IdsAreStableDistinctAndIndependentOfKeyOrder) {
  const std::string a =
      write_spec("a.yaml", relation_spec("models: [bran, UTRE-CPD]\nswitches: {d: 8, heads: 2}\n"
                                         "steps: 5\nlr: 0.0005\nseeds: [1, 2]\n"));
  const std::string b =
      write_spec("b.yaml", relation_spec("lr: 5e-4\nseeds: [1, 2]\nsteps: 5\n"
                                         "switches: {heads: 2, d: 8}\nmodels: [bran, UTRE-CPD]\n"));
  const SweepPlan pa = load_sweep(a, "default");
  const SweepPlan pb = load_sweep(b, "default");
  const SweepPlan pa2 = load_sweep(a, "default");
  ASSERT_EQ(pa.runs.size(), 4u);
  std::set<std::string> ids, dirs;
  for (size_t i = 0; i < pa.runs.size(); ++i) {
    EXPECT_EQ(pa.runs[i].id, pb.runs[i].id);
    EXPECT_EQ(pa.runs[i].id, pa2.runs[i].id);
    EXPECT_EQ(pa.runs[i].id.size(), 16u);
    ids.insert(pa.runs[i].id);
    dirs.insert(pa.runs[i].dir);
  }
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(dirs.size(), 4u);
  // The id is FNV-1a 64 of the canonical {params, seed, command}: pinned, so that a
  // change of the hashing (which would orphan every finished run) fails here.
  const RunPlan& r = pa.runs[0];
  EXPECT_EQ(r.params["lr"], 0.0005);
  const nlohmann::json j = pa.run_json(r);
  EXPECT_EQ(j["spec"], a);
  EXPECT_EQ(j["sweep"], "t");
  EXPECT_EQ(j["table"], "4.6");
  EXPECT_EQ(j["profile"], "default");
  EXPECT_EQ(j["cell"], "bran");
  EXPECT_EQ(j["seed"], 1);
  EXPECT_EQ(j["id"], r.id);
  EXPECT_EQ(j["kind"], "train");
  EXPECT_EQ(j["command"], r.command);
  EXPECT_EQ(j["params"], r.params);
}

TEST(SweepSpec, GridAxesAreACartesianProductAndZipRunsInParallel) {
  const std::string path = write_spec("zip.yaml", R"(name: g
command: train
model: grpu
task: addition
epochs: 2
grid: {batch: [10, 100], lr: [0.001, 0.0001, 0.01]}
zip:
  cell: [plain, cur]
  curriculum: [false, true]
  samples: [20, 30]
seeds: [4, 7]
profiles: {smoke: {}, default: {}, paper: {}}
)");
  const SweepPlan plan = load_sweep(path, "smoke");
  ASSERT_EQ(plan.runs.size(), 2u * 3u * 2u * 2u);
  EXPECT_EQ(plan.runs[0].cell, "batch=10_lr=0.001_plain");
  EXPECT_EQ(plan.runs[2].cell, "batch=10_lr=0.001_cur");
  EXPECT_EQ(plan.runs[2].params["curriculum"], true);
  EXPECT_EQ(plan.runs[2].params["samples"], 30);
  EXPECT_EQ(plan.runs[4].cell, "batch=10_lr=0.0001_plain");
  EXPECT_EQ(plan.runs[12].cell, "batch=100_lr=0.001_plain");
  EXPECT_EQ(plan.runs[0].seed, 4);
  EXPECT_EQ(plan.runs[1].seed, 7);
  std::set<std::string> dirs;
  for (const RunPlan& r : plan.runs) dirs.insert(r.dir);
  EXPECT_EQ(dirs.size(), plan.runs.size());
  const std::vector<std::string> want{
      "train", "--model",   "grpu", "--task",       "addition", "--seed",
      "7",     "--epochs",  "2",    "--batch",      "10",       "--lr",
      "0.001", "--samples", "30",   "--curriculum", "--out",    "{run}"};
  EXPECT_EQ(plan.runs[3].command, want);
  EXPECT_TRUE(plan.data.empty());
}

// Cell names are kept as written or refused, never renamed in silence: names in any script
// are directory names as they are; a name with a byte no directory name takes, or none, is
// refused at its line; names made from values keep what a directory can hold, and two that
// meet are refused naming what each was made from.
TEST(SweepSpec, CellNamesAreKeptAsWrittenOrRefused) {
  const std::string zip = "name: g\ncommand: train\nmodel: grpu\ntask: addition\nzip:\n";
  const std::string tail = "seeds: [1]\nprofiles: {smoke: {}, default: {}, paper: {}}\n";
  const SweepPlan greek = load_sweep(
      write_spec("greek.yaml", zip + "  cell: [α, β]\n  batch: [10, 20]\n" + tail), "smoke");
  ASSERT_EQ(greek.runs.size(), 2u);
  EXPECT_EQ(greek.runs[0].cell, "α");
  EXPECT_EQ(greek.runs[1].cell, "β");
  EXPECT_EQ(greek.runs[1].dir.rfind("β/seed1-", 0), 0u) << greek.runs[1].dir;
  const SweepPlan umlaut = load_sweep(
      write_spec("umlaut.yaml", zip + "  cell: [grün, blau]\n  batch: [10, 20]\n" + tail), "smoke");
  EXPECT_EQ(umlaut.runs[0].cell, "grün");

  for (const auto& [cells, found] :
       std::vector<std::pair<std::string, std::string>>{{"[\"ü ✓\", b]", "found 'ü ✓'"},
                                                        {"[\"\", b]", "found ''"},
                                                        {"[a/b, b]", "found 'a/b'"},
                                                        {"[\"..\", b]", "found '..'"}}) {
    const std::string e =
        load_error("bad_cell.yaml", zip + "  cell: " + cells + "\n  batch: [10, 20]\n" + tail);
    EXPECT_NE(e.find("bad_cell.yaml:6: expected a cell name of ASCII letters and digits"),
              std::string::npos)
        << cells << ": " << e;
    EXPECT_NE(e.find(found), std::string::npos) << cells << ": " << e;
  }
  const std::string entry =
      load_error("bad_entry.yaml", relation_spec("models:\n  - {cell: \"x y\", model: bran}\n"
                                                 "seeds: [1]\n"));
  EXPECT_NE(entry.find("expected a cell name of"), std::string::npos) << entry;
  EXPECT_NE(entry.find("found 'x y'"), std::string::npos) << entry;

  // Made from values: '/' and ':' become '-', the rest is kept; a meeting is named.
  const SweepPlan made =
      load_sweep(write_spec("made.yaml",
                            "name: g\ncommand: train\nmodel: grpu\ntask: addition\n"
                            "grid: {curriculum: [true, false], lr: [0.001, 0.0001]}\n" +
                                tail),
                 "smoke");
  EXPECT_EQ(made.runs[0].cell, "curriculum=true_lr=0.001");
  const std::string met =
      load_error("met.yaml",
                 relation_spec("model: bran\ngrid:\n  word2vec: [\"a/b\", \"a:b\"]\nseeds: [1]\n"));
  EXPECT_NE(met.find("two cells are named 'word2vec=a-b' (made from 'word2vec=a/b' and "
                     "'word2vec=a:b')"),
            std::string::npos)
      << met;
}

TEST(SweepSpec, SeedRanges) {
  auto seeds_of = [](const std::string& name, const std::string& seeds) {
    const SweepPlan p = load_sweep(write_spec(name,
                                              "name: s\ncommand: train\nmodel: mlp\n"
                                              "task: xor\nseeds: " +
                                                  seeds +
                                                  "\nprofiles: {smoke: {}, default: {}, "
                                                  "paper: {}}\n"),
                                   "default");
    std::vector<int64_t> out;
    for (const RunPlan& r : p.runs) out.push_back(r.seed);
    return out;
  };
  EXPECT_EQ(seeds_of("s1.yaml", "{from: 1, to: 30}").size(), 30u);
  EXPECT_EQ(seeds_of("s2.yaml", "{from: 0, to: 0}"), std::vector<int64_t>{0});
  EXPECT_EQ(seeds_of("s3.yaml", "[3, 1, 2]"), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(seeds_of("s4.yaml", "5"), std::vector<int64_t>{5});
}

TEST(SweepSpec, BenchCommands) {
  const SweepPlan a = load_sweep(write_spec("alloc.yaml", R"(name: alloc
table: "4.14"
command: bench-allocation
seq: [1, 10]
mem: [4]
repetitions: 2
seeds: [1]
profiles: {smoke: {variants: [sorted, parallel]}, default: {}, paper: {}}
)"),
                                 "smoke");
  ASSERT_EQ(a.runs.size(), 1u);
  EXPECT_EQ(a.runs[0].kind, "bench");
  EXPECT_EQ(a.runs[0].done_file, "bench.json");
  EXPECT_EQ(a.runs[0].cell, "alloc");
  const std::vector<std::string> want{
      "bench",  "allocation",       "--seq", "1,10",           "--mem",
      "4",      "--repetitions",    "2",     "--variants",     "sorted,parallel",
      "--json", "{run}/bench.json", "--csv", "{run}/bench.csv"};
  // Options go in the option table's order (variants before seq).
  std::vector<std::string> got = a.runs[0].command;
  EXPECT_EQ(got.front(), "bench");
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()),
            std::set<std::string>(want.begin(), want.end()));
  EXPECT_EQ(got[got.size() - 4], "--json");

  const SweepPlan it = load_sweep(write_spec("iter.yaml", R"(name: iter
table: "4.15"
command: bench-iteration
models: [UTRE, NTCRE, UTRE-CPD, NTCRE-CPD]
shape: both
size: default
iterations: 3
seeds: [1]
profiles: {smoke: {shape: semeval, iterations: 1}, default: {}, paper: {size: paper}}
)"),
                                  "smoke");
  ASSERT_EQ(it.runs.size(), 1u);
  const std::vector<std::string> want_it{
      "bench",        "iteration", "--models", "UTRE,NTCRE,UTRE-CPD,NTCRE-CPD",
      "--shape",      "semeval",   "--size",   "default",
      "--iterations", "1",         "--json",   "{run}/bench.json"};
  EXPECT_EQ(it.runs[0].command, want_it);
  EXPECT_EQ(it.runs[0].params["models"], "UTRE,NTCRE,UTRE-CPD,NTCRE-CPD");
}

TEST(SweepSpec, DataPlaceholdersAndSubsets) {
  const SweepPlan p = load_sweep(write_spec("w2v.yaml", R"(name: w
command: train
models: [UTRE-CPD]
switches: {d: 50, heads: 5}
data: {generator: synth-semeval, seed: 2}
zip:
  cell: [random, word2vec]
  word2vec: [~, "{data}/vectors.bin"]
grid:
  data: [{subset: subtask1.1}, {subset: subtask1.2}]
steps: 3
seeds: [1]
profiles: {smoke: {}, default: {}, paper: {}}
)"),
                                 "smoke");
  ASSERT_EQ(p.runs.size(), 4u);
  EXPECT_EQ(p.runs[0].cell, "UTRE-CPD_subtask1.1_random");
  EXPECT_FALSE(p.runs[0].params.contains("word2vec"));
  EXPECT_EQ(p.runs[3].params["word2vec"], "{data}/vectors.bin");
  EXPECT_EQ(p.runs[3].params["data_subset"], "subtask1.2");
  const auto& cmd = p.runs[3].command;
  ASSERT_NE(std::find(cmd.begin(), cmd.end(), "--word2vec"), cmd.end());
  EXPECT_EQ(*(std::find(cmd.begin(), cmd.end(), "--word2vec") + 1),
            "{root}/data/synth-semeval-seed2/vectors.bin");
  EXPECT_EQ(*(std::find(cmd.begin(), cmd.end(), "--data") + 1),
            "semeval:{root}/data/synth-semeval-seed2/subtask1.2");
  ASSERT_EQ(p.data.size(), 1u);  // both subsets come from one generated corpus
}

// `false` turns a flag switch off (experiments/specs/README.md: `switches: {cpd: false}`):
// UTRE-CPD without its halting is UTRE.
TEST(SweepSpec, FalseTurnsAFlagSwitchOff) {
  const SweepPlan p = load_sweep(
      write_spec("flag_off.yaml", relation_spec("models: [UTRE-CPD]\nswitches: {cpd: false, d: 8, "
                                                "heads: 2}\nseeds: [1]\n")),
      "smoke");
  ASSERT_EQ(p.runs.size(), 1u);
  const auto& cmd = p.runs[0].command;
  const auto model = std::find(cmd.begin(), cmd.end(), "--model");
  ASSERT_NE(model, cmd.end());
  EXPECT_EQ((model + 1)->find("cpd"), std::string::npos) << *(model + 1);
  EXPECT_NE((model + 1)->find("utre"), std::string::npos) << *(model + 1);
}

// Every malformed spec is refused with "file:line: expected ...".
TEST(SweepSpec, BadSpecsNameFileLineAndWhatWasExpected) {
  struct Case {
    const char* name;
    std::string text;
    int line;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"unknown_key.yaml", relation_spec("models: [bran]\nstesp: 3\nseeds: [1]\n"), 6,
       "unknown key 'stesp' in the spec (expected one of: name, table"},
      {"unknown_model.yaml", relation_spec("models: [bran, utree]\nseeds: [1]\n"), 5,
       "unknown model 'utree'"},
      {"unknown_switch.yaml", relation_spec("models: [bran]\nswitches: {dd: 3}\nseeds: [1]\n"), 6,
       "unknown switch 'dd'"},
      {"bad_switch_value.yaml",
       relation_spec("models: [NTCRE-CPD]\nswitches:\n  alloc: fancy\nseeds: [1]\n"), 7,
       "alloc=fancy: expected one of sorted|parallel"},
      {"switch_out_of_range.yaml", relation_spec("models: [bran]\nswitches: {d: 0}\nseeds: [1]\n"),
       6, "switch d=0: expected a whole number from 1 to 1048576"},
      // Switches that build no model together (each alone is fine): refused at load,
      // at the switches: line, not run by run.
      {"switches_build_no_model.yaml",
       relation_spec("models: [bran]\nswitches: {d: 8, heads: 3}\nseeds: [1]\n"), 6,
       "d = 8 is not divisible by heads = 3; expected a divisor of d (1, 2, 4, 8)"},
      // A profile's switch that breaks the base's: at the profile's line, with each
      // switch's line named (it was the base's switches: line).
      {"profile_switch_builds_no_model.yaml",
       "name: t\ntable: \"4.6\"\ncommand: train\ndata: {generator: synth-cdr, seed: 1, docs: "
       "8}\nmodels: [bran]\nswitches: {d: 8, heads: 2}\nseeds: [1]\nprofiles:\n  smoke: "
       "{switches: {heads: 3}}\n  default: {}\n  paper: ~\n",
       9, "bad switches (d at line 6, heads at line 9)"},
      {"unknown_switch_in_grid.yaml",
       relation_spec("models: [bran]\ngrid:\n  switches: [{d: 8}, {depth: 2}]\nseeds: [1]\n"), 7,
       "unknown switch 'depth'"},
      {"switch_in_name.yaml", relation_spec("models: [utre+memory]\nseeds: [1]\n"), 5,
       "unknown switch 'memory'"},
      {"empty_grid.yaml", relation_spec("model: bran\ngrid: {}\nseeds: [1]\n"), 6, "empty grid"},
      {"empty_axis.yaml", relation_spec("model: bran\ngrid:\n  steps: []\nseeds: [1]\n"), 7,
       "empty grid"},
      {"unknown_grid.yaml", relation_spec("grid: table9.9\nseeds: [1]\n"), 5,
       "unknown grid 'table9.9'"},
      {"zip_lengths.yaml",
       relation_spec("model: bran\nzip:\n  steps: [1, 2]\n  lr: [0.1]\nseeds: [1]\n"), 8,
       "expected 2 values in zip column 'lr'"},
      {"seeds_reversed.yaml", relation_spec("model: bran\nseeds: {from: 5, to: 2}\n"), 6,
       "expected seeds.from <= seeds.to"},
      {"seeds_negative.yaml", relation_spec("model: bran\nseeds: [1, -2]\n"), 6,
       "expected seeds >= 0"},
      {"seeds_range_negative.yaml", relation_spec("model: bran\nseeds: {from: -1, to: 2}\n"), 6,
       "expected seeds.from >= 0"},
      {"seeds_twice.yaml", relation_spec("model: bran\nseeds: [1, 1]\n"), 6, "given twice"},
      {"wrong_type.yaml", relation_spec("model: bran\nsteps: many\nseeds: [1]\n"), 6,
       "expected an integer for steps, found 'many'"},
      {"wrong_choice.yaml", relation_spec("model: bran\nbatching: random\nseeds: [1]\n"), 6,
       "expected batching to be one of bran, balanced"},
      {"wrong_margin.yaml", relation_spec("model: bran\nnull_margin: lots\nseeds: [1]\n"), 6,
       "expected a number or tune for null_margin, found 'lots'"},
      {"margin_for_mlp.yaml",
       "name: t\ncommand: train\nmodel: mlp\ntask: xor\nnull_margin: tune\nseeds: [1]\n"
       "profiles:\n  smoke: {}\n  default: {}\n  paper: ~\n",
       5, "option 'null_margin' applies to relation models, not to cell"},
      {"wrong_scope.yaml", relation_spec("model: bran\nsamples: 3\nseeds: [1]\n"), 6,
       "option 'samples' applies to sequence models"},
      {"task_for_relation.yaml", relation_spec("model: bran\ntask: xor\nseeds: [1]\n"), 6,
       "expected data: instead of task:"},
      {"unknown_task.yaml",
       "name: t\ncommand: train\nmodel: grpu\ntask: adition\nseeds: [1]\n" + std::string(kProfiles),
       4, "expected a sequence task for model 'grpu' (one of: addition"},
      {"bad_generator.yaml",
       "name: t\ncommand: train\nmodel: bran\ndata: {generator: synth-xyz}\nseeds: [1]\n" +
           std::string(kProfiles),
       4, "unknown generator 'synth-xyz'"},
      {"unknown_profile.yaml",
       "name: t\ncommand: train\nmodel: mlp\ntask: xor\nseeds: [1]\nprofiles:\n  smoke: {}\n"
       "  default: {}\n  paper: {}\n  fast: {}\n",
       10, "unknown profile 'fast'"},
      {"missing_profile.yaml",
       "name: t\ncommand: train\nmodel: mlp\ntask: xor\nseeds: [1]\nprofiles:\n  smoke: {}\n"
       "  default: {}\n",
       6, "missing profile 'paper'"},
      {"bad_profile_key.yaml",
       "name: t\ncommand: train\nmodel: mlp\ntask: xor\nseeds: [1]\nprofiles:\n  smoke: {}\n"
       "  default: {}\n  paper:\n    epoch: 3\n",
       10, "unknown key 'epoch' in profile 'paper'"},
      {"bad_command.yaml", "name: t\ncommand: fit\n", 2, "expected command: train"},
      {"bad_yaml.yaml", "name: t\ncommand: train\nseeds: [1, 2\n", 4, "invalid YAML"},
      {"missing_seeds.yaml",
       "name: t\ncommand: train\nmodel: mlp\ntask: xor\n" + std::string(kProfiles), 1,
       "expected seeds:"},
      {"models_not_list.yaml", relation_spec("models: {bran: 1}\nseeds: [1]\n"), 5,
       "expected a list of models"},
      {"duplicate_cells.yaml", relation_spec("models: [bran, bran]\nseeds: [1]\n"), 1,
       "two cells are named 'bran'"},
      {"bench_unknown_key.yaml",
       "name: b\ncommand: bench-allocation\nsteps: 3\nseeds: [1]\n" + std::string(kProfiles), 3,
       "unknown key 'steps'"},
      {"bench_bad_variant.yaml",
       "name: b\ncommand: bench-allocation\nvariants: [sorted, quick]\nseeds: [1]\n"
       "profiles: {smoke: {}, default: {}, paper: {}}\n",
       3, "expected variants values among sorted"},
      {"duplicate_key.yaml", relation_spec("model: bran\nsteps: 3\nsteps: 4\nseeds: [1]\n"), 7,
       "given twice"},
      // A corpus too large to generate (it would run the machine out of memory).
      {"too_many_docs.yaml",
       "name: t\ncommand: train\ndata: {generator: synth-cdr, seed: 1, docs: 100001}\n"
       "model: bran\nseeds: [1]\n" +
           std::string(kProfiles),
       3, "expected docs from 1 to 100000, found 100001"},
      // A corpus that is not there (every run failed one by one, after a clean --dry-run).
      {"missing_corpus.yaml",
       "name: t\ncommand: train\ndata: pubtator:/nonexistent/cdr\nmodel: bran\nseeds: [1]\n" +
           std::string(kProfiles),
       3, "data pubtator:/nonexistent/cdr: /nonexistent/cdr does not exist"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string msg = load_error(c.name, c.text);
    const std::string where =
        (mare::test::process_temp_dir() / c.name).string() + ":" + std::to_string(c.line) + ": ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
  // A profile that is not smoke, default or paper.
  const std::string msg = load_error("ok.yaml", relation_spec("model: bran\nseeds: [1]\n"), "fast");
  EXPECT_NE(msg.find("unknown profile 'fast' (expected smoke, default, paper or gpu)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(load_error("ok2.yaml", relation_spec("model: bran\nseeds: [1]\n")), "");
  // gpu is optional: a spec without it loads at the other profiles and names what it has.
  const std::string gpu =
      load_error("nogpu.yaml", relation_spec("model: bran\nseeds: [1]\n"), "gpu");
  EXPECT_NE(gpu.find("this spec has no 'gpu' profile (it defines smoke, default and paper)"),
            std::string::npos)
      << gpu;
}

// A gpu profile is checked like the others, on every load.
TEST(SweepSpec, AGpuProfileIsCheckedOnEveryLoad) {
  const std::string text =
      "name: t\ncommand: train\nmodel: mlp\ntask: xor\nseeds: [1]\nprofiles:\n  smoke: {}\n"
      "  default: {}\n  paper: {}\n  gpu: {device: cuda, epochs: 0}\n";
  const std::string msg = load_error("gpu_bad.yaml", text);
  EXPECT_NE(msg.find(":10: expected epochs >= 1"), std::string::npos) << msg;
}

// A mistake in the paper profile is found when the smoke profile is loaded.
TEST(SweepSpec, EveryProfileIsCheckedOnEveryLoad) {
  const std::string msg = load_error(
      "paper_bad.yaml",
      "name: t\ncommand: train\nmodel: mlp\ntask: xor\nseeds: [1]\nprofiles:\n  smoke: {}\n"
      "  default: {}\n  paper: {epochs: 0}\n");
  EXPECT_NE(msg.find(":9: expected epochs >= 1"), std::string::npos) << msg;
}
