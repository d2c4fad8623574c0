// The error contract of the `mare` command (README, "The `mare` command"): every bad
// argument and every failing sub-command prints "mare: error: …" on stderr and exits
// with status 2; --help, --help-all and --version exit 0. Each case runs the real
// binary (MARE_CLI_BINARY, set by tests/experiments/CMakeLists.txt) as a separate
// process in a fresh temporary directory, so stdout, stderr and the exit status are
// exactly what a user or a script sees.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/run_lifecycle.h"
#include "experiments/train_option_kinds.h"
#include "kernels/tensor.h"
#include "tests/cli_binary.h"
#include "tests/gpu_required.h"
#include "tests/temp_dir.h"

#ifndef MARE_CLI_BINARY
#error "MARE_CLI_BINARY (path of the mare binary) must be defined by the build"
#endif

namespace mare::test {
namespace {

struct Outcome {
  int status = -1;  // exit status; -1 when the process did not exit normally
  std::string out, err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `mare args...` with the working directory `dir`.
Outcome run_mare(const TempDir& dir, const std::vector<std::string>& args) {
  std::string cmd =
      "cd " + quoted(dir.path().string()) + " && " + quoted(::mare::test::cli_binary());
  for (const std::string& a : args) cmd += " " + quoted(a);
  cmd += " >" + quoted((dir / "stdout").string()) + " 2>" + quoted((dir / "stderr").string());
  const int raw = std::system(cmd.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.out = slurp(dir / "stdout");
  o.err = slurp(dir / "stderr");
  return o;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s = "mare";
  for (const std::string& a : args) s += " " + a;
  return s;
}

// Status 2, stderr starts with the prefix, nothing on stdout.
void expect_error(const TempDir& dir, const std::vector<std::string>& args,
                  const std::string& mentions = "") {
  const Outcome o = run_mare(dir, args);
  SCOPED_TRACE(joined(args));
  EXPECT_EQ(o.status, 2) << "stderr: " << o.err;
  EXPECT_EQ(o.err.rfind("mare: error: ", 0), 0u) << "stderr: " << o.err;
  EXPECT_EQ(o.out, "") << "an error must not print on stdout";
  if (!mentions.empty()) {
    EXPECT_NE(o.err.find(mentions), std::string::npos) << o.err;
  }
}

void expect_success(const TempDir& dir, const std::vector<std::string>& args,
                    const std::string& mentions) {
  const Outcome o = run_mare(dir, args);
  SCOPED_TRACE(joined(args));
  EXPECT_EQ(o.status, 0) << "stderr: " << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find(mentions), std::string::npos) << o.out;
}

// The sub-command names CLI11 lists under "SUBCOMMANDS:" in `mare [path] --help`.
std::vector<std::string> subcommands_of(const TempDir& dir, const std::vector<std::string>& path) {
  std::vector<std::string> args = path;
  args.push_back("--help");
  const Outcome o = run_mare(dir, args);
  std::vector<std::string> names;
  std::istringstream in(o.out);
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("SUBCOMMANDS:", 0) == 0 || line.rfind("Subcommands:", 0) == 0) {
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (line.empty() || line[0] != ' ') {
      in_section = false;
      continue;
    }
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

TEST(CliContract, HelpAndVersionExitZero) {
  TempDir dir("cli");
  expect_success(dir, {"--help"}, "train");
  expect_success(dir, {"--help-all"}, "train");
  expect_success(dir, {"--version"}, "mare ");
  expect_success(dir, {}, "train");  // no sub-command: the help, status 0
  expect_success(dir, {"train", "--help"}, "--out");
  // Defaults that depend on the kind of model are all shown (the help showed the
  // MLP's lr 0.01, clip 0 and l2 0 where relation runs use Table 4.1's).
  const Outcome help = run_mare(dir, {"train", "--help"});
  for (const char* text :
       {"mlp 0.01, sequence models 0.0001, relation models 0.0005", "relation models 3, Table 4.1",
        "relation models 0.0001, Table 4.1", "mlp 100, sequence models 1000"})
    EXPECT_NE(help.out.find(text), std::string::npos) << text << "\n" << help.out;
  expect_success(dir, {"stats", "signed-rank", "--help"}, "--alternative");
  // --version names the version, the commit it was built from (12 hex digits, -dirty with
  // uncommitted changes), the build type and compiler, the flags, sanitizers and CUDA.
  const std::string version = run_mare(dir, {"--version"}).out;
  for (const char* line : {R"(^mare \d+\.\d+\.\d+$)", R"(^commit ([0-9a-f]{12}(-dirty)?|unknown)$)",
                           R"(^build \w+, \S+ [\d.]+$)", R"(^flags .*$)", R"(^sanitizers \S.*$)",
                           R"(^cuda (built|not built) \(option (AUTO|ON|OFF)\)$)"})
    EXPECT_TRUE(std::regex_search(version, std::regex(line, std::regex::multiline))) << line << "\n"
                                                                                     << version;
  // doctor's fields, and list's four registries.
  const std::string doctor = run_mare(dir, {"doctor"}).out;
  for (const char* field : {"cpu", "threads", "simd", "exp", "cuda", "eigen", "cli11",
                            "nlohmann_json", "yaml-cpp", "boost", "compiler", "mare"})
    EXPECT_TRUE(std::regex_search(
        doctor, std::regex(std::string("^") + field + " +\\S", std::regex::multiline)))
        << field << "\n"
        << doctor;
  const std::string list = run_mare(dir, {"list"}).out;
  for (const char* part :
       {"ops (forward/backward pairs", "models (models/registry.cpp)", "model aliases",
        "named grids", "tasks (experiments/tasks.cpp)", "UTRE-CPD", "NTCRE-CPD", "table4.6"})
    EXPECT_NE(list.find(part), std::string::npos) << part;
}

// `mare stats --json` prints one object whose numbers can be worked out by hand: A all
// above B (5 against 6) is W = 30, the exact two-sided p 2 / C(11, 5), the Hodges-Lehmann
// estimate the median of the 30 differences; a summary's n, mean, sd, median and range.
TEST(CliStats, JsonOutputsHoldTheHandComputedValues) {
  TempDir dir("cli_stats");
  const std::vector<double> a = {0.80, 0.83, 0.79, 0.85, 0.90},
                            b = {0.70, 0.72, 0.75, 0.71, 0.69, 0.74};
  auto write_values = [&](const char* name, const std::vector<double>& v) {
    std::ofstream out(dir.path() / name);
    for (double x : v) out << x << "\n";
  };
  write_values("a.txt", a);
  write_values("b.txt", b);
  const Outcome rs = run_mare(dir, {"stats", "rank-sum", "a.txt", "b.txt", "--json"});
  ASSERT_EQ(rs.status, 0) << rs.err;
  const auto r = nlohmann::json::parse(rs.out);
  EXPECT_EQ(r.at("test"), "rank-sum");
  EXPECT_EQ(r.at("method"), "exact");
  EXPECT_EQ(r.at("statistic").get<double>(), 30.0);
  EXPECT_NEAR(r.at("p_value").get<double>(), 2.0 / 462.0, 1e-15);
  std::vector<double> diffs;
  for (double x : a)
    for (double y : b) diffs.push_back(x - y);
  std::sort(diffs.begin(), diffs.end());
  EXPECT_NEAR(r.at("estimate").get<double>(), (diffs[14] + diffs[15]) / 2, 1e-12);
  EXPECT_EQ(r.at("n_x"), 5);
  EXPECT_EQ(r.at("n_y"), 6);
  const Outcome sm = run_mare(dir, {"stats", "summary", "a.txt", "--json"});
  ASSERT_EQ(sm.status, 0) << sm.err;
  const auto m = nlohmann::json::parse(sm.out);
  EXPECT_EQ(m.at("n"), 5);
  EXPECT_NEAR(m.at("mean").get<double>(), 0.834, 1e-12);
  double ss = 0;
  for (double x : a) ss += (x - 0.834) * (x - 0.834);
  EXPECT_NEAR(m.at("sd").get<double>(), std::sqrt(ss / 4), 1e-12);
  EXPECT_NEAR(m.at("median").get<double>(), 0.83, 1e-12);
  EXPECT_NEAR(m.at("min").get<double>(), 0.79, 1e-12);
  EXPECT_NEAR(m.at("max").get<double>(), 0.90, 1e-12);
  const auto ci = m.at("conf_int");
  EXPECT_LE(ci.at(0).get<double>(), 0.834);
  EXPECT_GE(ci.at(1).get<double>(), 0.834);
}

TEST(CliContract, TopLevelErrors) {
  TempDir dir("cli");
  expect_error(dir, {"--no-such-option"}, "--no-such-option");
  expect_error(dir, {"no-such-command"}, "no-such-command");
  expect_error(dir, {"list", "doctor"});  // at most one sub-command
}

TEST(CliContract, TrainErrors) {
  TempDir dir("cli");
  // Two cases where CLI11's own codes were 106 and 105.
  expect_error(dir, {"train", "--model", "mlp", "--task", "xor"}, "--out");
  expect_error(dir, {"train", "--model", "mlp", "--task", "xor", "--out", "r", "--epochs", "0"},
               "--epochs");
  expect_error(dir, {"train", "--out", "r", "--epochs", "ten"}, "--epochs");
  expect_error(dir, {"train", "--out", "r", "--lr", "-1"}, "--lr: expected a number > 0, got '-1'");
  // Ranges in words (CLI11's own said "Value 0 not in range 0.000000 to 1797693…", 310 digits).
  expect_error(dir, {"train", "--out", "r", "--epochs", "0"},
               "--epochs: expected a whole number ≥ 1, got '0'");
  expect_error(dir, {"train", "--out", "r", "--threads", "0"},
               "--threads: expected a whole number from 1 to 256, got '0'");
  expect_error(dir, {"train", "--out", "r", "--clip", "-3"},
               "--clip: expected a number ≥ 0, got '-3'");
  expect_error(dir, {"bench", "allocation", "--threads", "5000"},
               "--threads: expected a whole number from 1 to 256");
  expect_error(dir, {"sweep", "x.yaml", "--out", "s", "--jobs", "0"},
               "--jobs: expected a whole number from 1 to 1024, got '0'");
  // A corpus a generator cannot hold (it ran out of memory, killed, before the bound).
  expect_error(dir,
               {"data", "generate", "synth-ctd", "--out", "d", "--seed", "1", "--docs", "1000000"},
               "--docs: expected a whole number from 1 to 100000, got '1000000'");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--out", "r", "--epochs", "0"},
        {"train", "--out", "r", "--lr", "0"},
        {"data", "generate", "synth-cdr", "--out", "d", "--seed", "1", "--docs", "0"}}) {
    const Outcome o = run_mare(dir, args);
    EXPECT_EQ(o.err.find("not in range"), std::string::npos) << o.err;
    EXPECT_LT(o.err.size(), 160u) << o.err;
  }
  // An option the model's kind does not read is refused, not ignored (--l2 with the
  // GRPU trained without L2, status 0).
  expect_error(dir, {"train", "--model", "grpu", "--task", "addition", "--l2", "0.1", "--out", "r"},
               "train: --l2 does not apply to model 'grpu' (a sequence model reads");
  expect_error(dir, {"train", "--model", "mlp", "--task", "xor", "--steps", "3", "--out", "r"},
               "train: --steps does not apply to model 'mlp'");
  expect_error(dir, {"train", "--model", "mlp", "--task", "xor", "--curriculum", "--out", "r"},
               "train: --curriculum does not apply");
  // A seed that wrapped (-1 trained seed 18446744073709551615) or a switch given twice
  // (+d=8+d=16 trained d 16), or an option beside the switch it stands for.
  expect_error(dir, {"train", "--model", "mlp", "--task", "xor", "--seed", "-1", "--out", "r"},
               "--seed: expected a whole number ≥ 0, got '-1'");
  expect_error(dir, {"train", "--model", "mlp+hidden=4+hidden=8", "--task", "xor", "--out", "r"},
               "switch 'hidden' given twice");
  expect_error(dir, {"train", "--model", "mlp+", "--task", "xor", "--out", "r"}, "ends with '+'");
  expect_error(
      dir,
      {"train", "--model", "gru+hidden=4", "--task", "addition", "--hidden", "8", "--out", "r"},
      "train: --hidden and +hidden=4 both given");
  expect_error(dir, {"data", "generate", "synth-cdr", "--out", "d", "--seed", "-3"},
               "--seed: expected a whole number ≥ 0, got '-3'");
  EXPECT_FALSE(std::filesystem::exists(dir / "r"));
  // An --out below a file: the path and the reason (it printed filesystem_error's text).
  std::ofstream(dir / "afile") << "x\n";
  expect_error(dir,
               {"train", "--model", "mlp", "--task", "xor", "--epochs", "1", "--out", "afile/r"},
               "afile/r: Not a directory (expected a path where a directory or file can be made");
  expect_error(dir, {"train", "--out", "r", "--neutral-one", "maybe"});
  expect_error(dir, {"train", "--out", "r", "--no-such-option"}, "--no-such-option");
  // Refused by the sub-command itself (a std::exception from its callback).
  expect_error(dir, {"train", "--model", "no-such-model", "--task", "xor", "--out", "r"},
               "no-such-model");
  // A model switch out of its range is refused with the range, on every kind of
  // model (bran+d=0 died of SIGFPE; cnn+d=0 trained a model of nothing).
  ASSERT_EQ(run_mare(dir, {"data", "generate", "synth-cdr", "--out", "data", "--docs", "4",
                           "--seed", "1"})
                .status,
            0);
  for (const char* model : {"bran+d=0", "utre+d=0", "cnn+d=0", "ntcre+word=0"})
    expect_error(dir, {"train", "--model", model, "--data", "synth-cdr:data", "--out", "r"},
                 "=0: expected a whole number from 1 to 1048576");
  expect_error(dir, {"train", "--model", "bran+d=-4", "--data", "synth-cdr:data", "--out", "r"},
               "switch d=-4: expected");
  expect_error(
      dir, {"train", "--model", "bran", "--data", "synth-cdr:data", "--epochs", "3", "--out", "r"},
      "train: --epochs does not apply to model 'bran' (a relation model reads");
  expect_error(dir, {"train", "--model", "mlp+hidden=0", "--task", "xor", "--out", "r"},
               "switch hidden=0: expected");
  expect_error(dir,
               {"train", "--model", "utre+d=8+heads=2", "--data", "synth-cdr:data", "--out", "r",
                "--time-limit", "ten"},
               "train: --time-limit: expected a duration such as 90, 90s, 10m or 1.5h, got 'ten'");
  expect_error(dir,
               {"train", "--model", "mlp", "--task", "xor", "--out", "r", "--time-limit", "5m"},
               "train: --time-limit does not apply to model 'mlp'");
  expect_error(dir, {"train", "--model", "grpu+hidden=0", "--task", "addition", "--out", "r"},
               "switch hidden=0: expected");
}

// --time-limit: a run stopped at its limit exits with status 75 (a run to continue, not a
// failure), says so, and keeps last.ckpt; the same command finishes it (status 0).
TEST(CliContract, ATimeLimitedRunExitsWith75AndTheSameCommandContinues) {
  TempDir dir("cli");
  ASSERT_EQ(run_mare(dir, {"data", "generate", "synth-cdr", "--out", "data", "--docs", "8",
                           "--seed", "1"})
                .status,
            0);
  const std::vector<std::string> train = {
      "train",   "--model", "utre+d=8+heads=2", "--data", "synth-cdr:data", "--out", "r",
      "--steps", "4",       "--eval-every",     "2",      "--batch",        "2",     "--time-limit",
      "0.001s"};
  const Outcome paused = run_mare(dir, train);
  EXPECT_EQ(paused.status, kExitPaused) << paused.err;
  EXPECT_NE(paused.out.find("paused at step 2 of 4 (its time limit); the same command continues"),
            std::string::npos)
      << paused.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "r" / "last.ckpt"));
  const Outcome done = run_mare(dir, train);
  EXPECT_EQ(done.status, 0) << done.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "r" / "result.json"));
}

