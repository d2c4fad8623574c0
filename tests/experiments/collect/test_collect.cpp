// mare collect (experiments/sweep/collect.h): a fixture of two shard trees written here
// (runs completed, diverged, missing and failed; a legacy run directory without
// run.json; a run copied into both shards), checked against the exact CSV text; the
// merge rules; errors naming the files; and the real binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep/collect.h"
#include "experiments/sweep/csv.h"
#include "tests/experiments/collect/run_mare.h"
#include "tests/temp_dir.h"

namespace mare::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sweep::collect_csv;
using sweep::collect_runs;
using sweep::CollectError;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}
void write(const fs::path& p, const json& j) {
  write(p, j.dump(2) + "\n");
}
void write(const fs::path& p, const char* text) {
  write(p, std::string(text));
}

json run_json(const std::string& cell, int seed, const std::string& id, const json& params) {
  return {{"spec", "specs/abl.yaml"},
          {"sweep", "abl"},
          {"table", "4.6"},
          {"profile", "smoke"},
          {"cell", cell},
          {"params", params},
          {"seed", seed},
          {"id", id},
          {"kind", "train"},
          {"command", {"train", "--model", "x", "--out", "{run}"}}};
}

json result_x1() {
  return json::parse(R"({
    "status": "completed", "seed": 1, "steps": 300, "best_step": 200, "parameters": 1000,
    "stopped_early": false, "model": "bran",
    "test": {"relations": {"micro": {"f1": 0.5, "precision": 0.25, "recall": 1.0},
                           "macro_f1": 0.5,
                           "by_distance": [{"max_distance": 50, "f1": 0.75}]}},
    "valid": {"relations": {"micro": {"f1": 0.1}}}})");
}

struct Fixture {
  TempDir tmp{"collect"};
  fs::path a = tmp / "shardA", b = tmp / "shardB";

  fs::path x1() const { return a / "cellX" / "seed1-aaaaaaaa"; }
  fs::path x1_copy() const { return b / "cellX" / "seed1-aaaaaaaa"; }
  fs::path x2() const { return a / "cellX" / "seed2-bbbbbbbb"; }
  fs::path y1() const { return b / "cellY" / "seed1-cccccccc"; }
  fs::path y2() const { return b / "cellY" / "seed2-dddddddd"; }
  fs::path legacy() const { return b / "old" / "grpu" / "seed3"; }

  Fixture() {
    const json px = {{"model", "bran"}, {"lr", 0.1}, {"note", "a, \"b\""}, {"flag", true}};
    const json status_ok = {{"status", "completed"}, {"exit_code", 0}, {"signal", nullptr},
                            {"wall_s", 1.5},         {"attempt", 1},   {"stderr_tail", ""}};
    for (const fs::path& d : {x1(), x1_copy()}) {
      write(d / "run.json", run_json("cellX", 1, "aaaaaaaaaaaaaaaa", px));
      write(d / "status.json", status_ok);
      write(d / "result.json", result_x1());
    }
    write(x2() / "run.json",
          run_json("cellX", 2, "bbbbbbbbbbbbbbbb", {{"model", "bran"}, {"lr", 0.1}}));
    write(x2() / "result.json", json{{"status", "diverged"}, {"steps", 12}, {"seed", 2}});
    const json py = {{"model", "utre"}, {"depth", 3}};
    write(y1() / "run.json", run_json("cellY", 1, "cccccccccccccccc", py));
    write(y2() / "run.json", run_json("cellY", 2, "dddddddddddddddd", py));
    write(y2() / "status.json", json{{"status", "failed"},
                                     {"exit_code", 2},
                                     {"signal", nullptr},
                                     {"wall_s", 0.25},
                                     {"attempt", 1},
                                     {"stderr_tail", "mare: error: x"}});
    write(y2() / "stderr.log", "mare: error: x\n");
    write(legacy() / "manifest.json",
          json{{"command", "train"},
               {"seed", 3},
               {"config", {{"model", "grpu"}, {"batch", 10}, {"seed", 3}, {"lr", 0.0001}}}});
    write(legacy() / "result.json", json{{"status", "completed"},
                                         {"final", {{"train_mse", 0.25}, {"test_mse", 0.5}}},
                                         {"epochs", 10},
                                         {"parameters", 7}});
    // Not runs: data and stray files are walked through and ignored.
    write(a / "data" / "synth-cdr-seed1" / "train.pubtator", "1|t|x\n");
    write(a / "notes.txt", "hello\n");
  }
};

