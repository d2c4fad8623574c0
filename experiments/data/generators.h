// Seeded synthetic corpora in the real formats, and the rule-based oracle's score.
//
//   synth-cdr      PubTator, binary CID, document level (~400 tokens), evidence in one
//                  sentence or across two; train/valid/test + train_ds (distant
//                  supervision: labels from a knowledge base, noisy by construction);
//                  by default 500 documents a split with about the pair counts of
//                  thesis Table 4.4 (~2.1 positive and ~8 negative pairs a document)
//   synth-ctd      BRAN TSV, 14 classes with thesis Table 4.9's frequencies, seven
//                  entity types, pair distances up to 500 tokens with a long tail; by
//                  default the table's size (about 119 700 training relations in
//                  36 932 documents, 4 549 to validate, 4 698 to test: 3.6 GB of TSV)
//   synth-semeval  SemEval 2018 Task 7 XML + relations, 6 relations with direction,
//                  sentence level (~96 tokens per abstract); subtask1.1 (clean entity
//                  annotation) and subtask1.2 (noisy entity boundaries)
//
// Each writes its splits and a small word2vec file (vectors.txt and vectors.bin), then
// reloads the written files through the real loaders and scores the oracle on them.
// Rule: the same name, seed and document count write the same bytes on every
// platform (all randomness comes from Rng; no unordered iteration reaches the output).
// The evidence that decides each relation is documented at the top of its synth_*.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

// The most training documents a generator writes: over twice the largest corpus the
// generators stand for (thesis Table 4.9's CTD, about 40 000 abstracts of synth-ctd). A
// generator keeps its corpus in memory, so the bound is also what keeps a mistyped
// --docs from running the machine out of memory rather than an error.
inline constexpr int kMaxDocs = 100000;

struct GenerateOptions {
  std::uint64_t seed = 1;
  int docs = 0;  // training documents, 1 to kMaxDocs; 0 = the generator's default
};

// The memory (bytes, estimated) the generator `name` holds while it makes a corpus of
// `docs` training documents (0: its default size); the caller checks it against its
// budget before generating (`mare data generate`). std::invalid_argument for an unknown name.
double generator_memory_bytes(const std::string& name, int docs);

struct OracleScore {
  long gold = 0;
  long predicted = 0;
  long correct = 0;
  double precision() const { return predicted ? double(correct) / predicted : 0.0; }
  double recall() const { return gold ? double(correct) / gold : 0.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

struct GenerateReport {
  std::string name;
  std::vector<std::string> files;             // paths written
  std::map<std::string, OracleScore> oracle;  // split label (e.g. "test") -> oracle score
};

// The generators, in one table (generators.cpp): their names, the names as an error
// lists them ("synth-cdr, synth-ctd or synth-semeval"), and each one's oracle
// (nullptr for a name that is no generator's, "" included).
std::vector<std::string> generator_names();
std::string generator_list();
using Oracle = std::vector<Relation> (*)(const Document&);
Oracle oracle_of(const std::string& generator);

// Every generated corpus folder holds generator.json beside its files: the generator, its
// seed and size, and the oracle's F1 per split as generation scored it. generator_of
// reads the generator's name from a folder ("" when the folder has no generator.json;
// a malformed one is an error naming it).
inline constexpr const char* kGeneratorFile = "generator.json";
std::string generator_of(const std::string& dir);
// Writes the corpus under out_dir; throws std::invalid_argument for an unknown name.
GenerateReport generate_corpus(const std::string& name, const std::string& out_dir,
                               const GenerateOptions& options);

// Thesis Table 4.9 (CTD): examples per relation class and split, in the table's order,
// under the label synth-ctd writes (BRAN's name) beside the table's pair type and
// relation; synth-ctd draws its classes with these frequencies.
struct CtdClassCount {
  std::string label, pair_type, relation;
  long train = 0, valid = 0, test = 0;
};
const std::vector<CtdClassCount>& ctd_table_4_9();
// synth-ctd's documents per split without --docs: each split's Table 4.9 relations over
// the gold relations a generated document carries (kCtdGoldPerDocument).
struct SplitDocuments {
  int train = 0, valid = 0, test = 0;
};
SplitDocuments synth_ctd_default_documents();
// A synth-ctd document is planned with three relations; its anaphoric mentions of the
// topic chemical and the label noise (synth_ctd.cpp's header) make about 3.24 gold ones
// (seed 1, 4 000 training documents: 3.245 train, 3.245 valid, 3.221 test).
inline constexpr double kCtdGoldPerDocument = 3.24;

GenerateReport generate_synth_cdr(const std::string& out_dir, const GenerateOptions& options);
GenerateReport generate_synth_ctd(const std::string& out_dir, const GenerateOptions& options);
GenerateReport generate_synth_semeval(const std::string& out_dir, const GenerateOptions& options);

// Oracles: read the documented evidence of each corpus and predict its relations.
std::vector<Relation> cdr_oracle(const Document& doc);
std::vector<Relation> ctd_oracle(const Document& doc);
std::vector<Relation> semeval_oracle(const Document& doc);

// Micro precision/recall/F1 of predicted against gold relations, matched on
// (document, head id, tail id, type, reverse).
OracleScore score_relations(const std::vector<Document>& gold,
                            const std::vector<std::vector<Relation>>& predicted);

}  // namespace mare::data
