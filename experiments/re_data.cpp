// Relation-extraction corpora and batches (see re_data.h).
//
// Rule: token features are computed once per document at load; make_batch only copies
// them into padded tensors, so a batch costs O(tokens + mention tokens).
#include "experiments/re_data.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/mesh.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/releases.h"
#include "experiments/data/semeval.h"
#include "experiments/data/sha256.h"
#include "experiments/data/tokenizer.h"
#include "kernels/names.h"

namespace mare {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& semeval_classes() {
  static const std::vector<std::string> c{"USAGE", "MODEL-FEATURE", "RESULT",
                                          "TOPIC", "PART_WHOLE",    "COMPARE"};
  return c;
}

std::string require_file(const fs::path& path, const std::string& what) {
  if (!fs::is_regular_file(path))
    throw std::runtime_error("relation corpus: missing file " + path.string() + " (expected " +
                             what + ")");
  return path.string();
}

// SHA-256 over what a corpus was read from, by content and not by path: each file's name,
// size and bytes, a shipped release file by its verified checksum (read_release_file
// refuses any other bytes), in reading order.
std::string content_digest(const std::vector<std::string>& files, bool release) {
  data::Sha256 h;
  for (const std::string& f : files) {
    const std::string name = fs::path(f).filename().string();
    if (const data::ReleaseFile* r = release ? data::find_release_file(name) : nullptr) {
      h.update("release " + name + " " + std::string(r->sha256) + "\n");
      continue;
    }
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error(f + ": cannot be read");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    h.update(name + " " + std::to_string(bytes.size()) + "\n");
    h.update(bytes);
  }
  return h.hex();
}

// Code points of a UTF-8 token (the loaders guarantee valid UTF-8).
std::vector<std::string> code_points(const std::string& s) {
  const std::vector<std::size_t> at = data::utf8_offsets(s);
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < at.size(); ++i) out.push_back(s.substr(at[i], at[i + 1] - at[i]));
  return out;
}

std::string lookup_form(const std::string& token, bool lowercase) {
  return lowercase ? data::ascii_lower(token) : token;
}

std::vector<std::string> token_ngrams(const std::string& form, const ReCorpusOptions& o) {
  std::vector<std::string> g = data::char_ngrams(form, o.ngram);
  if (o.max_token_chars > 0 && static_cast<int>(g.size()) > o.max_token_chars)
    g.resize(o.max_token_chars);
  return g;
}

std::vector<std::string> token_chars(const std::string& token, const ReCorpusOptions& o) {
  std::vector<std::string> c = code_points(token);
  if (o.max_token_chars > 0 && static_cast<int>(c.size()) > o.max_token_chars)
    c.resize(o.max_token_chars);
  return c;
}

std::string class_name(const data::Example& e, bool directed) {
  return directed && e.reverse && e.label != data::kNullLabel ? e.label + "-REVERSE" : e.label;
}

Tensor indices(const std::vector<int32_t>& v, const Shape& shape) {
  return Tensor::from_indices(v, shape);
}

// cdr+dev, BRAN's protocol: the training and development documents together, 15 % of
// them (150 of 1 000) held out to validate, the rest trained on. The draw is fixed (the
// same documents for every run, whatever its seed): a Philox permutation of seed 1111
// (BRAN shuffled with that seed; its documents are not these), both parts in file order.
void hold_out_of_train_and_dev(ReSplit& train, ReSplit& valid) {
  std::vector<data::Document> all = std::move(train.documents);
  for (data::Document& d : valid.documents) all.push_back(std::move(d));
  train.documents.clear();
  valid.documents.clear();
  const int n = static_cast<int>(all.size());
  const int k = static_cast<int>(std::lround(0.15 * n));
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  PhiloxStream rng(1111, kStreamHoldout);
  for (int i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  std::vector<bool> held(n, false);
  for (int i = 0; i < k; ++i) held[perm[i]] = true;
  for (int i = 0; i < n; ++i)
    (held[i] ? valid.documents : train.documents).push_back(std::move(all[i]));
}

}  // namespace