const std::string kHeader =
    "sweep,table,profile,cell,seed,id,status,param.batch,param.depth,param.flag,param.lr,"
    "param.model,param.note,test_f1,test_precision,test_recall,test_macro_f1,valid_f1,"
    "best_step,steps,train_mse,test_mse,epochs,parameters,final.test_mse,final.train_mse,"
    "test.relations.by_distance.0.f1,test.relations.by_distance.0.max_distance,"
    "test.relations.macro_f1,test.relations.micro.f1,test.relations.micro.precision,"
    "test.relations.micro.recall,valid.relations.micro.f1,dir";

// One CSV line: the header's columns in order, from `values` (already CSV text).
std::string row(const std::map<std::string, std::string>& values) {
  const std::vector<std::string> cols = sweep::parse_csv(kHeader + "\n", "header").header;
  std::string line;
  std::size_t used = 0;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    auto it = values.find(cols[i]);
    if (it != values.end()) ++used;
    line += (i ? "," : "") + (it == values.end() ? std::string() : it->second);
  }
  EXPECT_EQ(used, values.size()) << "a value names no column: " << line;
  return line + "\n";
}

TEST(Collect, ExactCsvOfTwoShardsWithLegacyMissingFailedAndDuplicate) {
  Fixture f;
  const sweep::Collection c = collect_runs({f.a, f.b});
  ASSERT_EQ(c.runs.size(), 5u);
  EXPECT_TRUE(c.warnings.empty());
  const std::string legacy_id = c.runs[0].id;
  ASSERT_EQ(legacy_id.size(), 16u);
  EXPECT_EQ(legacy_id.find_first_not_of("0123456789abcdef"), std::string::npos);

  const std::string expected = kHeader + "\n" +
                               row({{"cell", "grpu"},
                                    {"seed", "3"},
                                    {"id", legacy_id},
                                    {"status", "completed"},
                                    {"param.batch", "10"},
                                    {"param.lr", "0.0001"},
                                    {"param.model", "grpu"},
                                    {"train_mse", "0.25"},
                                    {"test_mse", "0.5"},
                                    {"epochs", "10"},
                                    {"parameters", "7"},
                                    {"final.test_mse", "0.5"},
                                    {"final.train_mse", "0.25"},
                                    {"dir", f.legacy().string()}}) +
                               row({{"sweep", "abl"},
                                    {"table", "4.6"},
                                    {"profile", "smoke"},
                                    {"cell", "cellX"},
                                    {"seed", "1"},
                                    {"id", "aaaaaaaaaaaaaaaa"},
                                    {"status", "completed"},
                                    {"param.flag", "true"},
                                    {"param.lr", "0.10000000000000001"},
                                    {"param.model", "bran"},
                                    {"param.note", "\"a, \"\"b\"\"\""},
                                    {"test_f1", "0.5"},
                                    {"test_precision", "0.25"},
                                    {"test_recall", "1"},
                                    {"test_macro_f1", "0.5"},
                                    {"valid_f1", "0.10000000000000001"},
                                    {"best_step", "200"},
                                    {"steps", "300"},
                                    {"parameters", "1000"},
                                    {"test.relations.by_distance.0.f1", "0.75"},
                                    {"test.relations.by_distance.0.max_distance", "50"},
                                    {"test.relations.macro_f1", "0.5"},
                                    {"test.relations.micro.f1", "0.5"},
                                    {"test.relations.micro.precision", "0.25"},
                                    {"test.relations.micro.recall", "1"},
                                    {"valid.relations.micro.f1", "0.10000000000000001"},
                                    {"dir", f.x1().string()}}) +
                               row({{"sweep", "abl"},
                                    {"table", "4.6"},
                                    {"profile", "smoke"},
                                    {"cell", "cellX"},
                                    {"seed", "2"},
                                    {"id", "bbbbbbbbbbbbbbbb"},
                                    {"status", "diverged"},
                                    {"param.lr", "0.10000000000000001"},
                                    {"param.model", "bran"},
                                    {"steps", "12"},
                                    {"dir", f.x2().string()}}) +
                               row({{"sweep", "abl"},
                                    {"table", "4.6"},
                                    {"profile", "smoke"},
                                    {"cell", "cellY"},
                                    {"seed", "1"},
                                    {"id", "cccccccccccccccc"},
                                    {"status", "missing"},
                                    {"param.depth", "3"},
                                    {"param.model", "utre"},
                                    {"dir", f.y1().string()}}) +
                               row({{"sweep", "abl"},
                                    {"table", "4.6"},
                                    {"profile", "smoke"},
                                    {"cell", "cellY"},
                                    {"seed", "2"},
                                    {"id", "dddddddddddddddd"},
                                    {"status", "failed"},
                                    {"param.depth", "3"},
                                    {"param.model", "utre"},
                                    {"dir", f.y2().string()}});
  EXPECT_EQ(collect_csv(c.runs), expected);

  // The same trees give the same bytes (legacy id included).
  EXPECT_EQ(collect_csv(collect_runs({f.a, f.b}).runs), expected);
  // The text is a valid CSV whose numbers read back to the same doubles.
  const sweep::CsvTable t = sweep::parse_csv(expected, "expected");
  ASSERT_EQ(t.rows.size(), 5u);
  EXPECT_EQ(t.rows[1][t.column("param.note")], "a, \"b\"");
  EXPECT_EQ(std::stod(t.rows[1][t.column("valid_f1")]), 0.1);
}