// Every option `mare train --help` lists is in the one table of which kinds of model
// read it (a missing row would refuse the option for every model), and the table
// holds no option the command does not have.
TEST(CliContract, EveryTrainOptionSaysWhichModelsReadIt) {
  TempDir dir("cli");
  const Outcome help = run_mare(dir, {"train", "--help"});
  ASSERT_EQ(help.status, 0) << help.err;
  std::set<std::string> listed;
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("--");
    if (line.rfind("  ", 0) != 0 || at == std::string::npos || at > 6) continue;
    const std::string flag = line.substr(at, line.find_first_of(" ,", at) - at);
    if (flag != "--help" && flag != "--help-all") listed.insert(flag);
  }
  std::set<std::string> table;
  for (const TrainOptionKinds& o : kTrainOptionKinds) table.emplace(o.flag);
  EXPECT_EQ(listed, table);
}

// Sizes past the machine's memory: a sentence, not "std::bad_alloc" (an MLP of a million
// hidden units is 4 TB of weights; the address space is capped too, to be sure).
TEST(CliContract, OutOfMemoryIsSaidInWords) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer: it maps its shadow memory at start, which ulimit -v "
                  "forbids (the binary aborts before main)";
#endif
  TempDir dir("cli");
  const std::string cmd = "cd " + quoted(dir.path().string()) + " && ulimit -v 4000000 && " +
                          quoted(::mare::test::cli_binary()) +
                          " train --model mlp+hidden=1048576 --task xor --out r 2>err";
  const int raw = std::system(cmd.c_str());
  ASSERT_TRUE(raw != -1 && WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 2);
  const std::string err = slurp(dir / "err");
  EXPECT_EQ(err.rfind("mare: error: a tensor needs 4 TiB", 0), 0u) << err;
  EXPECT_NE(err.find("(nine tenths of the address-space limit (ulimit -v);"), std::string::npos)
      << err;
}

