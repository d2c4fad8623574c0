// The committed specs (experiments/specs/*.yaml) and the committed GRPU runs
// (reports/grpu/runs/, laid out as experiments/specs/table5.1.yaml's paper profile
// plans them, so that `mare sweep` sees them as done).
//
// The GRPU runs were moved from reproduce.sh's `<row>/seed<k>` layout by the disabled
// test GrpuRuns.DISABLED_Migrate; when a change of the spec or of the id rule moves
// the planned directories, GrpuRuns.MatchTheTable51PaperPlan fails, and
//   test_sweep_spec --gtest_also_run_disabled_tests --gtest_filter=GrpuRuns.DISABLED_Migrate
// moves them again (then `git add -A reports/grpu/runs`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "experiments/sweep/spec.h"

#ifndef MARE_SOURCE_DIR_DEFAULT
#define MARE_SOURCE_DIR_DEFAULT "."
#endif

namespace fs = std::filesystem;
using mare::sweep::load_sweep;
using mare::sweep::RunPlan;
using mare::sweep::SweepPlan;

namespace {

fs::path source_dir() {
  const char* env = std::getenv("MARE_SOURCE_DIR");
  return env ? env : MARE_SOURCE_DIR_DEFAULT;
}

std::vector<fs::path> committed_specs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(source_dir() / "experiments" / "specs"))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return nlohmann::json::parse(in);
}

void write_json(const fs::path& p, const nlohmann::json& j) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << j.dump(2) << "\n";
  fs::rename(tmp, p);
}

// reproduce.sh ran the spec's command from the repository root.
const char* kTable51 = "experiments/specs/table5.1.yaml";

SweepPlan table51_paper() {
  SweepPlan plan = load_sweep((source_dir() / kTable51).string(), "paper");
  plan.spec_path = kTable51;
  return plan;
}

}  // namespace

// Every table of the thesis that the harness regenerates has a spec.
TEST(CommittedSpecs, OneSpecPerTable) {
  std::set<std::string> tables;
  for (const fs::path& p : committed_specs()) tables.insert(load_sweep(p.string(), "smoke").table);
  for (const char* t : {"4.5", "4.6", "4.10", "4.12", "4.13", "4.14", "4.15", "5.1"})
    EXPECT_TRUE(tables.count(t)) << "no spec regenerates table " << t;
}

TEST(CommittedSpecs, LoadAtEveryProfileWithUniqueDirsAndIds) {
  const std::vector<fs::path> specs = committed_specs();
  ASSERT_GE(specs.size(), 8u);
  for (const fs::path& p : specs)
    for (const std::string& profile : mare::sweep::profiles()) {
      SCOPED_TRACE(p.string() + " " + profile);
      if (profile == "gpu" && p.stem() == "table5.1") continue;  // defines none (its header)
      const SweepPlan plan = load_sweep(p.string(), profile);
      EXPECT_EQ(plan.name, p.stem().string()) << "a spec is named as its file";
      EXPECT_FALSE(plan.runs.empty());
      std::set<std::string> dirs, ids;
      for (const RunPlan& r : plan.runs) {
        EXPECT_TRUE(dirs.insert(r.dir).second) << r.dir;
        EXPECT_TRUE(ids.insert(r.id).second) << r.id;
        // The command writes into the run directory: --out {run}, or --json {run}/bench.json.
        const auto out =
            std::find(r.command.begin(), r.command.end(), r.kind == "train" ? "--out" : "--json");
        ASSERT_NE(out, r.command.end());
        ASSERT_NE(out + 1, r.command.end());
        EXPECT_EQ(*(out + 1), r.kind == "train" ? "{run}" : "{run}/bench.json");
      }
    }
}

// reports/learning/'s specs and their committed runs (README there): each spec loads at
// every profile it defines, and every run its default profile plans is finished in the
// committed folder, where the plan puts it. A change of a spec or of the id rule that
// moves the plan away from the committed runs shows here, not in a reader's `mare sweep`
// that silently trains them again.
// Every spec there loads; ctd-gpu.yaml's runs are its gpu profile's.
TEST(LearningSpecs, CommittedRunsAreWhereTheirPlanPutsThem) {
  const fs::path learning = source_dir() / "reports" / "learning";
  int specs = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(learning)) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().filename().string());
    ++specs;
    for (const char* profile : {"smoke", "default", "paper"})
      EXPECT_FALSE(load_sweep(e.path().string(), profile).runs.empty()) << profile;
  }
  EXPECT_GE(specs, 9);
  struct Committed {
    const char *spec, *runs, *profile;
  };
  for (const auto& [spec, runs, profile] :
       {Committed{"curves.yaml", "runs", "default"}, Committed{"ctd.yaml", "ctd-runs", "default"},
        Committed{"ctd-long.yaml", "ctd-long-runs", "default"},
        Committed{"ctd-margin.yaml", "ctd-margin-runs", "default"},
        Committed{"ctd-gpu.yaml", "ctd-gpu-runs", "gpu"},
        Committed{"semeval.yaml", "semeval-runs", "default"},
        Committed{"semeval-emb.yaml", "semeval-emb-runs", "default"},
        Committed{"real-cdr.yaml", "real-cdr-runs", "default"},
        Committed{"real-semeval.yaml", "real-semeval-runs", "default"}}) {
    SCOPED_TRACE(spec);
    const SweepPlan plan = load_sweep((learning / spec).string(), profile);
    for (const RunPlan& r : plan.runs)
      EXPECT_TRUE(fs::exists(learning / runs / r.dir / r.done_file)) << r.dir;
  }
}

