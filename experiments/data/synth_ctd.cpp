// synth-ctd: a CTD-like distant-supervision corpus in BRAN's 13-column TSV.
//
// Seven entity types: Chemical, Disease, Gene carry the relations; Species, CellLine,
// Mutation and Anatomy appear in context phrases ("In mice ,", "in the liver") and
// in Null pairs. Fourteen classes, (pair type, relation) as in thesis Table 4.9, drawn
// with the table's class frequencies, about three relations per document; without
// --docs the corpus has the table's size (synth_ctd_default_documents, generators.h).
//
// Evidence that decides a relation between head h and tail t (what the oracle reads):
// in one sentence, the tokens between a mention of h and a mention of t, after
// removing the adverbs significantly/markedly/strongly, are exactly one phrase of the
// class:
//   Chemical|Gene -> Disease: marker/mechanism "contributes to", "is a marker of",
//     "is implicated in the pathogenesis of"; therapeutic "alleviates", "ameliorates",
//     "is a treatment for";
//   Chemical -> Gene: a verb of direction (increase: increases/enhances/elevates;
//     decrease: decreases/reduces/inhibits; affects: affects/alters) followed by a
//     property (expression: "the expression of", "the mRNA levels of"; activity:
//     "the activity of"; metabolic_proc: "the metabolic processing of", "the
//     metabolism of"; reaction: "the reaction of"; transport: "the transport of",
//     "the uptake of"; response: "the response of"); the class is direction_property
//     (increase_expression, ..., affects_transport; the ten of Table 4.9).
// Labels in the TSV are BRAN's names (data/ctd/relation_map.txt of its repository):
// chem_disease_marker/mechanism, gene_disease_therapeutic, chem_gene_increases_expression,
// chem_gene_affects_response_to_substance, ... (see ctd_classes() below).
// The head may also be the anaphor "the compound", which refers to the document's
// topic chemical (the first chemical of the title): this is what spreads pair
// distances up to 500 tokens with a long tail. Distractors: negated phrases ("does not
// increase the expression of", "is not a marker of"), direction-property combinations
// that are no class ("decreases the response of"), co-occurrence sentences.
// Annotation noise (distant supervision): 3% of stated relations are labelled Null,
// 1% of unrelated pairs get a random class of their pair type.
// Rule: same seed and --docs, same bytes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

#include "experiments/data/bran_tsv.h"
#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/synth_common.h"

