// `mare report` as a user runs it: exit status, what it prints, the files it writes, and
// the error (status 2, the file named) on malformed input.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// `mare ARGS` with stdout and stderr into `dir`; in `cwd` when given.
int run(const mare::test::TempDir& dir, const std::string& args, const fs::path& cwd = {}) {
  const std::string cmd = (cwd.empty() ? "" : "cd " + quoted(cwd.string()) + " && ") +
                          quoted(::mare::test::cli_binary()) + " " + args + " >" +
                          quoted((dir / "stdout").string()) + " 2>" +
                          quoted((dir / "stderr").string());
  const int raw = std::system(cmd.c_str());
  return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

fs::path source_dir() {
  const char* env = std::getenv("MARE_SOURCE_DIR");
  return env && *env ? fs::path(env) : fs::path(MARE_TEST_SOURCE_DIR);
}

fs::path fixtures() {
  return source_dir() / "tests/reports/fixtures/results";
}

bool have_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / "gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

// The files under `root`, relative.
std::set<std::string> files_under(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), root).string());
  return out;
}

// Two gnuplot data files with the same numbers to 1e-12 (the last digit of a
// standard deviation depends on whether the compiler fused a multiply-add).
void expect_same_numbers(const fs::path& a, const fs::path& b) {
  std::istringstream x(slurp(a)), y(slurp(b));
  std::string p, q;
  int line = 0;
  while (true) {
    const bool more_x = static_cast<bool>(std::getline(x, p)),
               more_y = static_cast<bool>(std::getline(y, q));
    ASSERT_EQ(more_x, more_y) << a << ": a line count differs";
    if (!more_x) break;
    ++line;
    std::istringstream u(p), v(q);
    std::string s, t;
    while (u >> s) {
      ASSERT_TRUE(static_cast<bool>(v >> t)) << a << ":" << line;
      char* end_s = nullptr;
      char* end_t = nullptr;
      const double ds = std::strtod(s.c_str(), &end_s), dt = std::strtod(t.c_str(), &end_t);
      if (*end_s || *end_t)
        EXPECT_EQ(s, t) << a << ":" << line;
      else
        EXPECT_NEAR(ds, dt, 1e-12 * std::max(1.0, std::fabs(ds))) << a << ":" << line;
    }
    EXPECT_FALSE(static_cast<bool>(v >> t)) << a << ":" << line;
  }
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

// Google Benchmark output (kernels/bench/bench_ops) becomes the ops table: each
// benchmark's 1-thread time beside its time on the most threads, in milliseconds whatever
// the file's unit, aggregates left out; without such a file the table says why.
TEST(ReportCli, GoogleBenchmarkOutputBecomesTheOpsTable) {
  mare::test::TempDir dir("report_gbench");
  std::ofstream(dir / "ops.json") << R"({
  "context": {"date": "2026-11-29T03:00:00+00:00", "host_name": "h", "mare_threads": "4",
              "mare_device": "cpu"},
  "benchmarks": [
    {"name": "BM_A/d:8/threads:1", "run_type": "iteration", "real_time": 2000, "time_unit": "us"},
    {"name": "BM_A/d:8/threads:2", "run_type": "iteration", "real_time": 1.25, "time_unit": "ms"},
    {"name": "BM_A/d:8/threads:4", "run_type": "iteration", "real_time": 500000, "time_unit": "ns"},
    {"name": "BM_A/d:8/threads:4_mean", "run_type": "aggregate", "real_time": 9, "time_unit": "s"},
    {"name": "BM_B/threads:1", "run_type": "iteration", "real_time": 0.003, "time_unit": "s"}
  ]})";
  const fs::path out = dir / "rep";
  ASSERT_EQ(run(dir, "report " + quoted((dir / "ops.json").string()) + " --out " +
                         quoted(out.string()) + " --only ops"),
            0)
      << slurp(dir / "stderr");
  EXPECT_EQ(slurp(out / "tables" / "ops.csv"),
            "device,benchmark,1 thread (ms),threads,K threads (ms),speedup\n"
            "cpu,BM_A/d:8,2,4,0.5,4.00\n"
            "cpu,BM_B,3,—,—,—\n");
  ASSERT_EQ(run(dir, "report " + quoted(fixtures().string()) + " --out " +
                         quoted((dir / "none").string()) + " --only ops --no-figures"),
            0)
      << slurp(dir / "stderr");
  EXPECT_NE(slurp(dir / "stdout").find("ops: not made: no Google Benchmark output"),
            std::string::npos)
      << slurp(dir / "stdout");
}

