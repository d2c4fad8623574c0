// synth-semeval: a SemEval 2018 Task 7-like corpus (XML + relation lines).
//
// Six relations between terms of one sentence, with direction. A relation is written
// TYPE(E1,E2) with E1 the earlier term, plus ",REVERSE" when it runs from E2 to E1.
// Evidence (what the oracle reads): the tokens between two consecutive terms of a
// sentence are exactly one connecting phrase:
//   USAGE          forward "is used for", "is applied to"; reverse "based on", "using"
//   MODEL-FEATURE  forward "of", "of the";                  reverse "with", "that has"
//   RESULT         forward "yields", "leads to";            reverse "is obtained by", "results
//   from" TOPIC          forward "on", "about";                   reverse "is discussed in", "is
//   presented in" PART_WHOLE     forward "in", "is part of";              reverse "consists of",
//   "contains" COMPARE        "compared to", "outperforms", "versus"   (symmetric: never REVERSE)
// Distractors: neutral connectors ("and", "as well as", ",", "or") and negated
// phrases ("is not used for", "does not yield"). Class counts follow thesis Table 4.11
// (subtask 1.1 column for the clean corpus, 1.2 for the noisy one), the REVERSE share
// per class its reverse columns. subtask1.1: clean entity annotation, 2% label noise.
// subtask1.2: noisy entity annotation as produced automatically: 20% of terms have a
// boundary error (a neighbouring word is swallowed or a word is cut off), which also
// hides the phrase from the oracle; 3% label noise.
// Rule: same seed and --docs, same bytes.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/semeval.h"
#include "experiments/data/synth_common.h"