// Sizes nobody can hold are refused from the sizes, before the memory is taken, in words
// that say what needs how much and what there is, whatever asks: a training batch (its
// inputs, then its activations), the allocation benchmark's memory, a generated corpus, a
// sweep's grid, a benchmark's grid; MARE_MEMORY_LIMIT sets the budget and a malformed one
// is named. None of them is killed by the system.
TEST(CliContract, SizesNobodyCanHoldAreRefusedFromTheSizes) {
  TempDir dir("cli");
  ASSERT_EQ(
      run_mare(dir, {"data", "generate", "synth-cdr", "--out", "d", "--seed", "1", "--docs", "8"})
          .status,
      0);
  const std::vector<std::string> train = {"train",  "--model",     "bran+d=8+heads=2",
                                          "--data", "synth-cdr:d", "--steps",
                                          "2",      "--out",       "r"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = train;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // Beyond any machine's memory whatever the budget: from the batch's inputs alone.
  expect_error(dir, with({"--batch", "2000000000"}), "--batch 2000000000 (its inputs alone, ");
  expect_error(dir, with({"--eval-batch", "2000000000"}), "--eval-batch 2000000000 (its inputs");
  expect_error(dir, {"bench", "allocation", "--mem", "100000000", "--seq", "100000000"},
               "the largest point (--batch 32, --seq 100000000, --mem 100000000: five arrays of "
               "batch x seq x mem values) needs 5.55 EiB");
  std::vector<std::string> grid = {"bench", "allocation", "--seq"};
  for (int i = 1; i <= 400; ++i) grid.push_back(std::to_string(i));
  grid.push_back("--mem");
  for (int i = 1; i <= 300; ++i) grid.push_back(std::to_string(i));
  expect_error(dir, grid,
               "400 --seq values x 300 --mem values make 120000 points: expected at most 100000");
  std::ofstream(dir / "big.yaml") << "name: big\ncommand: train\n"
                                     "profiles: {smoke: {}, default: {}, paper: {}}\n"
                                     "model: cnn\ndata: synth-cdr\nseeds: [1, 2]\ngrid:\n"
                                     "  lr: [0.001, 0.002, 0.003, 0.004, 0.005]\n"
                                     "  steps: {from_to}\n  batch: {from_to}\n";
  {
    std::string text = slurp(dir / "big.yaml"), range = "[";
    for (int i = 1; i <= 200; ++i) range += (i > 1 ? ", " : "") + std::to_string(i);
    range += "]";
    for (size_t at; (at = text.find("{from_to}")) != std::string::npos;) text.replace(at, 9, range);
    std::ofstream(dir / "big.yaml") << text;
  }
  expect_error(dir, {"sweep", "big.yaml", "--out", "s", "--dry-run"},
               "big.yaml:7: this plan has 400000 runs (cells x seeds): expected at most 100000");

  // Within the machine but beyond the budget: the activations, the benchmark's memory,
  // a corpus generated at a size.
  ::setenv("MARE_MEMORY_LIMIT", "64M", 1);
  expect_error(dir, with({"--batch", "64"}), "a tensor needs ");
  expect_error(dir, with({"--batch", "64"}),
               "more than the 64 MiB this process may use (MARE_MEMORY_LIMIT=64M)");
  expect_error(dir, {"bench", "allocation", "--mem", "1000000", "--seq", "4"},
               "the largest point (--batch 32, --seq 4, --mem 1000000: five arrays of batch x seq "
               "x mem values) needs 2.38 GiB, more than the 64 MiB");
  expect_error(dir,
               {"data", "generate", "synth-ctd", "--out", "c", "--seed", "1", "--docs", "100000"},
               "synth-ctd of 100000 documents (estimated) needs 18.6 GiB, more than the 64 MiB");
  expect_error(dir, {"data", "generate", "synth-ctd", "--out", "c", "--seed", "1"},
               "synth-ctd of its default size (estimated) needs ");
  EXPECT_FALSE(std::filesystem::exists(dir / "c"));
  ::setenv("MARE_MEMORY_LIMIT", "lots", 1);
  expect_error(dir, with({"--batch", "4"}),
               "MARE_MEMORY_LIMIT: expected a size in bytes such as 8G, 512M or 1000000, found "
               "'lots'");
  ::unsetenv("MARE_MEMORY_LIMIT");
  EXPECT_EQ(run_mare(dir, with({"--batch", "4"})).status, 0);
}

// An error says what is wrong and where in a few lines, whatever the input: a 100 000-byte
// argument is not echoed whole, a directory given as a spec is called a directory, a
// benchmark time written as text names the field, a file cut short is called cut short.
TEST(CliContract, ErrorsSayWhatAndWhereInAFewLines) {
  TempDir dir("cli");
  const std::string huge(100000, 'a');
  const Outcome long_arg = run_mare(dir, {"train", "--model", huge, "--task", "xor", "--out", "r"});
  EXPECT_EQ(long_arg.status, 2);
  EXPECT_EQ(long_arg.err.rfind("mare: error: ", 0), 0u) << long_arg.err.substr(0, 200);
  EXPECT_LT(long_arg.err.size(), 1100u);
  EXPECT_NE(long_arg.err.find("bytes left out ...]"), std::string::npos) << long_arg.err;

  std::filesystem::create_directories(dir / "table.yaml");
  expect_error(dir, {"sweep", "table.yaml", "--out", "s", "--dry-run"},
               "table.yaml: a directory; expected a YAML spec file");

  std::ofstream(dir / "gb.json") << R"({"context": {"date": "d", "host_name": "h", "num_cpus": 2},
             "benchmarks": [{"name": "BM_X/1", "run_type": "iteration", "iterations": 10,
                             "real_time": "fast", "cpu_time": 1.0, "time_unit": "ms"}]})";
  expect_error(dir, {"report", "gb.json", "--out", "rep"},
               "gb.json: \"benchmarks.0.real_time\": expected a number, found \"fast\"");
  std::ofstream(dir / "alloc.json") << R"({"benchmark": "allocation", "rows": [{"variant": "sorted",
             "seq": 1, "mem": 4, "batch": 32, "seconds": -1}]})";
  expect_error(dir, {"report", "alloc.json", "--out", "rep"},
               "alloc.json: \"rows.0.seconds\": expected a value >= 0, found -1");

  ASSERT_EQ(run_mare(dir, {"data", "generate", "synth-ctd", "--out", "ctd", "--docs", "12",
                           "--seed", "1"})
                .status,
            0);
  const std::string tsv = slurp(dir / "ctd" / "train.tsv");
  std::ofstream(dir / "ctd" / "train.tsv", std::ios::trunc) << tsv.substr(0, tsv.size() / 2);
  expect_error(dir, {"data", "inspect", "ctd/train.tsv", "--format", "bran-tsv"},
               "expected a newline at the end of the file (truncated file?)");
}

