// Golden tests of `mare report`'s tables and index on tests/reports/fixtures/results/: every
// expected cell below was worked out by hand from the fixture values (make_fixtures.py) and
// the published CSVs, not copied from a report.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "reports/src/index.h"
#include "reports/src/inputs.h"
#include "reports/src/report.h"
#include "reports/src/tables.h"
#include "reports/src/util.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace mare::report;

namespace {

fs::path source_dir() {
  const char* env = std::getenv("MARE_SOURCE_DIR");
  return env && *env ? fs::path(env) : fs::path(MARE_TEST_SOURCE_DIR);
}

fs::path fixtures() {
  return source_dir() / "tests/reports/fixtures/results";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in) << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The report of every fixture, tables and index only (figures are tests/reports/figures').
struct Report {
  mare::test::TempDir dir{"report"};
  ReportSummary summary;
  Report() {
    ReportOptions o;
    o.inputs = {fixtures()};
    o.out = dir.path() / "out";
    o.figures = false;
    summary = write_report(o);
  }
  std::string table(const std::string& id) const {
    return read(dir.path() / "out" / "tables" / (id + ".md"));
  }
};

const Report& report() {
  static const Report r;
  return r;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

std::string error_of(const std::vector<fs::path>& paths) {
  try {
    load_inputs(paths);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// The message of the error E that write_report throws for these inputs (tables only,
// into out), or "(no error)".
template <class E>
std::string report_error_of(const std::vector<fs::path>& inputs, const fs::path& out) {
  ReportOptions o;
  o.inputs = inputs;
  o.out = out;
  o.figures = false;
  try {
    write_report(o);
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ReportInputs, FindsEveryKindOfInput) {
  const ReportInputs in = load_inputs({fixtures()});
  // 15 + 1 (diverged) sweep runs, 1 legacy CDR run, 3 legacy GRPU runs, 2 collect rows.
  EXPECT_EQ(in.runs.size(), 22u);
  ASSERT_EQ(in.benchmarks.size(), 2u);
  EXPECT_EQ(in.benchmarks[0].kind, "allocation");
  EXPECT_EQ(in.benchmarks[1].kind, "iteration");
  EXPECT_EQ(in.corpora.size(), 1u);
  // Legacy runs are placed by their manifest's configuration and take its seed.
  int legacy = 0, grpu = 0, cdr = 0;
  std::set<int64_t> grpu_seeds;
  for (const RunRecord& r : in.runs) {
    legacy += r.legacy;
    if (r.legacy && r.table == "5.1") {
      ++grpu;
      EXPECT_EQ(r.cell, "r3_grpu_b10");  // <cell>/seed<k>/
      EXPECT_EQ(param(r, "batch"), "10");
      grpu_seeds.insert(r.seed);
    }
    if (r.legacy && r.table == "4.5") {
      ++cdr;
      EXPECT_EQ(r.cell, "bran-synth-cdr");  // trailing -seed1 cut
      EXPECT_EQ(r.seed, 1);
    }
  }
  EXPECT_EQ(legacy, 4);
  EXPECT_EQ(grpu, 3);
  EXPECT_EQ(cdr, 1);
  EXPECT_EQ(grpu_seeds, (std::set<int64_t>{1, 2, 3}));
}

TEST(ReportInputs, TheSameRunFoundTwiceIsKeptOnce) {
  const ReportInputs in = load_inputs({fixtures() / "sweep46", fixtures() / "sweep46"});
  EXPECT_EQ(in.runs.size(), 16u);
}

// Below a sweep root, only the runs its sweep.json plans are the report's (the same rule
// as `mare collect`); the rest are counted in a note.
TEST(ReportInputs, RunsNotInTheRootsSweepJsonAreLeftOutWithANote) {
  mare::test::TempDir tmp("report_plan");
  const fs::path root = tmp / "sweep46";
  fs::copy(fixtures() / "sweep46", root, fs::copy_options::recursive);
  nlohmann::json runs = nlohmann::json::array();
  std::size_t all = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().filename() == "run.json" && all++ > 0) {  // the first found is left out
      runs.push_back({{"dir", fs::relative(e.path().parent_path(), root).string()}});
    }
  }
  { std::ofstream(root / "sweep.json") << nlohmann::json{{"runs", runs}}.dump(); }
  const ReportInputs in = load_inputs({root});
  EXPECT_EQ(in.runs.size(), all - 1);
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_NE(in.notes[0].find("1 run directory not in its sweep.json"), std::string::npos)
      << in.notes[0];
  // The fixture tree itself has no sweep.json: every run is taken.
  EXPECT_EQ(load_inputs({fixtures() / "sweep46"}).runs.size(), all);
  { std::ofstream(root / "sweep.json") << "{\"runs\": [{\"cell\": 1}]}"; }
  try {
    load_inputs({root});
    ADD_FAILURE() << "a malformed sweep.json was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep.json: expected every run"), std::string::npos)
        << e.what();
  }
}

// Provenance lists the distinct days the runs started (manifest.json "date", UTC ISO 8601),
// and says "not recorded" for runs whose manifest has none.
TEST(ReportProvenance, DatesAreTheDistinctDaysOfTheManifests) {
  RunRecord a, b, c, d;
  a.manifest = {{"date", "2026-11-24T06:40:00Z"}};
  b.manifest = {{"date", "2026-11-24T23:59:59Z"}};
  c.manifest = {{"date", "2026-11-25T00:00:01Z"}};
  const nlohmann::json p = provenance_of(std::vector<const RunRecord*>{&a, &b, &c});
  EXPECT_EQ(p["dates"], nlohmann::json::array({"2026-11-24", "2026-11-25"})) << p.dump();
  d.manifest = nlohmann::json::object();
  EXPECT_EQ(provenance_of(std::vector<const RunRecord*>{&d})["dates"],
            nlohmann::json::array({"not recorded"}));
}

TEST(ReportInputs, ALegacyRunInATreeAndInACollectCsvIsKeptOnce) {
  mare::test::TempDir tmp("report_dup");
  const fs::path run = fixtures() / "cdr/bran-synth-cdr-seed1";
  write_file_atomic(tmp / "c.csv",
                    "sweep,table,profile,cell,seed,id,status,test_f1,dir\n"
                    ",,,bran-synth-cdr,1,1234abcd1234abcd,completed,0.5," +
                        run.string() + "\n");
  EXPECT_EQ(load_inputs({run, tmp / "c.csv"}).runs.size(), 1u);
  EXPECT_EQ(load_inputs({tmp / "c.csv"}).runs.size(), 1u);
}

TEST(ReportInputs, CollectRowsKeepQuotedFieldsAndNumbers) {
  const ReportInputs in = load_inputs({fixtures() / "semeval.csv"});
  ASSERT_EQ(in.runs.size(), 2u);
  EXPECT_EQ(in.runs[0].params["_dir"], "runs/semeval, 1");
  EXPECT_DOUBLE_EQ(in.runs[1].values.at("test_macro_f1"), 0.72);
  EXPECT_EQ(data_kind(in.runs[0]), "synth-semeval");
}

TEST(ReportInputs, MalformedInputNamesTheFile) {
  mare::test::TempDir tmp("report_bad");
  // A run whose result.json is cut short.
  const fs::path run = tmp / "sweep/cell/seed1-00000001";
  fs::create_directories(run);
  write_file_atomic(run / "run.json", R"({"table": "4.6", "cell": "cell", "seed": 1})");
  write_file_atomic(run / "result.json", R"({"status": "compl)");
  std::string e = error_of({tmp / "sweep"});
  EXPECT_NE(e.find((run / "result.json").string()), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;

  // run.json with a seed that is not an integer.
  write_file_atomic(run / "result.json", R"({"status": "completed", "final": {"test_mse": 0.5}})");
  write_file_atomic(run / "run.json", R"({"cell": "cell", "seed": "one"})");
  e = error_of({tmp / "sweep"});
  EXPECT_NE(e.find((run / "run.json").string() + ": \"seed\" must be an integer"),
            std::string::npos)
      << e;

  // A completed run whose metric is null, "NaN" or text: the file and the field (the
  // table was made from the other runs, status 0, where collect refuses).
  write_file_atomic(run / "run.json", R"({"cell": "cell", "seed": 1})");
  for (const char* bad : {"null", "\"NaN\"", "\"abc\""}) {
    write_file_atomic(
        run / "result.json",
        std::string(R"({"status": "completed", "test": {"relations": {"micro": {"f1": )") + bad +
            "}}}}");
    e = error_of({tmp / "sweep"});
    EXPECT_NE(e.find((run / "result.json").string() +
                     ": expected a finite number at \"test.relations.micro.f1\" (test_f1)"),
              std::string::npos)
        << bad << ": " << e;
  }
  write_file_atomic(run / "result.json", R"({"status": "completed", "final": {"test_mse": 0.5}})");

  // A metrics line that is not JSON: file and line.
  write_file_atomic(run / "run.json", R"({"cell": "cell", "seed": 1})");
  write_file_atomic(run / "metrics.jsonl", "{\"step\": 1}\n{\"step\": \n");
  e = error_of({tmp / "sweep"});
  EXPECT_NE(e.find((run / "metrics.jsonl").string() + ":2:"), std::string::npos) << e;

  // A collect CSV with a bad number: file and line.
  write_file_atomic(tmp / "c.csv",
                    "sweep,table,profile,cell,seed,id,status,test_f1,dir\n"
                    "s,4.6,smoke,a,1,x,completed,0.5,d\n"
                    "s,4.6,smoke,a,2,y,completed,0.5x,d\n");
  e = error_of({tmp / "c.csv"});
  EXPECT_NE(e.find((tmp / "c.csv").string() + ":3: column test_f1"), std::string::npos) << e;

  // A CSV that is not collect's, a JSON that is no input, a path that does not exist.
  write_file_atomic(tmp / "other.csv", "a,b\n1,2\n");
  e = error_of({tmp / "other.csv"});
  EXPECT_NE(e.find((tmp / "other.csv").string() + ":1: not a `mare collect` table"),
            std::string::npos)
      << e;
  write_file_atomic(tmp / "x.json", R"({"hello": 1})");
  e = error_of({tmp / "x.json"});
  EXPECT_NE(e.find((tmp / "x.json").string() + ": not a report input"), std::string::npos) << e;
  e = error_of({tmp / "absent"});
  EXPECT_NE(e.find((tmp / "absent").string() + ": no such file"), std::string::npos) << e;

  // An allocation benchmark whose rows lack a field fails when its table is built.
  write_file_atomic(tmp / "alloc.json", R"({"benchmark": "allocation", "rows": [{"mem": 4}]})");
  e = report_error_of<InputError>({tmp / "alloc.json"}, tmp / "out");
  EXPECT_NE(e.find((tmp / "alloc.json").string()), std::string::npos) << e;
}

TEST(ReportTables, AblationBesideThePublishedValues) {
  const std::string t = report().table("table4.6");
  // UTRE-CPD test F1 70 72 71 69 73 -> 71.0 ± 1.58; valid = test + 1; train = test + 8 ->
  // 79.0 ± 1.58; published 78.7 / 73.8 / 72.9. The other cells' runs hold no train F1.
  EXPECT_TRUE(has_line(
      t,
      "| UTRE-CPD | 0 | 1 | 1 | 1 | 78.7 | 79.0 ± 1.6 (5) | +0.3 | 73.8 | 72.0 ± 1.6 (5) | -1.8 | "
      "72.9 | 71.0 ± 1.6 (5) | -1.9 | synth-cdr:data |"))
      << t;
  // NTCRE-CPD 74.1 75.2 73.3 72.4 76.5 -> 74.3 ± 1.60 (the diverged seed 6 not counted).
  EXPECT_TRUE(
      has_line(t,
               "| NTCRE-CPD | 1 | 1 | 1 | 1 | 81.9 | — | — | 74.8 | 75.3 ± 1.6 (5) | +0.5 | "
               "74.1 | 74.3 ± 1.6 (5) | +0.2 | synth-cdr:data |"))
      << t;
  EXPECT_TRUE(has_line(t, "| 9 | 1 | 0 | 0 | 1 | 81.3 | — | — | 72.9 | — | — | 72.6 | — | — | — |"))
      << t;
  EXPECT_NE(t.find("Not counted (did not complete): 1 diverged."), std::string::npos);
  EXPECT_NE(t.find("profile smoke; seeds 1, 2, 3, 4, 5, 6; device cpu; commit 0123456789ab"),
            std::string::npos)
      << t;
}

// A run on the real corpus and one on a synthetic stand-in of the same model: the real
// one stands beside the published row, the other gets a row of its own named by its
// corpus, and each row names its data.
TEST(ReportTables, RunsOnTheRealCorpusStandBesideThePublishedValues) {
  mare::test::TempDir tmp("report_corpora");
  auto run = [&](const std::string& name, const std::string& data, const std::string& result) {
    const fs::path d = tmp.path() / "runs" / name;
    fs::create_directories(d);
    std::ofstream(d / "manifest.json") << R"({"command": "train", "seed": 1, "config": {"data": ")"
                                       << data << R"(", "model": "bran", "seed": 1}})";
    std::ofstream(d / "result.json") << result;
  };
  run("bran-real", "cdr",
      R"({"status": "completed", "seed": 1, "test": {"official": {"f1": 0.6, "precision": 0.5,
          "recall": 0.75}, "relations": {"micro": {"f1": 0.1, "precision": 0.1, "recall": 0.1}}}})");
  run("bran-synth", "synth-cdr:/x",
      R"({"status": "completed", "seed": 1, "test": {"relations": {"micro": {"f1": 0.9,
          "precision": 0.9, "recall": 0.9}}}})");
  ReportOptions o;
  o.inputs = {tmp.path() / "runs"};
  o.out = tmp.path() / "out";
  o.figures = false;
  write_report(o);
  const std::string t = read(tmp.path() / "out" / "tables" / "table4.5.md");
  // The official score, not the pairs' micro F1, is the real run's.
  EXPECT_TRUE(has_line(t,
                       "| BRAN Verga et al. 2018 | 55.6 | 50.0 (1) | 70.8 | 75.0 (1) | 62.1 | "
                       "60.0 (1) | -2.1 | cdr |"))
      << t;
  EXPECT_TRUE(has_line(t,
                       "| BRAN [synth-cdr] (ours only) | — | 90.0 (1) | — | 90.0 (1) | — | "
                       "90.0 (1) | — | synth-cdr:/x |"))
      << t;
}

