// Figures of `mare report` from small fixture inputs built here: every picture is a real PNG
// and an SVG with the expected number of plotted series, the .dat files hold the expected
// numbers, absent inputs and an absent or failing gnuplot give `missing` with the reason, and
// the same inputs give the same bytes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <pugixml.hpp>

#include "reports/src/figures.h"
#include "reports/src/gnuplot.h"
#include "tests/temp_dir.h"

namespace mare::report {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

// ------------------------------------------------------------------ fixtures

RunRecord relation_run(const std::string& cell, int64_t seed, const std::string& data,
                       const std::vector<double>& f1_by_bucket, double class_f1_scale) {
  RunRecord r;
  r.dir = "/runs/" + cell + "/seed" + std::to_string(seed) + "-0123abcd";
  r.sweep = "table4.6";
  r.table = "4.6";
  r.profile = "smoke";
  r.cell = cell;
  r.status = "completed";
  r.seed = seed;
  r.params = {{"model", cell}, {"data", data + ":/data/" + data}};
  r.manifest = {{"device", "cpu"}, {"build", {{"git_commit", "abc123"}}}};
  json buckets = json::array();
  const int edges[] = {50, 100, 200, 300, 500};
  for (std::size_t i = 0; i < f1_by_bucket.size(); ++i)
    buckets.push_back({{"max_distance", edges[i]}, {"f1", f1_by_bucket[i]}, {"examples", 10}});
  r.result = {{"status", "completed"}, {"test", {{"relations", {{"by_distance", buckets}}}}}};
  for (int step = 100; step <= 300; step += 100) {
    const double s = class_f1_scale * step / 300.0;
    r.metrics.push_back({{"step", step},
                         {"valid_f1", s},
                         {"train_f1", std::min(1.0, s + 0.1)},
                         {"valid_f1_per_class", {{"CID", s}, {"induces", s / 2}}}});
  }
  return r;
}

RunRecord grpu_run(const std::string& row, int64_t seed, const std::string& task, int batch,
                   double scale) {
  RunRecord r;
  // Legacy layout of reports/grpu/runs: <row>/seed<k>/, no run.json (no cell, no params).
  r.dir = "/grpu/runs/" + row + "/seed" + std::to_string(seed);
  r.status = "completed";
  r.seed = seed;
  r.manifest = {
      {"config", {{"task", task}, {"batch", batch}, {"samples", 1000}, {"model", "grpu"}}}};
  r.result = {{"status", "completed"}, {"task", task}, {"batch", batch}};
  for (int epoch = 10; epoch <= 50; epoch += 10)
    r.metrics.push_back({{"epoch", epoch},
                         {"train_mse", scale / epoch},
                         {"test_mse", 2 * scale / epoch},
                         {"step", epoch * 100}});
  return r;
}

json allocation_bench() {
  json rows = json::array();
  for (const char* variant : {"sorted", "parallel", "rank"})
    for (int mem : {4, 16})
      for (int seq : {1, 10, 100})
        for (const char* pass : {"forward", "forward+backward"})
          rows.push_back({{"variant", variant},
                          {"mem", mem},
                          {"seq", seq},
                          {"pass", pass},
                          {"seconds", 1e-6 * seq * mem * (variant[0] == 's' ? 2 : 1)}});
  return {{"benchmark", "allocation"},
          {"device", "cpu"},
          {"threads", 1},
          {"batch", 32},
          {"rows", rows}};
}

json iteration_bench() {
  json rows = json::array();
  rows.push_back({{"model", "UTRE"},
                  {"shape", "semeval"},
                  {"tokens", 96},
                  {"alloc", ""},
                  {"times_s", {1.0, 2.0, 3.0, 4.0, 100.0}}});
  rows.push_back({{"model", "NTCRE"},
                  {"shape", "semeval"},
                  {"tokens", 96},
                  {"alloc", "parallel"},
                  {"times_s", {2.0, 2.5, 3.0}}});
  rows.push_back({{"model", "UTRE"},
                  {"shape", "cdr"},
                  {"tokens", 398},
                  {"alloc", ""},
                  {"times_s", {5.0, 6.0, 7.0}}});
  return {{"device", "cpu"}, {"threads", 2}, {"size", "default"}, {"rows", rows}};
}

// `mare data stats --json` (experiments/sweep/corpus_stats.h), the fields the figures read.
CorpusStats corpus(const std::string& name) {
  CorpusStats c;
  c.path = "/stats/" + name + ".json";
  json splits = json::object();
  splits["train"] = {{"related_pair_distances", {1, 3, 10, 40, 90, 90, 200}},
                     {"tokens", {{"mean", 98.7}, {"per_document", {80, 96, 120}}}}};
  // The object form {"value": count} of a distribution.
  splits["test"] = {{"related_pair_distances", {{"5", 2}, {"120", 1}}},
                    {"tokens", {{"per_document", {{"100", 4}}}}}};
  c.json = {{"source", name + ":/data/" + name},
            {"kind", "bran-tsv"},
            {"split_order", {"train", "valid", "test"}},
            {"splits", splits}};
  return c;
}

// memory.json of `mare inspect memory` (experiments/inspect_memory.h): 3 tokens, 2 iterations,
// 2 slots, word 3, 2 read heads. Token 1 is written most, token 2 least.
json memory_json() {
  json steps = json::array();
  for (int k = 0; k < 2; ++k) {
    json st = {{"iteration", k + 1}};
    for (int i = 0; i < 3; ++i) {
      const double w = i == 1 ? 0.9 : i == 0 ? 0.5 : 0.1;
      st["usage"].push_back({w, 0.25 * k});
      st["write_weights"].push_back({w, 0.0});
      st["allocation"].push_back({1.0, 0.0});
      st["memory"].push_back({{w, -w, 0.0}, {0.0, 2.0 * k, -1.0}});
      st["read_weights"].push_back({{0.5, 0.5}, {1.0, 0.0}});
      st["read_vectors"].push_back({{0.1, 0.2, 0.3}, {-0.3, 0.0, 0.5}});
    }
    st["run"] = {1, 1, 1};
    steps.push_back(st);
  }
  return {{"document", {{"id", "doc1"}, {"tokens", {"the", "hypotension", "."}}}},
          {"slots", 2},
          {"word", 3},
          {"read_heads", 2},
          {"iterations", 2},
          {"steps", steps}};
}

ReportInputs fixture_inputs() {
  ReportInputs in;
  in.runs.push_back(relation_run("NTCRE-CPD", 1, "synth-ctd", {0.2, 0.3, 0.4, 0.5, 0.6}, 0.8));
  in.runs.push_back(relation_run("NTCRE-CPD", 2, "synth-ctd", {0.4, 0.5, 0.6, 0.7, 0.8}, 0.6));
  in.runs.push_back(relation_run("BRAN", 1, "synth-ctd", {0.1, 0.1, 0.1, 0.1, 0.1}, 0.4));
  in.runs.push_back(grpu_run("r1_grpu_b100", 1, "addition", 100, 1.0));
  in.runs.push_back(grpu_run("r1_grpu_b100", 2, "addition", 100, 3.0));
  in.runs.push_back(grpu_run("r4_grpu_b10_cur", 1, "addition", 10, 0.1));
  in.runs.push_back(grpu_run("r5_grpu_b100_cond", 1, "conditional", 100, 0.5));
  in.runs.push_back(grpu_run("m_b100", 1, "multiplication", 100, 0.5));
  in.runs.push_back(grpu_run("m_b10", 1, "multiplication", 10, 0.5));
  for (const char* kind : {"allocation", "iteration"}) {
    BenchFile b;
    b.path = std::string("/bench/") + kind + ".json";
    b.kind = kind;
    b.json = b.kind == "allocation" ? allocation_bench() : iteration_bench();
    in.benchmarks.push_back(b);
  }
  in.corpora.push_back(corpus("synth-ctd"));
  in.inspections.push_back({"/inspect/ntcre-doc1", memory_json()});
  return in;
}

const std::vector<std::string> kIds = {
    "fig4.2",    "fig4.3",     "fig4.4",     "fig4.5",     "fig4.6", "fig4.9", "fig4.10",
    "fig4.11",   "fig5.1",     "fig5.2",     "fig5.3",     "fig5.4", "fig5.5", "curves4.5",
    "curves4.6", "curves4.10", "curves4.12", "curves4.13", "curves"};

const Artifact& find(const std::vector<Artifact>& as, const std::string& id) {
  for (const auto& a : as)
    if (a.id == id) return a;
  throw std::runtime_error("no artifact " + id);
}

bool have_gnuplot() {
  return gnuplot::find_binary().has_value();
}

// The figures of fixture_inputs(), drawn once per test process (gnuplot takes seconds).
struct FixtureReport {
  fs::path dir;
  std::vector<Artifact> artifacts;
};
const FixtureReport& fixture_report() {
  static const FixtureReport report = [] {
    FixtureReport r;
    r.dir = test::process_temp_dir() / "fixture_report";
    r.artifacts = write_figures(fixture_inputs(), r.dir);
    return r;
  }();
  return report;
}
const fs::path fixture_figures() {
  return fixture_report().dir / "figures";
}

// Data blocks of a .dat file: block -> rows of numbers.
std::vector<std::vector<std::vector<double>>> dat_blocks(const std::string& text) {
  std::vector<std::vector<std::vector<double>>> blocks(1);
  std::istringstream in(text);
  std::string line;
  int blank = 0;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (++blank == 2 && !blocks.back().empty()) blocks.emplace_back();
      continue;
    }
    blank = 0;
    if (line[0] == '#') continue;
    std::istringstream ls(line);
    std::vector<double> row;
    std::string cell;
    while (ls >> cell) row.push_back(cell == "NaN" ? std::nan("") : std::stod(cell));
    blocks.back().push_back(row);
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

void count_plot_groups(const pugi::xml_node& n, int& count) {
  if (std::string_view(n.name()) == "g" &&
      std::string_view(n.attribute("id").value()).rfind("gnuplot_plot_", 0) == 0)
    ++count;
  for (const pugi::xml_node& c : n.children()) count_plot_groups(c, count);
}

// Parses the SVG (well-formed XML) and returns its number of plotted series.
int svg_series(const fs::path& p) {
  const std::string text = read(p);
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
  EXPECT_TRUE(parsed) << p << ": " << parsed.description() << " at byte " << parsed.offset;
  const pugi::xml_node root = doc.document_element();
  EXPECT_EQ(std::string_view(root.name()), "svg") << p;
  int count = 0;
  count_plot_groups(root, count);
  return count;
}

void expect_png(const fs::path& p) {
  const std::string bytes = read(p);
  ASSERT_GT(bytes.size(), 1000u) << p;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << p;
  EXPECT_EQ(bytes.substr(12, 4), "IHDR") << p;
}

// ------------------------------------------------------------------ tests

TEST(Figures, EveryFigureFromFixturesIsAPngAndAnSvgWithItsSeries) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const auto& arts = fixture_report().artifacts;
  const fs::path& out = fixture_report().dir;
  // To look at the pictures: MARE_TEST_FIGURES_OUT=DIR keeps a copy there.
  if (const char* keep = std::getenv("MARE_TEST_FIGURES_OUT"))
    write_figures(fixture_inputs(), keep);
  ASSERT_EQ(arts.size(), kIds.size());
  for (std::size_t i = 0; i < kIds.size(); ++i) EXPECT_EQ(arts[i].id, kIds[i]);
  // Plotted series per figure (gnuplot_plot_N groups of the SVG, all panels together):
  // fig4.2: 2 tokens x 2 iterations x 5 fields, one heatmap each;
  // fig4.4/4.10: one histogram per split (train, test); fig4.5: two cells, each a band
  // (± sd) and a mean line; fig4.6: one
  // panel per cell (BRAN, NTCRE-CPD), each with the overall F1 and 2 classes; fig4.9: thesis
  // (sorted, parallel) x N 4, 16, 32 + ours (sorted, parallel) x N 4, 16; fig4.11: two
  // panels (cdr, semeval) of box + median + mean, semeval with outliers; fig5.x: train and
  // test per cell, and the published train and test marks of Table 5.1 where a row has the
  // cell's settings (none for multiplication); curves4.6: per cell (BRAN, NTCRE-CPD) a
  // validation band and line and a training-sample line.
  const std::map<std::string, int> series = {
      {"fig4.2", 20}, {"fig4.4", 2},  {"fig4.5", 4},   {"fig4.6", 6}, {"fig4.9", 10},
      {"fig4.10", 2}, {"fig4.11", 7}, {"fig5.1", 4},   {"fig5.2", 2}, {"fig5.3", 4},
      {"fig5.4", 4},  {"fig5.5", 2},  {"curves4.6", 6}};
  for (const auto& [id, n] : series) {
    const Artifact& a = find(arts, id);
    ASSERT_EQ(a.missing, "") << id;
    ASSERT_EQ(a.files.size(), 4u) << id;
    for (const auto& f : a.files) {
      EXPECT_TRUE(f.is_relative()) << f;
      EXPECT_TRUE(fs::exists(out / f)) << f;
    }
    expect_png(out / "figures" / (id + ".png"));
    EXPECT_EQ(svg_series(out / "figures" / (id + ".svg")), n) << id;
    // No scratch directory is left behind.
    for (const auto& e : fs::directory_iterator(out / "figures"))
      EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
  // Provenance in the tables' shape (tables.h provenance_of), which the index prints.
  const json& p45 = find(arts, "fig4.5").provenance;
  EXPECT_EQ(p45["runs"], 3);
  EXPECT_EQ(p45["seeds"], json::array({1, 2}));
  EXPECT_EQ(p45["profiles"], json::array({"smoke"}));
  EXPECT_EQ(p45["cells"], json::array({"BRAN", "NTCRE-CPD"}));
  EXPECT_EQ(find(arts, "fig4.9").provenance["devices"], json::array({"cpu"}));
  // This harness's panel names its source (two allocation JSONs would otherwise give two
  // panels of the same title).
  EXPECT_NE(read(out / "figures" / "fig4.9.gp").find("batch 32; allocation.json)"),
            std::string::npos);
  EXPECT_EQ(find(arts, "fig4.4").provenance["corpora"], json::array({"synth-ctd"}));
  // The inspection has no directory with heatmap files: Fig. 4.3 is missing, and says so.
  EXPECT_NE(find(arts, "fig4.3").missing.find("heatmap_"), std::string::npos);
}

TEST(Figures, F1ByDistanceIsTheMeanOverSeedsPerBucket) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path figs = fixture_figures();
  const auto blocks = dat_blocks(read(figs / "fig4.5.dat"));
  ASSERT_EQ(blocks.size(), 2u);  // BRAN, NTCRE-CPD (sorted by cell)
  ASSERT_EQ(blocks[1].size(), 5u);
  // NTCRE-CPD at 50 tokens: seeds 0.2 and 0.4 -> mean 0.3, sd 0.1414, n 2.
  EXPECT_DOUBLE_EQ(blocks[1][0][0], 50);
  EXPECT_NEAR(blocks[1][0][1], 0.3, 1e-12);
  EXPECT_NEAR(blocks[1][0][2], std::sqrt(0.02), 1e-12);
  EXPECT_DOUBLE_EQ(blocks[1][0][3], 2);
  EXPECT_NEAR(blocks[1][4][1], 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(blocks[0][2][3], 1);  // BRAN: one run
  const std::string dat = read(figs / "fig4.5.dat");
  EXPECT_NE(dat.find("NTCRE-CPD (2 runs)"), std::string::npos);
}

TEST(Figures, GrpuConvergenceIsTheMeanOverSeedsPerEpochAndFollowsTheDissertationSplit) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path figs = fixture_figures();
  const auto b51 = dat_blocks(read(figs / "fig5.1.dat"));
  ASSERT_EQ(b51.size(), 4u);  // r1_grpu_b100 train, test; Table 5.1's train, test
  ASSERT_EQ(b51[0].size(), 5u);
  // Epoch 10: train 1/10 and 3/10 -> mean 0.2; test twice that.
  EXPECT_DOUBLE_EQ(b51[0][0][0], 10);
  EXPECT_NEAR(b51[0][0][1], 0.2, 1e-15);
  EXPECT_NEAR(b51[1][0][1], 0.4, 1e-15);
  EXPECT_NEAR(b51[0][4][1], 4.0 / 2 / 50, 1e-15);
  // Table 5.1, GRPU batch 100, 1000 samples: train 0.247, test 0.759 at 1000 epochs.
  EXPECT_EQ(b51[2][0], (std::vector<double>{1000, 0.247}));
  EXPECT_EQ(b51[3][0], (std::vector<double>{1000, 0.759}));
  // The legacy layout <row>/seed<k>/ is labelled by its row directory.
  const std::string d51 = read(figs / "fig5.1.dat");
  EXPECT_NE(d51.find("r1_grpu_b100 train (2 runs, mean)"), std::string::npos);
  EXPECT_EQ(d51.find("r4_grpu"), std::string::npos);  // batch 10: Fig. 5.4
  EXPECT_NE(read(figs / "fig5.4.dat").find("r4_grpu_b10_cur"), std::string::npos);
  EXPECT_NE(read(figs / "fig5.3.dat").find("r5_grpu_b100_cond"), std::string::npos);
  EXPECT_NE(read(figs / "fig5.2.dat").find("m_b100"), std::string::npos);
  EXPECT_NE(read(figs / "fig5.5.dat").find("m_b10 "), std::string::npos);
  const std::string gp = read(figs / "fig5.1.gp");
  EXPECT_NE(gp.find("set logscale y"), std::string::npos);
}