TEST(Collect, DuplicateKeepsTheFirstFoundCopyAndPrefersOneWithAResult) {
  Fixture f;
  // Shard order decides which identical copy's directory is reported.
  const sweep::Collection c = collect_runs({f.b, f.a});
  ASSERT_EQ(c.runs.size(), 5u);
  EXPECT_EQ(c.runs[1].dir, f.x1_copy().string());
  // A copy that never finished (no result.json, no status.json) does not replace one
  // that did, whichever is found first.
  fs::remove(f.x1_copy() / "result.json");
  fs::remove(f.x1_copy() / "status.json");
  const sweep::Collection d = collect_runs({f.b, f.a});
  ASSERT_EQ(d.runs.size(), 5u);
  EXPECT_EQ(d.runs[1].dir, f.x1().string());
  EXPECT_EQ(d.runs[1].status, "completed");
  EXPECT_EQ(d.runs[1].metrics.at("test_f1"), 0.5);
  // The same directory given twice (or reached twice) is one run.
  EXPECT_EQ(collect_runs({f.a, f.a, f.x1()}).runs.size(), 2u);
}

TEST(Collect, ConflictingDuplicateNamesBothDirectories) {
  Fixture f;
  json r = result_x1();
  r["test"]["relations"]["micro"]["f1"] = 0.625;
  write(f.x1_copy() / "result.json", r);
  try {
    collect_runs({f.a, f.b});
    FAIL() << "expected a CollectError";
  } catch (const CollectError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("aaaaaaaaaaaaaaaa"), std::string::npos) << m;
    EXPECT_NE(m.find("different result.json"), std::string::npos) << m;
    EXPECT_NE(m.find(f.x1().string()), std::string::npos) << m;
    EXPECT_NE(m.find(f.x1_copy().string()), std::string::npos) << m;
  }
}