TEST(ReportTables, WilcoxonCellsPairedBySeed) {
  const std::string t = report().table("table4.7");
  // UTRE-CPD - NTCRE-CPD: -4.1 -3.2 -2.3 -3.4 -3.5, no ties: V = 0, exact p = 2/32; the
  // median of the 15 Walsh averages is -3.35. UTRE-CPD - BRAN: 10 11 9 6 9 (a tie): V = 15,
  // normal approximation with correction z = 7/sqrt(13.625), p = 0.05791. Holm over the three:
  // 3 * 0.05791 = 0.1737 for the smallest, and no later one below it.
  EXPECT_TRUE(has_line(t,
                       "| UTRE-CPD | NTCRE-CPD | 5 | 71.00 | 74.30 | -3.35 | 0 | 0.0625 | 0.1737 "
                       "| 0.07652 |"))
      << t;
  EXPECT_TRUE(has_line(t,
                       "| UTRE-CPD | BRAN | 5 | 71.00 | 62.00 | +9.00 | 15 | 0.05791 | 0.1737 | "
                       "0.00038 |"))
      << t;
  EXPECT_TRUE(has_line(t,
                       "| NTCRE-CPD | BRAN | 5 | 74.30 | 62.00 | +12.50 | 15 | 0.0625 | 0.1737 "
                       "| 0.00052 |"))
      << t;
}