TEST(Figures, IterationBoxesUseQuartilesAndTukeyWhiskers) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path figs = fixture_figures();
  const auto blocks = dat_blocks(read(figs / "fig4.11.dat"));
  // Panels by tokens: semeval (96: boxes, outliers), then cdr (398: boxes).
  ASSERT_EQ(blocks.size(), 3u);
  ASSERT_EQ(blocks[0].size(), 2u);
  // UTRE semeval: 1 2 3 4 100 -> q1 2, median 3, q3 4; upper fence 7: whisker 4, outlier 100.
  const auto& utre = blocks[0][0];
  EXPECT_DOUBLE_EQ(utre[1], 2);
  EXPECT_DOUBLE_EQ(utre[2], 1);
  EXPECT_DOUBLE_EQ(utre[3], 4);
  EXPECT_DOUBLE_EQ(utre[4], 4);
  EXPECT_DOUBLE_EQ(utre[5], 3);
  EXPECT_DOUBLE_EQ(utre[6], 22);
  EXPECT_DOUBLE_EQ(utre[7], 5);
  ASSERT_EQ(blocks[1].size(), 1u);
  EXPECT_DOUBLE_EQ(blocks[1][0][1], 100);
  EXPECT_DOUBLE_EQ(blocks[2][0][5], 6);  // cdr UTRE median
  // NTCRE has one allocation only: labelled by its model.
  EXPECT_NE(read(figs / "fig4.11.gp").find("\"NTCRE\" 2"), std::string::npos);
}