constexpr Named<ReSourceKind> kSourceKinds[] = {{ReSourceKind::cdr, "cdr"},
                                                {ReSourceKind::semeval2018, "semeval2018"},
                                                {ReSourceKind::synth_cdr, "synth-cdr"},
                                                {ReSourceKind::pubtator, "pubtator"},
                                                {ReSourceKind::bran_tsv, "bran-tsv"},
                                                {ReSourceKind::semeval, "semeval"}};

constexpr const char* kHypernymFilters[] = {"none", "train", "all"};

ReSourceKind parse_re_source_kind(const std::string& kind) {
  if (const ReSourceKind* k = value_of(kSourceKinds, kind)) return *k;
  throw std::invalid_argument("relation corpus: unknown source kind '" + kind + "' (expected " +
                              names_of(kSourceKinds, " or ") + ")");
}

const char* to_string(ReSourceKind kind) {
  return name_of(kSourceKinds, kind).data();  // the table's literals end in '\0'
}

bool names_a_release(const std::string& source) {
  const std::string kind = source.substr(0, source.find(':'));
  return kind == "cdr" || kind == "cdr+dev" || kind == "semeval2018";
}

ReSource parse_re_source(const std::string& source) {
  const std::string grammar =
      "expected cdr[:DIR], cdr+dev[:DIR], semeval2018:1.1[:DIR], semeval2018:1.2[:DIR] or "
      "KIND:DIR with KIND "
      "one of synth-cdr, pubtator, bran-tsv, semeval";
  const std::size_t colon = source.find(':');
  ReSource r;
  std::string kind = source.substr(0, colon);
  if (kind == "cdr+dev") kind = "cdr", r.train_on_dev = true;
  r.kind = parse_re_source_kind(kind);
  const std::string rest = colon == std::string::npos ? "" : source.substr(colon + 1);
  switch (r.kind) {
    case ReSourceKind::cdr:
      r.directory = rest.empty() ? (data::shipped_corpora_dir() / "cdr").string() : rest;
      break;
    case ReSourceKind::semeval2018: {
      const std::size_t second = rest.find(':');
      r.subtask = rest.substr(0, second);
      const std::vector<std::string>& known = data::semeval2018_subtasks();
      auto is_subtask = [&](const std::string& x) {
        return std::find(known.begin(), known.end(), x) != known.end();
      };
      // S+T: evaluate on S, train on S and T (the thesis trained on both subtasks).
      if (const std::size_t plus = r.subtask.find('+'); plus != std::string::npos) {
        r.also_train = r.subtask.substr(plus + 1);
        r.subtask.resize(plus);
      }
      if (!is_subtask(r.subtask) ||
          (!r.also_train.empty() && (!is_subtask(r.also_train) || r.also_train == r.subtask)))
        throw std::invalid_argument("relation corpus '" + source +
                                    "': expected subtask 1.1 (clean entities), 1.2 (noisy "
                                    "entities), 1.1+1.2 or 1.2+1.1 after semeval2018:");
      const std::string dir = second == std::string::npos ? "" : rest.substr(second + 1);
      r.directory =
          dir.empty() ? (data::shipped_corpora_dir() / "semeval2018-task7").string() : dir;
      break;
    }
    default:
      if (rest.empty())
        throw std::invalid_argument("relation corpus: " + grammar + ", found '" + source + "'");
      r.directory = rest;
  }
  return r;
}

std::vector<std::string> hypernym_filter_names() {
  return {std::begin(kHypernymFilters), std::end(kHypernymFilters)};
}

const ReSplit& ReCorpus::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "valid") return valid;
  if (name == "test") return test;
  throw std::invalid_argument("relation corpus: unknown split '" + name +
                              "' (expected train, valid or test)");
}

int ReCorpus::relation_id(const std::string& name) const {
  for (std::size_t i = 0; i < relation_names.size(); ++i)
    if (relation_names[i] == name) return static_cast<int>(i);
  return -1;
}