void expect_error(const std::vector<fs::path>& roots, const std::vector<std::string>& parts) {
  try {
    collect_runs(roots);
    FAIL() << "expected a CollectError";
  } catch (const CollectError& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Collect, MalformedFilesAreErrorsNamingTheFile) {
  {
    Fixture f;
    write(f.y1() / "run.json", "{\"sweep\": \"abl\", ");
    expect_error({f.a, f.b}, {(f.y1() / "run.json").string(), "not valid JSON"});
  }
  {
    Fixture f;
    write(f.x2() / "result.json", "[1, 2");
    expect_error({f.a}, {(f.x2() / "result.json").string(), "not valid JSON"});
  }
  {
    Fixture f;
    write(f.y2() / "status.json", json{{"exit_code", 1}});
    expect_error({f.b}, {(f.y2() / "status.json").string(), "\"status\""});
  }
  {
    Fixture f;
    json j = run_json("cellY", 1, "cccccccccccccccc", json::object());
    j.erase("seed");
    write(f.y1() / "run.json", j);
    expect_error({f.b}, {(f.y1() / "run.json").string(), "\"seed\" (an integer)"});
  }
  {
    Fixture f;
    expect_error({f.tmp / "nowhere"}, {(f.tmp / "nowhere").string(), "not a directory"});
  }
  // A number JSON cannot hold: the file is named (it was a bare JSON exception).
  {
    Fixture f;
    write(f.x2() / "result.json",
          "{\"status\": \"completed\", \"test\": {\"relations\": {\"micro\": {\"f1\": 1e999}}}}");
    expect_error({f.a}, {(f.x2() / "result.json").string(), "not valid JSON"});
  }
  // A completed run's metric that is null or a string is an error naming the field
  // (it was collected as a completed run with an empty F1).
  for (const std::string& value : {std::string("null"), std::string("\"NaN\"")}) {
    Fixture f;
    write(f.x2() / "result.json",
          "{\"status\": \"completed\", \"test\": {\"relations\": {\"micro\": {\"f1\": " + value +
              "}}}}");
    expect_error({f.a}, {(f.x2() / "result.json").string(),
                         "expected a finite number at \"test.relations.micro.f1\" (test_f1)"});
  }
}

TEST(Collect, LegacyCellNames) {
  TempDir tmp("collect_legacy");
  const json manifest = {{"seed", 4}, {"config", {{"model", "bran"}, {"seed", 4}}}};
  const json result = {{"status", "completed"},
                       {"test", {{"relations", {{"macro_f1", 0.5}, {"micro", {{"f1", 0.5}}}}}}}};
  for (const std::string d : {"runs/bran-synth-cdr-seed4", "grid/r1_grpu/seed4", "plain"}) {
    write(tmp / d / "manifest.json", manifest);
    write(tmp / d / "result.json", result);
  }
  // Only a manifest: an unfinished legacy run is not found.
  write(tmp / "unfinished" / "manifest.json", manifest);
  const sweep::Collection c = collect_runs({tmp.path()});
  ASSERT_EQ(c.runs.size(), 3u);
  std::vector<std::string> cells;
  for (const auto& r : c.runs) {
    cells.push_back(r.cell);
    EXPECT_EQ(r.seed, 4);
    EXPECT_EQ(r.params.at("model"), "bran");
    EXPECT_EQ(r.params.count("seed"), 0u);
    EXPECT_EQ(r.metrics.at("test_macro_f1"), 0.5);
  }
  EXPECT_EQ(cells, (std::vector<std::string>{"bran-synth-cdr", "plain", "r1_grpu"}));
}

// A run completed by its status.json whose result.json is gone is "missing", not a
// completed run with empty metrics (it counted as completed).
TEST(Collect, ACompletedStatusWithoutItsResultIsMissing) {
  Fixture f;
  fs::remove(f.x1() / "result.json");
  const sweep::Collection c = collect_runs({f.a});
  bool seen = false;
  for (const auto& r : c.runs)
    if (r.cell == "cellX" && r.seed == 1) {
      seen = true;
      EXPECT_EQ(r.status, "missing");
    }
  EXPECT_TRUE(seen);
}

TEST(Collect, DirectoryWithoutRunsWarns) {
  Fixture f;
  fs::create_directories(f.tmp / "empty");
  const sweep::Collection c = collect_runs({f.a, f.tmp / "empty"});
  EXPECT_EQ(c.runs.size(), 2u);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("no runs found"), std::string::npos);
}

// A sweep root's sweep.json names its current plan: a run directory it does not list (an
// earlier version of the spec, another profile) is left out with one warning per root,
// unless --all; roots without sweep.json (shard B here, legacy trees) are unchanged.
TEST(Collect, RunsNotInTheRootsSweepJsonAreLeftOutUnlessAll) {
  Fixture f;
  write(f.a / "sweep.json",
        json{{"spec", "abl"}, {"runs", {{{"dir", "cellX/seed1-aaaaaaaa"}, {"cell", "cellX"}}}}});
  const sweep::Collection c = collect_runs({f.a, f.b});
  std::vector<std::string> ids;
  for (const auto& r : c.runs) ids.push_back(r.id);
  // x2 (bbbb…) is not in shard A's plan; the copy of x1 in shard B is still merged.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "bbbbbbbbbbbbbbbb"), 0) << c.runs.size();
  EXPECT_EQ(c.runs.size(), 4u);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("1 run directory not in its sweep.json"), std::string::npos)
      << c.warnings[0];
  EXPECT_NE(c.warnings[0].find("seed2-bbbbbbbb"), std::string::npos) << c.warnings[0];
  EXPECT_EQ(collect_runs({f.a, f.b}, true).runs.size(), 5u);

  const MareOutcome all = run_mare_in(
      f.tmp.path(), {"collect", f.a.string(), f.b.string(), "--all", "--out", "all.csv"});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_NE(all.out.find("5 runs"), std::string::npos) << all.out;
  const MareOutcome some =
      run_mare_in(f.tmp.path(), {"collect", f.a.string(), f.b.string(), "--out", "some.csv"});
  ASSERT_EQ(some.status, 0) << some.err;
  EXPECT_NE(some.out.find("4 runs"), std::string::npos) << some.out;
  EXPECT_NE(some.err.find("mare: warning: "), std::string::npos) << some.err;

  write(f.a / "sweep.json", "{\"runs\": 3}");
  try {
    collect_runs({f.a});
    ADD_FAILURE() << "a malformed sweep.json was accepted";
  } catch (const CollectError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep.json: expected \"runs\""), std::string::npos)
        << e.what();
  }
}