TEST(CliContract, StatsErrors) {
  TempDir dir("cli");
  std::ofstream(dir / "a.txt") << "1\n2\n3.5\n-4\n";
  expect_error(dir, {"stats"});  // needs a sub-command
  expect_error(dir, {"stats", "signed-rank"}, "A");
  expect_error(dir, {"stats", "signed-rank", "a.txt", "--mu", "x"}, "--mu");
  expect_error(dir, {"stats", "signed-rank", "a.txt", "--alternative", "sideways"}, "sideways");
  expect_error(dir, {"stats", "signed-rank", "a.txt", "--conf-level", "1.5"}, "--conf-level");
  expect_error(dir, {"stats", "rank-sum", "a.txt"});
  expect_error(dir, {"stats", "summary", "a.txt", "--resamples", "0"}, "--resamples");
  expect_error(dir, {"stats", "summary", "a.txt", "--seed", "-1"},
               "--seed: expected a whole number ≥ 0, got '-1'");
  expect_error(dir, {"stats", "summary", "missing.txt"}, "missing.txt");
  std::filesystem::create_directories(dir / "adir");
  expect_error(dir, {"stats", "summary", "adir"}, "adir: a directory; expected a file of numbers");
  // Paired samples pair by line: a blank line in one file is an error naming it
  // (it used to be skipped, pairing value 3 of one file with value 2 of the other).
  std::ofstream(dir / "b.txt") << "1.1\n2.3\n3\n-3.2\n";
  std::ofstream(dir / "b_blank.txt") << "1.5\n\n2.5\n3\n-3\n";
  std::ofstream(dir / "b_comment.txt") << "1.5\n2.5\n# a note\n3\n-3\n";
  const Outcome paired = run_mare(dir, {"stats", "signed-rank", "a.txt", "b.txt"});
  EXPECT_EQ(paired.status, 0) << paired.err;
  EXPECT_NE(paired.out.find("V = "), std::string::npos) << paired.out;
  expect_error(dir, {"stats", "signed-rank", "a.txt", "b_blank.txt"},
               "b_blank.txt:2: expected a value, paired with a.txt:2");
  expect_error(dir, {"stats", "signed-rank", "b_comment.txt", "a.txt"},
               "b_comment.txt:3: expected a value, paired with a.txt:3");
}