TEST(Figures, AllocationFigurePlotsForwardSortedAndParallelBesideTheThesis) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path figs = fixture_figures();
  const std::string dat = read(figs / "fig4.9.dat");
  const auto blocks = dat_blocks(dat);
  ASSERT_EQ(blocks.size(), 10u);
  // Thesis first (Table 4.14, sorted N=4 at seq 1: 2.47 s), then ours.
  EXPECT_DOUBLE_EQ(blocks[0][0][1], 2.47);
  EXPECT_NE(dat.find("# [6] allocation.json: sorted N=4"), std::string::npos);
  EXPECT_NEAR(blocks[6][2][1], 2e-6 * 100 * 4, 1e-18);  // forward pass only
  EXPECT_EQ(dat.find("rank"), std::string::npos);
}

TEST(Figures, CorpusHistogramsCountEachSplit) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path figs = fixture_figures();
  const auto blocks = dat_blocks(read(figs / "fig4.4.dat"));
  ASSERT_EQ(blocks.size(), 2u);  // train, then test
  double train = 0, test = 0;
  for (const auto& row : blocks[0]) train += row[1];
  for (const auto& row : blocks[1]) test += row[1];
  EXPECT_DOUBLE_EQ(train, 7);
  EXPECT_DOUBLE_EQ(test, 3);
  // Width 5 bins from 0 (max 200 / 40 bins): 90 and 90 share the bin centred at 92.5.
  bool found = false;
  for (const auto& row : blocks[0])
    if (row[0] == 92.5) {
      EXPECT_DOUBLE_EQ(row[1], 2);
      found = true;
    }
  EXPECT_TRUE(found);
  // Fig. 4.10 is in fractions of each split's documents.
  const auto lengths = dat_blocks(read(figs / "fig4.10.dat"));
  ASSERT_EQ(lengths.size(), 2u);
  double sum = 0;
  for (const auto& row : lengths[0]) sum += row[1];
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

