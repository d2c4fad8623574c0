// Relation-extraction corpora as tensors (SPEC §4.1–4.3, §5, §6): a data source
// (KIND:DIR) is loaded into splits of documents and entity-pair examples with
// vocabularies, label sets and class weights, and turned into ReBatch batches
// (models/re_batch.h) by make_batch and the samplers.
//
// Sources:
//   cdr[:DIR]            BioCreative V CDR as released: CDR_TrainingSet (train),
//                        CDR_DevelopmentSet (valid) and CDR_TestSet (test).PubTator.txt,
//                        from the shipped copy (experiments/corpora/cdr) or DIR, each
//                        checked against the release's checksum (data/releases.h)
//   cdr+dev[:DIR]        the same release as BRAN trained on it: the training and
//                        development documents together, a fixed 15 % of them (150)
//                        held out to validate; test unchanged
//   semeval2018:S[:DIR]  SemEval 2018 Task 7 subtask S (1.1 clean, 1.2 noisy) as
//                        released: train S.text.xml + S.relations.txt less the abstracts
//                        of training-eval.txt (valid: the organisers' held-out ones), test
//                        S.test.text.xml with the official keys keys.test.S.txt;
//                        semeval2018:S+T also trains on T's training abstracts (all but
//                        those S's files hold under the same id): the thesis trained on
//                        both subtasks and scored each
//   synth-cdr, pubtator  DIR/{train,valid,test}.pubtator (CID relations)
//   bran-tsv             DIR/{train,valid,test}.tsv (BRAN's 13 columns; CTD or CDR)
//   semeval              DIR/{train,test}.text.xml + .relations.txt (DIR a subtask
//                        folder: semeval:D/subtask1.2 reads the noisy corpus), or
//                        DIR/subtask1.x/… when DIR holds one subtask folder; a DIR that
//                        holds both subtask1.1 and subtask1.2 is refused (name one). Validation is
//                        a seeded 15 % hold-out of train (SPEC §6: the task has no dev
//                        set); a valid.text.xml beside them is not read.
//
// Rules:
//   - Vocabularies of words, character n-grams and characters come from the TRAIN
//     split only (data::Vocabulary: <pad> = 0, <unk> = 1; min_count applies to words
//     and n-grams; every character of train is kept). Label sets (entity types,
//     relation classes) are the union over all splits, so a type too rare to reach
//     train still has an id.
//   - Entity types are sorted by byte order. NER output classes: O = 0, then B-type,
//     I-type per type (B-t = 1 + 2k, I-t = 2 + 2k). Input entity tags: the same with
//     <pad> = 0 in front (entity tag = NER class + 1).
//   - Relation classes: NULL = 0, then the corpus's classes in a fixed order:
//       CDR (pubtator, synth-cdr): CID;
//       bran-tsv: BRAN's 14 CTD classes in thesis Table 4.9 order when the data holds
//         any of them (data::ctd_relation_classes());
//       semeval: USAGE, MODEL-FEATURE, RESULT, TOPIC, PART_WHOLE, COMPARE (thesis
//         Table 4.11 order).
//     then any other label found in the data, in byte order. SemEval direction: the
//     task's subtask 1 gives the pair and scores the relation type, so by default a
//     relation and its REVERSE form are one class (6 + NULL) and the flag is kept in
//     ReSplit::reverse; semeval_directed = true makes "T-REVERSE" classes after each T.
//   - Examples: data::build_examples with the corpus's type pairs (CDR: Chemical ->
//     Disease; bran-tsv: the CTD pairs; SemEval: every pair, unordered, same
//     sentence), NULL for unannotated pairs (none with annotated_pairs_only),
//     truncation at max_tokens as there. semeval2018 classifies the given pairs, as its
//     task does: one example per listed pair (data::listed_examples), E1 the head, in
//     the file's order, with its direction flag; no NULL examples, and a prediction is
//     always one of the six types.
//   - CDR's hypernym filter (hypernym_filter; BRAN's filter_hypernyms.py): a NULL
//     (chemical, disease) example is dropped when its disease is a MeSH 2017 hypernym
//     (data/mesh.h) of a disease that the same chemical induces in the same document.
//     "train" (cdr's default) filters the training split; "all" every split, as BRAN and
//     the thesis did (validation and test candidates are then chosen with their gold
//     labels: an evaluation that looks at the gold, to reproduce Table 4.4 only); "none".
//   - Official scores (official_scores.h): cdr's document-level CID triples over every
//     gold relation of the split; semeval2018's macro F1 (the organisers' scorer v1.2).
//   - Class weights (thesis eq. 4-2): w_c = total / (C · count_c) over the train
//     examples, C = number of relation classes; a class absent from train gets 0.
//   - Batches: row b is one document, cut to max_tokens and padded to the longest
//     row. A pair's head (tail) rows are the tokens of every mention of its head
//     (tail) entity that ends inside the cut document, sorted, without repeats.
//     head_pos/tail_pos are the starts of the closest mention pair (the first such
//     pair in mention order); distance is their gap (= data::Example::distance).
//   - Everything is deterministic: same files, options and seed, same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/data/document.h"
#include "experiments/data/examples.h"
#include "experiments/data/vocab.h"
#include "experiments/data/word2vec.h"
#include "kernels/random.h"
#include "kernels/tensor.h"
#include "models/re_batch.h"