TEST(CliContract, BenchErrors) {
  TempDir dir("cli");
  expect_error(dir, {"bench"});
  expect_error(dir, {"bench", "no-such-benchmark"});  // CLI11: "A subcommand is required"
  expect_error(dir, {"bench", "allocation", "--seq", "x"}, "--seq");
  expect_error(dir, {"bench", "allocation", "--seq", "0"}, "--seq");
  expect_error(dir, {"bench", "allocation", "--clock", "sundial"}, "--clock");
  expect_error(dir, {"bench", "allocation", "--device", "tpu"}, "tpu");
  // An output that cannot be written fails before the benchmark runs, naming the path (it
  // failed after the whole benchmark, naming a temporary file).
  expect_error(dir, {"bench", "allocation", "--json", "missing/x.json"},
               "--json missing/x.json: cannot be written: expected a file in an existing "
               "directory, and missing is not one");
  expect_error(dir, {"bench", "allocation", "--csv", "."},
               "--csv .: cannot be written: it is a "
               "directory");
  expect_error(dir, {"bench", "iteration", "--json", "missing/it.json"},
               "--json missing/it.json: cannot be written");
}

// `--device cuda` where it cannot run: every command that takes --device refuses
// with the same reason (`<command>: --device cuda: <why>`), before it writes
// anything. `mare train --model mlp|grpu --device cuda` ran on the CPU and
// wrote "device": "cpu" (status 0), and train and bench each said it otherwise.
// With a GPU the GPU tests show the device used (GrpuTrainCuda, ReModelsCuda).
TEST(CliContract, AnUnusableDeviceIsRefusedAlikeEverywhere) {
  const std::string why = device_unavailable(Device::cuda);
  if (why.empty()) GTEST_SKIP() << "a GPU is usable here: nothing to refuse";
  TempDir dir("cli");
  ASSERT_EQ(run_mare(dir, {"data", "generate", "synth-cdr", "--out", "data", "--docs", "4",
                           "--seed", "1"})
                .status,
            0);
  const std::vector<std::vector<std::string>> commands = {
      {"train", "--model", "mlp", "--task", "xor", "--out", "r1"},
      {"train", "--model", "grpu", "--task", "addition", "--out", "r2"},
      {"train", "--model", "gru", "--task", "addition", "--out", "r3"},
      {"train", "--model", "bran", "--data", "synth-cdr:data", "--out", "r4"},
      {"bench", "allocation"},
      {"bench", "iteration"}};
  for (std::vector<std::string> args : commands) {
    args.insert(args.end(), {"--device", "cuda"});
    const std::string command = args[0] == "train" ? "train" : args[0] + " " + args[1];
    expect_error(dir, args, "mare: error: " + command + ": --device cuda: " + why + "\n");
    const Outcome o = run_mare(dir, args);
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << joined(args) << ": " << o.err;
  }
  for (const char* run : {"r1", "r2", "r3", "r4"}) EXPECT_FALSE(std::filesystem::exists(dir / run));
  // A sweep whose spec puts its runs on the GPU: refused before it writes its root.
  std::ofstream(dir / "gpu.yaml") << "name: g\ncommand: bench-allocation\nseq: [1]\nmem: [4]\n"
                                     "batch: 2\nrepetitions: 1\nseeds: [1]\ndevice: cuda\n"
                                     "profiles:\n  smoke: {}\n  default: {}\n  paper: {}\n";
  const Outcome sweep = run_mare(dir, {"sweep", "gpu.yaml", "--out", "sw"});
  EXPECT_EQ(sweep.status, 2) << sweep.err;
  EXPECT_EQ(
      sweep.err.rfind("mare: error: sweep: --device cuda: " + why + " (the runs of gpu.yaml", 0),
      0u)
      << sweep.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "sw"));
  // Its dry run and --emit slurm still go on (a login node has no GPU): the plan printed,
  // the array job written.
  const Outcome dry = run_mare(dir, {"sweep", "gpu.yaml", "--out", "sw", "--dry-run"});
  EXPECT_EQ(dry.status, 0) << dry.err;
  EXPECT_NE(dry.out.find("--device cuda"), std::string::npos) << dry.out;
  const Outcome slurm = run_mare(dir, {"sweep", "gpu.yaml", "--out", "sw", "--emit", "slurm"});
  EXPECT_EQ(slurm.status, 0) << slurm.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "sw" / "sweep.sbatch"));
  EXPECT_NE(slurm.out.find("sbatch"), std::string::npos) << slurm.out;
}

