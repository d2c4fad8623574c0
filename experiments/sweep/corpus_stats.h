// `mare data stats KIND:DIR [--json FILE]`: corpus statistics for the reports (thesis
// Tables 4.4, 4.9 and 4.11; Figures 4.4 and 4.10), read through the trainer's own loader
// (ReCorpus::load, experiments/re_data.h), so the counts are those a model is trained
// and scored on: the same splits (SemEval's seeded 15 % hold-out as valid), type pairs,
// NULL pairs and relation classes.
//
// Per split:
//   documents, sentences; tokens per document (whole documents, before any cut: the
//   per_document list is the Fig. 4.10 histogram) with total, mean, median (R's type 7),
//   min and max; entities and mentions (and per entity type); annotated relations in the
//   files; examples = candidate pairs, positive (a relation class) and negative (NULL);
//   positive examples per relation class (Table 4.4/4.9/4.11 shape), per (relation, head
//   type, tail type) (Table 4.9's pair types), and for SemEval with the REVERSE flag yes
//   or no (Table 4.11); the distance of every related pair in example order (Fig. 4.4:
//   the minimum token distance between a mention of the head and one of the tail,
//   data::Example::distance, the quantity of re_metrics' F1 by distance) with mean,
//   median, max and counts within 50/100/200/300/500 tokens; what the token cut lost.
//
// JSON (--json FILE, written atomically; read by `mare report`):
//   {"command": "data stats", "source", "kind", "directory", "max_tokens" (0: no cut),
//   "relation_classes" [NULL
//    first], "entity_types", "split_order": ["train", "valid", "test"],
//    "splits": {"<split>": {"documents", "sentences",
//      "tokens": {"total", "mean", "median", "min", "max", "per_document": [...]},
//      "entities", "mentions", "entities_by_type": {type: n}, "mentions_by_type": {...},
//      "annotated_relations", "examples", "positive", "negative",
//      "relations": {class: positive examples} (every non-NULL class, 0 included),
//      "relations_by_pair_type": [{"relation", "head_type", "tail_type", "count"}],
//      "reverse": {class: {"yes": n, "no": n}} (semeval only),
//      "related_pair_distances": [...],
//      "distance": {"mean", "median", "max", "within": {"50": n, ..., "500": n}},
//      "truncated_documents", "dropped_pairs", "dropped_positives",
//      "unmatched_relations",
//      "table_4_4": {"unfiltered_negative", "bran_unknown_id_pairs", "hypernym_filtered"}
//        (cdr only),
//      "shared_with_subtask_1_1": {class: n} (semeval2018:1.2 only)}},
//    "subtask" (semeval2018), "hypernym_filter" (CDR sources)}
//   Undefined statistics (the mean of an empty list) are null.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare::sweep {

struct PairTypeCount {
  std::string relation, head_type, tail_type;
  long count = 0;
};

struct SplitStats {
  std::string name;
  long documents = 0, sentences = 0;
  std::vector<int> tokens;  // (documents) tokens of each document, in file order
  long entities = 0, mentions = 0;
  std::map<std::string, long> entities_by_type, mentions_by_type;
  long annotated_relations = 0;
  long examples = 0, positive = 0, negative = 0;
  std::vector<long> relations;                // (relation classes) examples per class, NULL first
  std::vector<PairTypeCount> by_pair_type;    // sorted by class order, then types
  std::vector<long> reverse_yes, reverse_no;  // (relation classes)
  std::vector<int> distances;                 // related pairs, example order
  long truncated_documents = 0, dropped_pairs = 0, dropped_positives = 0, unmatched_relations = 0;
  // cdr only, thesis Table 4.4's negatives built as BRAN builds them: NULL pairs before
  // the hypernym filter, the pairs BRAN adds by taking every "-1" mention of a document
  // as one more entity, and the NULL pairs the filter drops when it runs on this split.
  long unfiltered_negative = -1, bran_unknown_id_pairs = -1, hypernym_filtered = -1;
  // semeval2018:1.2 only: positive examples per class in the abstracts that 1.2's
  // training file shares (by id) with 1.1's.
  std::vector<long> shared_with_subtask_1_1;
};

struct CorpusStatistics {
  std::string source, kind, directory;
  int max_tokens = 0;                         // 0: no cut
  std::vector<std::string> relation_classes;  // NULL first
  std::vector<std::string> entity_types;
  std::vector<SplitStats> splits;  // train, valid, test
  std::string subtask;             // semeval2018: 1.1 or 1.2
  std::string hypernym_filter;     // the filter the counts above were made with
};

// max_tokens < 0: whole documents (the default of `mare data stats`); 0: the corpus's
// training default (CTD 500); > 0: that cut. Throws what ReCorpus::load throws.
CorpusStatistics corpus_statistics(const std::string& source, int max_tokens = -1);

nlohmann::json to_json(const CorpusStatistics& s);
// Plain-text summary: one table of counts per split, examples per class per split, and
// the related-pair distances.
std::string describe(const CorpusStatistics& s);

}  // namespace mare::sweep