// A planned run that is not there (never made, a file in its place, a directory that lost
// its run.json) is left out with a warning that counts and names it, never taken as a
// loose run or passed over in silence; with every planned run there, no warning.
TEST(Collect, PlannedRunsThatAreNotThereAreNamedInAWarning) {
  Fixture f;
  const auto plan = [&](std::vector<std::string> dirs) {
    json runs = json::array();
    for (const std::string& d : dirs) runs.push_back({{"dir", d}});
    write(f.a / "sweep.json", json{{"spec", "abl"}, {"runs", runs}});
  };
  plan({"cellX/seed1-aaaaaaaa", "cellX/seed2-bbbbbbbb"});
  EXPECT_TRUE(collect_runs({f.a}).warnings.empty());

  write(f.a / "cellZ" / "seed1-eeeeeeee", "a file where a run directory goes\n");
  write(f.a / "cellX" / "seed3-ffffffff" / "manifest.json", "{}");
  write(f.a / "cellX" / "seed3-ffffffff" / "result.json", result_x1());  // run.json lost
  plan({"cellX/seed1-aaaaaaaa", "cellX/seed2-bbbbbbbb", "cellX/seed3-ffffffff",
        "cellY/seed1-gggggggg", "cellZ/seed1-eeeeeeee"});
  const sweep::Collection c = collect_runs({f.a});
  EXPECT_EQ(c.runs.size(), 2u);  // x1 and x2; the run without run.json is no legacy run
  ASSERT_EQ(c.warnings.size(), 1u);
  const std::string& w = c.warnings[0];
  for (const char* part :
       {"3 of 5 planned runs are not there", "cellX/seed3-ffffffff (no run.json)",
        "cellY/seed1-gggggggg (no such directory)", "cellZ/seed1-eeeeeeee (not a directory)"})
    EXPECT_NE(w.find(part), std::string::npos) << part << "\n" << w;

  const MareOutcome out = run_mare_in(f.tmp.path(), {"collect", f.a.string(), "--out", "some.csv"});
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_NE(out.err.find("mare: warning: " + f.a.string() + ": 3 of 5 planned runs"),
            std::string::npos)
      << out.err;
}

TEST(CollectCli, WritesTheCsvAtomicallyAndReportsErrors) {
  Fixture f;
  const MareOutcome ok = run_mare_in(
      f.tmp.path(), {"collect", f.a.string(), f.b.string(), "--out", "out/results.csv"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("5 runs"), std::string::npos) << ok.out;
  EXPECT_EQ(slurp_file(f.tmp / "out" / "results.csv"), collect_csv(collect_runs({f.a, f.b}).runs));
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(f.tmp / "out")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);

  json r = result_x1();
  r["steps"] = 301;
  write(f.x1_copy() / "result.json", r);
  const MareOutcome bad =
      run_mare_in(f.tmp.path(), {"collect", f.a.string(), f.b.string(), "--out", "out/other.csv"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("mare: error: run aaaaaaaaaaaaaaaa"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(f.tmp / "out" / "other.csv"));
}

TEST(Csv, QuotingAndParsing) {
  EXPECT_EQ(sweep::csv_field("plain"), "plain");
  EXPECT_EQ(sweep::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(sweep::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(sweep::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(sweep::csv_field(" pad"), "\" pad\"");
  EXPECT_EQ(sweep::csv_number(0.1), "0.10000000000000001");
  EXPECT_EQ(sweep::csv_number(1e-300), "1e-300");
  EXPECT_EQ(sweep::csv_number(0.3), "0.29999999999999999");
  EXPECT_EQ(sweep::csv_number(std::nan("")), "");
  const sweep::CsvTable t = sweep::parse_csv("a,b\r\n1,\"x,\"\"y\"\"\nz\"\n\n3,\n", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][1], "x,\"y\"\nz");
  EXPECT_EQ(t.lines, (std::vector<std::size_t>{2, 5}));
  EXPECT_EQ(t.rows[1][1], "");
  EXPECT_THROW(sweep::parse_csv("a,b\n1,2,3\n", "t.csv"), sweep::CsvError);
  try {
    sweep::parse_csv("a,b\n1,2\n\"open,3\n", "t.csv");
    FAIL();
  } catch (const sweep::CsvError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:3: unterminated"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mare::test