// TF32 GEMMs (--matmul-precision high) where the GEMMs are the CPU's: refused by
// train (every kind of model), bench iteration and a sweep whose spec asks for it
// without device: cuda (its dry run too), before anything is written. The default,
// highest, changes no byte of a run (no key in its config).
TEST(CliContract, HighMatmulPrecisionIsRefusedOnTheCpu) {
  TempDir dir("cli");
  ASSERT_EQ(run_mare(dir, {"data", "generate", "synth-cdr", "--out", "data", "--docs", "4",
                           "--seed", "1"})
                .status,
            0);
  const std::string why =
      ": --matmul-precision high: TF32 runs on a GPU's tensor cores; on the cpu every GEMM is "
      "fp32 (give --device cuda, or leave the precision at highest)\n";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"train", "--model", "mlp", "--task", "xor", "--out", "r1"},
           {"train", "--model", "gru", "--task", "addition", "--out", "r2"},
           {"train", "--model", "bran", "--data", "synth-cdr:data", "--out", "r3"},
           {"bench", "iteration"}}) {
    std::vector<std::string> with = args;
    with.insert(with.end(), {"--matmul-precision", "high"});
    const std::string command = args[0] == "train" ? "train" : "bench iteration";
    expect_error(dir, with, "mare: error: " + command + why);
  }
  for (const char* run : {"r1", "r2", "r3"}) EXPECT_FALSE(std::filesystem::exists(dir / run));
  std::ofstream(dir / "tf32.yaml") << "name: t\ncommand: train\ntask: xor\nmodels: [mlp]\n"
                                      "seeds: [1]\nmatmul_precision: high\n"
                                      "profiles:\n  smoke: {}\n  default: {}\n  paper: {}\n";
  for (const bool dry : {false, true}) {
    std::vector<std::string> args = {"sweep", "tf32.yaml", "--out", "sw"};
    if (dry) args.push_back("--dry-run");
    const Outcome o = run_mare(dir, args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_EQ(o.err.rfind("mare: error: sweep: tf32.yaml, profile default: matmul_precision: high "
                          "needs device: cuda",
                          0),
              0u)
        << o.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "sw"));
  }
  // highest, said or not: the same run, no key recorded.
  ASSERT_EQ(
      run_mare(dir, {"train", "--model", "mlp", "--task", "xor", "--epochs", "2", "--out", "plain"})
          .status,
      0);
  ASSERT_EQ(run_mare(dir, {"train", "--model", "mlp", "--task", "xor", "--epochs", "2",
                           "--matmul-precision", "highest", "--out", "said"})
                .status,
            0);
  EXPECT_EQ(slurp(dir / "plain" / "result.json"), slurp(dir / "said" / "result.json"));
  EXPECT_EQ(slurp(dir / "said" / "manifest.json").find("matmul_precision"), std::string::npos);
}