// Fig. 4.4 is about CTD, Fig. 4.10 about the two real corpora (thesis: SemEval 2018 and
// BioCreative V): with every corpus among the inputs (as in the main job), each shows its
// own, Fig. 4.10 one curve per corpus (its splits together).
TEST(Figures, EachCorpusFigureShowsTheCorporaItIsAbout) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  ReportInputs in;
  in.corpora.push_back(corpus("synth-ctd"));
  for (const char* real : {"cdr", "semeval2018"}) {
    CorpusStats c = corpus(real);
    c.json["kind"] = real;
    c.json["source"] = std::string(real) + (std::string(real) == "cdr" ? "" : ":1.1");
    in.corpora.push_back(c);
  }
  CorpusStats synth = corpus("synth-cdr");
  synth.json["kind"] = "pubtator";
  in.corpora.push_back(synth);
  test::TempDir dir("figures_corpora");
  const auto arts = write_figures(in, dir.path());
  EXPECT_EQ(find(arts, "fig4.4").provenance["corpora"], json::array({"synth-ctd"}));
  EXPECT_EQ(find(arts, "fig4.10").provenance["corpora"], json::array({"cdr", "semeval2018:1.1"}));
  const auto lengths = dat_blocks(read(dir.path() / "figures" / "fig4.10.dat"));
  ASSERT_EQ(lengths.size(), 2u);  // one per corpus: train and test together
  double sum = 0;
  for (const auto& row : lengths[0]) sum += row[1];
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NE(read(dir.path() / "figures" / "fig4.10.dat").find("7 documents"), std::string::npos);
}

// A curve panel on a real corpus says which score it draws (the task's own), and every
// panel whose runs hold it draws the corpus's every-pair baseline as a reference line.
TEST(Figures, CurvesNameTheOfficialScoreAndDrawTheEveryPairBaseline) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  ReportInputs in;
  in.runs.push_back(relation_run("BRAN", 1, "cdr", {0.5}, 0.6));
  in.runs.back().table = "";
  in.runs.back().sweep = "real";
  in.runs.back().values["test_references.constant_positive_f1"] = 0.329;
  in.runs.push_back(relation_run("BRAN", 1, "synth-ctd", {0.5}, 0.6));
  in.runs.back().table = "";
  in.runs.back().sweep = "synthetic";
  test::TempDir dir("figures_curves_reference");
  write_figures(in, dir.path(), [](const std::string& id) { return id == "curves"; });
  const std::string gp = read(dir.path() / "figures" / "curves.gp");
  EXPECT_NE(gp.find("set ylabel \"F1 (official: document-level triples)\""), std::string::npos);
  EXPECT_NE(gp.find("set ylabel \"relation F1 (micro)\""), std::string::npos);
  EXPECT_NE(gp.find("0.329 with lines"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("every pair"), gp.rfind("every pair"));  // the synthetic run has none
}