namespace mare {

// Stream of the SemEval hold-out draw (kernels/random.h lists the harness's streams).
inline constexpr uint32_t kStreamHoldout = 3;

enum class ReSourceKind { synth_cdr, pubtator, bran_tsv, semeval, cdr, semeval2018 };

// The score a corpus's task defines (experiments/data/official_scores.h), or none.
enum class OfficialScore { none, cdr, semeval2018 };

struct ReCorpusOptions {
  std::string source;       // "KIND:DIR", KIND in synth-cdr | pubtator | bran-tsv | semeval
  int max_tokens = 0;       // 0: corpus default (CTD 500 as the thesis, others none); < 0: none
  int ngram = 3;            // character n-gram size
  long min_count = 1;       // words and n-grams seen fewer times in train map to <unk>
  bool lowercase = false;   // ASCII-lowercase tokens before the word and n-gram lookups
  int max_token_chars = 0;  // > 0: characters / n-grams kept per token (first ones)
  std::string word2vec;     // optional word2vec file (.bin binary, text otherwise)
  int word2vec_dim = 0;     // > 0: the vectors must have this dimension
  bool semeval_directed = false;  // T and T-REVERSE as separate classes
  // Only annotated pairs become examples (no NULL examples): the protocol of SemEval
  // 2018 Task 7 subtask 1, where the pairs are given and only their type is scored.
  bool annotated_pairs_only = false;
  // CDR: none | train | all (see the rules above); empty: the corpus's default (cdr:
  // train, other CDR sources: none).
  std::string hypernym_filter;
  double holdout = 0.15;  // SemEval: share of train documents held out as valid
  uint64_t seed = 1;      // hold-out draw and random rows of words without a vector
};

// Token features of one document cut to max_tokens, computed once at load.
struct ReDocFeatures {
  int length = 0;                                 // tokens kept (≤ max_tokens)
  std::vector<int32_t> words;                     // [length]
  std::vector<int32_t> entity_tags;               // [length] input tag ids (≥ 1)
  std::vector<int32_t> ner;                       // [length] NER classes
  std::vector<int32_t> ngram_offsets, ngram_ids;  // CSR over tokens
  std::vector<int32_t> char_offsets, char_ids;    // CSR over tokens
  // Per entity: the kept mentions' token indices (sorted, unique) and kept mention
  // starts (mention order).
  std::vector<std::vector<int32_t>> entity_tokens;
  std::vector<std::vector<int32_t>> entity_starts;
};

struct ReSplit {
  std::string name;  // "train", "valid", "test"
  std::vector<data::Document> documents;
  std::vector<ReDocFeatures> features;              // [documents]
  std::vector<data::Example> examples;              // data::build_examples order
  std::vector<int> labels;                          // [examples] relation class ids
  std::vector<bool> reverse;                        // [examples] SemEval REVERSE flag
  std::vector<std::vector<int>> document_examples;  // example indices of each document
  std::vector<int> positives;                       // examples with a non-NULL label
  std::vector<int> negatives;                       // NULL examples
  // From data::ExampleSet: what the cut and the type pairs lost.
  int truncated_documents = 0, dropped_pairs = 0, dropped_positives = 0, unmatched_relations = 0;
  int filtered_negatives = 0;  // NULL pairs the hypernym filter dropped
};

struct ReSource;

class ReCorpus {
 public:
  // Throws std::invalid_argument for a malformed source or option, std::runtime_error
  // naming the file for a missing file or a train split without relations, and
  // data::DataError for malformed files.
  static ReCorpus load(const ReCorpusOptions& options);

  ReCorpusOptions options;
  ReSourceKind kind = ReSourceKind::synth_cdr;
  std::string directory;            // where the files were read
  std::string subtask;              // semeval2018: "1.1" or "1.2", the subtask scored
  std::string also_train;           // semeval2018:S+T: T, whose abstracts are trained on too
  std::vector<std::string> files;   // the release files read (cdr, semeval2018)
  std::vector<std::string> inputs;  // every data file read, in reading order
  // SHA-256 over the contents read (the data files, a release file by its verified
  // checksum, and the word2vec file): a run is the same run only on the same contents.
  std::string digest;
  OfficialScore official = OfficialScore::none;
  bool given_pairs = false;              // semeval2018: the examples are the listed pairs
  bool train_on_dev = false;             // cdr+dev
  std::string hypernym_filter = "none";  // resolved: none | train | all
  // The generator that wrote the directory (synth-cdr, synth-ctd, synth-semeval: its
  // generator.json), empty for other data; a synth-cdr source is always synth-cdr's.
  std::string generator;
  int max_tokens = 0;  // resolved: 0 = no cut

  ReSplit train, valid, test;