namespace mare::data {

namespace {

using synth::LocalEntity;
using synth::Piece;
using synth::Sentence;

struct SemClass {
  std::string name;
  std::vector<std::string> forward, reverse;
  double clean, noisy, reverse_share;  // Table 4.11
};

const std::vector<SemClass>& sem_classes() {
  static const std::vector<SemClass> c{
      {"USAGE", {"is used for", "is applied to"}, {"based on", "using"}, 483, 464, 615.0 / 947},
      {"MODEL-FEATURE", {"of", "of the"}, {"with", "that has"}, 326, 172, 346.0 / 498},
      {"RESULT", {"yields", "leads to"}, {"is obtained by", "results from"}, 72, 121, 135.0 / 193},
      {"TOPIC", {"on", "about"}, {"is discussed in", "is presented in"}, 18, 240, 235.0 / 258},
      {"PART_WHOLE", {"in", "is part of"}, {"consists of", "contains"}, 233, 192, 273.0 / 425},
      {"COMPARE", {"compared to", "outperforms", "versus"}, {}, 95, 41, 0.0}};
  return c;
}

const std::vector<std::string> kNeutral{"and", "as well as", ",", "or"};
const std::vector<std::string> kNegated{"is not used for", "does not yield", "is not part of",
                                        "is not based on"};

std::vector<std::string> make_terms(Rng rng) {
  const std::vector<std::string> adj{"statistical",    "neural",       "probabilistic",
                                     "lexical",        "syntactic",    "semantic",
                                     "discriminative", "unsupervised", "bilingual",
                                     "hierarchical",   "robust",       "incremental"};
  const std::vector<std::string> noun{"parser",           "model",
                                      "corpus",           "features",
                                      "translation",      "grammar",
                                      "classifier",       "alignment",
                                      "lexicon",          "tagger",
                                      "representation",   "dictionary",
                                      "treebank",         "system",
                                      "decoder",          "speech recognizer",
                                      "dialogue manager", "word segmentation",
                                      "query expansion",  "error rate"};
  std::vector<std::string> terms;
  for (const auto& a : adj)
    for (const auto& n : noun) terms.push_back(a + " " + n);
  for (const auto& n : noun) terms.push_back(n);
  rng.shuffle(terms);
  return terms;
}

const std::vector<std::string> kIntro{"",           "In this paper ,",       "We show that",
                                      "Moreover ,", "Experiments show that", "Finally ,"};
const std::vector<std::string> kOutro{"", "in our experiments", "on several benchmarks",
                                      "for this task"};
const std::vector<std::string> kFiller{
    "We report results on three data sets .", "The approach is simple and fast .",
    "Our experiments confirm the analysis .", "This work extends earlier research .",
    "We discuss limitations and future work ."};

struct SemDoc {
  std::vector<LocalEntity> local;
  std::vector<Sentence> sentences;
  struct Rel {
    int type, e1, e2;
    bool reverse;
  };
  std::vector<Rel> rels;
};

int new_term(SemDoc& d, Rng& rng, const std::vector<std::string>& terms) {
  d.local.push_back({"", "Entity", rng.pick(terms)});
  return static_cast<int>(d.local.size()) - 1;
}

// A sentence with a relation of class c (or a distractor when c < 0), sometimes with a
// third term joined by a neutral connector.
Sentence relation_sentence(SemDoc& d, Rng& rng, const std::vector<std::string>& terms, int c) {
  Sentence s;
  synth::words(s, rng.pick(kIntro));
  const int e1 = new_term(d, rng, terms);
  const int e2 = new_term(d, rng, terms);
  if (rng.chance(0.2)) synth::words(s, "the");
  synth::mention(s, e1, d.local[e1].name);
  if (c >= 0) {
    const SemClass& k = sem_classes()[c];
    const bool reverse = !k.reverse.empty() && rng.chance(k.reverse_share);
    synth::words(s, rng.pick(reverse ? k.reverse : k.forward));
    d.rels.push_back({c, e1, e2, reverse});
  } else {
    synth::words(s, rng.pick(rng.chance(0.5) ? kNeutral : kNegated));
  }
  synth::mention(s, e2, d.local[e2].name);
  if (rng.chance(0.35)) {
    const int e3 = new_term(d, rng, terms);
    synth::words(s, rng.pick(kNeutral));
    synth::mention(s, e3, d.local[e3].name);
  }
  synth::words(s, rng.pick(kOutro));
  synth::words(s, ".");
  if (!s.empty() && s[0].entity < 0 && s[0].text == "the") s[0].text = "The";
  return s;
}

// Noisy annotation: move a term's boundary by one word (never across punctuation).
void perturb(Document& doc, Rng& rng) {
  for (Mention& m : doc.mentions) {
    if (!rng.chance(0.2)) continue;
    const std::string& t = doc.text;
    if (rng.chance(0.5)) {
      // swallow the next word
      int e = m.char_end;
      if (e + 1 >= static_cast<int>(t.size()) || t[e] != ' ') continue;
      int f = e + 1;
      while (f < static_cast<int>(t.size()) && std::isalpha(static_cast<unsigned char>(t[f]))) ++f;
      if (f == e + 1) continue;
      m.char_end = f;
    } else {
      // cut off the first word of a multi-word term
      const std::size_t sp = m.text.find(' ');
      if (sp == std::string::npos) continue;
      m.char_begin += static_cast<int>(sp) + 1;
    }
    m.text = t.substr(m.char_begin, m.char_end - m.char_begin);
  }
  // a swallowed word may now overlap the next term: undo such changes
  for (std::size_t i = 0; i + 1 < doc.mentions.size(); ++i)
    if (doc.mentions[i].char_end > doc.mentions[i + 1].char_begin) {
      Mention& m = doc.mentions[i];
      const std::size_t sp = doc.text.rfind(' ', m.char_end - 1);
      m.char_end = static_cast<int>(sp);
      m.text = doc.text.substr(m.char_begin, m.char_end - m.char_begin);
    }
}

Document make_document(Rng& rng, const std::vector<std::string>& terms,
                       const std::vector<int>& classes, const std::string& id, bool noisy) {
  SemDoc d;
  std::vector<Sentence> body;
  for (int c : classes) body.push_back(relation_sentence(d, rng, terms, c));
  const int distractors = rng.range(1, 2);
  for (int k = 0; k < distractors; ++k) body.push_back(relation_sentence(d, rng, terms, -1));
  int tokens = 0;
  for (const auto& s : body) tokens += synth::token_count(s);
  while (tokens < 88) {
    Sentence s;
    synth::words(s, rng.pick(kFiller));
    tokens += synth::token_count(s);
    body.push_back(s);
  }
  rng.shuffle(body);
  Sentence title;
  const int t = new_term(d, rng, terms);
  synth::words(title, "Towards better");
  synth::mention(title, t, d.local[t].name);
  // entity ids in text order: ID.1, ID.2, ...
  Document doc;
  doc.id = id;
  std::vector<int> order;  // local indices in text order
  for (const Piece& p : title)
    if (p.entity >= 0) order.push_back(p.entity);
  for (const auto& s : body)
    for (const Piece& p : s)
      if (p.entity >= 0) order.push_back(p.entity);
  for (std::size_t k = 0; k < order.size(); ++k)
    d.local[order[k]].id = id + "." + std::to_string(k + 1);
  std::map<int, int> local_to_doc;
  synth::render(doc, {title}, d.local, local_to_doc);
  const int title_end = static_cast<int>(doc.text.size());
  doc.text += "\n";
  const int abstract_begin = static_cast<int>(doc.text.size());
  {
    // render the abstract without a leading space
    Document body_doc;
    std::map<int, int> body_map;
    synth::render(body_doc, body, d.local, body_map);
    doc.text += body_doc.text;
    for (Mention m : body_doc.mentions) {
      const int local = [&] {
        for (const auto& [l, e] : body_map)
          if (e == m.entities[0]) return l;
        return -1;
      }();
      auto it = local_to_doc.emplace(local, static_cast<int>(doc.entities.size())).first;
      if (it->second == static_cast<int>(doc.entities.size()))
        doc.entities.push_back({d.local[local].id, "Entity", {}});
      m.char_begin += abstract_begin;
      m.char_end += abstract_begin;
      m.entities = {it->second};
      doc.entities[it->second].mentions.push_back(static_cast<int>(doc.mentions.size()));
      doc.mentions.push_back(m);
    }
  }
  doc.segments = {{"title", 0, title_end},
                  {"abstract", abstract_begin, static_cast<int>(doc.text.size())}};
  if (noisy) perturb(doc, rng);
  annotate_tokens(doc);
  const double label_noise = noisy ? 0.03 : 0.02;
  for (const auto& r : d.rels) {
    if (rng.chance(label_noise)) continue;  // an annotator missed it
    doc.relations.push_back(
        {sem_classes()[r.type].name, local_to_doc.at(r.e1), local_to_doc.at(r.e2), r.reverse});
  }
  return doc;
}

std::map<std::string, std::string> semeval_groups() {
  std::map<std::string, std::string> g;
  for (const SemClass& c : sem_classes()) {
    for (const auto& p : c.forward) g[p.substr(0, p.find(' '))] = "rel:" + c.name;
    for (const auto& p : c.reverse) g[p.substr(0, p.find(' '))] = "rev:" + c.name;
  }
  g["not"] = "negation";
  return g;
}

}  // namespace

std::vector<Relation> semeval_oracle(const Document& doc) {
  static const std::map<std::string, std::pair<std::string, bool>> table = [] {
    std::map<std::string, std::pair<std::string, bool>> t;
    for (const SemClass& c : sem_classes()) {
      for (const auto& p : c.forward) t[p] = {c.name, false};
      for (const auto& p : c.reverse) t[p] = {c.name, true};
    }
    return t;
  }();
  std::vector<Relation> out;
  std::vector<int> sentence_of(doc.tokens.size(), 0);
  for (std::size_t s = 0; s < doc.sentences.size(); ++s)
    for (int t = doc.sentences[s].begin; t < doc.sentences[s].end; ++t) sentence_of[t] = s;
  std::vector<int> order(doc.mentions.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return doc.mentions[a].tokens.begin < doc.mentions[b].tokens.begin;
  });
  for (std::size_t k = 0; k + 1 < order.size(); ++k) {
    const Mention& a = doc.mentions[order[k]];
    const Mention& b = doc.mentions[order[k + 1]];
    if (a.entities.empty() || b.entities.empty()) continue;
    if (sentence_of[a.tokens.begin] != sentence_of[b.tokens.begin]) continue;
    std::string between;
    for (int t = a.tokens.end; t < b.tokens.begin; ++t)
      between += (between.empty() ? "" : " ") + doc.tokens[t].text;
    auto it = table.find(between);
    if (it != table.end())
      out.push_back({it->second.first, a.entities[0], b.entities[0], it->second.second});
  }
  return out;
}