TEST(ReportTables, RelationAndSemEvalAndNer) {
  // Legacy BRAN run: P 0.5, R 0.7, F1 7/12; published BRAN 55.6 70.8 62.1.
  EXPECT_TRUE(has_line(report().table("table4.5"),
                       "| BRAN Verga et al. 2018 | 55.6 | 50.0 (1) | 70.8 | 70.0 (1) | 62.1 | "
                       "58.3 (1) | -3.8 | synth-cdr:/data/cdr |"));
  // Collect rows 0.70 and 0.72 (subtask 1.1 from the data path): 71.0 ± 1.41.
  EXPECT_TRUE(has_line(report().table("table4.12"),
                       "| NTCRE-CPD | 75.7 ± 0.3 | 71.0 ± 1.4 (2) | -4.7 | 83.6 | — | — | "
                       "synth-semeval:d/subtask1.1 |"));
  EXPECT_TRUE(has_line(report().table("tableB.1"),
                       "| UTRE-CPD | Disease | 75.0 ± 0.0 (5) | 65.0 ± 0.0 (5) | 70.0 ± 0.0 (5) | "
                       "69.70 | 67.94 | 68.80 ± 0.60 | +1.2 |"));
  const std::string cdr = report().table("table4.4");
  EXPECT_TRUE(has_line(cdr, "| synth-cdr | train | 100 | 97 | 757 | — | 500 | 1038 | 4280 |"))
      << cdr;
  EXPECT_TRUE(has_line(cdr, "| synth-cdr | test | 100 | 102 | 815 | — | 500 | 1066 | 4270 |"))
      << cdr;
}