// The sizes each profile promises: smoke is 2 seeds everywhere (1 for benchmarks), the
// paper profile has the thesis's repetitions.
// experiments/specs/README.md names every option a spec of each command takes: the keys
// that the loader's own "unknown key" message lists for a train, bench-allocation and
// bench-iteration spec (a key the loader takes and the README does not name, such as
// null_margin once, fails here).
TEST(CommittedSpecs, TheSpecsReadmeNamesEveryOption) {
  std::ifstream in(source_dir() / "experiments" / "specs" / "README.md");
  ASSERT_TRUE(in) << "experiments/specs/README.md";
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* spec : {"table4.6.yaml", "table4.14.yaml", "table4.15.yaml"}) {
    std::ifstream s(source_dir() / "experiments" / "specs" / spec);
    const std::string text((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    const fs::path bad = fs::temp_directory_path() / (std::string("mare_readme_keys_") + spec);
    std::ofstream(bad) << "no_such_key: 1\n" << text;
    std::string message;
    try {
      load_sweep(bad.string(), "smoke");
    } catch (const std::exception& e) {
      message = e.what();
    }
    fs::remove(bad);
    const std::string open = "(expected one of: ";
    const size_t at = message.find(open), end = message.find(')', at);
    ASSERT_NE(at, std::string::npos) << spec << ": " << message;
    std::stringstream keys(message.substr(at + open.size(), end - at - open.size()));
    int checked = 0;
    for (std::string key; std::getline(keys, key, ',');) {
      key.erase(0, key.find_first_not_of(' '));
      const std::regex word("(^|[^a-z_])" + key + "([^a-z_]|$)");
      EXPECT_TRUE(std::regex_search(readme, word))
          << "experiments/specs/README.md does not name '" << key << "' (" << spec << ")";
      ++checked;
    }
    EXPECT_GT(checked, 10) << spec << ": " << message;
  }
}

TEST(CommittedSpecs, ProfileSizes) {
  const fs::path dir = source_dir() / "experiments" / "specs";
  auto runs = [&](const std::string& spec, const std::string& profile) {
    return load_sweep((dir / spec).string(), profile).runs.size();
  };
  EXPECT_EQ(runs("table4.6.yaml", "paper"), 13u * 30u);  // 12 grid rows + BRAN, 30 seeds
  EXPECT_EQ(runs("table4.6.yaml", "smoke"), 13u * 2u);
  EXPECT_EQ(runs("table4.10.yaml", "paper"), 2u * 10u);
  EXPECT_EQ(runs("table4.12.yaml", "paper"), 4u * 10u);
  // random initialisation only on the real corpus: 2 models x 2 subtasks
  EXPECT_EQ(runs("table4.13.yaml", "paper"), 4u * 10u);
  EXPECT_EQ(runs("table5.1.yaml", "paper"), 7u * 3u);
  EXPECT_EQ(runs("table5.1.yaml", "smoke"), 7u * 2u);
  EXPECT_EQ(runs("table4.14.yaml", "default"), 1u);
  EXPECT_EQ(runs("table4.15.yaml", "default"), 1u);
}

// The gpu profile: the paper's runs, each on the GPU; every spec but the
// GRPU's defines it.
TEST(CommittedSpecs, GpuProfilesAreThePaperRunsOnTheGpu) {
  for (const fs::path& p : committed_specs()) {
    SCOPED_TRACE(p.string());
    if (p.stem() == "table5.1") {
      EXPECT_THROW(load_sweep(p.string(), "gpu"), mare::sweep::SpecError);
      continue;
    }
    const SweepPlan paper = load_sweep(p.string(), "paper"), gpu = load_sweep(p.string(), "gpu");
    ASSERT_EQ(gpu.runs.size(), paper.runs.size());
    for (size_t i = 0; i < gpu.runs.size(); ++i) {
      std::vector<std::string> want = paper.runs[i].command;
      const auto out =
          std::find(want.begin(), want.end(), paper.runs[i].kind == "train" ? "--out" : "--json");
      want.insert(out, {"--device", "cuda"});
      EXPECT_EQ(gpu.runs[i].command, want) << gpu.runs[i].cell;
      EXPECT_EQ(gpu.runs[i].cell, paper.runs[i].cell);
      EXPECT_EQ(gpu.runs[i].seed, paper.runs[i].seed);
    }
  }
}

// The paper profile of table5.1 is reproduce.sh's loop: same rows, same options.
TEST(GrpuRuns, Table51PaperIsReproduceSh) {
  const SweepPlan plan = table51_paper();
  ASSERT_EQ(plan.runs.size(), 21u);
  const RunPlan& r = plan.runs[4 * 3 + 1];  // r4_grpu_b10_cur, seed 2
  EXPECT_EQ(r.cell, "r4_grpu_b10_cur");
  const std::vector<std::string> want{
      "train", "--model",      "grpu+prod",    "--task",  "addition", "--seed",
      "2",     "--epochs",     "1000",         "--batch", "10",       "--samples",
      "1000",  "--curriculum", "--eval-every", "10",      "--out",    "{run}"};
  EXPECT_EQ(r.command, want);
}

TEST(GrpuRuns, MatchTheTable51PaperPlan) {
  const SweepPlan plan = table51_paper();
  const fs::path root = source_dir() / "reports" / "grpu" / "runs";
  for (const RunPlan& r : plan.runs) {
    SCOPED_TRACE(r.dir);
    const fs::path dir = root / r.dir;
    ASSERT_TRUE(fs::is_directory(dir)) << "missing; see this file's header to migrate";
    EXPECT_EQ(read_json(dir / "run.json"), plan.run_json(r));
    const nlohmann::json result = read_json(dir / "result.json");
    EXPECT_EQ(result["status"], "completed");
    EXPECT_EQ(result["seed"], r.seed);
    EXPECT_EQ(result["model"], r.params["model"]);
    EXPECT_EQ(result["epochs"], 1000);
    const nlohmann::json status = read_json(dir / "status.json");
    EXPECT_EQ(status["status"], result["status"]);
    // The run's own record of its configuration agrees with the plan.
    const nlohmann::json config = read_json(dir / "manifest.json")["config"];
    EXPECT_EQ(config["task"], r.params["task"]);
    EXPECT_EQ(config["batch"], r.params["batch"]);
    EXPECT_EQ(config["samples"], r.params["samples"]);
    EXPECT_EQ(config["curriculum"], r.params["curriculum"]);
    EXPECT_EQ(config["eval_every"], r.params["eval_every"]);
  }
  // Nothing else: no run directory the plan does not know.
  std::set<std::string> planned;
  for (const RunPlan& r : plan.runs) planned.insert(r.dir);
  for (const auto& cell : fs::directory_iterator(root)) {
    if (!cell.is_directory()) continue;
    for (const auto& run : fs::directory_iterator(cell.path())) {
      const std::string rel =
          cell.path().filename().string() + "/" + run.path().filename().string();
      EXPECT_TRUE(planned.count(rel)) << "unplanned run directory " << rel;
    }
  }
}

// Moves reports/grpu/runs/<cell>/seed<k> (reproduce.sh's layout) or a run directory
// of an earlier plan (<cell>/seed<k>-<other id>) to the plan's directory, and writes
// run.json and status.json (status from result.json, wall time from timing.json).
TEST(GrpuRuns, DISABLED_Migrate) {
  const SweepPlan plan = table51_paper();
  const fs::path root = source_dir() / "reports" / "grpu" / "runs";
  for (const RunPlan& r : plan.runs) {
    const fs::path dst = root / r.dir;
    if (!fs::exists(dst)) {
      const std::string prefix = "seed" + std::to_string(r.seed);
      fs::path src;
      for (const auto& e : fs::directory_iterator(root / r.cell)) {
        const std::string n = e.path().filename().string();
        if (n == prefix || n.rfind(prefix + "-", 0) == 0) src = e.path();
      }
      ASSERT_FALSE(src.empty()) << "no run of " << r.cell << " seed " << r.seed;
      fs::rename(src, dst);
    }
    write_json(dst / "run.json", plan.run_json(r));
    const nlohmann::json result = read_json(dst / "result.json");
    const nlohmann::json timing = read_json(dst / "timing.json");
    write_json(dst / "status.json", {{"status", result["status"]},
                                     {"exit_code", 0},
                                     {"signal", nullptr},
                                     {"wall_s", timing["wall_seconds"]},
                                     {"attempt", 1},
                                     {"stderr_tail", ""}});
  }
}
