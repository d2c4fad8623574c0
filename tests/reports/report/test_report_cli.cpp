// `mare report` as a user runs it: exit status, what it prints, the files it writes, and
// the error (status 2, the file named) on malformed input.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli_binary.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int run(const mare::test::TempDir& dir, const std::string& args) {
  const std::string cmd = quoted(::mare::test::cli_binary()) + " " + args + " >" +
                          quoted((dir / "stdout").string()) + " 2>" +
                          quoted((dir / "stderr").string());
  const int raw = std::system(cmd.c_str());
  return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

fs::path fixtures() {
  const char* env = std::getenv("MARE_SOURCE_DIR");
  return (env && *env ? fs::path(env) : fs::path(MARE_TEST_SOURCE_DIR)) /
         "tests/reports/fixtures/results";
}

}  // namespace

TEST(ReportCli, WritesTablesAndIndex) {
  mare::test::TempDir dir("report_cli");
  const fs::path out = dir / "rep";
  ASSERT_EQ(run(dir, "report " + quoted(fixtures().string()) + " --out " + quoted(out.string()) +
                         " --no-figures"),
            0)
      << slurp(dir / "stderr");
  const std::string said = slurp(dir / "stdout");
  EXPECT_NE(said.find("22 runs, 2 benchmarks, 1 corpus statistics"), std::string::npos) << said;
  EXPECT_NE(said.find("table4.10: not made: no CTD relation runs"), std::string::npos) << said;
  for (const char* f : {"index.md", "index.html", "tables/table4.7.tex", "tables/table5.1.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
}

TEST(ReportCli, MalformedInputExitsTwoNamingTheFile) {
  mare::test::TempDir dir("report_cli_bad");
  const fs::path run_dir = dir / "runs/a/seed1";
  fs::create_directories(run_dir);
  std::ofstream(run_dir / "manifest.json") << "{\"config\": {}}";
  std::ofstream(run_dir / "result.json") << "{\"status\": ";
  EXPECT_EQ(run(dir, "report " + quoted((dir / "runs").string()) + " --out " +
                         quoted((dir / "rep").string())),
            2);
  const std::string err = slurp(dir / "stderr");
  EXPECT_NE(err.find("mare: error: " + (run_dir / "result.json").string() + ": not valid JSON"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(dir / "rep/index.md"));
  EXPECT_NE(run(dir, "report " + quoted(fixtures().string()) + " --out " +
                         quoted((dir / "rep").string()) + " --only table9.9"),
            0);
}