TEST(ReportTables, Benchmarks) {
  // sorted 0.02 s, parallel 0.005 s per call -> 2 and 0.5 s per 100, speedup 4 vs 3.68.
  const std::string a = report().table("table4.14");
  EXPECT_TRUE(has_line(a, "| cpu | 4 | 1 | 2 | 0.5 | 4.00 | 2.47 | 0.67 | 3.68 | +0.32 |")) << a;
  EXPECT_TRUE(has_line(a, "| cpu | 64 | 10 | 10 | — | — | — | — | — | — |")) << a;
  const std::string i = report().table("table4.15");
  EXPECT_TRUE(has_line(i,
                       "| cpu | UTRE | SemEval2018 | 96 | 32 | 32 | — | 0.110 ± 0.010 (3) | "
                       "0.109 ± 0.011 | +0.001 | — | — |"))
      << i;
  // Published ratio 0.141 / 0.109 = 1.29.
  EXPECT_TRUE(has_line(i,
                       "| cpu | NTCRE | SemEval2018 | 96 | 32 | 32 | sorted | 0.210 ± 0.010 (3) | "
                       "0.141 ± 0.014 | +0.069 | 1.91 | 1.29 |"))
      << i;
}

TEST(ReportTables, GrpuMedianAndRange) {
  const std::string t = report().table("table5.1");
  // train 2e-4 1e-4 3e-4, test 4e-4 3e-4 9e-4; s/epoch means 0.6 0.6 0.5 -> 0.57.
  EXPECT_TRUE(has_line(t,
                       "| GRPU, batch 10, 1000 samples | grpu+prod | 3 | 1000 | 0.0000387 | "
                       "0.0002 [0.0001, 0.0003] | 5.17 | 0.00709 | 0.0004 [0.0003, 0.0009] | "
                       "0.0564 | 0.57 |"))
      << t;
  EXPECT_TRUE(has_line(t,
                       "| GRPU, batch 100, 1000 samples | — | 0 | — | 0.247 | — | — | 0.759 | — "
                       "| — | — |"))
      << t;
}

