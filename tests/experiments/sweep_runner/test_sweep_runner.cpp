// The sweep runner (experiments/sweep/runner.h) end to end: every sweep here is a real
// `mare sweep` process whose runs are `mare train` children. The plans are sweep.json
// files written from C++ (tiny GRPU and xor runs of a fraction of a second), so that a
// test can also hold runs a spec would refuse (a bad option, a learning rate that diverges).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/run_lifecycle.h"
#include "experiments/sweep/runner.h"
#include "tests/cli_binary.h"
#include "tests/temp_dir.h"

namespace mare::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json read_json(const fs::path& p) {
  return json::parse(slurp(p));
}

// The first line of a JSON-lines file.
json read_json_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return json::parse(line);
}

int64_t lines(const fs::path& p) {
  std::ifstream in(p);
  int64_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

std::string hex16(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

RunPlan make_run(const std::string& cell, int64_t seed, std::vector<std::string> command) {
  RunPlan r;
  r.cell = cell;
  r.seed = seed;
  r.id = hex16(cell + "/" + std::to_string(seed));
  r.dir = cell + "/seed" + std::to_string(seed) + "-" + r.id.substr(0, 8);
  r.kind = "train";
  r.params = {{"cell", cell}};
  r.command = std::move(command);
  r.done_file = "result.json";
  return r;
}

RunPlan grpu_run(const std::string& cell, int hidden, int64_t seed, int epochs) {
  return make_run(cell, seed,
                  {"train", "--model", "grpu+hidden=" + std::to_string(hidden), "--task",
                   "addition", "--seed", std::to_string(seed), "--epochs", std::to_string(epochs),
                   "--samples", "20", "--test-samples", "10", "--batch", "10", "--out", "{run}"});
}

RunPlan xor_run(const std::string& cell, int64_t seed, std::vector<std::string> extra = {}) {
  std::vector<std::string> c = {
      "train", "--model", "mlp", "--task", "xor", "--seed", std::to_string(seed), "--epochs", "3"};
  c.insert(c.end(), extra.begin(), extra.end());
  c.push_back("--out");
  c.push_back("{run}");
  return make_run(cell, seed, c);
}

SweepPlan make_plan(const std::string& name, std::vector<RunPlan> runs) {
  SweepPlan p;
  p.spec_path = name + ".yaml";
  p.name = name;
  p.table = "";
  p.profile = "smoke";
  p.runs = std::move(runs);
  return p;
}

fs::path write_plan(const fs::path& dir, const SweepPlan& plan) {
  fs::create_directories(dir);
  fs::path p = dir / (plan.name + ".json");
  std::ofstream(p) << plan_json(plan).dump(2);
  return p;
}

// A `mare` process with stdout and stderr to `log`.
pid_t spawn_mare(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> a = {::mare::test::cli_binary()};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "a", stdout);
    if (f) ::dup2(::fileno(stdout), 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Exit status as a shell reports it: the code, or 128 + the signal.
int wait_exit(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_mare(const std::vector<std::string>& args, const fs::path& log) {
  return wait_exit(spawn_mare(args, log));
}

// Waits up to `seconds` for a condition.
template <class F>
bool eventually(F f, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

// Processes whose command line mentions `text` (leftover runs of a killed sweep).
std::vector<std::string> processes_mentioning(const std::string& text) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = slurp(e.path() / "cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(text) != std::string::npos) found.push_back(name + ": " + cmd);
  }
  return found;
}

std::string status_of(const fs::path& run) {
  return read_json(run / "status.json")["status"];
}

// ---- shards -------------------------------------------------------------------

TEST(SweepShards, DisjointAndTheirUnionIsTheSweep) {
  for (size_t runs : {0u, 1u, 7u, 20u})
    for (int n = 1; n <= 8; ++n) {
      std::vector<int> owner(runs, 0);
      for (int i = 1; i <= n; ++i)
        for (size_t k : shard_runs(runs, {i, n})) {
          ASSERT_LT(k, runs);
          EXPECT_EQ(owner[k], 0) << "run " << k << " in shards " << owner[k] << " and " << i;
          owner[k] = i;
        }
      for (size_t k = 0; k < runs; ++k) EXPECT_NE(owner[k], 0) << "run " << k << " of " << n;
    }
  EXPECT_EQ(shard_runs(7, {2, 3}), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(parse_shard("3/8").index, 3);
  EXPECT_EQ(parse_shard("3/8").count, 8);
  for (const char* bad : {"0/3", "4/3", "3", "a/b", "1/0", "-1/3", "/3", "1/"})
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
}

TEST(SweepShards, ConcurrentShardsRunEachRunOnceAndShareTheData) {
  const test::TempDir t("sweep_shards");
  std::vector<RunPlan> runs;
  for (int s = 1; s <= 7; ++s) runs.push_back(xor_run("x", s));
  SweepPlan plan = make_plan("shards", runs);
  // Data no run names: every shard generates it, at the same time; the renames race.
  DataNeed need;
  need.generator = "synth-cdr";
  need.seed = 3;
  need.docs = 4;
  need.dir = "data/synth-cdr-seed3-docs4";
  need.command = {"data", "generate", "synth-cdr", "--docs", "4", "--seed", "3", "--out", "{out}"};
  plan.data.push_back(need);
  const fs::path spec = write_plan(t / "spec", plan);
  const fs::path root = t / "root";
  std::vector<pid_t> pids;
  for (int i = 1; i <= 3; ++i)
    pids.push_back(spawn_mare(
        {"sweep", spec.string(), "--out", root.string(), "--shard", std::to_string(i) + "/3"},
        t / ("shard" + std::to_string(i) + ".log")));
  for (size_t i = 0; i < pids.size(); ++i)
    EXPECT_EQ(wait_exit(pids[i]), 0) << slurp(t / ("shard" + std::to_string(i + 1) + ".log"));
  for (size_t k = 0; k < runs.size(); ++k) {
    const fs::path dir = root / runs[k].dir;
    ASSERT_TRUE(fs::exists(dir / "status.json")) << dir;
    EXPECT_EQ(status_of(dir), "completed");
    EXPECT_EQ(lines(dir / "attempts.jsonl"), 1) << dir;
    EXPECT_EQ(read_json(dir / "attempts.jsonl")["shard"], std::to_string(k % 3 + 1) + "/3");
    EXPECT_EQ(read_json(dir / "run.json")["id"], runs[k].id);
  }
  for (const char* f : {"train.pubtator", "valid.pubtator", "test.pubtator"})
    EXPECT_TRUE(fs::exists(root / need.dir / f)) << f;
  for (const auto& e : fs::directory_iterator(root / "data"))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // The same data as one generation alone.
  ASSERT_EQ(run_mare({"data", "generate", "synth-cdr", "--docs", "4", "--seed", "3", "--out",
                      (t / "alone").string()},
                     t / "alone.log"),
            0);
  EXPECT_EQ(slurp(root / need.dir / "train.pubtator"), slurp(t / "alone" / "train.pubtator"));
  EXPECT_EQ(read_json(root / "sweep.json"), plan_json(plan));

  // A shard's dry run lists its runs only, all done.
  const fs::path dry = t / "dry.log";
  ASSERT_EQ(
      run_mare({"sweep", spec.string(), "--out", root.string(), "--shard", "2/3", "--dry-run"},
               dry),
      0);
  const std::string listing = slurp(dry);
  for (size_t k = 0; k < runs.size(); ++k)
    EXPECT_EQ(listing.find(runs[k].dir) != std::string::npos, k % 3 == 1) << listing;
  EXPECT_NE(listing.find("\tdone\t"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("\ttodo\t"), std::string::npos) << listing;
}

// ---- the kill test ------------------------------------------------------------

// SIGKILL at seeded random times, at least 20 times, resuming each time: every run ends
// once, with the same result.json, metrics.jsonl and checkpoint.bin bytes as an
// uninterrupted sweep, and no run of a killed sweep lives on.
TEST(SweepKill, KilledAtRandomTimesResumesToTheSameBytes) {
  const test::TempDir t("sweep_kill");
  constexpr int kEpochs = 120;
  std::vector<RunPlan> runs;
  for (int s = 1; s <= 3; ++s) runs.push_back(grpu_run("h6", 6, s, kEpochs));
  for (int s = 1; s <= 3; ++s) runs.push_back(grpu_run("h4", 4, s, kEpochs));
  const SweepPlan plan = make_plan("kill", runs);
  const fs::path spec = write_plan(t / "spec", plan);
  const fs::path ref = t / "ref";
  fs::path killed;
  const std::vector<std::string> common = {"sweep", spec.string(), "--jobs", "2", "--out"};
  auto args = [&](const fs::path& root) {
    auto a = common;
    a.push_back(root.string());
    return a;
  };

  const auto t0 = Clock::now();
  ASSERT_EQ(run_mare(args(ref), t / "ref.log"), 0) << slurp(t / "ref.log");
  const double t_ref = std::chrono::duration<double>(Clock::now() - t0).count();

  // A sweep starts its first runs only after the process has started and read the plan
  // (most of a second in a CUDA build, which loads cuBLAS): kills are timed from there,
  // the fastest of three dry runs (one slow start, under the load of the other tests,
  // once gave kills so late that the sweep finished after 17).
  double t_start = 1e9;
  for (int k = 0; k < 3; ++k) {
    const auto d0 = Clock::now();
    auto dry = args(t / "dry");
    dry.push_back("--dry-run");
    ASSERT_EQ(run_mare(dry, t / "dry.log"), 0) << slurp(t / "dry.log");
    t_start = std::min(t_start, std::chrono::duration<double>(Clock::now() - d0).count());
  }

  std::mt19937 rng(20261124);
  int kills = 0, sweeps = 0;
  // Should the sweep still finish before its 20th kill (the machine's load moves both
  // the start and the runs), it is killed again from scratch in a fresh root with
  // windows half as long; the bytes are checked on the last root.
  for (int attempt = 0; attempt < 3 && kills < 20; ++attempt) {
    killed = t / ("killed" + std::to_string(attempt));
    kills = 0;
    for (;;) {
      ASSERT_LT(++sweeps, 1200) << "the sweep does not finish";
      // The first 20 kills come at most t_ref / 40 (≥ 50 ms) after the start, halved
      // each attempt (the floor too: t_ref / 40 is below it on this machine),
      // so that together they run at most half the sweep even when the machine's load
      // makes the killed sweeps faster than the reference; then the sweep is given
      // longer and longer until it finishes.
      const double hi = kills < 20 ? std::max(0.05, t_ref / 40) / (1 << attempt)
                                   : std::max(0.2, t_ref * (kills - 18) / 4);
      const double delay = std::uniform_real_distribution<double>(t_start, t_start + hi)(rng);
      const pid_t pid = spawn_mare(args(killed), t / "killed.log");
      const auto until = Clock::now() + std::chrono::duration<double>(delay);
      int st = 0;
      pid_t r = 0;
      while ((r = ::waitpid(pid, &st, WNOHANG)) == 0 && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (r == pid) {
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << slurp(t / "killed.log");
        break;
      }
      ::kill(pid, SIGKILL);
      wait_exit(pid);
      ++kills;
    }
  }
  EXPECT_GE(kills, 20);

  int64_t attempts = 0;
  for (const RunPlan& run : runs) {
    const fs::path a = ref / run.dir, b = killed / run.dir;
    ASSERT_TRUE(fs::exists(b / "result.json")) << b;
    for (const char* f : {"result.json", "metrics.jsonl", "checkpoint.bin"})
      EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " of " << run.dir;
    EXPECT_EQ(lines(b / "metrics.jsonl"), kEpochs) << run.dir;
    EXPECT_EQ(status_of(b), "completed");
    // A finished run is never started again (mare train would announce it).
    EXPECT_EQ(slurp(b / "stderr.log").find("already finished"), std::string::npos) << b;
    EXPECT_LE(lines(b / "stdout.log") - lines(b / "attempts.jsonl"), 2) << b;
    attempts += lines(b / "attempts.jsonl");
  }
  // Most kills hit runs under way (each epoch of a run checkpoints).
  EXPECT_GT(attempts, static_cast<int64_t>(runs.size()) + 10) << "few runs were interrupted";
  EXPECT_TRUE(eventually([&] { return processes_mentioning(killed.string()).empty(); }, 5))
      << processes_mentioning(killed.string()).front();
  std::cerr << "[ kill test ] " << kills << " kills in " << sweeps << " sweeps, " << attempts
            << " run starts for " << runs.size() << " runs; uninterrupted sweep " << t_ref
            << " s\n";

  // And once more: everything is skipped.
  ASSERT_EQ(run_mare(args(killed), t / "again.log"), 0);
  EXPECT_NE(slurp(t / "again.log").find("6 skipped"), std::string::npos) << slurp(t / "again.log");
}

// ---- lock, signals --------------------------------------------------------------

TEST(SweepLockTest, ShardsShareTheRootAndExcludeTheirTwins) {
  const test::TempDir t("sweep_lock");
  {
    SweepLock whole(t.path(), {1, 1});
    try {
      SweepLock again(t.path(), {1, 1});
      FAIL() << "a second whole sweep got the lock";
    } catch (const SweepLocked& e) {
      EXPECT_NE(std::string(e.what()).find(".sweep.lock"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid())), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(SweepLock(t.path(), {2, 3}), SweepLocked);
  }
  {
    SweepLock a(t.path(), {1, 2});
    SweepLock b(t.path(), {2, 2});
    try {
      SweepLock twin(t.path(), {2, 2});
      FAIL() << "shard 2/2 twice";
    } catch (const SweepLocked& e) {
      EXPECT_NE(std::string(e.what()).find(".sweep-2of2.lock"), std::string::npos) << e.what();
    }
    try {
      SweepLock whole(t.path(), {1, 1});
      FAIL() << "a whole sweep beside running shards";
    } catch (const SweepLocked& e) {
      EXPECT_NE(std::string(e.what()).find(".sweep-1of2.lock"), std::string::npos) << e.what();
    }
  }
  SweepLock after(t.path(), {1, 1});  // all released
}

TEST(SweepLockTest, SecondSweepIsRefusedAndSigintInterrupts) {
  const test::TempDir t("sweep_lock2");
  const SweepPlan plan = make_plan("long", {grpu_run("g", 6, 1, 2000)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root";
  const pid_t first = spawn_mare({"sweep", spec.string(), "--out", root.string()}, t / "1.log");
  const fs::path run = root / plan.runs[0].dir;
  ASSERT_TRUE(eventually([&] { return fs::exists(run / "last.ckpt"); }, 30)) << slurp(t / "1.log");
  for (const std::string shard : {"1/1", "1/2"}) {
    const fs::path log = t / ("2-" + shard.substr(0, 1) + ".log");
    const auto t0 = Clock::now();
    EXPECT_EQ(run_mare({"sweep", spec.string(), "--out", root.string(), "--shard", shard}, log), 2);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
    const std::string msg = slurp(log);
    EXPECT_NE(msg.find((root / ".sweep.lock").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("pid " + std::to_string(first)), std::string::npos) << msg;
  }
  ::kill(first, SIGINT);
  EXPECT_EQ(wait_exit(first), 130) << slurp(t / "1.log");
  const json st = read_json(run / "status.json");
  EXPECT_EQ(st["status"], "interrupted");
  EXPECT_EQ(st["signal"], SIGINT);
  EXPECT_EQ(st["attempt"], 1);
  EXPECT_NE(slurp(t / "1.log").find("run the same command again to resume"), std::string::npos);
  EXPECT_TRUE(processes_mentioning(run.string()).empty());
}

// SIGTERM: both running runs are interrupted; the next sweep resumes them from their
// last.ckpt to the bytes of an uninterrupted sweep. The two runs are long enough (1000
// epochs, ~1 s alone) that both are still running when both have a last.ckpt, on a
// loaded machine too (at 150 epochs one could finish before the other's first
// checkpoint, and the wait below timed out).
TEST(SweepSignals, SigtermInterruptsAndTheNextSweepResumes) {
  const test::TempDir t("sweep_term");
  const SweepPlan plan = make_plan(
      "term", {grpu_run("a", 6, 1, 1000), grpu_run("b", 6, 2, 1000), grpu_run("c", 4, 3, 20)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root", ref = t / "ref";
  const std::vector<std::string> args = {"sweep", spec.string(), "--jobs", "2", "--out"};
  auto with = [&](const fs::path& r) {
    auto a = args;
    a.push_back(r.string());
    return a;
  };
  const pid_t pid = spawn_mare(with(root), t / "1.log");
  ASSERT_TRUE(eventually(
      [&] {
        return fs::exists(root / plan.runs[0].dir / "last.ckpt") &&
               fs::exists(root / plan.runs[1].dir / "last.ckpt");
      },
      30));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 143) << slurp(t / "1.log");
  for (int k : {0, 1}) {
    const json st = read_json(root / plan.runs[k].dir / "status.json");
    EXPECT_EQ(st["status"], "interrupted");
    EXPECT_EQ(st["signal"], SIGTERM);
    EXPECT_FALSE(fs::exists(root / plan.runs[k].dir / "result.json"));
  }
  EXPECT_FALSE(fs::exists(root / plan.runs[2].dir)) << "a run started after the signal";
  EXPECT_NE(slurp(t / "1.log").find("1 not started"), std::string::npos) << slurp(t / "1.log");

  ASSERT_EQ(run_mare(with(root), t / "2.log"), 0) << slurp(t / "2.log");
  ASSERT_EQ(run_mare(with(ref), t / "ref.log"), 0) << slurp(t / "ref.log");
  for (const RunPlan& run : plan.runs) {
    EXPECT_EQ(status_of(root / run.dir), "completed");
    // The weights too: the resumed runs end with the bytes of runs never interrupted.
    for (const char* f : {"result.json", "metrics.jsonl", "checkpoint.bin"}) {
      ASSERT_TRUE(fs::exists(root / run.dir / f)) << f << " of " << run.dir;
      EXPECT_EQ(slurp(root / run.dir / f), slurp(ref / run.dir / f)) << f << " of " << run.dir;
    }
  }
  EXPECT_EQ(read_json(root / plan.runs[0].dir / "status.json")["attempt"], 2);
}

// Several runs at once on one machine (--jobs, as on one GPU) give each run the bytes it
// has when run alone, and the sweep says its throughput.
TEST(SweepJobs, RunsAtOnceHaveTheBytesOfRunsAlone) {
  const test::TempDir t("sweep_jobs");
  const SweepPlan plan = make_plan("jobs", {xor_run("x", 1), xor_run("x", 2), xor_run("x", 3),
                                            grpu_run("g", 6, 1, 3), grpu_run("g", 6, 2, 3)});
  const fs::path spec = write_plan(t / "spec", plan);
  for (const char* jobs : {"1", "3"})
    ASSERT_EQ(run_mare({"sweep", spec.string(), "--jobs", jobs, "--out", (t / jobs).string()},
                       t / (std::string(jobs) + ".log")),
              0)
        << slurp(t / (std::string(jobs) + ".log"));
  // Alone a run has every core, three at once a third each: the same numbers (every
  // kernel's bytes are the same at any thread count); result.json records its count.
  for (const RunPlan& run : plan.runs) {
    for (const char* f : {"metrics.jsonl", "checkpoint.bin"})
      EXPECT_EQ(slurp(t / "1" / run.dir / f), slurp(t / "3" / run.dir / f))
          << f << " of " << run.dir;
    json alone = read_json(t / "1" / run.dir / "result.json");
    json together = read_json(t / "3" / run.dir / "result.json");
    ASSERT_TRUE(alone.contains("threads") && together.contains("threads")) << run.dir;
    alone.erase("threads");
    together.erase("threads");
    EXPECT_EQ(alone, together) << run.dir;
  }
  const std::string log = slurp(t / "3.log");
  EXPECT_TRUE(std::regex_search(log, std::regex("mare sweep: [0-9.e+]+ runs an hour \\(5 in [^,]+, "
                                                "3 at once\\)")))
      << log;
}

// ---- time limits ---------------------------------------------------------------

// A relation run on a small synthetic CDR corpus: 4 steps, an evaluation every 2.
RunPlan re_run(const std::string& cell, int64_t seed, const fs::path& data,
               std::vector<std::string> extra = {}) {
  std::vector<std::string> c = {"train",
                                "--model",
                                "utre+d=8+heads=2",
                                "--data",
                                "synth-cdr:" + data.string(),
                                "--seed",
                                std::to_string(seed),
                                "--steps",
                                "4",
                                "--eval-every",
                                "2",
                                "--batch",
                                "2"};
  c.insert(c.end(), extra.begin(), extra.end());
  c.push_back("--out");
  c.push_back("{run}");
  return make_run(cell, seed, c);
}

// A run that stops at its time limit (exit 75) is paused, not failed: the sweep exits 75
// and says to run it again, and the next sweeps continue it (from its last.ckpt) to the
// bytes of a run never paused. The sweep's own --time-limit reaches each run as
// MARE_TIME_LIMIT (the time left, in attempts.jsonl); once it is spent no run starts.
TEST(SweepTimeLimit, PausedRunsGoOnToTheBytesOfRunsNeverPaused) {
  const test::TempDir t("sweep_time");
  const fs::path data = t / "data";
  ASSERT_EQ(run_mare({"data", "generate", "synth-cdr", "--out", data.string(), "--docs", "8",
                      "--seed", "1"},
                     t / "data.log"),
            0)
      << slurp(t / "data.log");
  const SweepPlan whole = make_plan("whole", {re_run("u", 1, data)});
  const SweepPlan paused = make_plan("paused", {re_run("u", 1, data, {"--time-limit", "0.001s"})});
  ASSERT_EQ(
      run_mare({"sweep", write_plan(t / "spec", whole).string(), "--out", (t / "whole").string()},
               t / "whole.log"),
      0)
      << slurp(t / "whole.log");
  const std::vector<std::string> again = {"sweep", write_plan(t / "spec", paused).string(), "--out",
                                          (t / "paused").string()};
  const fs::path run = t / "paused" / paused.runs[0].dir;
  // 4 steps, an evaluation every 2: paused at step 2, then completed.
  ASSERT_EQ(run_mare(again, t / "1.log"), kExitPaused) << slurp(t / "1.log");
  EXPECT_EQ(status_of(run), "paused");
  EXPECT_TRUE(fs::exists(run / "last.ckpt"));
  const std::string log = slurp(t / "1.log");
  EXPECT_NE(log.find("1 paused at the time limit"), std::string::npos) << log;
  EXPECT_NE(log.find("run the same command again to resume"), std::string::npos) << log;
  ASSERT_EQ(run_mare(again, t / "2.log"), 0) << slurp(t / "2.log");
  EXPECT_EQ(status_of(run), "completed");
  for (const char* f : {"result.json", "metrics.jsonl", "checkpoint.bin"})
    EXPECT_EQ(slurp(run / f), slurp(t / "whole" / whole.runs[0].dir / f)) << f;

  // The sweep's limit: an hour, handed to the run; a millisecond, spent before a run ends.
  const SweepPlan two = make_plan("two", {re_run("v", 1, data), re_run("v", 2, data)});
  const fs::path spec = write_plan(t / "spec", two);
  ASSERT_EQ(run_mare({"sweep", spec.string(), "--out", (t / "hour").string(), "--time-limit", "1h"},
                     t / "hour.log"),
            0)
      << slurp(t / "hour.log");
  const json attempt = read_json_line(t / "hour" / two.runs[0].dir / "attempts.jsonl");
  EXPECT_GT(attempt["time_limit_s"].get<double>(), 3000.0) << attempt;
  EXPECT_LE(attempt["time_limit_s"].get<double>(), 3600.0) << attempt;
  ASSERT_EQ(
      run_mare({"sweep", spec.string(), "--out", (t / "ms").string(), "--time-limit", "0.001s"},
               t / "ms.log"),
      kExitPaused)
      << slurp(t / "ms.log");
  for (const RunPlan& r : two.runs) EXPECT_FALSE(fs::exists(t / "ms" / r.dir / "result.json"));
  const std::string ms = slurp(t / "ms.log");
  EXPECT_NE(ms.find("run the same command again to resume"), std::string::npos) << ms;
}

// ---- failures ------------------------------------------------------------------

TEST(SweepFailures, RecordedAndTheOthersFinish) {
  const test::TempDir t("sweep_fail");
  const SweepPlan plan =
      // lr 3e38 (near float's largest; NaN is refused as an option) makes the first
      // step's weights huge and the next loss infinite: a diverged run.
      make_plan("fail", {xor_run("ok", 1), xor_run("nan", 1, {"--lr", "3e38"}),
                         xor_run("bad", 1, {"--no-such-option"}), xor_run("ok", 2)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root";
  const std::vector<std::string> args = {"sweep", spec.string(), "--out", root.string()};
  ASSERT_EQ(run_mare(args, t / "1.log"), 1) << slurp(t / "1.log");
  const fs::path ok1 = root / plan.runs[0].dir, nan = root / plan.runs[1].dir,
                 bad = root / plan.runs[2].dir, ok2 = root / plan.runs[3].dir;
  EXPECT_EQ(status_of(ok1), "completed");
  EXPECT_EQ(status_of(nan), "diverged");
  EXPECT_EQ(status_of(ok2), "completed");
  const json st = read_json(bad / "status.json");
  EXPECT_EQ(st["status"], "failed");
  EXPECT_EQ(st["exit_code"], 2);
  EXPECT_TRUE(st["signal"].is_null());
  EXPECT_NE(st["stderr_tail"].get<std::string>().find("--no-such-option"), std::string::npos)
      << st.dump();
  EXPECT_EQ(st["stderr_tail"].get<std::string>().find("== mare sweep"), std::string::npos);
  const std::string summary = slurp(t / "1.log");
  EXPECT_NE(summary.find("1 failed"), std::string::npos) << summary;
  EXPECT_NE(summary.find(bad.string()), std::string::npos) << summary;
  EXPECT_NE(summary.find("| mare: error"), std::string::npos) << summary;
  const json rj = read_json(ok1 / "run.json");
  EXPECT_EQ(rj["cell"], "ok");
  EXPECT_EQ(rj["command"].back(), "{run}");

  // Again: the failed run is kept (not started), the others skipped.
  ASSERT_EQ(run_mare(args, t / "2.log"), 1);
  EXPECT_EQ(lines(bad / "attempts.jsonl"), 1);
  EXPECT_EQ(lines(ok1 / "attempts.jsonl"), 1);
  EXPECT_NE(slurp(t / "2.log").find("3 skipped"), std::string::npos) << slurp(t / "2.log");
  // --retry-failed runs it again (and it fails again).
  auto retry = args;
  retry.push_back("--retry-failed");
  ASSERT_EQ(run_mare(retry, t / "3.log"), 1);
  EXPECT_EQ(lines(bad / "attempts.jsonl"), 2);
  EXPECT_EQ(read_json(bad / "status.json")["attempt"], 2);
  EXPECT_EQ(lines(nan / "attempts.jsonl"), 1);
  // A completed run whose result.json went missing runs again (it counted as done).
  fs::remove(ok2 / "result.json");
  ASSERT_EQ(run_mare(args, t / "4.log"), 1);
  EXPECT_EQ(lines(ok2 / "attempts.jsonl"), 2);
  EXPECT_TRUE(fs::exists(ok2 / "result.json"));
  EXPECT_EQ(status_of(ok2), "completed");
}

// A finished run whose output no run writes (result.json cut short, a score of 7.5) runs
// again, to the same bytes, its damaged file kept beside it; a finished run that lost its
// run.json gets it back from the plan; a file where a planned run directory goes stops
// the sweep before it changes anything.
TEST(SweepFailures, DamagedRunsRunAgainAndALostRunJsonComesBack) {
  const test::TempDir t("sweep_damage");
  const SweepPlan plan =
      make_plan("damage", {xor_run("x", 1), xor_run("x", 2), xor_run("x", 3), xor_run("x", 4)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root";
  const std::vector<std::string> args = {"sweep", spec.string(), "--out", root.string()};
  ASSERT_EQ(run_mare(args, t / "1.log"), 0) << slurp(t / "1.log");
  const fs::path cut = root / plan.runs[0].dir, wrong = root / plan.runs[1].dir,
                 lost = root / plan.runs[2].dir, file = root / plan.runs[3].dir;
  const std::string cut_bytes = slurp(cut / "result.json");
  const std::string wrong_bytes = slurp(wrong / "result.json");
  const std::string run_json = slurp(lost / "run.json");
  std::ofstream(cut / "result.json", std::ios::trunc) << cut_bytes.substr(0, cut_bytes.size() / 2);
  json w = read_json(wrong / "result.json");
  w["final"]["test_accuracy"] = 7.5;
  std::ofstream(wrong / "result.json", std::ios::trunc) << w.dump(2);
  fs::remove(lost / "run.json");
  fs::rename(file, t / "moved");
  std::ofstream(file) << "not a run\n";

  ASSERT_EQ(run_mare(args, t / "2.log"), 2);
  EXPECT_NE(slurp(t / "2.log").find(file.string() + ": a planned run directory is not a directory"),
            std::string::npos)
      << slurp(t / "2.log");
  EXPECT_FALSE(fs::exists(cut / "result.json.damaged"));  // nothing changed
  EXPECT_FALSE(fs::exists(lost / "run.json"));

  fs::remove(file);
  fs::rename(t / "moved", file);
  ASSERT_EQ(run_mare(args, t / "3.log"), 0) << slurp(t / "3.log");
  const std::string log = slurp(t / "3.log");
  EXPECT_NE(
      log.find((cut / "result.json").string() + ": not a JSON object (cut short?): runs again"),
      std::string::npos)
      << log;
  EXPECT_NE(
      log.find((wrong / "result.json").string() +
               ": \"final.test_accuracy\": expected a value in [0, 1], found 7.5: runs again"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find((lost / "run.json").string() + ": missing or unreadable: written again"),
            std::string::npos)
      << log;
  EXPECT_EQ(slurp(cut / "result.json"), cut_bytes);
  EXPECT_EQ(slurp(wrong / "result.json"), wrong_bytes);
  EXPECT_EQ(slurp(lost / "run.json"), run_json);
  EXPECT_TRUE(fs::exists(cut / "result.json.damaged"));
  EXPECT_TRUE(fs::exists(wrong / "result.json.damaged"));
  EXPECT_EQ(lines(cut / "attempts.jsonl"), 2);
  EXPECT_EQ(lines(lost / "attempts.jsonl"), 1);  // done: not run again
  EXPECT_NE(log.find("2 done now"), std::string::npos) << log;
}

TEST(SweepFailures, ARunKilledFromOutsideIsCrashed) {
  const test::TempDir t("sweep_crash");
  const SweepPlan plan = make_plan("crash", {grpu_run("g", 6, 1, 2000), xor_run("x", 1)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root";
  const pid_t pid = spawn_mare({"sweep", spec.string(), "--out", root.string()}, t / "1.log");
  const fs::path run = root / plan.runs[0].dir;
  ASSERT_TRUE(eventually([&] { return fs::exists(run / "last.ckpt"); }, 30));
  std::vector<std::string> procs;
  ASSERT_TRUE(eventually(
      [&] { return !(procs = processes_mentioning("--out " + run.string())).empty(); }, 5));
  ::kill(std::stoi(procs.front()), SIGKILL);
  EXPECT_EQ(wait_exit(pid), 1) << slurp(t / "1.log");
  const json st = read_json(run / "status.json");
  EXPECT_EQ(st["status"], "crashed");
  EXPECT_EQ(st["signal"], SIGKILL);
  EXPECT_EQ(status_of(root / plan.runs[1].dir), "completed");
}

// ---- plan, dry run, Slurm script --------------------------------------------------

TEST(SweepPlanFile, DryRunRunsNothingAndEmitSlurmWritesTheArray) {
  const test::TempDir t("sweep_dry");
  const SweepPlan plan = make_plan("dry", {xor_run("a", 1), xor_run("a", 2), xor_run("b", 1)});
  const fs::path spec = write_plan(t / "spec", plan), root = t / "root";
  EXPECT_EQ(plan_json(plan_from_json(plan_json(plan), "x")), plan_json(plan));
  ASSERT_EQ(run_mare({"sweep", spec.string(), "--out", root.string(), "--dry-run"}, t / "d.log"),
            0);
  const std::string listing = slurp(t / "d.log");
  for (const RunPlan& r : plan.runs)
    EXPECT_NE(listing.find(r.cell + "\t" + std::to_string(r.seed) + "\t" + r.dir + "\ttodo\t"),
              std::string::npos)
        << listing;
  EXPECT_NE(listing.find("--out " + (root / plan.runs[0].dir).string()), std::string::npos)
      << listing;
  EXPECT_FALSE(fs::exists(root / plan.runs[0].dir));
  // A plan keeps its profile: another one is refused.
  EXPECT_EQ(
      run_mare({"sweep", spec.string(), "--out", root.string(), "--profile", "paper", "--dry-run"},
               t / "p.log"),
      2);

  ASSERT_EQ(run_mare({"sweep", spec.string(), "--out", root.string(), "--emit", "slurm",
                      "--slurm-cpus", "2", "--slurm-arg=--partition=debug"},
                     t / "s.log"),
            0);
  const std::string script = slurp(root / "sweep.sbatch");
  EXPECT_NE(script.find("#SBATCH --array=1-3\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=2\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --partition=debug\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --output=" + (root / "slurm").string()), std::string::npos);
  EXPECT_NE(script.find(fs::canonical(::mare::test::cli_binary()).string() + " sweep " +
                        fs::absolute(spec).string()),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("--shard \"${SLURM_ARRAY_TASK_ID}/3\""), std::string::npos) << script;
  EXPECT_NE(slurp(t / "s.log").find("sbatch " + (root / "sweep.sbatch").string()),
            std::string::npos);
  EXPECT_FALSE(fs::exists(root / plan.runs[0].dir));
}

// A YAML spec (experiments/sweep/spec.h) runs to the directories load_sweep plans, with
// the run.json it describes; another profile is another set of runs, in a directory
// of its own: a sweep directory belongs to one spec and profile, and another (a run, a
// dry run or --emit slurm) is refused before it writes anything (it replaced
// sweep.json and orphaned the runs, status 0, so that collect found none of them).
TEST(SweepPlanFile, YamlSpecRunsItsPlan) {
  const test::TempDir t("sweep_yaml");
  const fs::path spec = t / "xor.yaml", root = t / "root";
  std::ofstream(spec) << "name: xorsweep\ncommand: train\nmodel: mlp\ntask: xor\nepochs: 3\n"
                         "seeds: [1, 2, 3]\n"
                         "profiles: {smoke: {}, default: {epochs: 4}, paper: {}}\n";
  const SweepPlan plan = load_sweep(spec.string(), "smoke");
  ASSERT_EQ(plan.runs.size(), 3u);
  // 4 cores for 2 jobs: each run gets MARE_THREADS=2 (result.json records the threads).
  ::setenv("MARE_THREADS", "4", 1);
  const int status = run_mare(
      {"sweep", spec.string(), "--out", root.string(), "--profile", "smoke", "--jobs", "2"},
      t / "1.log");
  ::unsetenv("MARE_THREADS");
  ASSERT_EQ(status, 0) << slurp(t / "1.log");
  for (const RunPlan& r : plan.runs)
    EXPECT_EQ(read_json(root / r.dir / "result.json")["threads"], 2) << r.dir;
  for (const RunPlan& r : plan.runs) {
    EXPECT_EQ(status_of(root / r.dir), "completed") << r.dir;
    EXPECT_EQ(read_json(root / r.dir / "run.json"), plan.run_json(r));
  }
  EXPECT_EQ(read_json(root / "sweep.json"), plan_json(plan));
  const std::string held = slurp(root / "sweep.json");
  // The default profile (4 epochs) into the same directory: refused, every way.
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, {"--dry-run"}, {"--profile", "paper", "--emit", "slurm"}}) {
    std::vector<std::string> args = {"sweep", spec.string(), "--out", root.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ofstream(t / "refused.log", std::ios::trunc).close();
    EXPECT_EQ(run_mare(args, t / "refused.log"), 2);
    const std::string log = slurp(t / "refused.log");
    EXPECT_NE(log.find((root / "sweep.json").string() +
                       ": this directory holds the sweep 'xorsweep' (profile smoke"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("another --out"), std::string::npos) << log;
  }
  EXPECT_EQ(slurp(root / "sweep.json"), held);
  EXPECT_FALSE(fs::exists(root / "sweep.sbatch"));
  for (const RunPlan& r : load_sweep(spec.string(), "default").runs)
    EXPECT_FALSE(fs::exists(root / r.dir)) << r.dir;
  // In a directory of its own: three more runs.
  const fs::path other = t / "root_default";
  ASSERT_EQ(run_mare({"sweep", spec.string(), "--out", other.string()}, t / "2.log"), 0);
  for (const RunPlan& r : load_sweep(spec.string(), "default").runs) {
    EXPECT_EQ(status_of(other / r.dir), "completed") << r.dir;
    EXPECT_EQ(lines(other / r.dir / "metrics.jsonl"), 4);
  }
  for (const RunPlan& r : plan.runs) EXPECT_EQ(lines(root / r.dir / "metrics.jsonl"), 3);
  // The same spec and profile again: every run skipped, the plan the same bytes.
  ASSERT_EQ(
      run_mare({"sweep", spec.string(), "--out", root.string(), "--profile", "smoke"}, t / "3.log"),
      0);
  EXPECT_EQ(slurp(root / "sweep.json"), held);
}

}  // namespace
}  // namespace mare::sweep