TEST(Figures, AbsentInputsAreMissingWithTheInputNamed) {
  test::TempDir dir("figures");
  // A stale picture of an earlier report must not survive beside `missing`.
  fs::create_directories(dir.path() / "figures");
  write(dir.path() / "figures" / "fig4.5.png", "old");
  const auto arts = write_figures(ReportInputs{}, dir.path());
  ASSERT_EQ(arts.size(), kIds.size());
  for (const auto& a : arts) {
    EXPECT_NE(a.missing, "") << a.id;
    EXPECT_TRUE(a.files.empty()) << a.id;
    EXPECT_FALSE(a.title.empty()) << a.id;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "figures" / "fig4.5.png"));
  EXPECT_NE(find(arts, "fig4.5").missing.find("by_distance"), std::string::npos);
  EXPECT_NE(find(arts, "fig4.6").missing.find("valid_f1_per_class"), std::string::npos);
  EXPECT_NE(find(arts, "fig4.9").missing.find("bench allocation"), std::string::npos);
  EXPECT_NE(find(arts, "fig4.11").missing.find("bench iteration"), std::string::npos);
  EXPECT_NE(find(arts, "fig4.4").missing.find("data stats"), std::string::npos);
  EXPECT_NE(find(arts, "fig5.2").missing.find("multiplication"), std::string::npos);
  // Runs of other kinds do not stand in: a relation run is no GRPU run and vice versa.
  ReportInputs only_grpu;
  only_grpu.runs.push_back(grpu_run("r1", 1, "addition", 100, 1.0));
  only_grpu.runs.back().status = "failed";  // and an unfinished run is not plotted
  const auto arts2 = write_figures(only_grpu, dir.path());
  EXPECT_NE(find(arts2, "fig5.1").missing, "");
  EXPECT_NE(find(arts2, "fig4.5").missing, "");
}

TEST(Figures, SameInputsGiveTheSameBytes) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  test::TempDir a("figures_a");
  write_figures(fixture_inputs(), a.path());
  int compared = 0;
  for (const auto& id : kIds)
    for (const char* ext : {".dat", ".gp", ".svg", ".png"}) {
      const fs::path pa = a.path() / "figures" / (id + ext), pb = fixture_figures() / (id + ext);
      if (!fs::exists(pa)) continue;
      EXPECT_EQ(read(pa), read(pb)) << id << ext;
      ++compared;
    }
  EXPECT_EQ(compared, 4 * 13);  // the 12 thesis figures and curves4.6
  // Nothing of the run's directory or the clock in the script.
  const std::string gp = read(a.path() / "figures" / "fig4.5.gp");
  EXPECT_EQ(gp.find(a.path().string()), std::string::npos);
}

// Runs with MARE_GNUPLOT set to `value` (restored afterwards).
std::vector<Artifact> with_gnuplot(const std::string& value, const fs::path& out) {
  const char* old = std::getenv("MARE_GNUPLOT");
  const std::string saved = old ? old : "";
  ::setenv("MARE_GNUPLOT", value.c_str(), 1);
  std::vector<Artifact> arts;
  try {
    arts = write_figures(fixture_inputs(), out);
  } catch (...) {
    old ? ::setenv("MARE_GNUPLOT", saved.c_str(), 1) : ::unsetenv("MARE_GNUPLOT");
    throw;
  }
  old ? ::setenv("MARE_GNUPLOT", saved.c_str(), 1) : ::unsetenv("MARE_GNUPLOT");
  return arts;
}

TEST(Figures, WithoutGnuplotTheDataAndScriptAreWrittenAndThePicturesMissing) {
  test::TempDir dir("figures");
  const auto arts = with_gnuplot("", dir.path());
  const Artifact& a = find(arts, "fig4.5");
  EXPECT_NE(a.missing.find("gnuplot not found"), std::string::npos) << a.missing;
  ASSERT_EQ(a.files.size(), 2u);
  EXPECT_TRUE(fs::exists(dir.path() / "figures" / "fig4.5.dat"));
  EXPECT_TRUE(fs::exists(dir.path() / "figures" / "fig4.5.gp"));
  EXPECT_FALSE(fs::exists(dir.path() / "figures" / "fig4.5.png"));
  // The same for a name that does not resolve to a program.
  const auto arts2 = with_gnuplot("no-such-gnuplot-binary", dir.path());
  EXPECT_NE(find(arts2, "fig5.1").missing.find("gnuplot not found"), std::string::npos);
}

fs::path fake_gnuplot(const fs::path& dir, const std::string& body) {
  const fs::path p = dir / "fake-gnuplot";
  write(p, "#!/bin/sh\n" + body);
  ::chmod(p.c_str(), 0755);
  return p;
}

TEST(Figures, AFailingGnuplotsErrorOutputIsTheReason) {
  test::TempDir dir("figures");
  // Lists the terminals when asked, fails on a script.
  const fs::path fake =
      fake_gnuplot(dir.path(),
                   "case \"$*\" in\n"
                   "  *'set terminal'*) printf '  pngcairo  png terminal\\n       svg  W3C\\n';;\n"
                   "  --version) echo 'gnuplot 0.0 fake';;\n"
                   "  *) echo 'line 12: unexpected end of plot' >&2; exit 1;;\n"
                   "esac\n");
  const auto arts = with_gnuplot(fake.string(), dir.path() / "out");
  const Artifact& a = find(arts, "fig4.5");
  EXPECT_NE(a.missing.find("unexpected end of plot"), std::string::npos) << a.missing;
  EXPECT_NE(a.missing.find("exit status 1"), std::string::npos) << a.missing;
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "figures" / "fig4.5.gp"));
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "figures" / "fig4.5.png"));
}

TEST(Figures, AGnuplotRunPastItsTimeoutIsKilled) {
  test::TempDir dir("figures");
  const fs::path fake = fake_gnuplot(dir.path(), "echo started >&2\nexec sleep 30\n");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = gnuplot::run(fake, dir.path(), "x.gp", 0.5);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("did not finish within 0.5 s"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("started"), std::string::npos) << r.error;
  EXPECT_LT(s, 10.0);
}