// A figure whose inputs are absent is named with the reason, as a table is.
TEST(ReportCli, SaysWhyAFigureWasNotDrawn) {
  mare::test::TempDir dir("report_cli_fig");
  ASSERT_EQ(run(dir, "report " + quoted(fixtures().string()) + " --out " +
                         quoted((dir / "rep").string()) + " --only fig4.2"),
            0)
      << slurp(dir / "stderr");
  const std::string said = slurp(dir / "stdout");
  EXPECT_NE(said.find("0 of 1 figures"), std::string::npos) << said;
  EXPECT_NE(said.find("fig4.2: not drawn: no `mare inspect memory` output directory"),
            std::string::npos)
      << said;
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

namespace {

// A report regenerated into `out` against the committed one: without gnuplot, the table's
// Markdown, CSV and LaTeX; with it, the same files, figure data to 1e-12
// (expect_same_numbers) and every other file but the images the same bytes.
void expect_regenerated(const fs::path& committed, const fs::path& out, bool figures,
                        const std::string& table) {
  if (!figures) {
    for (const char* ext : {".md", ".csv", ".tex"}) {
      const std::string t = "tables/" + table + ext;
      EXPECT_EQ(slurp(out / t), slurp(committed / t)) << t;
    }
    return;
  }
  EXPECT_EQ(files_under(out), files_under(committed));
  for (const std::string& f : files_under(committed)) {
    const std::string ext = fs::path(f).extension().string();
    if (ext == ".dat") {
      expect_same_numbers(committed / f, out / f);
    } else if (ext != ".png" && ext != ".svg") {  // rendering depends on gnuplot's version
      EXPECT_EQ(slurp(out / f), slurp(committed / f)) << f;
    }
  }
}

// A committed report is what its README's command makes from the committed runs today:
// `mare report INPUTS --out … --only ONLY --title TITLE` run from the repository's root (the
// index names the inputs as given), compared by expect_regenerated on TABLE. Returns
// whether the figures were compared (gnuplot is installed).
bool regenerates_committed(const std::string& committed, const std::string& inputs,
                           const std::string& only, const std::string& title,
                           const std::string& table) {
  mare::test::TempDir dir("report_committed");
  const fs::path out = dir / "report";
  const bool figures = have_gnuplot();
  EXPECT_EQ(run(dir,
                "report " + inputs + " --out " + quoted(out.string()) + " --only " + only +
                    " --title " + quoted(title) + (figures ? "" : " --no-figures"),
                source_dir()),
            0)
      << slurp(dir / "stderr");
  expect_regenerated(source_dir() / committed, out, figures, table);
  return figures;
}

constexpr const char* kNoGnuplot =
    "gnuplot is not installed: the tables match; the figures were not compared";

}  // namespace

// reports/grpu/report/: the same files, the same tables and index bytes, the same figure
// data (to 1e-12: see expect_same_numbers) and scripts. Without gnuplot, the tables alone
// (--no-figures).
TEST(ReportCli, TheCommittedGrpuReportIsItsRegeneration) {
  if (!regenerates_committed(
          "reports/grpu/report", "reports/grpu/runs", "table5.1,fig5.1,fig5.2,fig5.3,fig5.4,fig5.5",
          "GRPU on the dissertation's sequence tasks: Table 5.1, Figs. 5.1-5.5", "table5.1"))
    GTEST_SKIP() << kNoGnuplot;
}

// reports/learning/report/ (reports/learning/README.md's command).
TEST(ReportCli, TheCommittedLearningReportIsItsRegeneration) {
  std::string inputs;
  for (const char* r : {"runs", "ctd-runs", "ctd-long-runs", "ctd-margin-runs", "ctd-gpu-runs",
                        "semeval-runs", "semeval-emb-runs"})
    inputs += std::string(inputs.empty() ? "" : " ") + "reports/learning/" + r;
  if (!regenerates_committed("reports/learning/report", inputs, "curves,ceiling",
                             "Learning to the ceiling: synth-cdr, synth-ctd and synth-semeval",
                             "ceiling"))
    GTEST_SKIP() << kNoGnuplot;
}

// reports/learning/real-report/: the real-corpus curves.
TEST(ReportCli, TheCommittedRealCorpusLearningReportIsItsRegeneration) {
  if (!regenerates_committed(
          "reports/learning/real-report",
          "reports/learning/real-cdr-runs reports/learning/real-semeval-runs", "curves,ceiling",
          "Learning curves on the real corpora: BioCreative V CDR and SemEval 2018 Task 7",
          "ceiling"))
    GTEST_SKIP() << kNoGnuplot;
}

// --paper DIR reads the published tables from DIR instead of the compiled-in copies:
// a changed published value shows in the table; a missing folder is an error naming it.
TEST(ReportCli, PaperFolderGivesThePublishedValues) {
  mare::test::TempDir dir("report_paper");
  const fs::path paper = dir / "paper";
  fs::create_directories(paper);
  for (const auto& e : fs::directory_iterator(source_dir() / "reports/paper"))
    if (e.path().extension() == ".csv") fs::copy_file(e.path(), paper / e.path().filename());
  std::string grpu = slurp(paper / "table_5_1_grpu.csv");
  const size_t at = grpu.find(",0.759");
  ASSERT_NE(at, std::string::npos);
  grpu.replace(at, 6, ",0.123456");
  std::ofstream(paper / "table_5_1_grpu.csv", std::ios::trunc) << grpu;
  const fs::path out = dir / "rep";
  ASSERT_EQ(run(dir, "report " + quoted((source_dir() / "reports/grpu/runs").string()) + " --out " +
                         quoted(out.string()) + " --only table5.1 --no-figures --paper " +
                         quoted(paper.string())),
            0)
      << slurp(dir / "stderr");
  const std::string md = slurp(out / "tables/table5.1.md");
  EXPECT_NE(md.find("0.123456"), std::string::npos) << md;
  EXPECT_EQ(md.find("| 0.759 |"), std::string::npos) << md;
  EXPECT_EQ(run(dir, "report " + quoted(fixtures().string()) + " --out " +
                         quoted((dir / "rep2").string()) + " --no-figures --paper " +
                         quoted((dir / "no_such_paper").string())),
            2);
  EXPECT_NE(slurp(dir / "stderr").find("no_such_paper: not a directory"), std::string::npos)
      << slurp(dir / "stderr");
  // A folder without one of the tables: named in that folder (it named reports/paper/).
  fs::remove(paper / "table_5_1_grpu.csv");
  EXPECT_EQ(run(dir, "report " + quoted((source_dir() / "reports/grpu/runs").string()) + " --out " +
                         quoted((dir / "rep3").string()) +
                         " --only table5.1 --no-figures --paper " + quoted(paper.string())),
            2);
  EXPECT_NE(slurp(dir / "stderr")
                .find((paper / "table_5_1_grpu.csv").string() + ": published table not found"),
            std::string::npos)
      << slurp(dir / "stderr");
}
