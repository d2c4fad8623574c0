#include "experiments/sweep/corpus_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <tuple>
#include <utility>

#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/releases.h"
#include "experiments/data/semeval.h"
#include "experiments/re_data.h"
#include "experiments/re_metrics.h"
#include "stats/descriptive.h"

namespace mare::sweep {
namespace {

SplitStats split_stats(const ReCorpus& c, const ReSplit& s) {
  const std::size_t classes = c.relation_names.size();
  SplitStats r;
  r.name = s.name;
  r.documents = static_cast<long>(s.documents.size());
  for (const data::Document& d : s.documents) {
    r.sentences += static_cast<long>(d.sentences.size());
    r.tokens.push_back(static_cast<int>(d.tokens.size()));
    r.entities += static_cast<long>(d.entities.size());
    r.mentions += static_cast<long>(d.mentions.size());
    for (const data::Entity& e : d.entities) ++r.entities_by_type[e.type];
    for (const data::Mention& m : d.mentions) ++r.mentions_by_type[m.type];
    r.annotated_relations += static_cast<long>(d.relations.size());
  }
  r.examples = static_cast<long>(s.examples.size());
  r.relations.assign(classes, 0);
  r.reverse_yes.assign(classes, 0);
  r.reverse_no.assign(classes, 0);
  std::map<std::tuple<int, std::string, std::string>, long> pairs;
  for (std::size_t i = 0; i < s.examples.size(); ++i) {
    const data::Example& e = s.examples[i];
    const int label = s.labels[i];
    ++r.relations[label];
    if (label == 0) {
      ++r.negative;
      continue;
    }
    ++r.positive;
    (i < s.reverse.size() && s.reverse[i] ? r.reverse_yes : r.reverse_no)[label]++;
    const data::Document& d = s.documents[e.doc];
    ++pairs[{label, d.entities[e.head].type, d.entities[e.tail].type}];
    r.distances.push_back(e.distance);
  }
  for (const auto& [key, n] : pairs)
    r.by_pair_type.push_back(
        {c.relation_names[std::get<0>(key)], std::get<1>(key), std::get<2>(key), n});
  r.truncated_documents = s.truncated_documents;
  r.dropped_pairs = s.dropped_pairs;
  r.dropped_positives = s.dropped_positives;
  r.unmatched_relations = s.unmatched_relations;
  return r;
}

// BRAN's CDR preprocessing (process_CDR_data.py) groups mentions by id alone, so the
// "-1" mentions of a document (alone or inside a composite) become one more entity of
// the type of the first of them, paired with every entity of the other type: NULL
// pairs that thesis Table 4.4 counts and that no gold relation can name.
long bran_unknown_id_pairs(const std::vector<data::Document>& docs) {
  long n = 0;
  for (const data::Document& d : docs) {
    std::string type;
    for (const data::Mention& m : d.mentions) {
      for (std::string_view id : data::split(m.ids_as_written, '|'))
        if (id == "-1") {
          type = m.type;
          break;
        }
      if (!type.empty()) break;
    }
    if (type != "Chemical" && type != "Disease") continue;
    const std::string other = type == "Chemical" ? "Disease" : "Chemical";
    for (const data::Entity& e : d.entities) n += e.type == other ? 1 : 0;
  }
  return n;
}

// stats/descriptive.h's median of counts; NaN when empty (written as null).
double median_of(const std::vector<int>& v) {
  return v.empty() ? NAN : stats::median(std::vector<double>(v.begin(), v.end()));
}

// The plain sum / n (stats::mean refines it R's way, which moves the last digit of the
// JSON these files have been written with).
double mean_of(const std::vector<int>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (int x : v) s += x;
  return s / static_cast<double>(v.size());
}

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json extreme(const std::vector<int>& v, bool max) {
  if (v.empty()) return nullptr;
  return max ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
}

std::string fmt(double v, const char* f = "%.1f") {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t w, bool left = false) {
  if (s.size() >= w) return s;
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

}  // namespace

CorpusStatistics corpus_statistics(const std::string& source, int max_tokens) {
  ReCorpusOptions o;
  o.source = source;
  o.max_tokens = max_tokens;
  const ReCorpus c = ReCorpus::load(o);
  CorpusStatistics s;
  s.source = source;
  s.kind = to_string(c.kind);
  s.directory = c.directory;
  s.max_tokens = c.max_tokens;
  s.relation_classes = c.relation_names;
  s.entity_types = c.entity_types;
  s.subtask = c.subtask;
  s.hypernym_filter = c.hypernym_filter;
  for (const ReSplit* sp : {&c.train, &c.valid, &c.test}) s.splits.push_back(split_stats(c, *sp));
  if (c.kind == ReSourceKind::cdr && !c.train_on_dev) {
    // Table 4.4's pairs: the corpus again with the filter on every split.
    o.hypernym_filter = "all";
    const ReCorpus all = ReCorpus::load(o);
    const ReSplit* filtered[] = {&all.train, &all.valid, &all.test};
    for (std::size_t k = 0; k < 3; ++k) {
      SplitStats& sp = s.splits[k];
      sp.hypernym_filtered = filtered[k]->filtered_negatives;
      sp.unfiltered_negative =
          static_cast<long>(filtered[k]->negatives.size()) + filtered[k]->filtered_negatives;
      sp.bran_unknown_id_pairs = bran_unknown_id_pairs(filtered[k]->documents);
    }
  }
  if (c.kind == ReSourceKind::semeval2018 && c.subtask == "1.2") {
    const std::filesystem::path dir(c.directory);
    std::set<std::string> ids;
    for (const data::Document& d : data::parse_semeval_xml(
             data::read_release_file(dir, "1.1.text.xml"), (dir / "1.1.text.xml").string()))
      ids.insert(d.id);
    const ReSplit* parts[] = {&c.train, &c.valid, &c.test};
    for (std::size_t k = 0; k < 3; ++k) {
      SplitStats& sp = s.splits[k];
      sp.shared_with_subtask_1_1.assign(c.relation_names.size(), 0);
      for (std::size_t i = 0; i < parts[k]->examples.size(); ++i)
        if (ids.count(parts[k]->documents[parts[k]->examples[i].doc].id))
          ++sp.shared_with_subtask_1_1[parts[k]->labels[i]];
    }
  }
  return s;
}

// A split's plain counts, by their names in the JSON.
constexpr std::pair<const char*, long SplitStats::*> kSplitCounts[] = {
    {"documents", &SplitStats::documents},
    {"sentences", &SplitStats::sentences},
    {"entities", &SplitStats::entities},
    {"mentions", &SplitStats::mentions},
    {"annotated_relations", &SplitStats::annotated_relations},
    {"examples", &SplitStats::examples},
    {"positive", &SplitStats::positive},
    {"negative", &SplitStats::negative},
    {"truncated_documents", &SplitStats::truncated_documents},
    {"dropped_pairs", &SplitStats::dropped_pairs},
    {"dropped_positives", &SplitStats::dropped_positives},
    {"unmatched_relations", &SplitStats::unmatched_relations}};

nlohmann::json to_json(const CorpusStatistics& s) {
  nlohmann::json j = {{"command", "data stats"},
                      {"source", s.source},
                      {"kind", s.kind},
                      {"directory", s.directory},
                      {"max_tokens", s.max_tokens},
                      {"relation_classes", s.relation_classes},
                      {"entity_types", s.entity_types},
                      {"split_order", nlohmann::json::array()},
                      {"splits", nlohmann::json::object()}};
  for (const SplitStats& sp : s.splits) {
    j["split_order"].push_back(sp.name);
    nlohmann::json x;
    for (const auto& [name, count] : kSplitCounts) x[name] = sp.*count;
    long total = 0;
    for (int t : sp.tokens) total += t;
    x["tokens"] = {{"total", total},
                   {"mean", num(mean_of(sp.tokens))},
                   {"median", num(median_of(sp.tokens))},
                   {"min", extreme(sp.tokens, false)},
                   {"max", extreme(sp.tokens, true)},
                   {"per_document", sp.tokens}};
    x["entities_by_type"] = sp.entities_by_type;
    x["mentions_by_type"] = sp.mentions_by_type;
    nlohmann::json rel = nlohmann::json::object(), rev = nlohmann::json::object();
    for (std::size_t k = 1; k < s.relation_classes.size(); ++k) {
      rel[s.relation_classes[k]] = sp.relations[k];
      rev[s.relation_classes[k]] = {{"yes", sp.reverse_yes[k]}, {"no", sp.reverse_no[k]}};
    }
    x["relations"] = rel;
    if (s.kind == "semeval" || s.kind == "semeval2018") x["reverse"] = rev;
    x["relations_by_pair_type"] = nlohmann::json::array();
    for (const PairTypeCount& p : sp.by_pair_type)
      x["relations_by_pair_type"].push_back({{"relation", p.relation},
                                             {"head_type", p.head_type},
                                             {"tail_type", p.tail_type},
                                             {"count", p.count}});
    if (sp.unfiltered_negative >= 0)
      x["table_4_4"] = {{"unfiltered_negative", sp.unfiltered_negative},
                        {"bran_unknown_id_pairs", sp.bran_unknown_id_pairs},
                        {"hypernym_filtered", sp.hypernym_filtered}};
    if (!sp.shared_with_subtask_1_1.empty()) {
      nlohmann::json shared = nlohmann::json::object();
      for (std::size_t k = 1; k < s.relation_classes.size(); ++k)
        shared[s.relation_classes[k]] = sp.shared_with_subtask_1_1[k];
      x["shared_with_subtask_1_1"] = shared;
    }
    x["related_pair_distances"] = sp.distances;
    nlohmann::json within = nlohmann::json::object();
    for (int m : default_distance_buckets())
      within[std::to_string(m)] =
          std::count_if(sp.distances.begin(), sp.distances.end(), [m](int d) { return d <= m; });
    x["distance"] = {{"mean", num(mean_of(sp.distances))},
                     {"median", num(median_of(sp.distances))},
                     {"max", extreme(sp.distances, true)},
                     {"within", within}};
    j["splits"][sp.name] = x;
  }
  if (!s.subtask.empty()) j["subtask"] = s.subtask;
  if (s.hypernym_filter != "none" && !s.hypernym_filter.empty())
    j["hypernym_filter"] = s.hypernym_filter;
  return j;
}

namespace {

bool is_semeval(const CorpusStatistics& s) {
  return s.kind == "semeval" || s.kind == "semeval2018";
}

// The source line and one row a split: documents, tokens, entities, mentions, relations,
// examples and their classes.
std::string split_rows(const CorpusStatistics& s) {
  std::string o = s.source + " (" + s.kind + ", " +
                  (s.max_tokens > 0 ? "documents cut at " + std::to_string(s.max_tokens) + " tokens"
                                    : std::string("whole documents")) +
                  ")\n\n";
  o += "split    documents  tokens: mean  median     max  entities  mentions  relations  "
       "examples  positive  negative\n";
  for (const SplitStats& sp : s.splits) {
    o += pad(sp.name, 5, true) + pad(std::to_string(sp.documents), 13) +
         pad(fmt(mean_of(sp.tokens)), 14) + pad(fmt(median_of(sp.tokens)), 8) +
         pad(sp.tokens.empty() ? "-" : std::to_string(extreme(sp.tokens, true).get<int>()), 8) +
         pad(std::to_string(sp.entities), 10) + pad(std::to_string(sp.mentions), 10) +
         pad(std::to_string(sp.annotated_relations), 11) + pad(std::to_string(sp.examples), 10) +
         pad(std::to_string(sp.positive), 10) + pad(std::to_string(sp.negative), 10) + "\n";
  }
  return o;
}

// A CDR corpus beside thesis Table 4.4, and its negatives as BRAN builds them.
std::string beside_table_4_4(const CorpusStatistics& s) {
  std::string o;
  if (s.kind == "synth-cdr" || s.kind == "pubtator" || s.kind == "cdr") {
    // Beside the corpus the thesis trained on (the test CdrStatsBesideTheThesis holds
    // these numbers equal to reports/paper/table_4_4_cdr_data.csv).
    struct Row {
      const char* split;
      int documents, positive, negative;
    };
    static constexpr Row kTable44[] = {
        {"train", 500, 1038, 4280}, {"valid", 500, 1012, 4136}, {"test", 500, 1066, 4270}};
    o += "\nbeside thesis Table 4.4 (BioCreative V CDR):\n"
         "split    documents        positive        negative\n"
         "         ours  thesis     ours  thesis     ours  thesis\n";
    for (const Row& r : kTable44)
      for (const SplitStats& sp : s.splits)
        if (sp.name == r.split)
          o += pad(sp.name, 5, true) + pad(std::to_string(sp.documents), 8) +
               pad(std::to_string(r.documents), 8) + pad(std::to_string(sp.positive), 9) +
               pad(std::to_string(r.positive), 8) + pad(std::to_string(sp.negative), 9) +
               pad(std::to_string(r.negative), 8) + "\n";
    if (s.splits[0].unfiltered_negative >= 0) {
      // The negatives as BRAN's preprocessing (which the thesis used) builds them.
      o += "(ours: the hypernym filter on " + s.hypernym_filter +
           ".) The thesis's negatives are BRAN's pairs: every (chemical, disease)\n"
           "pair of distinct ids, plus BRAN's \"-1\" pseudo-entity (every mention without a\n"
           "concept id, as one entity), less what its MeSH hypernym filter drops on every split:\n"
           "split    NULL pairs  + \"-1\" pairs  - hypernym filter  = BRAN   thesis\n";
      for (const Row& r : kTable44)
        for (const SplitStats& sp : s.splits)
          if (sp.name == r.split && sp.unfiltered_negative >= 0) {
            const long bran =
                sp.unfiltered_negative + sp.bran_unknown_id_pairs - sp.hypernym_filtered;
            o += pad(sp.name, 5, true) + pad(std::to_string(sp.unfiltered_negative), 13) +
                 pad(std::to_string(sp.bran_unknown_id_pairs), 15) +
                 pad(std::to_string(sp.hypernym_filtered), 19) + pad(std::to_string(bran), 8) +
                 pad(std::to_string(r.negative), 9) + "\n";
          }
    }
  }
  return o;
}

// A corpus with CTD's classes beside thesis Table 4.9.
std::string beside_table_4_9(const CorpusStatistics& s) {
  std::string o;
  // CTD's classes (BRAN's labels, which synth-ctd writes): beside thesis Table 4.9 (the
  // test CorpusStats.CtdStatsBesideTheThesis holds these numbers equal to
  // reports/paper/table_4_9_ctd_classes.csv).
  const std::vector<data::CtdClassCount>& t49 = data::ctd_table_4_9();
  const auto class_index = [&](const std::string& label) {
    const auto it = std::find(s.relation_classes.begin(), s.relation_classes.end(), label);
    return it == s.relation_classes.end() ? -1L : long(it - s.relation_classes.begin());
  };
  if (std::any_of(t49.begin(), t49.end(),
                  [&](const data::CtdClassCount& c) { return class_index(c.label) > 0; })) {
    std::size_t w = 7;
    for (const data::CtdClassCount& c : t49) w = std::max(w, c.label.size() + 2);
    o += "\nbeside thesis Table 4.9 (CTD, examples per class):\n" + pad("class", w, true);
    for (const char* split : {"train", "valid", "test"}) o += pad(split, 18);
    o += "\n" + pad("", w, true);
    for (int k = 0; k < 3; ++k) o += pad("ours", 9) + pad("thesis", 9);
    o += "\n";
    std::vector<long> ours_total(3, 0), thesis_total(3, 0);
    for (const data::CtdClassCount& c : t49) {
      o += pad(c.label, w, true);
      const long k = class_index(c.label);
      const long thesis[3] = {c.train, c.valid, c.test};
      int i = 0;
      for (const char* split : {"train", "valid", "test"}) {
        long ours = 0;
        for (const SplitStats& sp : s.splits)
          if (sp.name == split && k > 0) ours = sp.relations[k];
        ours_total[i] += ours, thesis_total[i] += thesis[i];
        o += pad(std::to_string(ours), 9) + pad(std::to_string(thesis[i]), 9);
        ++i;
      }
      o += "\n";
    }
    o += pad("all", w, true);
    for (int i = 0; i < 3; ++i)
      o += pad(std::to_string(ours_total[i]), 9) + pad(std::to_string(thesis_total[i]), 9);
    o += "\n";
  }
  return o;
}

// A SemEval subtask beside thesis Table 4.11.
std::string beside_table_4_11(const CorpusStatistics& s) {
  std::string o;
  if (is_semeval(s)) {
    // Thesis Table 4.11 counts a subtask's training abstracts, which here are the
    // train split plus the validation hold-out (the test
    // CorpusStats.SemevalStatsBesideTheThesis holds these numbers equal to
    // reports/paper/table_4_11_semeval_classes.csv).
    struct Row {
      const char* relation;
      int clean, noisy;
    };
    static constexpr Row kTable411[] = {{"USAGE", 483, 464},      {"MODEL-FEATURE", 326, 172},
                                        {"RESULT", 72, 121},      {"TOPIC", 18, 240},
                                        {"PART_WHOLE", 233, 192}, {"COMPARE", 95, 41}};
    // semeval:ROOT over one subtask reads that subtask's folder
    const std::filesystem::path dir(s.directory);
    const bool noisy = s.subtask == "1.2" || s.directory.find("subtask1.2") != std::string::npos ||
                       (std::filesystem::is_directory(dir / "subtask1.2") &&
                        !std::filesystem::is_directory(dir / "subtask1.1"));
    const bool shared = !s.splits.empty() && !s.splits[0].shared_with_subtask_1_1.empty();
    o += std::string("\nbeside thesis Table 4.11 (SemEval 2018 Task 7, subtask ") +
         (noisy ? "1.2" : "1.1") +
         "; ours: train + hold-out):\n"
         "class            ours  thesis" +
         (shared ? "  in abstracts shared with 1.1  ours less those" : std::string()) + "\n";
    for (const Row& r : kTable411)
      for (std::size_t k = 0; k < s.relation_classes.size(); ++k)
        if (s.relation_classes[k] == r.relation) {
          long ours = 0, in_shared = 0;
          for (const SplitStats& sp : s.splits)
            if (sp.name != "test") {
              ours += sp.relations[k];
              if (shared) in_shared += sp.shared_with_subtask_1_1[k];
            }
          o += pad(r.relation, 15, true) + pad(std::to_string(ours), 6) +
               pad(std::to_string(noisy ? r.noisy : r.clean), 8);
          if (shared)
            o += pad(std::to_string(in_shared), 30) + pad(std::to_string(ours - in_shared), 17);
          o += "\n";
        }
    if (shared)
      o += "(1.2's training file holds six abstracts of 1.1's under the same ids; the thesis\n"
           "trained on both subtasks together and counted each abstract once)\n";
  }
  return o;
}

// Examples per relation class and split (SemEval: with REVERSE yes/no).
std::string class_rows(const CorpusStatistics& s) {
  std::string o;
  o += "\nexamples per relation class" +
       std::string(is_semeval(s) ? " (REVERSE yes/no in brackets)" : "") + ":\n";
  std::size_t w = 8;
  for (const std::string& r : s.relation_classes) w = std::max(w, r.size() + 2);
  o += pad("class", w, true);
  for (const SplitStats& sp : s.splits) o += pad(sp.name, is_semeval(s) ? 18 : 10);
  o += "\n";
  for (std::size_t k = 0; k < s.relation_classes.size(); ++k) {
    o += pad(s.relation_classes[k], w, true);
    for (const SplitStats& sp : s.splits) {
      std::string cell = std::to_string(sp.relations[k]);
      if (is_semeval(s) && k > 0)
        cell +=
            " (" + std::to_string(sp.reverse_yes[k]) + "/" + std::to_string(sp.reverse_no[k]) + ")";
      o += pad(cell, is_semeval(s) ? 18 : 10);
    }
    o += "\n";
  }
  return o;
}

// The token distance between the closest mentions of related pairs.
std::string distance_rows(const CorpusStatistics& s) {
  std::string o;
  o += "\nrelated-pair distance (tokens between the closest mentions):\n"
       "split    pairs   mean  median    max";
  for (int m : default_distance_buckets()) o += pad("<=" + std::to_string(m), 7);
  o += "\n";
  for (const SplitStats& sp : s.splits) {
    o +=
        pad(sp.name, 5, true) + pad(std::to_string(sp.distances.size()), 9) +
        pad(fmt(mean_of(sp.distances)), 7) + pad(fmt(median_of(sp.distances)), 8) +
        pad(sp.distances.empty() ? "-" : std::to_string(extreme(sp.distances, true).get<int>()), 7);
    for (int m : default_distance_buckets())
      o += pad(std::to_string(std::count_if(sp.distances.begin(), sp.distances.end(),
                                            [m](int d) { return d <= m; })),
               7);
    o += "\n";
  }
  return o;
}

// What the cut at max_tokens and the type pairs left out, when anything.
std::string losses(const CorpusStatistics& s) {
  std::string o;
  long lost = 0;
  for (const SplitStats& sp : s.splits) lost += sp.dropped_pairs + sp.unmatched_relations;
  if (lost > 0) {
    o += "\nlost:";
    for (const SplitStats& sp : s.splits)
      o += " " + sp.name + " " + std::to_string(sp.truncated_documents) + " documents cut, " +
           std::to_string(sp.dropped_pairs) + " pairs (" + std::to_string(sp.dropped_positives) +
           " related) dropped, " + std::to_string(sp.unmatched_relations) +
           " relations of other type pairs;";
    o.back() = '\n';
  }
  return o;
}

}  // namespace

std::string describe(const CorpusStatistics& s) {
  return split_rows(s) + beside_table_4_4(s) + beside_table_4_9(s) + beside_table_4_11(s) +
         class_rows(s) + distance_rows(s) + losses(s);
}

}  // namespace mare::sweep