TEST(Figures, MemoryPerTokenShowsTheMostAndLeastWrittenTokens) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const std::string dat = read(fixture_figures() / "fig4.2.dat");
  const auto blocks = dat_blocks(dat);
  ASSERT_EQ(blocks.size(), 20u);
  // Token 1 ('hypotension') first, then token 2 ('.'); iteration 1 usage: slots up y at x 1.
  EXPECT_NE(dat.find("# [0] token 1 'hypotension', iteration 1, usage"), std::string::npos);
  EXPECT_NE(dat.find("# [10] token 2 '.', iteration 1, usage"), std::string::npos);
  ASSERT_EQ(blocks[0].size(), 2u);
  EXPECT_EQ(blocks[0][0], (std::vector<double>{1, 1, 0.9}));
  EXPECT_EQ(blocks[0][1], (std::vector<double>{1, 2, 0}));
  // Memory of token 1 at iteration 2: slot 2 (y), word 2 (x) = 2.
  const auto& mem = blocks[6];
  ASSERT_EQ(mem.size(), 6u);
  EXPECT_EQ(mem[4], (std::vector<double>{2, 2, 2}));
  // Read weights [head][slot] turned: head across (x), slot up (y): head 2, slot 1 = 1.
  const auto& rw = blocks[3];
  ASSERT_EQ(rw.size(), 4u);
  EXPECT_EQ(rw[1], (std::vector<double>{2, 1, 1}));
}

TEST(Figures, HeatmapsOfAnInspectionAreCopiedAsFigure43) {
  test::TempDir dir("figures");
  const fs::path insp = dir.path() / "inspect";
  fs::create_directories(insp);
  write(insp / "heatmap_usage.png", "png-a");
  write(insp / "heatmap_usage.svg", "<svg/>");
  write(insp / "heatmap_read_weights.png", "png-b");
  write(insp / "memory_usage.csv", "x");
  ReportInputs in;
  in.inspections.push_back({insp, json::object()});
  const auto arts = write_figures(in, dir.path() / "out");
  const Artifact& a = find(arts, "fig4.3");
  EXPECT_EQ(a.missing, "");
  ASSERT_EQ(a.files.size(), 3u);
  EXPECT_EQ(a.files[0], fs::path("figures/fig4.3-heatmap_read_weights.png"));
  EXPECT_EQ(read(dir.path() / "out" / a.files[1]), "png-a");
  // memory.json without steps: Fig. 4.2 cannot be drawn, and says why.
  EXPECT_NE(find(arts, "fig4.2").missing.find("no steps"), std::string::npos);
}

TEST(Figures, ValidationF1PerClassIsAveragedOverRunsAndPrefersCtd) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  test::TempDir dir("figures");
  ReportInputs in;
  for (const auto& r : fixture_inputs().runs)
    if (!r.cell.empty()) in.runs.push_back(r);  // the relation runs
  // A CDR run is left out when CTD runs exist (the thesis's figure is CTD's).
  in.runs.push_back(relation_run("UTRE", 1, "synth-cdr", {0.5}, 1.0));
  write_figures(in, dir.path());
  const std::string dat = read(dir.path() / "figures" / "fig4.6.dat");
  EXPECT_EQ(dat.find("UTRE"), std::string::npos);
  const auto blocks = dat_blocks(dat);
  // BRAN: all, CID, induces; NTCRE-CPD: all, CID, induces.
  ASSERT_EQ(blocks.size(), 6u);
  // NTCRE-CPD CID at step 300: seeds 0.8 and 0.6 -> 0.7.
  ASSERT_EQ(blocks[4].size(), 3u);
  EXPECT_DOUBLE_EQ(blocks[4][2][0], 300);
  EXPECT_NEAR(blocks[4][2][1], 0.7, 1e-12);
  EXPECT_NEAR(blocks[5][2][1], 0.35, 1e-12);
}

// ------------------------------------------------------------------ layout

// What a report draws when the inputs are as crowded as a real one: fixture_inputs() plus
// the thirteen cells of Table 4.6 on CDR and a CTD run with the seventeen long class names
// of the thesis's Fig. 4.6 (the cases where keys covered the data, names were cut at the
// canvas's edge and a panel's plotting area shrank to a sliver).
ReportInputs crowded_inputs() {
  ReportInputs in = fixture_inputs();
  const std::vector<std::string> cells = {
      "config1",  "config2", "config3",  "config4",  "config5",   "config6", "config7",
      "UTRE-CPD", "config9", "config10", "config11", "NTCRE-CPD", "bran"};
  // As the main job's sweeps name them: Table 4.6's grid, Table 4.5's models on the same
  // corpus, Table 4.12's cells on two SemEval subtasks, Table 4.10's on CTD.
  auto add = [&](const std::string& cell, const std::string& table, const std::string& data,
                 double b) {
    for (int64_t seed = 1; seed <= 2; ++seed) {
      const double x = b + 0.02 * static_cast<double>(seed);
      RunRecord r = relation_run(cell, seed, data, {x, x - 0.02, x - 0.05, x - 0.06, x - 0.08}, x);
      r.sweep = "table" + table;
      r.table = table;
      in.runs.push_back(r);
    }
  };
  for (std::size_t c = 0; c < cells.size(); ++c)
    add(cells[c], "4.6", "synth-cdr", 0.3 + 0.04 * static_cast<double>(c));
  for (const char* cell : {"cnn", "bran", "UTRE", "UTRE-CPD", "NTCRE", "NTCRE-CPD"})
    add(cell, "4.5", "synth-cdr", 0.4);
  for (const char* cell : {"UTRE-CPD_subtask1.1", "UTRE-CPD_subtask1.2", "NTCRE-CPD_subtask1.1",
                           "NTCRE-CPD_subtask1.2"})
    add(cell, "4.12", "synth-semeval", 0.5);
  RunRecord ctd =
      relation_run("NTCRE-CPD+alloc=network", 1, "synth-ctd", {0.5, 0.4, 0.3, 0.2, 0.1}, 0.7);
  ctd.sweep = "table4.10";
  ctd.table = "4.10";
  const std::vector<std::string> classes = {"chem_disease_marker/mechanism",
                                            "chem_disease_therapeutic",
                                            "chem_gene_affects_response_to_substance",
                                            "chem_gene_affects_transport",
                                            "chem_gene_decreases_activity",
                                            "chem_gene_decreases_expression",
                                            "chem_gene_decreases_metabolic_processing",
                                            "chem_gene_decreases_reaction",
                                            "chem_gene_increases_activity",
                                            "chem_gene_increases_expression",
                                            "chem_gene_increases_metabolic_processing",
                                            "chem_gene_increases_reaction",
                                            "gene_disease_marker/mechanism",
                                            "gene_disease_therapeutic"};
  for (json& m : ctd.metrics) {
    json pc = json::object();
    for (std::size_t k = 0; k < classes.size(); ++k)
      pc[classes[k]] = m["valid_f1"].get<double>() * (0.3 + 0.05 * static_cast<double>(k));
    m["valid_f1_per_class"] = pc;
  }
  in.runs.push_back(ctd);
  return in;
}