// On the GPU, `high` is part of what makes a run the run: recorded in its config
// (manifest.json), and a finished run is not taken for one at another precision.
TEST(CliContract, HighMatmulPrecisionIsRecordedAndKeepsRunsApart) {
  MARE_NEEDS_GPU();
  TempDir dir("cli");
  const std::vector<std::string> run = {"train", "--model",  "mlp",  "--task", "xor", "--epochs",
                                        "2",     "--device", "cuda", "--out",  "r"};
  std::vector<std::string> tf32 = run;
  tf32.insert(tf32.end(), {"--matmul-precision", "high"});
  const Outcome first = run_mare(dir, tf32);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(slurp(dir / "r" / "manifest.json").find("\"matmul_precision\": \"high\""),
            std::string::npos);
  const Outcome other = run_mare(dir, run);
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_NE(other.err.find("matmul_precision"), std::string::npos) << other.err;
}

// Where a GPU is usable, a MARE_CUDA_DEVICE that names no device is refused as an unusable
// device is, before anything is written (it was an error of the runtime's, without the
// command's "--device cuda:", after bench allocation had printed its sweep).
TEST(CliContract, AMissingCudaDeviceIsRefusedLikeAnUnusableOne) {
  MARE_NEEDS_GPU();
  TempDir dir("cli");
  ::setenv("MARE_CUDA_DEVICE", "99", 1);
  const Outcome train = run_mare(dir, {"train", "--model", "mlp", "--task", "xor", "--device",
                                       "cuda", "--out", "r"}),
                bench = run_mare(dir, {"bench", "allocation", "--device", "cuda"});
  ::unsetenv("MARE_CUDA_DEVICE");
  EXPECT_EQ(train.status, 2);
  EXPECT_EQ(train.err.rfind("mare: error: train: --device cuda: CUDA device 99 does not exist", 0),
            0u)
      << train.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r"));
  EXPECT_EQ(bench.status, 2);
  EXPECT_EQ(bench.out, "") << bench.out;
  EXPECT_EQ(bench.err.rfind(
                "mare: error: bench allocation: --device cuda: CUDA device 99 does not exist", 0),
            0u)
      << bench.err;
}