  data::Vocabulary words, ngrams, chars;
  std::vector<std::string> entity_types;      // sorted
  std::vector<std::string> entity_tag_names;  // [entity_tags] "<pad>", "O", "B-t", "I-t", ...
  std::vector<std::string> ner_tag_names;     // [ner_tags] "O", "B-t", "I-t", ...
  std::vector<std::string> relation_names;    // [relations] "NULL", ...
  std::vector<data::TypePair> type_pairs;     // empty: every pair
  bool unordered = false;                     // SemEval
  bool same_sentence = false;                 // SemEval

  std::vector<float> class_weights;  // [relations], eq. 4-2 over train
  bool weighted_by_default = false;  // SPEC §6: CTD and SemEval weighted, CDR not

  Tensor word_init;  // f32 [words, dim] from the word2vec file, or undefined
  data::EmbeddingMatrixReport word_init_report;

  ReVocabSizes sizes;

  const ReSplit& split(const std::string& name) const;  // "train" | "valid" | "test"
  int relation_id(const std::string& name) const;       // -1 when unknown

 private:
  // The steps of load(), in order: the options checked and the source resolved; each
  // split's documents read (returns the training file's name, for messages); the
  // vocabularies of train; the entity tags and relation classes; the candidate pairs,
  // their labels and pools, and each document's features; the class weights, word
  // vectors and the sizes a model is built with.
  void resolve_source(const ReSource& source);
  std::string read_splits(const ReSource& source);
  void build_vocabularies();
  void name_tags_and_classes();
  void build_examples(const std::string& train_file);
  void weigh_and_size();
  void featurize(ReSplit& split) const;
};

// A source string taken apart: KIND, then its folder (and semeval2018's subtask); the
// release kinds' folder is the shipped copy when none is given. Throws
// std::invalid_argument naming the grammar for anything else.
struct ReSource {
  ReSourceKind kind = ReSourceKind::synth_cdr;
  std::string directory;
  std::string subtask;
  std::string also_train;     // semeval2018:S+T: T's abstracts join the training split
  bool train_on_dev = false;  // cdr+dev: train and development documents, 15 % held out
};
ReSource parse_re_source(const std::string& source);
// Whether a source names a shipped release (cdr, cdr+dev, semeval2018:…), whose folder
// is optional, rather than KIND:DIR.
bool names_a_release(const std::string& source);
// The hypernym-filter settings (ReCorpusOptions::hypernym_filter): none, train, all.
std::vector<std::string> hypernym_filter_names();

// "synth-cdr" -> ReSourceKind::synth_cdr, ...; throws std::invalid_argument otherwise.
ReSourceKind parse_re_source_kind(const std::string& kind);
const char* to_string(ReSourceKind kind);

// One row of a batch: a document of the split and the examples of it to score.
struct BatchItem {
  int document = 0;
  std::vector<int> examples;  // indices into ReSplit::examples, all of this document
};

// The tensors of a batch (models/re_batch.h) on the CPU; throws std::out_of_range for an
// index outside the split and std::invalid_argument for an example of another document.
ReBatch make_batch(const ReSplit& split, const std::vector<BatchItem>& items);

// RE training batch as BRAN: with probability 0.5 all B examples come from the
// positive pool, else from the negative pool (the other pool when one is empty), each
// drawn uniformly with replacement; each becomes one item with just that pair.
std::vector<BatchItem> sample_re_batch(const ReSplit& split, int batch, PhiloxStream& rng);
// The same ratio inside every batch: the first ⌈B/2⌉ examples from the positive pool,
// the rest from the negative pool (uniform, with replacement; the other pool when one
// is empty). Single-class batches make a small model's bias swing from batch to batch;
// this is the trainer's `--batching balanced`.
std::vector<BatchItem> sample_balanced_re_batch(const ReSplit& split, int batch, PhiloxStream& rng);
// B examples drawn uniformly with replacement from all of the split's examples, so that a
// batch's classes come in the split's proportions (the other two draw half of them
// positive, which teaches a prior of one positive pair in two: on a corpus with one in
// ten, precision pays for it); the trainer's `--batching natural`.
std::vector<BatchItem> sample_natural_re_batch(const ReSplit& split, int batch, PhiloxStream& rng);

// The trainer's `--batching`: which of the three samplers above draws each RE batch.
enum class ReBatching { bran, balanced, natural };
ReBatching parse_re_batching(const std::string& name);  // std::invalid_argument naming them
std::vector<std::string> re_batching_names();           // bran, balanced, natural
std::vector<BatchItem> sample_re_batch(ReBatching how, const ReSplit& split, int batch,
                                       PhiloxStream& rng);
// NER batch: B documents drawn uniformly with replacement, no pairs.
std::vector<BatchItem> sample_ner_batch(const ReSplit& split, int batch, PhiloxStream& rng);
// Evaluation: every document of the split in order, each with all its examples, in
// chunks of B documents.
std::vector<std::vector<BatchItem>> evaluation_batches(const ReSplit& split, int batch);

}  // namespace mare