void ReCorpus::featurize(ReSplit& s) const {
  std::map<std::string, int> tag_id;  // BIO tag -> NER class
  for (std::size_t i = 0; i < ner_tag_names.size(); ++i) tag_id[ner_tag_names[i]] = i;
  const int limit = max_tokens > 0 ? max_tokens : INT_MAX;
  s.features.clear();
  for (const data::Document& doc : s.documents) {
    ReDocFeatures f;
    f.length = std::min(static_cast<int>(doc.tokens.size()), limit);
    const std::vector<std::string> tags = data::entity_tags(doc, data::TagScheme::kBio);
    f.ngram_offsets.push_back(0);
    f.char_offsets.push_back(0);
    for (int i = 0; i < f.length; ++i) {
      const std::string& text = doc.tokens[i].text;
      const std::string form = lookup_form(text, options.lowercase);
      f.words.push_back(words.id(form));
      const int ner = tag_id.at(tags[i]);
      f.ner.push_back(ner);
      f.entity_tags.push_back(ner + 1);
      for (const std::string& g : token_ngrams(form, options)) f.ngram_ids.push_back(ngrams.id(g));
      f.ngram_offsets.push_back(static_cast<int32_t>(f.ngram_ids.size()));
      for (const std::string& c : token_chars(text, options)) f.char_ids.push_back(chars.id(c));
      f.char_offsets.push_back(static_cast<int32_t>(f.char_ids.size()));
    }
    f.entity_tokens.resize(doc.entities.size());
    f.entity_starts.resize(doc.entities.size());
    for (std::size_t e = 0; e < doc.entities.size(); ++e) {
      std::set<int32_t> rows;
      for (int m : doc.entities[e].mentions) {
        const data::Span sp = doc.mentions[m].tokens;
        if (sp.end > f.length) continue;  // the rule of data::build_examples
        f.entity_starts[e].push_back(sp.begin);
        for (int i = sp.begin; i < sp.end; ++i) rows.insert(i);
      }
      f.entity_tokens[e].assign(rows.begin(), rows.end());
    }
    s.features.push_back(std::move(f));
  }
}

ReCorpus ReCorpus::load(const ReCorpusOptions& options) {
  ReCorpus c;
  c.options = options;
  if (options.source.empty() ||
      (options.source.find(':') == std::string::npos && !names_a_release(options.source)))
    throw std::invalid_argument(
        "relation corpus: expected a source KIND:DIR (KIND one of " + names_of(kSourceKinds) +
        "), cdr, cdr+dev or semeval2018:SUBTASK, found '" + options.source + "'");
  const ReSource source = parse_re_source(options.source);
  c.resolve_source(source);
  const std::string train_file = c.read_splits(source);
  c.build_vocabularies();
  c.name_tags_and_classes();
  c.build_examples(train_file);
  c.weigh_and_size();
  std::vector<std::string> read = c.inputs;
  if (!options.word2vec.empty()) read.push_back(options.word2vec);
  c.digest = content_digest(read, !c.files.empty());
  return c;
}

void ReCorpus::resolve_source(const ReSource& source) {
  kind = source.kind;
  directory = source.directory;
  subtask = source.subtask;
  if (options.ngram < 1)
    throw std::invalid_argument("relation corpus: n-gram size must be >= 1, found " +
                                std::to_string(options.ngram));
  if (options.min_count < 1) throw std::invalid_argument("relation corpus: min_count must be >= 1");
  if (!(options.holdout > 0.0 && options.holdout < 1.0))
    throw std::invalid_argument("relation corpus: the hold-out share must lie in (0, 1)");
  const bool cdr_like = kind == ReSourceKind::cdr || kind == ReSourceKind::pubtator ||
                        kind == ReSourceKind::synth_cdr;
  hypernym_filter = !options.hypernym_filter.empty() ? options.hypernym_filter
                    : kind == ReSourceKind::cdr      ? "train"
                                                     : "none";
  if (std::find(std::begin(kHypernymFilters), std::end(kHypernymFilters), hypernym_filter) ==
      std::end(kHypernymFilters))
    throw std::invalid_argument("relation corpus: hypernym filter '" + hypernym_filter +
                                "': expected none, train or all");
  if (hypernym_filter != "none" && !cdr_like)
    throw std::invalid_argument("relation corpus: the hypernym filter reads CDR's MeSH ids; " +
                                options.source + " is not a CDR corpus");
  if (!fs::is_directory(fs::path(directory)))
    throw std::runtime_error("relation corpus: no directory " + directory + " (source '" +
                             options.source + "')");
  generator = kind == ReSourceKind::synth_cdr ? "synth-cdr"
              : kind == ReSourceKind::cdr || kind == ReSourceKind::semeval2018
                  ? ""
                  : data::generator_of(directory);
  max_tokens = options.max_tokens < 0           ? 0
               : options.max_tokens > 0         ? options.max_tokens
               : kind == ReSourceKind::bran_tsv ? 500
                                                : 0;
}