// Rerunning a finished run runs nothing and says so before the earlier result line
// (it reprinted that line as if the run had just happened).
TEST(CliContract, AFinishedRunSaysNothingRan) {
  TempDir dir("cli");
  const std::vector<std::string> args = {"train",    "--model", "mlp",   "--task", "xor",
                                         "--epochs", "2",       "--out", "r"};
  const Outcome first = run_mare(dir, args), second = run_mare(dir, args);
  ASSERT_EQ(first.status, 0) << first.err;
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(first.out.find("finished before"), std::string::npos) << first.out;
  EXPECT_EQ(second.out.rfind("finished before: nothing ran, r/result.json is the earlier run's "
                             "(--force runs it again)\n",
                             0),
            0u)
      << second.out;
  EXPECT_NE(second.out.find(first.out), std::string::npos) << second.out;
}

TEST(CliContract, DataErrors) {
  TempDir dir("cli");
  expect_error(dir, {"data"});
  expect_error(dir, {"data", "generate", "--out", "d", "--seed", "1"}, "name");
  expect_error(dir, {"data", "generate", "synth-cdr", "--seed", "1"}, "--out");
  expect_error(dir, {"data", "generate", "synth-cdr", "--out", "d", "--seed", "1", "--docs", "0"},
               "--docs");
  expect_error(dir, {"data", "generate", "no-such-corpus", "--out", "d", "--seed", "1"},
               "no-such-corpus");
  expect_error(dir, {"data", "inspect", "x.txt"}, "--format");
  expect_error(dir, {"data", "inspect", "missing.pubtator", "--format", "pubtator"},
               "missing.pubtator");
}

TEST(CliContract, DoctorAndListErrors) {
  TempDir dir("cli");
  expect_error(dir, {"doctor", "--no-such-option"}, "--no-such-option");
  expect_error(dir, {"doctor", "extra"}, "extra");
  expect_error(dir, {"list", "--no-such-option"}, "--no-such-option");
  expect_error(dir, {"list", "extra"}, "extra");
}

// Every sub-command, at every level, including ones added after this test: an unknown
// option is status 2 with the prefix and a hint naming that sub-command's --help. The
// list comes from `mare … --help` itself.
TEST(CliContract, EverySubCommandRefusesAnUnknownOption) {
  TempDir dir("cli");
  const std::vector<std::string> top = subcommands_of(dir, {});
  const std::set<std::string> expected = {"train", "stats", "bench", "data", "doctor", "list"};
  for (const std::string& name : expected)
    EXPECT_NE(std::find(top.begin(), top.end(), name), top.end()) << name << " not in --help";
  std::vector<std::vector<std::string>> todo;
  for (const std::string& name : top) todo.push_back({name});
  int checked = 0;
  while (!todo.empty()) {
    const std::vector<std::string> path = todo.back();
    todo.pop_back();
    for (const std::string& sub : subcommands_of(dir, path)) {
      std::vector<std::string> deeper = path;
      deeper.push_back(sub);
      todo.push_back(deeper);
    }
    std::vector<std::string> args = path;
    args.push_back("--no-such-option");
    // A required argument may be reported first; the hint names the sub-command.
    expect_error(dir, args, "'" + joined(path) + " --help'");
    ++checked;
  }
  // train, stats (3), bench (1), data (2), doctor, list and their parents: at least 11.
  EXPECT_GE(checked, 11);
}

}  // namespace
}  // namespace mare::test