// Fig. 4.5 and the curves put a handful of cells in a panel, the panels as even as they go
// (13 cells at most 4 a panel: 4, 3, 3, 3, not 4, 4, 4, 1), and cells in the order of their
// numbers (config9, config10, config11; not config10 before config2).
TEST(Figures, CrowdedTablesSplitIntoEvenPanelsInNumberOrder) {
  ReportInputs in;
  for (int c = 1; c <= 13; ++c)
    for (int64_t seed = 1; seed <= 2; ++seed)
      in.runs.push_back(relation_run("config" + std::to_string(c), seed, "synth-cdr",
                                     {0.5, 0.4, 0.3, 0.2, 0.1}, 0.01 * c));
  const fs::path dir = test::process_temp_dir() / "panels";
  write_figures(in, dir);
  auto key_rows = [&](const std::string& id) {
    std::vector<int> rows;
    const std::string gp = read(dir / "figures" / (id + ".gp"));
    const std::regex maxrows("maxrows (\\d+)");
    for (auto it = std::sregex_iterator(gp.begin(), gp.end(), maxrows);
         it != std::sregex_iterator(); ++it)
      rows.push_back(std::stoi((*it)[1].str()));
    return rows;
  };
  EXPECT_EQ(key_rows("fig4.5"), (std::vector<int>{5, 4, 4}));  // at most 6 a panel
  EXPECT_EQ(key_rows("curves4.6"), (std::vector<int>{4, 3, 3, 3}));
  const std::string gp = read(dir / "figures" / "curves4.6.gp");
  EXPECT_NE(gp.find("cells 11-13:"), std::string::npos);
  const std::string dat = read(dir / "figures" / "fig4.5.dat");
  const auto at = [&](const std::string& cell) { return dat.find("] " + cell + " (2 runs)"); };
  for (const char* cell : {"config2", "config9", "config10", "config11", "config13"})
    ASSERT_NE(at(cell), std::string::npos) << cell;
  EXPECT_LT(at("config2"), at("config9"));
  EXPECT_LT(at("config9"), at("config10"));
  EXPECT_LT(at("config10"), at("config11"));
}

// The curves of runs from several sweeps or corpora: a panel never mixes two of them
// (each is split into panels of at most four on its own), its title names the sweep and
// the corpus, and its keys name the cells alone.
TEST(Figures, CurvesGiveEachSweepAndCorpusPanelsOfTheirOwn) {
  ReportInputs in;
  auto add = [&](const std::string& sweep, const std::string& data, int cells) {
    for (int c = 1; c <= cells; ++c) {
      RunRecord r = relation_run("m" + std::to_string(c), 1, data, {0.5}, 0.1 * c);
      r.sweep = sweep;
      r.table = "";
      r.dir = "/" + sweep + r.dir.string();
      in.runs.push_back(r);
    }
  };
  add("learning-curves", "synth-cdr", 5);
  add("learning-curves-ctd", "synth-ctd", 2);
  const fs::path dir = test::process_temp_dir() / "curves_mixed";
  write_figures(in, dir, [](const std::string& id) { return id == "curves"; });
  const std::string gp = read(dir / "figures" / "curves.gp");
  std::vector<int> rows;
  const std::regex maxrows("maxrows (\\d+)");
  for (auto it = std::sregex_iterator(gp.begin(), gp.end(), maxrows); it != std::sregex_iterator();
       ++it)
    rows.push_back(std::stoi((*it)[1].str()));
  EXPECT_EQ(rows, (std::vector<int>{3, 2, 2}));
  const auto cdr1 = gp.find("learning-curves on synth-cdr (cells 1-3)"),
             cdr2 = gp.find("learning-curves on synth-cdr (cells 4-5)"),
             ctd = gp.find("learning-curves-ctd on synth-ctd");
  ASSERT_NE(cdr1, std::string::npos);
  ASSERT_NE(cdr2, std::string::npos);
  ASSERT_NE(ctd, std::string::npos);
  EXPECT_LT(cdr1, cdr2);
  EXPECT_LT(cdr2, ctd);
  EXPECT_EQ(gp.find("[synth-"), std::string::npos);  // keys: the cell, not sweep/cell [corpus]

  // One sweep, the same cells on two corpora: a panel a corpus, not one a cell.
  ReportInputs two;
  for (const char* data : {"synth-cdr", "synth-ctd"})
    for (const char* cell : {"m1", "m2"}) {
      RunRecord r = relation_run(cell, 1, data, {0.5}, 0.3);
      r.table = "";
      r.dir = std::string("/") + data + r.dir.string();
      two.runs.push_back(r);
    }
  const fs::path dir2 = test::process_temp_dir() / "curves_two_corpora";
  write_figures(two, dir2, [](const std::string& id) { return id == "curves"; });
  const std::string gp2 = read(dir2 / "figures" / "curves.gp");
  const auto on_cdr = gp2.find("table4.6 on synth-cdr"), on_ctd = gp2.find("table4.6 on synth-ctd");
  ASSERT_NE(on_cdr, std::string::npos);
  ASSERT_NE(on_ctd, std::string::npos);
  EXPECT_EQ(gp2.find("table4.6 on synth-cdr", on_cdr + 1), std::string::npos);
  EXPECT_LT(on_cdr, on_ctd);
}

