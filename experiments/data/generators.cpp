// Generator registry and relation scoring (see generators.h).
//
// Rule: scores compare entity ids, never indices, so gold and predictions need not
// list entities in the same order.
#include "experiments/data/generators.h"

#include <filesystem>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "experiments/data/error.h"

namespace mare::data {

namespace {

// Every generator, once: its name, what writes its corpus, the oracle that reads it, and
// the memory it takes while it makes the corpus (its splits held until written): per
// training document for --docs N, and at its default size (the peak resident size at
// 5 000 documents and at the default, measured on x86-64 Linux).
struct Generator {
  const char* name;
  GenerateReport (*generate)(const std::string&, const GenerateOptions&);
  Oracle oracle;
  double bytes_per_doc;
  double default_bytes;
};
constexpr Generator kGenerators[] = {
    {"synth-cdr", generate_synth_cdr, cdr_oracle, 140e3, 500 * 140e3},
    {"synth-ctd", generate_synth_ctd, ctd_oracle, 200e3, 7.0e9},
    {"synth-semeval", generate_synth_semeval, semeval_oracle, 45e3, 350 * 45e3}};

const Generator* find_generator(const std::string& name) {
  for (const Generator& g : kGenerators)
    if (name == g.name) return &g;
  return nullptr;
}

std::string unknown_generator(const std::string& name) {
  return "unknown generator '" + name + "' (expected " + generator_list() + ")";
}

}  // namespace

double generator_memory_bytes(const std::string& name, int docs) {
  const Generator* g = find_generator(name);
  if (!g) throw std::invalid_argument(unknown_generator(name));
  return docs > 0 ? g->bytes_per_doc * docs : g->default_bytes;
}

std::vector<std::string> generator_names() {
  std::vector<std::string> names;
  for (const Generator& g : kGenerators) names.push_back(g.name);
  return names;
}

std::string generator_list() {
  std::string list;
  const std::size_t n = std::size(kGenerators);
  for (std::size_t i = 0; i < n; ++i)
    list.append(i == 0 ? "" : i + 1 == n ? " or " : ", ").append(kGenerators[i].name);
  return list;
}

Oracle oracle_of(const std::string& generator) {
  const Generator* g = find_generator(generator);
  return g ? g->oracle : nullptr;
}

GenerateReport generate_corpus(const std::string& name, const std::string& out_dir,
                               const GenerateOptions& options) {
  if (options.docs < 0 || options.docs > kMaxDocs)
    throw std::invalid_argument("--docs: expected a whole number from 1 to " +
                                std::to_string(kMaxDocs) + ", got " + std::to_string(options.docs));
  const Generator* g = find_generator(name);
  if (!g) throw std::invalid_argument(unknown_generator(name));
  GenerateReport report = g->generate(out_dir, options);
  // The marker goes into the corpus folder and into every sub-folder a loader reads
  // as a corpus of its own (synth-semeval's subtask1.1, subtask1.2), each with the
  // oracle's scores of the splits it holds ("subtask1.1/test" there is "test").
  std::set<std::string> folders = {""};
  for (const auto& [label, score] : report.oracle)
    if (const auto slash = label.find('/'); slash != std::string::npos)
      folders.insert(label.substr(0, slash));
  std::vector<std::string> written;
  for (const std::string& folder : folders) {
    nlohmann::json oracle = nlohmann::json::object();
    for (const auto& [label, score] : report.oracle)
      if (folder.empty() || label.rfind(folder + "/", 0) == 0)
        oracle[folder.empty() ? label : label.substr(folder.size() + 1)] = score.f1();
    const nlohmann::json marker = {
        {"generator", name}, {"seed", options.seed}, {"docs", options.docs}, {"oracle_f1", oracle}};
    const std::string path = (std::filesystem::path(out_dir) / folder / kGeneratorFile).string();
    write_file(path, marker.dump(2) + "\n");
    written.push_back(path);
  }
  report.files.insert(report.files.end(), written.begin(), written.end());
  return report;
}

std::string generator_of(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::path(dir) / kGeneratorFile;
  if (!std::filesystem::exists(path)) return "";
  const std::string file = path.string();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file));
  } catch (const nlohmann::json::exception& e) {
    fail(file, 0, 0, std::string("expected the JSON `mare data generate` writes: ") + e.what());
  }
  if (!j.is_object() || !j.contains("generator") || !j["generator"].is_string())
    fail(file, 0, 0, "expected an object with the generator's name (\"generator\": \"synth-ctd\")");
  const std::string name = j["generator"].get<std::string>();
  if (!find_generator(name)) fail(file, 0, 0, unknown_generator(name));
  return name;
}

OracleScore score_relations(const std::vector<Document>& gold,
                            const std::vector<std::vector<Relation>>& predicted) {
  using Key = std::tuple<std::size_t, std::string, std::string, std::string, bool>;
  OracleScore s;
  for (std::size_t d = 0; d < gold.size(); ++d) {
    const Document& doc = gold[d];
    std::set<Key> g, p;
    for (const Relation& r : doc.relations)
      g.insert({d, doc.entities[r.head].id, doc.entities[r.tail].id, r.type, r.reverse});
    if (d < predicted.size())
      for (const Relation& r : predicted[d])
        p.insert({d, doc.entities[r.head].id, doc.entities[r.tail].id, r.type, r.reverse});
    s.gold += static_cast<long>(g.size());
    s.predicted += static_cast<long>(p.size());
    for (const Key& k : p) s.correct += g.count(k) ? 1 : 0;
  }
  return s;
}

}  // namespace mare::data
