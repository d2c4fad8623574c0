// The shipped corpus releases (see releases.h).
#include "experiments/data/releases.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "experiments/data/error.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/data/sha256.h"

#ifndef MARE_SOURCE_ROOT
#define MARE_SOURCE_ROOT ""
#endif

namespace mare::data {

namespace fs = std::filesystem;

const std::vector<ReleaseFile>& release_files() {
  // The checksums of experiments/corpora/README.md (and of the publishers' files).
  static const std::vector<ReleaseFile> files{
      {"cdr", "CDR_TrainingSet.PubTator.txt",
       "fb00f93b06ca946dac9d909245679493a22ff742c70df2448c4bab2ab1a5140d"},
      {"cdr", "CDR_DevelopmentSet.PubTator.txt",
       "9e18d8e700168887a7919e62f67ac2ce2357e3f409a48ee992906abdd80fe3e5"},
      {"cdr", "CDR_TestSet.PubTator.txt",
       "a3c48d5f35bdfce20c2371778abedc9fd24d1da092207072e5181ad53c8d0e2f"},
      {"semeval2018-task7", "1.1.text.xml",
       "7b61d877a675876f744355160bb55d2109738e440b4e091ce966aefa5065b13d"},
      {"semeval2018-task7", "1.1.relations.txt",
       "6b207875c28cd2265c9d38e2f1b849eb28e097882a1e83204c1cba45ac71a94f"},
      {"semeval2018-task7", "1.2.text.xml",
       "06e4cea46ed9bb30c7fc0d982d02ca4c86fd7ef325babbd1b31e2331b60b0012"},
      {"semeval2018-task7", "1.2.relations.txt",
       "af3cfb1225d890eb9f9e4a08bc998c4d793fc36dae435741cb730014f30a1e47"},
      {"semeval2018-task7", "1.1.test.text.xml",
       "c9d7a614de1c4fe9e0dcbf6ea1292e5b85d763621335f2315cfee2298cdab443"},
      {"semeval2018-task7", "1.1.test.relations.txt",
       "d0cbe7975507de73fd2b9c1fb7e45b65ed868828dc52e4eed3ccde2585507acf"},
      {"semeval2018-task7", "1.2.test.text.xml",
       "d2058b798cdef6635fa3d6a569e0fe8659943109e8b1b37501b1c370d3d30178"},
      {"semeval2018-task7", "1.2.test.relations.txt",
       "1e27e7bec2940203d1b21ac7d94e094d5284896a07a99d14e4d3dc44aeba2b26"},
      {"semeval2018-task7", "2.test.text.xml",
       "ce77e07d39a068f0c3812ed5ddf183609b568184af23745e23fcee4adc4c1c3a"},
      {"semeval2018-task7", "keys.test.1.1.txt",
       "961a6f7c856dd66ac82af96fcdc2cd84550d0f26e176ccda61e37296f1f1b03c"},
      {"semeval2018-task7", "keys.test.1.2.txt",
       "c6e0a7248cb0feb47151220ab1c50612e2385699e76354a16bb74254e55bdd78"},
      {"semeval2018-task7", "keys.test.2.txt",
       "482342ce52d03374e3610a8c968f99138dac1a03c369c10ef4957ff4c28f1cd2"},
      {"semeval2018-task7", "training-eval.txt",
       "b94ac734ed4c3458a7f1793112438e31e6d3743dcf8a2a38cde9ff0a07240ab6"},
      {"mesh", "2017MeshTree.txt",
       "d317c96904dfdbc69d2523ff8ac299842332b23eb75f9a3279ef38cc642d8c29"},
  };
  return files;
}

const ReleaseFile* find_release_file(std::string_view name) {
  for (const ReleaseFile& f : release_files())
    if (f.name == name) return &f;
  return nullptr;
}

fs::path shipped_corpora_dir() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("MARE_CORPORA"); env && *env) {
    // An explicit choice is taken or refused, never passed over silently.
    if (fs::is_directory(env)) return env;
    throw std::runtime_error(std::string("MARE_CORPORA=") + env + " is not a directory");
  }
  if (const char* src = std::getenv("MARE_SOURCE_DIR"); src && *src)
    tried.push_back(fs::path(src) / "experiments" / "corpora");
  if (*MARE_SOURCE_ROOT) tried.push_back(fs::path(MARE_SOURCE_ROOT) / "experiments" / "corpora");
  std::string where;
  for (const fs::path& p : tried) {
    if (fs::is_directory(p / "cdr")) return p;
    where += (where.empty() ? "" : ", ") + p.string();
  }
  throw std::runtime_error(
      "the shipped corpora (experiments/corpora of mare's source tree) are not at " +
      (where.empty() ? std::string("any known place") : where) +
      "; set MARE_CORPORA to that folder, or give the corpus folder itself (cdr:DIR)");
}

std::string read_release_file(const fs::path& dir, std::string_view name) {
  const ReleaseFile* f = find_release_file(name);
  if (!f) throw std::invalid_argument("no release file is named '" + std::string(name) + "'");
  const std::string path = (dir / f->name).string();
  if (!fs::is_regular_file(path))
    fail(path, 0, 0,
         "missing: expected the " + std::string(f->folder) + " release's file " +
             std::string(f->name) + " in " + dir.string());
  std::string bytes = read_file(path);
  const std::string sum = sha256_hex(bytes);
  if (sum != f->sha256)
    fail(path, 0, 0,
         "expected the published " + std::string(f->name) + " (sha256 " + std::string(f->sha256) +
             "), found other bytes (sha256 " + sum +
             "); a changed copy is read only as generic data (pubtator:DIR or semeval:DIR)");
  return bytes;
}