// The .gp of a figure made to print, after every plot, gnuplot's record of where it drew
// the plotting area (GPVAL_TERM_XMIN … YMAX, terminal pixels) and of the canvas
// (GPVAL_TERM_XSIZE, YSIZE in units of GPVAL_TERM_SCALE), for the SVG only.
std::string instrumented(const std::string& gp, const std::string& layout_file) {
  std::istringstream in(gp);
  std::string out, line;
  const std::string probe =
      "print GPVAL_TERM_XMIN, GPVAL_TERM_XMAX, GPVAL_TERM_YMIN, GPVAL_TERM_YMAX, "
      "GPVAL_TERM_XSIZE / GPVAL_TERM_SCALE, GPVAL_TERM_YSIZE / GPVAL_TERM_SCALE, LAYOUT_ROWS, "
      "LAYOUT_COLS\n";
  out += "set print " + gnuplot::quote(layout_file) + " append\nLAYOUT_ROWS = 1\nLAYOUT_COLS = 1\n";
  bool in_plot = false;
  const std::regex layout(R"(set multiplot layout (\d+) *, *(\d+))");
  while (std::getline(in, line)) {
    const std::size_t at = line.find("do for [fmt in \"png svg\"]");
    if (at != std::string::npos) line.replace(line.find("\"png svg\""), 9, "\"svg\"");
    std::smatch m;
    if (std::regex_search(line, m, layout))
      out += "LAYOUT_ROWS = " + m[1].str() + "\nLAYOUT_COLS = " + m[2].str() + "\n";
    if (line.find("unset multiplot") != std::string::npos)
      line += "\nLAYOUT_ROWS = 1\nLAYOUT_COLS = 1";
    out += line + "\n";
    const std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 5, "plot ") == 0) in_plot = true;
    if (in_plot && (line.empty() || line.back() != '\\')) {
      out += probe;
      in_plot = false;
    }
  }
  return out;
}

// Every figure of a crowded report, drawn, meets two rules a reader needs:
//  1. each plotting area fills at least 30 % of its panel (the canvas shared evenly by a
//     multiplot layout): keys beside a panel, not over it, and never a sliver (Fig. 4.6
//     once left ~2 %);
//  2. every horizontal text of the SVG lies on the canvas: its extent, estimated at 0.6 of
//     the font size a character from its anchor, stays within [0, width] (Fig. 4.5's key
//     once ran past the left edge);
//  3. and every key entry lies off every plotting area (a key beside a panel once covered
//     its data).
TEST(FigureLayout, EveryFigureOfACrowdedReportIsReadable) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path dir = test::process_temp_dir() / "layout";
  const std::vector<Artifact> arts = write_figures(crowded_inputs(), dir);
  if (const char* keep = std::getenv("MARE_TEST_FIGURES_OUT"))
    write_figures(crowded_inputs(), keep);
  const auto binary = gnuplot::find_binary();
  ASSERT_TRUE(binary.has_value());
  int checked = 0;
  for (const Artifact& a : arts) {
    if (!a.missing.empty()) continue;
    SCOPED_TRACE(a.id);
    const fs::path figs = dir / "figures";
    const std::string layout_file = a.id + ".layout";
    std::ofstream(figs / (a.id + ".probe.gp"))
        << instrumented(read(figs / (a.id + ".gp")), layout_file);
    if (fs::exists(figs / (a.id + ".gp"))) {
      const gnuplot::RunResult r = gnuplot::run(*binary, figs, a.id + ".probe.gp");
      ASSERT_TRUE(r.ok) << r.error;
    }
    std::istringstream lines(read(figs / layout_file));
    int plots = 0;
    struct Area {
      double x0, x1, top, bottom;  // SVG coordinates (y down)
    };
    std::vector<Area> areas;
    for (std::string l; std::getline(lines, l);) {
      std::istringstream v(l);
      double x0, x1, y0, y1, w, h, rows, cols;
      ASSERT_TRUE(static_cast<bool>(v >> x0 >> x1 >> y0 >> y1 >> w >> h >> rows >> cols)) << l;
      const double area = (x1 - x0) * (y1 - y0), panel = w * h / (rows * cols);
      EXPECT_GE(area / panel, 0.30) << "plot " << plots << ": the plotting area is "
                                    << 100 * area / panel << " % of its panel";
      EXPECT_GE(x0, 0);
      EXPECT_LE(x1, w);
      areas.push_back({x0, x1, h - y1, h - y0});
      ++plots;
    }
    EXPECT_GT(plots, 0);
    // Text on the canvas.
    const std::string svg = read(figs / (a.id + ".svg"));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(width="(\d+)" height="(\d+)")re")));
    const double width = std::stod(m[1].str());
    const std::regex text(
        R"re(<g transform="translate\(([-\d.]+),([-\d.]+)\)( rotate\([^)]*\))?"[^>]*font-size="([\d.]+)"[^>]*text-anchor="(\w+)">\s*<text>([^<]*)</text>)re");
    // A key entry is the first text of its series' group (gnuplot_plot_N); labels a figure
    // places on purpose (Fig. 4.9's N=16 at a line's end) are not.
    std::vector<std::size_t> series_at;
    for (std::size_t p = svg.find("id=\"gnuplot_plot_"); p != std::string::npos;
         p = svg.find("id=\"gnuplot_plot_", p + 1))
      series_at.push_back(p);
    std::size_t next_series = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator();
         ++it) {
      const std::smatch& t = *it;
      const auto pos = static_cast<std::size_t>(t.position(0));
      bool key_entry = false;
      while (next_series < series_at.size() && series_at[next_series] < pos) {
        key_entry = true;
        ++next_series;
      }
      if (t[3].matched) continue;  // rotated (the y label): its extent is vertical
      std::size_t chars = 0;
      for (unsigned char c : t[6].str()) chars += (c & 0xC0) != 0x80;  // UTF-8 code points
      const double x = std::stod(t[1].str()), size = std::stod(t[4].str());
      const double len = 0.6 * size * static_cast<double>(chars);
      const std::string anchor = t[5].str();
      const double left = anchor == "end" ? x - len : anchor == "middle" ? x - len / 2 : x;
      EXPECT_GE(left, -2.0) << "'" << t[6].str() << "' starts left of the canvas";
      EXPECT_LE(left + len, width + 2.0) << "'" << t[6].str() << "' ends right of the canvas";
      // 3. No text over a plotting area (a key beside its panel covered the data).
      const double y = std::stod(t[2].str());
      if (!key_entry) continue;
      for (const Area& ar : areas)
        EXPECT_FALSE(y > ar.top + 2 && y < ar.bottom - 2 && left + len > ar.x0 + 2 &&
                     left < ar.x1 - 2)
            << "'" << t[6].str() << "' lies over a plotting area";
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

}  // namespace
}  // namespace mare::report