TEST(ReportTables, CsvHasTheSameCells) {
  const std::string csv = read(report().dir.path() / "out/tables/table4.6.csv");
  const CsvTable t = parse_csv(csv, "table4.6.csv");
  ASSERT_FALSE(t.rows.empty());
  EXPECT_EQ(t.header[0], "config");
  bool found = false;
  for (const auto& row : t.rows)
    if (row[0] == "NTCRE-CPD") {
      found = true;
      EXPECT_EQ(row[12], "74.3 ± 1.6 (5)");
    }
  EXPECT_TRUE(found);
}

TEST(ReportTables, LatexIsBalancedAndEscaped) {
  for (const auto& e : fs::directory_iterator(report().dir.path() / "out/tables")) {
    if (e.path().extension() != ".tex") continue;
    const std::string tex = read(e.path());
    std::vector<std::string> stack;
    static const std::regex env(R"(\\(begin|end)\{([a-z*]+)\})");
    for (auto it = std::sregex_iterator(tex.begin(), tex.end(), env); it != std::sregex_iterator();
         ++it) {
      if ((*it)[1] == "begin") {
        stack.push_back((*it)[2]);
      } else {
        ASSERT_FALSE(stack.empty()) << e.path();
        EXPECT_EQ(stack.back(), (*it)[2]) << e.path();
        stack.pop_back();
      }
    }
    EXPECT_TRUE(stack.empty()) << e.path();
    int depth = 0;
    for (std::size_t i = 0; i < tex.size(); ++i) {
      if (tex[i] == '%' && (i == 0 || tex[i - 1] != '\\')) {  // a comment runs to the line end
        while (i < tex.size() && tex[i] != '\n') ++i;
        continue;
      }
      if (i > 0 && tex[i - 1] == '\\') continue;
      depth += tex[i] == '{';
      depth -= tex[i] == '}';
      ASSERT_GE(depth, 0) << e.path();
    }
    EXPECT_EQ(depth, 0) << e.path();
    for (const char* rule : {"\\toprule", "\\midrule", "\\bottomrule"})
      EXPECT_NE(tex.find(rule), std::string::npos) << e.path();
    EXPECT_EQ(tex.find("±"), std::string::npos) << e.path();
    EXPECT_EQ(tex.find("—"), std::string::npos) << e.path();  // "---"
  }
  EXPECT_EQ(tex_escape("a_b & 50% #1 {x} ~^\\ $ ±"),
            "a\\_b \\& 50\\% \\#1 \\{x\\} \\textasciitilde{}\\textasciicircum{}\\textbackslash{} "
            "\\$ $\\pm$");
}

