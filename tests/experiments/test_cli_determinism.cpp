// Same seed, same device, same thread count: the same bytes, also across
// processes. Each run here is a separate `mare` process; result.json,
// metrics.jsonl and checkpoint.bin must be identical (timing.json is not
// compared: it holds wall times).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_binary.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int mare(const std::string& args) {
  const std::string cmd = ::mare::test::cli_binary() + " " + args + " > /dev/null 2>&1";
  return std::system(cmd.c_str());
}

void expect_same_run_files(const fs::path& a, const fs::path& b) {
  for (const char* f : {"result.json", "metrics.jsonl", "checkpoint.bin"})
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " differs between " << a << " and " << b;
}

TEST(CliDeterminism, TwoProcessesWriteTheSameBytes) {
  const test::TempDir dir("cli_determinism");
  const fs::path& d = dir.path();
  for (const char* run : {"xor_a", "xor_b"})
    ASSERT_EQ(mare("train --model mlp --task xor --seed 4 --epochs 5 --out " + (d / run).string()),
              0);
  expect_same_run_files(d / "xor_a", d / "xor_b");

  for (const char* run : {"grpu_a", "grpu_b"})
    ASSERT_EQ(mare("train --model grpu+hidden=6 --task addition --seed 4 --epochs 2 --samples 20 "
                   "--test-samples 10 --batch 10 --out " +
                   (d / run).string()),
              0);
  expect_same_run_files(d / "grpu_a", d / "grpu_b");

  ASSERT_EQ(mare("data generate synth-cdr --docs 4 --seed 3 --out " + (d / "cdr").string()), 0);
  for (const char* run : {"utre_a", "utre_b"})
    ASSERT_EQ(mare("train --model UTRE-CPD+d=8+heads=2+max_steps=2 --data synth-cdr:" +
                   (d / "cdr").string() +
                   " --seed 4 --steps 6 --eval-every 3 --batch 4 --max-tokens 120 --out " +
                   (d / run).string()),
              0);
  expect_same_run_files(d / "utre_a", d / "utre_b");
}

// --threads K overrides MARE_THREADS; without it the variable decides (result.json
// records the threads a run used).
TEST(CliThreads, TheOptionOverridesTheVariable) {
  const test::TempDir dir("cli_threads");
  const fs::path& d = dir.path();
  auto threads_of = [&](const std::string& env, const std::string& opt, const char* run) {
    const std::string cmd = "MARE_THREADS=" + env + " " + ::mare::test::cli_binary() +
                            " train --model mlp --task xor --seed 4 --epochs 1 " + opt + " --out " +
                            (d / run).string() + " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return nlohmann::json::parse(slurp(d / run / "result.json")).at("threads").get<int>();
  };
  EXPECT_EQ(threads_of("3", "", "env"), 3);
  EXPECT_EQ(threads_of("3", "--threads 2", "option"), 2);
}

}  // namespace
}  // namespace mare
