// The run-directory reader that `mare collect` and `mare report` share
// (stats/run_files.h): which directories are runs, a legacy run's cell and seed, and the
// status rule, so that both commands count the same runs as completed.
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "stats/run_files.h"
#include "tests/temp_dir.h"

namespace mare::stats {
namespace {

namespace fs = std::filesystem;

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

RunFiles read(const fs::path& dir) {
  return read_run_files<Error>(dir, /*with_series=*/true);
}

std::string error_of(const fs::path& dir) {
  try {
    read(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RunFiles, ARunHasRunJsonOrALegacyManifestWithItsResult) {
  test::TempDir t;
  write(t / "sweep/run.json", "{}");
  write(t / "legacy/manifest.json", "{}");
  write(t / "legacy/result.json", "{}");
  write(t / "unfinished/manifest.json", "{}");  // no result: not a run yet
  EXPECT_TRUE(is_run_dir(t / "sweep"));
  EXPECT_TRUE(is_run_dir(t / "legacy"));
  EXPECT_FALSE(is_run_dir(t / "unfinished"));
  EXPECT_FALSE(read(t / "sweep").legacy);
  EXPECT_TRUE(read(t / "legacy").legacy);
}

TEST(RunFiles, TheStatusRule) {
  test::TempDir t;
  // status.json wins over result.json.
  write(t / "a/run.json", "{}");
  write(t / "a/result.json", R"({"status": "completed"})");
  write(t / "a/status.json", R"({"status": "diverged"})");
  EXPECT_EQ(read(t / "a").status, "diverged");
  // A result.json without a status is finished (it is written last).
  write(t / "b/run.json", "{}");
  write(t / "b/result.json", R"({"test": {"relations": {"micro": {"f1": 0.5}}}})");
  EXPECT_EQ(read(t / "b").status, "completed");
  // Completed by status.json, but its output is gone: missing, not completed and empty.
  write(t / "c/run.json", "{}");
  write(t / "c/status.json", R"({"status": "completed"})");
  EXPECT_EQ(read(t / "c").status, "missing");
  write(t / "c/bench.json", "{}");  // a benchmark run's output
  EXPECT_EQ(read(t / "c").status, "completed");
  // Interrupted by the sweep, then finished (resumed by hand): the result says so, as
  // `mare sweep` reads it; a failed or crashed attempt stays what status.json says.
  write(t / "e/run.json", "{}");
  write(t / "e/status.json", R"({"status": "interrupted"})");
  write(t / "e/result.json", R"({"status": "completed"})");
  EXPECT_EQ(read(t / "e").status, "completed");
  write(t / "e/result.json", R"({"status": "diverged"})");
  EXPECT_EQ(read(t / "e").status, "diverged");
  write(t / "e/status.json", R"({"status": "crashed"})");
  EXPECT_EQ(read(t / "e").status, "crashed");
  write(t / "f/run.json", "{}");
  write(t / "f/status.json", R"({"status": "interrupted"})");
  EXPECT_EQ(read(t / "f").status, "interrupted");
  // Neither: missing.
  write(t / "d/run.json", "{}");
  EXPECT_EQ(read(t / "d").status, "missing");
}

TEST(RunFiles, MalformedFilesAreErrorsNamingThem) {
  test::TempDir t;
  write(t / "a/run.json", "{}");
  write(t / "a/status.json", R"({"attempt": 1})");
  EXPECT_NE(error_of(t / "a").find("a/status.json: expected \"status\" (a string)"),
            std::string::npos)
      << error_of(t / "a");
  write(t / "b/run.json", "[1]");
  EXPECT_NE(error_of(t / "b").find("b/run.json: expected a JSON object"), std::string::npos);
  write(t / "c/run.json", "{}");
  write(t / "c/result.json", R"({"status": "completed", "test": {"relations": {"micro": )"
                             R"({"f1": "NaN"}}}})");
  EXPECT_NE(error_of(t / "c").find("c/result.json: "), std::string::npos) << error_of(t / "c");
  write(t / "d/run.json", "{}");
  write(t / "d/metrics.jsonl", "{\"step\": 1}\n{\"step\": \n");
  EXPECT_NE(error_of(t / "d").find("d/metrics.jsonl:2: not a JSON object"), std::string::npos)
      << error_of(t / "d");
}

TEST(RunFiles, ALegacyRunsCellAndSeed) {
  test::TempDir t;
  EXPECT_EQ(legacy_cell(t / "r1_grpu_b100/seed3"), "r1_grpu_b100");
  EXPECT_EQ(legacy_cell(t / "r1_grpu_b100/seed3-0a1b2c3d"), "r1_grpu_b100");
  EXPECT_EQ(legacy_cell(t / "bran-synth-cdr-seed1"), "bran-synth-cdr");
  EXPECT_EQ(legacy_cell(t / "bran-synth-cdr-seed1/"), "bran-synth-cdr");
  EXPECT_EQ(legacy_cell(t / "mlp-xor"), "mlp-xor");
  write(t / "m/manifest.json", R"({"seed": 4, "config": {"task": "addition"}})");
  write(t / "m/result.json", R"({"seed": 9})");
  EXPECT_EQ(legacy_seed(read(t / "m")), 4);
  EXPECT_EQ(legacy_config(read(t / "m"))["task"], "addition");
  write(t / "r/manifest.json", R"({"config": "not an object"})");
  write(t / "r/result.json", R"({"seed": 9})");
  EXPECT_EQ(legacy_seed(read(t / "r")), 9);  // the result's when the manifest has none
  EXPECT_TRUE(legacy_config(read(t / "r")).empty());
  write(t / "n/manifest.json", "{}");
  write(t / "n/result.json", "{}");
  EXPECT_FALSE(legacy_seed(read(t / "n")).has_value());
}

}  // namespace
}  // namespace mare::stats