TEST(ReportIndex, EveryLinkResolvesAndMissingTablesSayWhy) {
  const fs::path out = report().dir.path() / "out";
  const std::string md = read(out / "index.md"), html = read(out / "index.html");
  auto decode = [](const std::string& s) {
    std::string o;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == '%' && i + 2 < s.size()) {
        o += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        o += s[i];
      }
    return o;
  };
  int links = 0;
  static const std::regex md_link(R"(\]\(([^)]+)\))"), html_link(R"((?:href|src)="([^"]+)\")");
  for (const auto& [text, re] : {std::pair{&md, &md_link}, std::pair{&html, &html_link}})
    for (auto it = std::sregex_iterator(text->begin(), text->end(), *re);
         it != std::sregex_iterator(); ++it) {
      ++links;
      EXPECT_TRUE(fs::exists(out / decode((*it)[1]))) << (*it)[1];
    }
  EXPECT_GE(links, 2 * 9 * 3);  // 9 tables made, 3 files each, in both pages
  // Not made: a line that says why, and no empty table file.
  EXPECT_NE(md.find("**Table 4.10: CTD relation extraction per class, test set (%)** — not made: "
                    "no CTD relation runs among the inputs"),
            std::string::npos)
      << md;
  EXPECT_NE(html.find("Not made: no runs of the table 4.13 sweep"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "tables/table4.10.md"));
  int missing = 0;
  for (const Artifact& a : report().summary.tables) missing += !a.missing.empty();
  EXPECT_EQ(missing, 6);  // 4.9 4.10 4.11 4.13 C.1 ops
  // The HTML inlines the tables and escapes their text.
  EXPECT_NE(html.find("<td>74.3 ± 1.6 (5)</td>"), std::string::npos);
}

TEST(ReportIndex, SameInputsSameBytesAndNoTemporaries) {
  mare::test::TempDir again("report_again");
  ReportOptions o;
  o.inputs = {fixtures() / "stats", fixtures() / "sweep46", fixtures() / "bench"};
  o.out = again.path();
  o.figures = false;
  write_report(o);
  o.inputs = {fixtures() / "bench", fixtures() / "sweep46", fixtures() / "stats"};
  o.out = again.path() / "second";
  write_report(o);
  for (const char* f : {"tables/table4.6.md", "tables/table4.7.tex", "tables/table4.14.csv"})
    EXPECT_EQ(read(again.path() / f), read(again.path() / "second" / f)) << f;
  for (const auto& e : fs::recursive_directory_iterator(again.path()))
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  // A table made before and not now is removed with the next report into the directory.
  o.inputs = {fixtures() / "stats"};
  o.out = again.path();
  write_report(o);
  EXPECT_FALSE(fs::exists(again.path() / "tables/table4.6.md"));
  EXPECT_TRUE(fs::exists(again.path() / "tables/table4.4.md"));
}

TEST(ReportPaper, CompiledInCopiesEqualTheFiles) {
  const fs::path dir = source_dir() / "reports/paper";
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") on_disk.insert(e.path().filename().string());
  std::set<std::string> compiled;
  for (const auto& [name, text] : embedded_paper_csvs()) {
    compiled.insert(name);
    EXPECT_EQ(text, read(dir / name)) << name;
  }
  EXPECT_EQ(compiled, on_disk);
  EXPECT_EQ(load_paper(dir).files.size(), on_disk.size());
}

// reports/paper/ holds byte-for-byte copies of ../shared/paper/'s CSVs (reports/paper/
// README.md): every shared CSV has its copy, unchanged. Skips where ../shared is absent.
TEST(ReportPaper, CopiesEqualTheSharedFolder) {
  const fs::path shared = source_dir() / ".." / "shared" / "paper";
  if (!fs::is_directory(shared)) GTEST_SKIP() << shared << " is not here: nothing to compare";
  int compared = 0;
  for (const auto& e : fs::directory_iterator(shared)) {
    if (e.path().extension() != ".csv") continue;
    const fs::path copy = source_dir() / "reports/paper" / e.path().filename();
    ASSERT_TRUE(fs::exists(copy)) << copy << " (a copy of " << e.path() << ") is missing";
    EXPECT_EQ(read(copy), read(e.path())) << copy << " differs from " << e.path();
    ++compared;
  }
  EXPECT_GT(compared, 0) << "no CSV in " << shared;
}

TEST(ReportText, CsvParsingAndNumbers) {
  const CsvTable t = parse_csv("# note\r\na,b\r\n\"x, \"\"y\"\"\",\"line\nbreak\"\r\n\r\n3,4", "t");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][0], "x, \"y\"");
  EXPECT_EQ(t.rows[0][1], "line\nbreak");
  EXPECT_EQ(t.lines[1], 6u);
  EXPECT_THROW(parse_csv("a\n\"open", "t"), InputError);
  double v = 0;
  EXPECT_TRUE(parse_double("1e-5", v));
  EXPECT_FALSE(parse_double("1e-5x", v));
  EXPECT_FALSE(parse_double("nan", v));
  EXPECT_EQ(format_fixed(-0.01, 1), "0.0");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(md_cell("a|b"), "a\\|b");
  EXPECT_EQ(html_escape("<a&'\">"), "&lt;a&amp;&#39;&quot;&gt;");
}