namespace mare::data {

namespace {

using synth::LocalEntity;
using synth::Piece;
using synth::Sentence;

struct CtdClass {
  std::string head_type, tail_type;
  std::string label;          // BRAN's name (its data/ctd/relation_map.txt), written to the TSV
  std::string key;            // thesis Table 4.9 name: picks the evidence phrases
  double train, valid, test;  // thesis Table 4.9
};

const std::vector<CtdClass>& ctd_classes() {
  static const std::vector<CtdClass> c{
      {"Chemical", "Disease", "chem_disease_marker/mechanism", "marker/mechanism", 41562, 5126,
       5167},
      {"Chemical", "Disease", "chem_disease_therapeutic", "therapeutic", 24151, 2929, 3059},
      {"Gene", "Disease", "gene_disease_marker/mechanism", "marker/mechanism", 5930, 825, 819},
      {"Gene", "Disease", "gene_disease_therapeutic", "therapeutic", 560, 77, 75},
      {"Chemical", "Gene", "chem_gene_increases_expression", "increase_expression", 15581, 1958,
       2137},
      {"Chemical", "Gene", "chem_gene_increases_metabolic_processing", "increase_metabolic_proc",
       5986, 740, 638},
      {"Chemical", "Gene", "chem_gene_decreases_expression", "decrease_expression", 5870, 698, 783},
      {"Chemical", "Gene", "chem_gene_increases_activity", "increase_activity", 4154, 467, 497},
      {"Chemical", "Gene", "chem_gene_affects_response_to_substance", "affects_response", 3834, 475,
       508},
      {"Chemical", "Gene", "chem_gene_decreases_activity", "decrease_activity", 3124, 396, 434},
      {"Chemical", "Gene", "chem_gene_affects_transport", "affects_transport", 3009, 333, 361},
      {"Chemical", "Gene", "chem_gene_increases_reaction", "increase_reaction", 2881, 367, 353},
      {"Chemical", "Gene", "chem_gene_decreases_reaction", "decrease_reaction", 2221, 247, 269},
      {"Chemical", "Gene", "chem_gene_decreases_metabolic_processing", "decrease_metabolic_proc",
       798, 100, 120}};
  return c;
}

const std::vector<std::string> kAdverbs{"significantly", "markedly", "strongly"};
const std::map<std::string, std::vector<std::string>>& disease_phrases() {
  static const std::map<std::string, std::vector<std::string>> p{
      {"marker/mechanism",
       {"contributes to", "is a marker of", "is implicated in the pathogenesis of"}},
      {"therapeutic", {"alleviates", "ameliorates", "is a treatment for"}}};
  return p;
}
const std::map<std::string, std::vector<std::string>>& gene_verbs() {
  static const std::map<std::string, std::vector<std::string>> v{
      {"increase", {"increases", "enhances", "elevates"}},
      {"decrease", {"decreases", "reduces", "inhibits"}},
      {"affects", {"affects", "alters"}}};
  return v;
}
const std::map<std::string, std::vector<std::string>>& gene_properties() {
  static const std::map<std::string, std::vector<std::string>> p{
      {"expression", {"the expression of", "the mRNA levels of"}},
      {"activity", {"the activity of"}},
      {"metabolic_proc", {"the metabolic processing of", "the metabolism of"}},
      {"reaction", {"the reaction of"}},
      {"transport", {"the transport of", "the uptake of"}},
      {"response", {"the response of"}}};
  return p;
}

// "is a marker of" -> "is not a marker of"; "increases the ..." -> "does not increase the ..."
std::string negate(const std::string& phrase) {
  const std::size_t sp = phrase.find(' ');
  const std::string verb = phrase.substr(0, sp);
  const std::string rest = sp == std::string::npos ? "" : phrase.substr(sp);
  if (verb == "is") return "is not" + rest;
  return "does not " + verb.substr(0, verb.size() - 1) + rest;
}

// A phrase for a class, and a distractor phrase for a pair type.
std::string class_phrase(Rng& rng, const CtdClass& c) {
  if (c.tail_type == "Disease") return rng.pick(disease_phrases().at(c.key));
  const std::size_t us = c.key.find('_');
  return rng.pick(gene_verbs().at(c.key.substr(0, us))) + " " +
         rng.pick(gene_properties().at(c.key.substr(us + 1)));
}

// Whether direction_property (e.g. "increase_expression") is a chemical-gene class.
bool is_class(const std::string& key) {
  for (const CtdClass& c : ctd_classes())
    if (c.tail_type == "Gene" && c.key == key) return true;
  return false;
}

std::string distractor_phrase(Rng& rng, const std::string& tail_type) {
  if (tail_type == "Disease") {
    const auto& p = disease_phrases();
    auto it = p.begin();
    std::advance(it, rng.below(p.size()));
    return negate(rng.pick(it->second));
  }
  for (;;) {
    auto v = gene_verbs().begin();
    std::advance(v, rng.below(gene_verbs().size()));
    auto p = gene_properties().begin();
    std::advance(p, rng.below(gene_properties().size()));
    const std::string phrase = rng.pick(v->second) + " " + rng.pick(p->second);
    if (rng.chance(0.5)) return negate(phrase);
    if (!is_class(v->first + "_" + p->first)) return phrase;
  }
}

struct Pools {
  std::map<std::string, std::vector<LocalEntity>> by_type;
};

Pools make_pools(Rng rng) {
  Pools p;
  std::set<std::string> used;
  const std::vector<std::string> ch{"ami",  "beno",  "cara", "dexa", "flu", "halo",
                                    "keto", "lido",  "meto", "nalo", "oxa", "pra",
                                    "rani", "sulfa", "tera", "zolo"};
  const std::vector<std::string> cm{"", "xo", "ti", "pro", "me", "na"};
  const std::vector<std::string> ct{"zole",   "mycin",   "pril",   "olol",   "caine", "pine",
                                    "statin", "dronate", "profen", "azepam", "phene", "quinone"};
  auto& chem = p.by_type["Chemical"];
  while (chem.size() < 120) {
    const std::string n = synth::syllable_name(rng, ch, cm, ct);
    if (used.insert(n).second)
      chem.push_back({"C" + std::to_string(100000 + 13 * chem.size()), "Chemical", n});
  }
  const std::vector<std::string> organs{"renal",   "hepatic", "cardiac",    "pulmonary", "cerebral",
                                        "gastric", "ocular",  "pancreatic", "vascular",  "biliary"};
  const std::vector<std::string> nouns{"failure",   "necrosis",    "fibrosis",
                                       "carcinoma", "edema",       "hemorrhage",
                                       "ischemia",  "dysfunction", "steatosis"};
  auto& dis = p.by_type["Disease"];
  for (const auto& o : organs)
    for (const auto& n : nouns)
      dis.push_back({"MESH:D" + std::to_string(200000 + 17 * dis.size()), "Disease", o + " " + n});
  rng.shuffle(dis);
  const std::vector<std::string> gh{"CYP",  "ABCB", "SLC", "TNF", "IL",   "MAPK", "NFKB", "TP",
                                    "HMOX", "NQO",  "GST", "SOD", "PTGS", "ESR",  "AHR",  "UGT"};
  auto& gene = p.by_type["Gene"];
  for (const auto& h : gh)
    for (int k = 1; k <= 8; ++k)
      gene.push_back({std::to_string(1000 + 31 * gene.size()), "Gene", h + std::to_string(k)});
  rng.shuffle(gene);
  auto simple = [&](const std::string& type, const std::vector<std::string>& names,
                    const std::string& prefix) {
    auto& v = p.by_type[type];
    for (const auto& n : names) v.push_back({prefix + std::to_string(v.size() + 1), type, n});
  };
  simple("Species", {"mice", "rats", "zebrafish", "rabbits", "hamsters", "dogs"}, "TAX:");
  simple("CellLine", {"HepG2", "HeLa", "Caco-2", "PC12", "HEK293", "A549"}, "CVCL:");
  simple("Mutation", {"V600E", "R72P", "C677T", "G12D", "A118G"}, "MUT:");
  simple("Anatomy", {"liver", "kidney", "hippocampus", "myocardium", "retina", "pancreas"},
         "ANAT:");
  return p;
}

// One document under construction.
struct CtdDoc {
  std::vector<LocalEntity> local;
  std::map<std::string, int> by_id;  // entity id -> local index
  std::vector<std::vector<Sentence>> units;
  std::map<std::pair<int, int>, std::string> labels;  // local (head, tail) -> class
};

int add_entity(CtdDoc& d, const LocalEntity& e) {
  auto it = d.by_id.find(e.id);
  if (it != d.by_id.end()) return it->second;
  d.local.push_back(e);
  d.by_id[e.id] = static_cast<int>(d.local.size()) - 1;
  return static_cast<int>(d.local.size()) - 1;
}

Sentence evidence(Rng& rng, CtdDoc& d, const Pools& pools, int head, bool anaphor, int tail,
                  const std::string& phrase) {
  Sentence s;
  const double ctx = rng.uniform();
  if (ctx < 0.25) {
    const int sp = add_entity(d, rng.pick(pools.by_type.at("Species")));
    synth::words(s, "In");
    synth::mention(s, sp, d.local[sp].name);
    synth::words(s, ",");
  } else if (ctx < 0.45) {
    const int cl = add_entity(d, rng.pick(pools.by_type.at("CellLine")));
    synth::words(s, "In");
    synth::mention(s, cl, d.local[cl].name);
    synth::words(s, "cells ,");
  }
  if (anaphor) {
    synth::words(s, "the compound");
  } else {
    synth::mention(s, head, d.local[head].name);
  }
  if (rng.chance(0.3)) synth::words(s, rng.pick(kAdverbs));
  synth::words(s, phrase);
  synth::mention(s, tail, d.local[tail].name);
  const double suf = rng.uniform();
  if (suf < 0.25) {
    const int an = add_entity(d, rng.pick(pools.by_type.at("Anatomy")));
    synth::words(s, "in the");
    synth::mention(s, an, d.local[an].name);
  } else if (suf < 0.4) {
    const int mu = add_entity(d, rng.pick(pools.by_type.at("Mutation")));
    synth::words(s, "in carriers of the");
    synth::mention(s, mu, d.local[mu].name);
    synth::words(s, "variant");
  }
  synth::words(s, ".");
  if (anaphor && s.front().text == "the") s.front().text = "The";
  return s;
}

Sentence filler(Rng& rng) {
  static const std::vector<std::string> f{
      "Samples were processed within two hours .",
      "All experiments were performed in triplicate .",
      "Results are expressed as mean and standard deviation .",
      "The dose was chosen from earlier studies .",
      "Animals were housed under standard conditions .",
      "Statistical significance was set at five percent .",
      "Tissue sections were stained and imaged .",
      "Control groups received the vehicle only .",
      "Measurements were repeated after one week .",
      "These findings were confirmed in an independent cohort ."};
  Sentence s;
  synth::words(s, rng.pick(f));
  return s;
}

// One evidence sentence per relation slot: its class's head (the topic chemical half the
// time, often by anaphor) and a fresh tail; a slot whose tail cannot be found is dropped.
void add_relations(Rng& rng, CtdDoc& d, const Pools& pools, const std::vector<int>& slots,
                   int topic) {
  const auto& classes = ctd_classes();
  for (int slot : slots) {
    const CtdClass& c = classes[slot];
    int head = -1;
    bool anaphor = false;
    if (c.head_type == "Chemical" && rng.chance(0.5)) {
      head = topic;
      anaphor = rng.chance(0.6);
    } else {
      head = add_entity(d, rng.pick(pools.by_type.at(c.head_type)));
    }
    int tail = -1;
    for (int tries = 0; tries < 20; ++tries) {
      tail = add_entity(d, rng.pick(pools.by_type.at(c.tail_type)));
      if (tail != head && !d.labels.count({head, tail})) break;
      tail = -1;
    }
    if (tail < 0) continue;
    d.labels[{head, tail}] = c.label;
    d.units.push_back({evidence(rng, d, pools, head, anaphor, tail, class_phrase(rng, c))});
  }
}

// Distractors: negated or non-class phrases, and co-occurrence.
void add_distractors(Rng& rng, CtdDoc& d, const Pools& pools) {
  const int n_distractors = rng.range(1, 3);
  for (int k = 0; k < n_distractors; ++k) {
    const bool to_gene = rng.chance(0.5);
    const std::string head_type = !to_gene && rng.chance(0.3) ? "Gene" : "Chemical";
    const int head = add_entity(d, rng.pick(pools.by_type.at(head_type)));
    const int tail = add_entity(d, rng.pick(pools.by_type.at(to_gene ? "Gene" : "Disease")));
    if (head == tail || d.labels.count({head, tail})) continue;
    if (rng.chance(0.7)) {
      d.units.push_back({evidence(rng, d, pools, head, false, tail,
                                  distractor_phrase(rng, to_gene ? "Gene" : "Disease"))});
    } else {
      Sentence s;
      synth::mention(s, head, d.local[head].name);
      synth::words(s, "and");
      synth::mention(s, tail, d.local[tail].name);
      synth::words(s, "were both measured .");
      d.units.push_back({s});
    }
  }
}

// Filler up to a long-tailed length (at most ~500 tokens).
void add_filler(Rng& rng, CtdDoc& d) {
  int tokens = 0;
  for (const auto& u : d.units) tokens += synth::token_count(u[0]);
  const int target =
      60 + std::min(440, static_cast<int>(std::floor(-140.0 * std::log(1.0 - rng.uniform()))));
  while (tokens < target) {
    d.units.push_back({filler(rng)});
    tokens += synth::token_count(d.units.back()[0]);
  }
}

// The pairs BRAN's TSV lists (relation type pairs, and Chemical/Gene with the context
// types), each with its label: 3 % of the relations dropped to Null and 1 % of the Null
// pairs of a relation type pair given a class, as annotation noise.
void list_pairs(Rng& rng, Document& doc, const CtdDoc& d, const std::map<int, int>& local_to_doc) {
  auto listed = [](const std::string& h, const std::string& t) {
    if ((h == "Chemical" && (t == "Disease" || t == "Gene")) || (h == "Gene" && t == "Disease"))
      return true;
    return (h == "Chemical" || h == "Gene") &&
           (t == "Species" || t == "CellLine" || t == "Mutation" || t == "Anatomy");
  };
  std::map<int, int> doc_to_local;
  for (const auto& [l, e] : local_to_doc) doc_to_local[e] = l;
  const int n = static_cast<int>(doc.entities.size());
  auto mention_text = [&](int e) {
    const Span s = doc.mentions[doc.entities[e].mentions[0]].tokens;
    std::string out;
    for (int t = s.begin; t < s.end; ++t) out += (out.empty() ? "" : " ") + doc.tokens[t].text;
    return out;
  };
  for (int h = 0; h < n; ++h)
    for (int t = 0; t < n; ++t) {
      if (h == t || !listed(doc.entities[h].type, doc.entities[t].type)) continue;
      auto it = d.labels.find({doc_to_local[h], doc_to_local[t]});
      std::string label = it == d.labels.end() ? "Null" : it->second;
      if (label != "Null" && rng.chance(0.03)) {
        label = "Null";
      } else if (label == "Null" && doc.entities[t].type != "Species" &&
                 doc.entities[t].type != "CellLine" && doc.entities[t].type != "Mutation" &&
                 doc.entities[t].type != "Anatomy" && rng.chance(0.01)) {
        std::vector<std::string> options;
        for (const CtdClass& c : ctd_classes())
          if (c.head_type == doc.entities[h].type && c.tail_type == doc.entities[t].type)
            options.push_back(c.label);
        label = rng.pick(options);
      }
      doc.pairs.push_back({h, t, label, mention_text(h), mention_text(t)});
      if (label != "Null") doc.relations.push_back({label, h, t, false});
    }
}

// A document: a topic chemical named in the title, the slots' relations, distractors and
// filler in shuffled order, then its listed pairs.
Document make_document(Rng& rng, const Pools& pools, const std::vector<int>& slots,
                       const std::string& doc_id) {
  CtdDoc d;
  const int topic = add_entity(d, rng.pick(pools.by_type.at("Chemical")));
  const int title_other =
      add_entity(d, rng.pick(pools.by_type.at(rng.chance(0.5) ? "Gene" : "Disease")));
  add_relations(rng, d, pools, slots, topic);
  add_distractors(rng, d, pools);
  add_filler(rng, d);
  rng.shuffle(d.units);
  Sentence title;
  synth::words(title, "Effects of");
  synth::mention(title, topic, d.local[topic].name);
  synth::words(title, "on");
  synth::mention(title, title_other, d.local[title_other].name);
  synth::words(title, ".");
  std::vector<Sentence> sentences{title};
  for (const auto& u : d.units) sentences.push_back(u[0]);

  Document doc;
  doc.id = doc_id;
  std::map<int, int> local_to_doc;
  synth::render(doc, sentences, d.local, local_to_doc);
  annotate_tokens(doc);
  list_pairs(rng, doc, d, local_to_doc);
  return doc;
}

std::map<std::string, std::string> ctd_groups() {
  std::map<std::string, std::string> g;
  for (const auto& [dir, verbs] : gene_verbs())
    for (const auto& v : verbs) g[v] = "verb:" + dir;
  for (const auto& w : kAdverbs) g[w] = "adverb";
  g["not"] = "negation";
  return g;
}

}  // namespace

std::vector<Relation> ctd_oracle(const Document& doc) {
  // (head type, tail type, phrase as space-joined tokens) -> BRAN label
  using Key = std::tuple<std::string, std::string, std::string>;
  static const std::map<Key, std::string> table = [] {
    std::map<Key, std::string> t;
    for (const CtdClass& c : ctd_classes()) {
      if (c.tail_type == "Disease") {
        for (const auto& p : disease_phrases().at(c.key))
          t[{c.head_type, c.tail_type, p}] = c.label;
        continue;
      }
      const std::size_t us = c.key.find('_');
      for (const auto& v : gene_verbs().at(c.key.substr(0, us)))
        for (const auto& p : gene_properties().at(c.key.substr(us + 1)))
          t[{c.head_type, c.tail_type, v + " " + p}] = c.label;
    }
    return t;
  }();
  std::vector<Relation> out;
  auto add = [&](int h, int t, const std::string& label) {
    for (const Relation& r : out)
      if (r.head == h && r.tail == t && r.type == label) return;
    out.push_back({label, h, t, false});
  };
  int topic = -1;  // first chemical of the document
  for (const Mention& m : doc.mentions)
    if (m.type == "Chemical" && !m.entities.empty()) {
      topic = m.entities[0];
      break;
    }
  std::vector<int> sentence_of(doc.tokens.size(), 0);
  for (std::size_t s = 0; s < doc.sentences.size(); ++s)
    for (int t = doc.sentences[s].begin; t < doc.sentences[s].end; ++t) sentence_of[t] = s;
  auto between = [&](int from, int to) {
    std::string s;
    for (int t = from; t < to; ++t) {
      const std::string& w = doc.tokens[t].text;
      if (std::find(kAdverbs.begin(), kAdverbs.end(), w) != kAdverbs.end()) continue;
      s += (s.empty() ? "" : " ") + w;
    }
    return s;
  };
  for (const Mention& tail : doc.mentions) {
    if (tail.entities.empty() || (tail.type != "Disease" && tail.type != "Gene")) continue;
    const int sent = sentence_of[tail.tokens.begin];
    // heads: mentions earlier in the same sentence, and the anaphor "the compound"
    for (const Mention& head : doc.mentions) {
      if (head.entities.empty() || head.tokens.end > tail.tokens.begin ||
          sentence_of[head.tokens.begin] != sent)
        continue;
      if (!(head.type == "Chemical" || (head.type == "Gene" && tail.type == "Disease"))) continue;
      auto it = table.find({head.type, tail.type, between(head.tokens.end, tail.tokens.begin)});
      if (it != table.end()) add(head.entities[0], tail.entities[0], it->second);
    }
    const Span s = doc.sentences[sent];
    for (int t = s.begin; t + 1 < tail.tokens.begin && topic >= 0; ++t) {
      if ((doc.tokens[t].text == "the" || doc.tokens[t].text == "The") &&
          doc.tokens[t + 1].text == "compound") {
        auto it = table.find({"Chemical", tail.type, between(t + 2, tail.tokens.begin)});
        if (it != table.end()) add(topic, tail.entities[0], it->second);
      }
    }
  }
  return out;
}

const std::vector<CtdClassCount>& ctd_table_4_9() {
  static const std::vector<CtdClassCount> rows = [] {
    std::vector<CtdClassCount> r;
    auto lower = [](std::string t) {
      for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      return t;
    };
    for (const CtdClass& c : ctd_classes())
      r.push_back({c.label, lower(c.head_type) + "_" + lower(c.tail_type), c.key,
                   std::lround(c.train), std::lround(c.valid), std::lround(c.test)});
    return r;
  }();
  return rows;
}

SplitDocuments synth_ctd_default_documents() {
  double train = 0, valid = 0, test = 0;
  for (const CtdClass& c : ctd_classes()) train += c.train, valid += c.valid, test += c.test;
  auto docs = [](double relations) {
    return static_cast<int>(std::lround(relations / kCtdGoldPerDocument));
  };
  return {docs(train), docs(valid), docs(test)};
}

GenerateReport generate_synth_ctd(const std::string& out_dir, const GenerateOptions& options) {
  // --docs n: n training documents and max(10, n / 4) in each held-out split (the sizes
  // every corpus generated so far has); without it, Table 4.9's size.
  const SplitDocuments table = synth_ctd_default_documents();
  const int n = options.docs > 0 ? options.docs : table.train;
  const int valid = options.docs > 0 ? std::max(10, n / 4) : table.valid;
  const int test = options.docs > 0 ? std::max(10, n / 4) : table.test;
  Rng root(options.seed);
  const Pools pools = make_pools(root.fork("pools"));
  GenerateReport report;
  report.name = "synth-ctd";
  std::filesystem::create_directories(out_dir);
  const std::vector<std::pair<std::string, int>> splits{
      {"train", n}, {"valid", valid}, {"test", test}};
  std::vector<Document> train_docs;
  int next_id = 20000000;
  for (std::size_t k = 0; k < splits.size(); ++k) {
    const auto& [name, docs_n] = splits[k];
    Rng rng = root.fork("split:" + name);
    std::vector<double> weights;
    for (const CtdClass& c : ctd_classes())
      weights.push_back(k == 0 ? c.train : k == 1 ? c.valid : c.test);
    const std::vector<int> plan = synth::class_plan(weights, 3 * docs_n, rng);
    std::vector<Document> docs;
    for (int i = 0; i < docs_n; ++i) {
      const std::vector<int> slots(plan.begin() + 3 * i, plan.begin() + 3 * i + 3);
      docs.push_back(make_document(rng, pools, slots, std::to_string(next_id++)));
    }
    const std::string path = (std::filesystem::path(out_dir) / (name + ".tsv")).string();
    write_file(path, write_bran_tsv(docs));
    report.files.push_back(path);
    const std::vector<Document> loaded = load_bran_tsv(path);
    std::vector<std::vector<Relation>> predicted;
    for (const Document& d : loaded) predicted.push_back(ctd_oracle(d));
    report.oracle[name] = score_relations(loaded, predicted);
    if (k == 0) train_docs = loaded;
  }
  const Embeddings emb = synth::make_vectors(train_docs, ctd_groups(), 50, root.fork("vectors"));
  for (const std::string& f : synth::write_vectors(out_dir, emb)) report.files.push_back(f);
  return report;
}

}  // namespace mare::data