ReleaseSplits load_cdr_release(const fs::path& dir) {
  ReleaseSplits r;
  auto load = [&](std::string_view name) {
    const std::string path = (dir / std::string(name)).string();
    r.files.push_back(path);
    return parse_pubtator(read_release_file(dir, name), path);
  };
  r.train = load("CDR_TrainingSet.PubTator.txt");
  r.valid = load("CDR_DevelopmentSet.PubTator.txt");
  r.test = load("CDR_TestSet.PubTator.txt");
  return r;
}

const std::vector<std::string>& semeval2018_subtasks() {
  static const std::vector<std::string> s{"1.1", "1.2"};
  return s;
}

std::vector<std::string> parse_training_eval(std::string_view content, std::string_view file,
                                             const std::string& subtask) {
  check_utf8(content, file);
  const std::vector<Line> lines = split_lines(content, file);
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const Line& ln : lines) {
    if (ln.text.empty()) continue;
    const std::vector<std::string_view> f = split(ln.text, ' ');
    if (f.size() != 2 || f[0].empty() || f[1].empty())
      fail(file, ln.number, 1,
           "expected 'SUBTASK DOCUMENT-ID' (e.g. '1.1 H01-1001'), found " + quote(ln.text));
    if (f[0] != subtask) continue;
    if (!seen.insert(std::string(f[1])).second)
      fail(file, ln.number, f[0].size() + 2,
           "document " + quote(f[1]) + " is listed twice for subtask " + subtask);
    ids.emplace_back(f[1]);
  }
  return ids;
}

ReleaseSplits load_semeval2018_release(const fs::path& dir, const std::string& subtask,
                                       const std::string& also_train) {
  const std::vector<std::string>& known = semeval2018_subtasks();
  if (std::find(known.begin(), known.end(), subtask) == known.end())
    throw std::invalid_argument("semeval2018: unknown subtask '" + subtask +
                                "' (expected 1.1, clean entities, or 1.2, noisy entities)");
  ReleaseSplits r;
  auto read = [&](const std::string& name) {
    r.files.push_back((dir / name).string());
    return read_release_file(dir, name);
  };
  auto path = [&](const std::string& name) { return (dir / name).string(); };
  // Training abstracts and their relations; the organisers' held-out ones are valid.
  std::vector<Document> all =
      parse_semeval_xml(read(subtask + ".text.xml"), path(subtask + ".text.xml"));
  parse_semeval_relations(all, read(subtask + ".relations.txt"), path(subtask + ".relations.txt"));
  const std::vector<std::string> held =
      parse_training_eval(read("training-eval.txt"), path("training-eval.txt"), subtask);
  std::set<std::string> held_set(held.begin(), held.end());
  for (const std::string& id : held)
    if (std::none_of(all.begin(), all.end(), [&](const Document& d) { return d.id == id; }))
      fail(path("training-eval.txt"), 0, 0,
           "document " + quote(id) + " of subtask " + subtask + " is not in " + subtask +
               ".text.xml");
  for (Document& d : all) (held_set.count(d.id) ? r.valid : r.train).push_back(std::move(d));
  // Test abstracts with the official keys; the keys must label exactly the given pairs.
  const std::string xml = subtask + ".test.text.xml", keys = "keys.test." + subtask + ".txt",
                    pairs = subtask + ".test.relations.txt";
  r.test = parse_semeval_xml(read(xml), path(xml));
  const std::string key_bytes = read(keys);
  parse_semeval_relations(r.test, key_bytes, path(keys));
  const std::vector<SemevalPairLine> given =
      parse_semeval_pair_lines(read(pairs), path(pairs), LabelRule::none, {});
  const std::vector<SemevalPairLine> keyed = parse_semeval_pair_lines(
      key_bytes, path(keys), LabelRule::required, SemevalOptions{}.relation_types);
  for (std::size_t i = 0; i < std::max(given.size(), keyed.size()); ++i) {
    if (i >= given.size() || i >= keyed.size())
      fail(path(keys), i < keyed.size() ? keyed[i].line : 0, 0,
           "expected the pairs of " + pairs + " (" + std::to_string(given.size()) + "), found " +
               std::to_string(keyed.size()) + " keys");
    const SemevalPairLine &g = given[i], &k = keyed[i];
    if (g.e1 != k.e1 || g.e2 != k.e2 || g.reverse != k.reverse)
      fail(path(keys), k.line, k.column_e1,
           "expected the pair of " + pairs + " line " + std::to_string(g.line) + " (" + g.e1 + "," +
               g.e2 + (g.reverse ? ",REVERSE" : "") + "), found (" + k.e1 + "," + k.e2 +
               (k.reverse ? ",REVERSE" : "") + ")");
  }
  if (!also_train.empty()) {
    if (std::find(known.begin(), known.end(), also_train) == known.end() || also_train == subtask)
      throw std::invalid_argument("semeval2018: cannot also train on subtask '" + also_train + "'");
    std::set<std::string> taken;
    for (const std::vector<Document>* part : {&r.train, &r.valid, &r.test})
      for (const Document& d : *part) taken.insert(d.id);
    std::vector<Document> more =
        parse_semeval_xml(read(also_train + ".text.xml"), path(also_train + ".text.xml"));
    parse_semeval_relations(more, read(also_train + ".relations.txt"),
                            path(also_train + ".relations.txt"));
    for (Document& d : more)
      if (!taken.count(d.id)) r.train.push_back(std::move(d));
  }
  return r;
}

}  // namespace mare::data