TEST(ReportIndex, OnlyTheNamedTablesAndFigures) {
  mare::test::TempDir tmp("report_only");
  ReportOptions o;
  o.inputs = {fixtures()};
  o.out = tmp.path();
  o.figures = false;
  o.only = {"table5.1", "fig5.1"};
  const ReportSummary s = write_report(o);
  ASSERT_EQ(s.tables.size(), 1u);
  EXPECT_EQ(s.tables[0].id, "table5.1");
  const std::string md = read(tmp / "index.md");
  EXPECT_NE(md.find("Table 5.1"), std::string::npos);
  EXPECT_EQ(md.find("Table 4.10"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "tables/table4.6.md"));
  // With figures: only the named ones are made (others once were written, then left out
  // of the index).
  o.figures = true;
  o.only = {"fig4.9"};
  const ReportSummary f = write_report(o);
  ASSERT_EQ(f.figures.size(), 1u);
  EXPECT_EQ(f.figures[0].id, "fig4.9");
  EXPECT_TRUE(fs::exists(tmp / "figures/fig4.9.dat"));
  EXPECT_FALSE(fs::exists(tmp / "figures/fig4.10.dat"));  // made without --only
  o.only = {"table9.9"};
  EXPECT_THROW(write_report(o), std::invalid_argument);
}

// A directory with nothing to report is an error naming it (it wrote an empty
// report, status 0, while `mare collect` refused the same directory).
TEST(ReportIndex, NothingToReportIsAnError) {
  mare::test::TempDir tmp("report_empty");
  fs::create_directories(tmp / "empty");
  const std::string e = report_error_of<std::invalid_argument>({tmp / "empty"}, tmp / "out");
  EXPECT_NE(e.find("nothing to report in " + (tmp / "empty").string()), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(tmp / "out" / "index.html"));
}

// What each relation cell reaches beside its corpus's references: by table in the thesis's
// order (4.5 before 4.10, runs of no table last), the mean over completed runs, and
// test / oracle from the means.
TEST(ReportCeiling, EachCellBesideTheOracleAndTheEveryPairBaseline) {
  ReportInputs in;
  auto run = [&](const std::string& table, const std::string& cell, int seed, double test,
                 double oracle, const std::string& status = "completed") {
    RunRecord r;
    r.dir = "/runs/" + table + "/" + cell + "/seed" + std::to_string(seed);
    r.source = r.dir;
    r.table = table;
    r.sweep = table.empty() ? "curves" : "table" + table;
    r.cell = cell;
    r.seed = seed;
    r.status = status;
    r.kind = "train";
    r.params = {{"data", "synth-cdr:/d"}};
    if (status == "completed")
      r.values = {{"test_f1", test},
                  {"valid_f1", test + 0.01},
                  {"train_f1", test + 0.1},
                  {"best_step", 500.0 * seed},
                  {"test_references.constant_positive_f1", 0.345},
                  {"test_references.oracle_f1", oracle}};
    in.runs.push_back(r);
  };
  run("", "UTRE", 1, 0.70, 0.97);
  run("4.10", "bran", 1, 0.30, 0.0);  // no oracle for this corpus: 0 is "not there" below
  in.runs.back().values.erase("test_references.oracle_f1");
  run("4.5", "cnn", 1, 0.88, 0.96);
  run("4.5", "cnn", 2, 0.90, 0.96);
  run("4.5", "cnn", 3, 0, 0, "failed");
  const std::vector<Table> tables = build_tables(in, load_paper());
  const Table& t = tables.back();
  ASSERT_EQ(t.id, "ceiling");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"4.5", "table4.5", "cnn", "synth-cdr:/d", "2",
                                      "750 ± 354 (2)", "99.0 ± 1.4 (2)", "90.0 ± 1.4 (2)",
                                      "89.0 ± 1.4 (2)", "34.5 ± 0.0 (2)", "96.0 ± 0.0 (2)", "0.93",
                                      "—", "—"}));  // no published value: synthetic data
  EXPECT_EQ(t.rows[1][0], "4.10");
  EXPECT_EQ(t.rows[1][10], "—");  // no oracle
  EXPECT_EQ(t.rows[1][11], "—");
  EXPECT_EQ(t.rows[2][0], "—");  // no table: last
  EXPECT_EQ(t.rows[2][11], "0.72");
  EXPECT_NE(t.notes.back().find("1 failed"), std::string::npos) << t.notes.back();
}