namespace {

// semeval:DIR: DIR itself, or its one subtask folder (with both, the user names one).
fs::path semeval_subtask_folder(const fs::path& dir) {
  if (fs::exists(dir / "train.text.xml")) return dir;
  std::vector<std::string> subtasks;
  for (const char* name : {"subtask1.1", "subtask1.2"})
    if (fs::exists(dir / name / "train.text.xml")) subtasks.push_back(name);
  if (subtasks.size() > 1)
    throw std::invalid_argument("semeval:" + dir.string() + ": " + dir.string() +
                                " holds subtask1.1 and subtask1.2; expected one of them: semeval:" +
                                (dir / "subtask1.1").string() +
                                " (clean entity annotation) or semeval:" +
                                (dir / "subtask1.2").string() + " (noisy entity boundaries)");
  return subtasks.size() == 1 ? dir / subtasks[0] : dir;
}

// A seeded hold-out of `all`: the first share·n of a Fisher–Yates permutation (at least
// one document each side when there are two), both parts in file order.
void hold_out(std::vector<data::Document> all, double share, uint64_t seed,
              std::vector<data::Document>& kept, std::vector<data::Document>& held_out) {
  const int n = static_cast<int>(all.size());
  int k = static_cast<int>(std::lround(share * n));
  k = std::clamp(k, n >= 2 ? 1 : 0, std::max(0, n - 1));
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  PhiloxStream rng(seed, kStreamHoldout);
  for (int i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  std::vector<bool> held(n, false);
  for (int i = 0; i < k; ++i) held[perm[i]] = true;
  for (int i = 0; i < n; ++i) (held[i] ? held_out : kept).push_back(std::move(all[i]));
}

}  // namespace

std::string ReCorpus::read_splits(const ReSource& source) {
  const fs::path dir(directory);
  std::string train_file;
  train.name = "train";
  valid.name = "valid";
  test.name = "test";
  // train, valid and test .EXT through `load`, as the generators name the files; all
  // three must be there.
  auto need = [&](const fs::path& path, const std::string& what) {
    inputs.push_back(require_file(path, what));
    return inputs.back();
  };
  auto load_splits = [&](const std::string& ext, auto load) {
    const std::string what = "train" + ext + ", valid" + ext + " and test" + ext;
    train_file = need(dir / ("train" + ext), what);
    train.documents = load(train_file);
    valid.documents = load(need(dir / ("valid" + ext), what));
    test.documents = load(need(dir / ("test" + ext), what));
  };
  auto take_release = [&](data::ReleaseSplits r) {
    train.documents = std::move(r.train);
    valid.documents = std::move(r.valid);
    test.documents = std::move(r.test);
    files = std::move(r.files);
    inputs = files;
    train_file = files.front();
  };
  switch (kind) {
    case ReSourceKind::cdr:
      take_release(data::load_cdr_release(dir));
      if (source.train_on_dev) hold_out_of_train_and_dev(train, valid);
      train_on_dev = source.train_on_dev;
      type_pairs = data::cdr_type_pairs();
      official = OfficialScore::cdr;
      break;
    case ReSourceKind::semeval2018:
      take_release(data::load_semeval2018_release(dir, subtask, source.also_train));
      also_train = source.also_train;
      given_pairs = true;
      weighted_by_default = true;
      official = OfficialScore::semeval2018;
      break;
    case ReSourceKind::synth_cdr:
    case ReSourceKind::pubtator:
      load_splits(".pubtator", [](const std::string& f) { return data::load_pubtator(f); });
      type_pairs = data::cdr_type_pairs();
      break;
    case ReSourceKind::bran_tsv:
      load_splits(".tsv", [](const std::string& f) { return data::load_bran_tsv(f); });
      type_pairs = data::ctd_type_pairs();
      weighted_by_default = true;
      break;
    case ReSourceKind::semeval: {
      const fs::path sub = semeval_subtask_folder(dir);
      const std::string what =
          "train.text.xml, train.relations.txt, test.text.xml and test.relations.txt in " +
          sub.string();
      train_file = need(sub / "train.text.xml", what);
      std::vector<data::Document> all =
          data::load_semeval(train_file, need(sub / "train.relations.txt", what));
      const std::string test_text = need(sub / "test.text.xml", what);
      test.documents = data::load_semeval(test_text, need(sub / "test.relations.txt", what));
      hold_out(std::move(all), options.holdout, options.seed, train.documents, valid.documents);
      unordered = true;
      same_sentence = true;
      weighted_by_default = true;
      break;
    }
  }
  return train_file;
}

// Word, n-gram and character vocabularies: train only.
void ReCorpus::build_vocabularies() {
  data::VocabularyOptions vo;
  vo.min_count = options.min_count;
  vo.lowercase = options.lowercase;
  words = data::build_vocabulary(train.documents, vo);
  std::map<std::string, long> gram_counts, char_counts;
  for (const data::Document& d : train.documents)
    for (const data::Token& t : d.tokens) {
      for (const std::string& g : token_ngrams(lookup_form(t.text, options.lowercase), options))
        ++gram_counts[g];
      for (const std::string& ch : token_chars(t.text, options)) ++char_counts[ch];
    }
  ngrams = data::Vocabulary::from_counts(gram_counts, options.min_count);
  chars = data::Vocabulary::from_counts(char_counts, 1);
}

void ReCorpus::name_tags_and_classes() {
  // Entity types and tags: union over the splits, byte order.
  std::set<std::string> types;
  for (const ReSplit* s : {&train, &valid, &test})
    for (const data::Document& d : s->documents)
      for (const data::Mention& m : d.mentions) types.insert(m.type);
  entity_types.assign(types.begin(), types.end());
  ner_tag_names = {"O"};
  for (const std::string& t : entity_types) {
    ner_tag_names.push_back("B-" + t);
    ner_tag_names.push_back("I-" + t);
  }
  entity_tag_names = {"<pad>"};
  entity_tag_names.insert(entity_tag_names.end(), ner_tag_names.begin(), ner_tag_names.end());

  // Relation classes: NULL, the corpus's fixed list, then other labels in byte order.
  std::set<std::string> seen;
  for (const ReSplit* s : {&train, &valid, &test})
    for (const data::Document& d : s->documents)
      for (const data::Relation& r : d.relations) seen.insert(r.type);
  std::vector<std::string> base;
  switch (kind) {
    case ReSourceKind::synth_cdr:
    case ReSourceKind::pubtator:
    case ReSourceKind::cdr:
      base = {"CID"};
      break;
    case ReSourceKind::bran_tsv: {
      const std::vector<std::string>& ctd = data::ctd_relation_classes();
      if (std::any_of(ctd.begin(), ctd.end(), [&](const std::string& x) { return seen.count(x); }))
        base = ctd;
      break;
    }
    case ReSourceKind::semeval:
    case ReSourceKind::semeval2018:
      base = semeval_classes();
      break;
  }
  for (const std::string& x : seen)
    if (std::find(base.begin(), base.end(), x) == base.end()) base.push_back(x);
  relation_names = {data::kNullLabel};
  for (const std::string& x : base) {
    relation_names.push_back(x);
    if (options.semeval_directed && kind == ReSourceKind::semeval)
      relation_names.push_back(x + "-REVERSE");
  }
}

// Each split's candidate pairs (the listed pairs where the task gives them), the
// hypernym filter, labels and pools, then the documents' features; a training split
// without a usable relation is refused, naming `train_file`.
void ReCorpus::build_examples(const std::string& train_file) {
  data::ExampleOptions eo;
  eo.allowed = type_pairs;
  eo.max_tokens = max_tokens;
  eo.unordered = unordered;
  eo.same_sentence = same_sentence;
  const bool directed = options.semeval_directed && kind == ReSourceKind::semeval;
  std::optional<data::MeshTree> mesh;
  if (hypernym_filter != "none") {
    const fs::path mesh_dir = data::shipped_corpora_dir() / "mesh";
    mesh = data::MeshTree::parse(data::read_release_file(mesh_dir, "2017MeshTree.txt"),
                                 (mesh_dir / "2017MeshTree.txt").string());
  }
  for (ReSplit* s : {&train, &valid, &test}) {
    data::ExampleSet set = given_pairs ? data::listed_examples(s->documents, max_tokens)
                                       : data::build_examples(s->documents, eo);
    if (options.annotated_pairs_only)
      std::erase_if(set.examples,
                    [](const data::Example& e) { return e.label == data::kNullLabel; });
    if (mesh && (hypernym_filter == "all" || s == &train))
      s->filtered_negatives = data::filter_hypernym_negatives(set.examples, s->documents, *mesh);
    s->examples = std::move(set.examples);
    s->truncated_documents = set.truncated_documents;
    s->dropped_pairs = set.dropped_pairs;
    s->dropped_positives = set.dropped_positives;
    s->unmatched_relations = set.unmatched_relations;
    s->document_examples.assign(s->documents.size(), {});
    for (std::size_t i = 0; i < s->examples.size(); ++i) {
      const data::Example& e = s->examples[i];
      const int id = relation_id(class_name(e, directed));
      if (id < 0) throw std::logic_error("relation corpus: label '" + e.label + "' has no class");
      s->labels.push_back(id);
      s->reverse.push_back(e.reverse);
      s->document_examples[e.doc].push_back(static_cast<int>(i));
      (id == 0 ? s->negatives : s->positives).push_back(static_cast<int>(i));
    }
    featurize(*s);
  }
  long train_relations = 0;
  for (const data::Document& d : train.documents) train_relations += d.relations.size();
  const std::string train_what =
      kind == ReSourceKind::semeval ? train_file + " (less the hold-out)" : train_file;
  if (train_relations == 0)
    throw std::runtime_error("relation corpus: " + train_what + " has no annotated relations");
  if (train.positives.empty())
    throw std::runtime_error("relation corpus: " + train_what +
                             " has no annotated relations between entities of an allowed type "
                             "pair within max_tokens");
}

// Class weights (thesis eq. 4-2), the word2vec start, and the sizes a model is built with.
void ReCorpus::weigh_and_size() {
  const std::size_t C = relation_names.size();
  std::vector<long> count(C, 0);
  for (int l : train.labels) ++count[l];
  const double total = static_cast<double>(train.labels.size());
  class_weights.assign(C, 0.0f);
  for (std::size_t k = 0; k < C; ++k)
    if (count[k] > 0) class_weights[k] = static_cast<float>(total / (double(C) * count[k]));

  if (!options.word2vec.empty()) {
    const data::Embeddings emb = data::load_word2vec(options.word2vec);
    if (options.word2vec_dim > 0)
      data::require_dimension(emb, options.word2vec_dim, options.word2vec);
    const std::vector<float> m = data::embedding_matrix(emb, words, data::OovPolicy::kRandom,
                                                        options.seed, 0.1f, &word_init_report);
    word_init = Tensor::from_vector(m, {words.size(), emb.dim});
  }

  int longest = 1;
  for (const ReSplit* s : {&train, &valid, &test})
    for (const ReDocFeatures& f : s->features) longest = std::max(longest, f.length);
  sizes.words = words.size();
  sizes.ngrams = ngrams.size();
  sizes.chars = chars.size();
  sizes.pos_tags = 0;
  sizes.entity_tags = static_cast<int64_t>(entity_tag_names.size());
  sizes.ner_tags = static_cast<int64_t>(ner_tag_names.size());
  sizes.relations = static_cast<int64_t>(C);
  sizes.max_distance = (max_tokens > 0 ? max_tokens : longest) - 1;
}

ReBatch make_batch(const ReSplit& split, const std::vector<BatchItem>& items) {
  if (items.empty()) throw std::invalid_argument("make_batch: a batch needs at least one item");
  ReBatch r;
  const int64_t B = static_cast<int64_t>(items.size());
  int64_t T = 1, G = 1, K = 1;
  for (const BatchItem& it : items) {
    if (it.document < 0 || it.document >= static_cast<int>(split.documents.size()))
      throw std::out_of_range("make_batch: document " + std::to_string(it.document) +
                              " is not in the " + split.name + " split (" +
                              std::to_string(split.documents.size()) + " documents)");
    const ReDocFeatures& f = split.features[it.document];
    T = std::max<int64_t>(T, f.length);
    for (int i = 0; i < f.length; ++i) {
      G = std::max<int64_t>(G, f.ngram_offsets[i + 1] - f.ngram_offsets[i]);
      K = std::max<int64_t>(K, f.char_offsets[i + 1] - f.char_offsets[i]);
    }
  }
  r.B = B;
  r.T = T;
  std::vector<int32_t> words(B * T, 0), tags(B * T, 0), ner(B * T, -1), grams(B * T * G, 0),
      chars(B * T * K, 0);
  std::vector<float> mask(B * T, 0.0f);
  RePairs pairs;
  for (int64_t b = 0; b < B; ++b) {
    const BatchItem& it = items[b];
    const ReDocFeatures& f = split.features[it.document];
    for (int i = 0; i < f.length; ++i) {
      const int64_t row = b * T + i;
      words[row] = f.words[i];
      tags[row] = f.entity_tags[i];
      ner[row] = f.ner[i];
      mask[row] = 1.0f;
      for (int32_t g = f.ngram_offsets[i]; g < f.ngram_offsets[i + 1]; ++g)
        grams[row * G + (g - f.ngram_offsets[i])] = f.ngram_ids[g];
      for (int32_t k = f.char_offsets[i]; k < f.char_offsets[i + 1]; ++k)
        chars[row * K + (k - f.char_offsets[i])] = f.char_ids[k];
    }
    for (int x : it.examples) {
      if (x < 0 || x >= static_cast<int>(split.examples.size()))
        throw std::out_of_range("make_batch: example " + std::to_string(x) + " is not in the " +
                                split.name + " split (" + std::to_string(split.examples.size()) +
                                " examples)");
      const data::Example& e = split.examples[x];
      if (e.doc != it.document)
        throw std::invalid_argument("make_batch: example " + std::to_string(x) +
                                    " belongs to document " + std::to_string(e.doc) + ", not " +
                                    std::to_string(it.document));
      const std::vector<int32_t>& hs = f.entity_tokens[e.head];
      const std::vector<int32_t>& ts = f.entity_tokens[e.tail];
      if (hs.empty() || ts.empty())
        throw std::logic_error("make_batch: example " + std::to_string(x) +
                               " has an entity without a mention inside the document");
      for (int32_t i : hs) pairs.head_rows.push_back(static_cast<int32_t>(b * T + i));
      for (int32_t i : ts) pairs.tail_rows.push_back(static_cast<int32_t>(b * T + i));
      int best = INT_MAX, hp = 0, tp = 0;
      for (int32_t a : f.entity_starts[e.head])
        for (int32_t c : f.entity_starts[e.tail])
          if (std::abs(a - c) < best) best = std::abs(a - c), hp = a, tp = c;
      if (best != e.distance)
        throw std::logic_error("make_batch: distance of example " + std::to_string(x) +
                               " disagrees with the example builder");
      pairs.close_pair(b, split.labels[x], hp, tp);
      r.distance.push_back(best);
      r.example_index.push_back(x);
    }
  }
  r.words = indices(words, {B, T});
  r.mask = Tensor::from_vector(mask, {B, T});
  r.ngrams = indices(grams, {B * T, G});
  r.chars = indices(chars, {B * T, K});
  r.entity_tags = indices(tags, {B, T});
  r.ner_targets = indices(ner, {B * T});
  pairs.pairs_into(r);
  return r;
}

std::vector<BatchItem> sample_natural_re_batch(const ReSplit& split, int batch, PhiloxStream& rng) {
  if (batch < 1) throw std::invalid_argument("sample_natural_re_batch: batch size must be >= 1");
  if (split.examples.empty())
    throw std::invalid_argument("sample_natural_re_batch: the " + split.name +
                                " split has no examples");
  std::vector<BatchItem> items;
  for (int i = 0; i < batch; ++i) {
    const int x = static_cast<int>(rng.below(static_cast<uint32_t>(split.examples.size())));
    items.push_back({split.examples[x].doc, {x}});
  }
  return items;
}

constexpr Named<ReBatching> kBatchings[] = {{ReBatching::bran, "bran"},
                                            {ReBatching::balanced, "balanced"},
                                            {ReBatching::natural, "natural"}};

ReBatching parse_re_batching(const std::string& name) {
  if (const ReBatching* b = value_of(kBatchings, name)) return *b;
  throw std::invalid_argument("train: --batching " + name + ": expected " +
                              names_of(kBatchings, " or "));
}

std::vector<std::string> re_batching_names() {
  return names_list(kBatchings);
}

std::vector<BatchItem> sample_re_batch(ReBatching how, const ReSplit& split, int batch,
                                       PhiloxStream& rng) {
  switch (how) {
    case ReBatching::balanced:
      return sample_balanced_re_batch(split, batch, rng);
    case ReBatching::natural:
      return sample_natural_re_batch(split, batch, rng);
    case ReBatching::bran:
      break;
  }
  return sample_re_batch(split, batch, rng);
}

std::vector<BatchItem> sample_re_batch(const ReSplit& split, int batch, PhiloxStream& rng) {
  if (batch < 1) throw std::invalid_argument("sample_re_batch: batch size must be >= 1");
  if (split.positives.empty() && split.negatives.empty())
    throw std::invalid_argument("sample_re_batch: the " + split.name + " split has no examples");
  const bool positive = rng.uniform() < 0.5f;
  const std::vector<int>& pool = (positive && !split.positives.empty()) || split.negatives.empty()
                                     ? split.positives
                                     : split.negatives;
  std::vector<BatchItem> items;
  for (int i = 0; i < batch; ++i) {
    const int x = pool[rng.below(static_cast<uint32_t>(pool.size()))];
    items.push_back({split.examples[x].doc, {x}});
  }
  return items;
}

std::vector<BatchItem> sample_balanced_re_batch(const ReSplit& split, int batch,
                                                PhiloxStream& rng) {
  if (batch < 1) throw std::invalid_argument("sample_balanced_re_batch: batch size must be >= 1");
  if (split.positives.empty() && split.negatives.empty())
    throw std::invalid_argument("sample_balanced_re_batch: the " + split.name +
                                " split has no examples");
  std::vector<BatchItem> items;
  for (int i = 0; i < batch; ++i) {
    const bool positive = i < (batch + 1) / 2;
    const std::vector<int>& pool = (positive && !split.positives.empty()) || split.negatives.empty()
                                       ? split.positives
                                       : split.negatives;
    const int x = pool[rng.below(static_cast<uint32_t>(pool.size()))];
    items.push_back({split.examples[x].doc, {x}});
  }
  return items;
}

std::vector<BatchItem> sample_ner_batch(const ReSplit& split, int batch, PhiloxStream& rng) {
  if (batch < 1) throw std::invalid_argument("sample_ner_batch: batch size must be >= 1");
  if (split.documents.empty())
    throw std::invalid_argument("sample_ner_batch: the " + split.name + " split has no documents");
  std::vector<BatchItem> items;
  for (int i = 0; i < batch; ++i)
    items.push_back(
        {static_cast<int>(rng.below(static_cast<uint32_t>(split.documents.size()))), {}});
  return items;
}

std::vector<std::vector<BatchItem>> evaluation_batches(const ReSplit& split, int batch) {
  if (batch < 1) throw std::invalid_argument("evaluation_batches: batch size must be >= 1");
  std::vector<std::vector<BatchItem>> out;
  for (std::size_t d = 0; d < split.documents.size(); ++d) {
    if (d % batch == 0) out.emplace_back();
    out.back().push_back({static_cast<int>(d), split.document_examples[d]});
  }
  return out;
}

}  // namespace mare
