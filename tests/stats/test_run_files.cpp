// The run-directory reader that `mare collect` and `mare report` share
// (stats/run_files.h): which directories are runs, a legacy run's cell and seed, and the
// status rule, so that both commands count the same runs as completed.
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// The least a completed run's result.json holds: a test score.
constexpr const char* kScored = R"({"final": {"test_mse": 0.5}})";

TEST(RunFiles, ARunHasRunJsonOrALegacyManifestWithItsResult) {
  test::TempDir t;
  write(t / "sweep/run.json", "{}");
  write(t / "legacy/manifest.json", "{}");
  write(t / "legacy/result.json", kScored);
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
  write(t / "a/result.json", R"({"status": "completed", "final": {"test_mse": 0.5}})");
  write(t / "a/status.json", R"({"status": "diverged"})");
  EXPECT_EQ(read(t / "a").status, "diverged");
  // A result.json without a status is finished (it is written last).
  write(t / "b/run.json", "{}");
  write(t / "b/result.json", R"({"test": {"relations": {"micro": {"f1": 0.5}}}})");
  EXPECT_EQ(read(t / "b").status, "completed");
  // Completed by status.json, but its output is gone: missing, not completed and empty.
  write(t / "c/run.json", "{}");
  write(t / "c/status.json", R"({"status": "completed", "final": {"test_mse": 0.5}})");
  EXPECT_EQ(read(t / "c").status, "missing");
  write(t / "c/bench.json", "{}");  // a benchmark run's output
  EXPECT_EQ(read(t / "c").status, "completed");
  // Interrupted by the sweep, then finished (resumed by hand): the result says so, as
  // `mare sweep` reads it; a failed or crashed attempt stays what status.json says.
  write(t / "e/run.json", "{}");
  write(t / "e/status.json", R"({"status": "interrupted"})");
  write(t / "e/result.json", R"({"status": "completed", "final": {"test_mse": 0.5}})");
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

// A completed run's files that no run writes are errors naming the file and the value, for
// every kind of impossibility: a score outside [0, 1], a negative or fractional count, a
// number written as text, no test score at all, a best step after the last, more correct
// than gold; metrics.jsonl's repeated, reordered or impossible steps; timing.json's
// negative seconds.
TEST(RunFiles, ValuesNoRunCanHaveAreErrorsNamingTheFileAndValue) {
  test::TempDir t;
  write(t / "r/run.json", "{}");
  const auto result_error = [&](const std::string& result) {
    write(t / "r/result.json", result);
    return error_of(t / "r");
  };
  const std::vector<std::pair<std::string, std::string>> results = {
      {R"({"test": {"relations": {"micro": {"f1": 7.5}}}})",
       R"("test.relations.micro.f1": expected a value in [0, 1], found 7.5)"},
      {R"({"test": {"relations": {"micro": {"f1": 0.5, "precision": -3}}}})",
       R"("test.relations.micro.precision": expected a value in [0, 1], found -3)"},
      {R"({"test": {"official": {"f1": 0.5}}, "test_references": {"majority_f1": 1.5}})",
       R"("test_references.majority_f1": expected a value in [0, 1])"},
      {R"({"final": {"test_mse": -0.1}})", R"("final.test_mse": expected a value >= 0)"},
      {R"({"final": {"test_mse": 0.1}, "steps": 2.5})",
       R"("steps": expected a whole number >= 0 (a count), found 2.5)"},
      {R"({"final": {"test_mse": 0.1}, "parameters": -8})",
       R"("parameters": expected a whole number >= 0 (a count), found -8)"},
      {R"({"final": {"test_mse": 0.1, "train_mse": "NaN"}})",
       R"("final.train_mse" (train_mse) of a completed run, found "NaN")"},
      {R"({"final": {"test_mse": 0.1, "note": "-Infinity"}})",
       R"("final.note": expected a number, found "-Infinity")"},
      {R"({"status": "completed", "steps": 10})", "expected a test score of a completed run"},
      {R"({"final": {"test_mse": 0.1}, "steps": 10, "best_step": 20})",
       R"("best_step": expected at most "steps" (10), found 20)"},
      {R"({"test": {"relations": {"micro": {"f1": 0.5, "correct": 5, "gold": 4}}}})",
       R"("test.relations.micro.correct": expected at most "gold" (4), found 5)"},
  };
  for (const auto& [result, why] : results) {
    const std::string e = result_error(result);
    EXPECT_NE(e.find((t / "r/result.json").string() + ": "), std::string::npos) << result << e;
    EXPECT_NE(e.find(why), std::string::npos) << result << "\n" << e;
  }
  // What is not a completed run's is not held to it: a diverged run may have no score.
  EXPECT_EQ(result_error(R"({"status": "diverged", "steps": 3})"), "(no error)");

  // The series, read with_series as `mare report` reads it.
  write(t / "r/result.json", R"({"final": {"test_mse": 0.1}, "steps": 10})");
  const auto series_error = [&](const std::string& name, const std::string& text) {
    write(t / "r" / name, text);
    try {
      read_run_files<Error>(t / "r", /*with_series=*/true);
    } catch (const Error& e) {
      fs::remove(t / "r" / name);
      return std::string(e.what());
    }
    fs::remove(t / "r" / name);
    return std::string("(no error)");
  };
  EXPECT_EQ(series_error("metrics.jsonl", "{\"step\": 5}\n{\"step\": 10}\n"), "(no error)");
  const std::vector<std::pair<std::string, std::string>> series = {
      {"{\"step\": 5}\n{\"step\": 5}\n",
       R"(line 2: "step": expected more than the line before's (5), found 5 (a repeated)"},
      {"{\"step\": 5}\n{\"step\": 3}\n", "line 2: \"step\": expected more than"},
      {"{\"step\": 1000}\n", R"(line 1: "step": expected at most the run's steps (10))"},
      {"{\"step\": 1e18}\n", R"(line 1: "step": expected a whole number >= 0 (a count))"},
      {"{\"step\": 1.5}\n", R"(line 1: "step": expected a whole number >= 0)"},
      {"{\"epoch\": 2}\n{\"epoch\": 1}\n", "line 2: \"epoch\": expected more than"},
      {"{\"step\": 5, \"valid_f1\": 1.01}\n",
       R"(line 1: "valid_f1": expected a value in [0, 1], found 1.01)"},
  };
  for (const auto& [text, why] : series) {
    const std::string e = series_error("metrics.jsonl", text);
    EXPECT_NE(e.find((t / "r/metrics.jsonl").string() + ": " + why), std::string::npos)
        << text << "\n"
        << e;
  }
  const std::string e = series_error("timing.json", R"({"wall_seconds": -1, "steps": 10})");
  EXPECT_NE(e.find((t / "r/timing.json").string() + R"(: "wall_seconds": expected a value >= 0)"),
            std::string::npos)
      << e;
}

TEST(RunFiles, ALegacyRunsCellAndSeed) {
  test::TempDir t;
  EXPECT_EQ(legacy_cell(t / "r1_grpu_b100/seed3"), "r1_grpu_b100");
  EXPECT_EQ(legacy_cell(t / "r1_grpu_b100/seed3-0a1b2c3d"), "r1_grpu_b100");
  EXPECT_EQ(legacy_cell(t / "bran-synth-cdr-seed1"), "bran-synth-cdr");
  EXPECT_EQ(legacy_cell(t / "bran-synth-cdr-seed1/"), "bran-synth-cdr");
  EXPECT_EQ(legacy_cell(t / "mlp-xor"), "mlp-xor");
  write(t / "m/manifest.json", R"({"seed": 4, "config": {"task": "addition"}})");
  write(t / "m/result.json", R"({"seed": 9, "final": {"test_mse": 0.5}})");
  EXPECT_EQ(legacy_seed(read(t / "m")), 4);
  EXPECT_EQ(legacy_config(read(t / "m"))["task"], "addition");
  write(t / "r/manifest.json", R"({"config": "not an object"})");
  write(t / "r/result.json", R"({"seed": 9, "final": {"test_mse": 0.5}})");
  EXPECT_EQ(legacy_seed(read(t / "r")), 9);  // the result's when the manifest has none
  EXPECT_TRUE(legacy_config(read(t / "r")).empty());
  write(t / "n/manifest.json", "{}");
  write(t / "n/result.json", kScored);
  EXPECT_FALSE(legacy_seed(read(t / "n")).has_value());
}

}  // namespace
}  // namespace mare::stats