namespace {

// A completed relation run (seed 1) of a sweep's cell on `data`, for the ceiling table.
RunRecord ceiling_run(const std::string& sweep, const std::string& cell, const std::string& data,
                      std::map<std::string, double> values) {
  RunRecord r;
  r.dir = "/runs/" + sweep + "/" + cell + "/seed1";
  r.source = r.dir;
  r.sweep = sweep;
  r.cell = cell;
  r.seed = 1;
  r.status = "completed";
  r.kind = "train";
  r.params = {{"data", data}};
  r.values = std::move(values);
  return r;
}

}  // namespace

// Two sweeps may name a cell alike (bran on synth-cdr in one, on synth-ctd in another):
// each keeps its row; the runs of one cell are never averaged across corpora.
TEST(ReportCeiling, ACellIsASweepsCell) {
  ReportInputs in;
  for (const auto& [sweep, test, oracle] :
       {std::tuple{"curves-cdr", 0.83, 0.97}, std::tuple{"curves-ctd", 0.65, 0.94}}) {
    in.runs.push_back(ceiling_run(sweep, "bran", "synth-cdr:/d",
                                  {{"test_f1", test}, {"test_references.oracle_f1", oracle}}));
  }
  const std::vector<Table> tables = build_tables(in, load_paper());
  const Table& t = tables.back();
  ASSERT_EQ(t.id, "ceiling");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][1], "curves-cdr");
  EXPECT_EQ(t.rows[0][8], "83.0 (1)");
  EXPECT_EQ(t.rows[1][1], "curves-ctd");
  EXPECT_EQ(t.rows[1][8], "65.0 (1)");
  EXPECT_EQ(t.rows[1][11], "0.69");
}

// On the real corpora a cell stands beside the thesis's published test F1 for its model:
// CDR's Table 4.5 (Gu et al. 2016's CNN for cnn), SemEval's Table 4.12 for the subtask
// scored.
TEST(ReportCeiling, RealCorpusCellsBesideThePublishedValue) {
  ReportInputs in;
  for (const auto& [cell, model, data, test] :
       {std::tuple{"bran", "bran+d=64", "cdr", 0.53},
        std::tuple{"cnn", "cnn+d=100", "cdr+dev", 0.49},
        std::tuple{"ntcre", "ntcre+cpd+ngram+transition", "semeval2018:1.2+1.1", 0.418}}) {
    in.runs.push_back(ceiling_run("real", cell, data, {{"test_f1", test}}));
    in.runs.back().params["model"] = model;
  }
  const Table t = build_tables(in, load_paper()).back();
  ASSERT_EQ(t.id, "ceiling");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][2], "bran");
  EXPECT_EQ(t.rows[0][12], "62.1 (4.5)");
  EXPECT_EQ(t.rows[0][13], "0.85");
  EXPECT_EQ(t.rows[1][3], "cdr+dev");
  EXPECT_EQ(t.rows[1][12], "58.3 (4.5)");
  EXPECT_EQ(t.rows[2][12], "83.6 (4.12)");  // NTCRE-CPD, subtask 1.2
  EXPECT_EQ(t.rows[2][13], "0.50");
}

// A cell decided with a NULL margin says so beside its table, with its argmax test F1;
// without one, no such note.
TEST(ReportCeiling, ANullMarginIsNotedWithTheArgmaxF1) {
  ReportInputs in;
  for (const auto& [cell, margin] : {std::pair{"argmax", 0.0}, std::pair{"tuned", 2.25}}) {
    RunRecord r = ceiling_run("ctd", cell, "bran-tsv:/d",
                              {{"test_f1", 0.70}, {"test_references.oracle_f1", 0.94}});
    if (margin != 0)
      r.values.insert({{"null_margin.margin", margin}, {"null_margin.test_argmax_f1", 0.65}});
    in.runs.push_back(r);
  }
  const Table t = build_tables(in, load_paper()).back();
  ASSERT_EQ(t.id, "ceiling");
  std::string notes;
  for (const std::string& n : t.notes) notes += n + "\n";
  EXPECT_NE(notes.find("tuned (ctd): margin 2.25 (1), test F1 65.0 (1) by argmax"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("argmax (ctd)"), std::string::npos) << notes;
}

TEST(ReportIndex, TheTitleNamesTheReportInBothPages) {
  IndexContent c;
  EXPECT_EQ(index_markdown(c).rfind("# Report\n", 0), 0u);  // the default
  c.title = "Learning <curves> & ceilings";
  const std::string md = index_markdown(c), html = index_html(c);
  EXPECT_EQ(md.rfind("# Learning <curves> & ceilings\n", 0), 0u);
  EXPECT_NE(html.find("<title>Learning &lt;curves&gt; &amp; ceilings</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>Learning &lt;curves&gt; &amp; ceilings</h1>"), std::string::npos);
}