GenerateReport generate_synth_semeval(const std::string& out_dir, const GenerateOptions& options) {
  // Default: the task's sizes, 350 training and 150 test abstracts a subtask (thesis
  // Table 4.11 counts the 350's relations); --docs N: N, with N / 4 (at least 10) to test.
  const int n = options.docs > 0 ? options.docs : 350;
  const int held = options.docs > 0 ? std::max(10, n / 4) : 150;
  Rng root(options.seed);
  const std::vector<std::string> terms = make_terms(root.fork("terms"));
  GenerateReport report;
  report.name = "synth-semeval";
  std::vector<Document> train_docs;
  for (const bool noisy : {false, true}) {
    const std::string sub = noisy ? "subtask1.2" : "subtask1.1";
    const std::filesystem::path dir = std::filesystem::path(out_dir) / sub;
    std::filesystem::create_directories(dir);
    const std::vector<std::pair<std::string, int>> splits{
        {"train", n}, {"valid", held}, {"test", held}};
    int serial = 0;
    for (const auto& [split, docs_n] : splits) {
      Rng rng = root.fork(sub + ":" + split);
      std::vector<double> weights;
      for (const SemClass& c : sem_classes()) weights.push_back(noisy ? c.noisy : c.clean);
      // about 3.5 relations per abstract, as in the task's data
      const std::vector<int> plan = synth::class_plan(weights, docs_n * 7 / 2, rng);
      std::vector<Document> docs;
      std::size_t next = 0;
      for (int i = 0; i < docs_n; ++i) {
        const std::size_t take = std::min<std::size_t>(
            plan.size() - next, i + 1 == docs_n ? plan.size() - next : (i % 2 ? 4 : 3));
        const std::vector<int> classes(plan.begin() + next, plan.begin() + next + take);
        next += take;
        char id[32];
        std::snprintf(id, sizeof id, "%c%02d-%04d", noisy ? 'N' : 'C', 10 + (serial / 1000) % 90,
                      serial % 1000 + 1000);
        ++serial;
        docs.push_back(make_document(rng, terms, classes, id, noisy));
      }
      const std::string xml = (dir / (split + ".text.xml")).string();
      const std::string rel = (dir / (split + ".relations.txt")).string();
      write_file(xml, write_semeval_xml(docs));
      write_file(rel, write_semeval_relations(docs));
      report.files.push_back(xml);
      report.files.push_back(rel);
      const std::vector<Document> loaded = load_semeval(xml, rel);
      std::vector<std::vector<Relation>> predicted;
      for (const Document& d : loaded) predicted.push_back(semeval_oracle(d));
      report.oracle[sub + "/" + split] = score_relations(loaded, predicted);
      if (!noisy && split == "train") train_docs = loaded;
    }
  }
  const Embeddings emb =
      synth::make_vectors(train_docs, semeval_groups(), 50, root.fork("vectors"));
  for (const std::string& f : synth::write_vectors(out_dir, emb)) report.files.push_back(f);
  return report;
}

}  // namespace mare::data
