// synth-cdr: a CDR-like corpus (PubTator) of chemical-induced-disease (CID) relations.
//
// Evidence that decides a CID relation between chemical C and disease D (what the
// oracle reads; a model has to learn it):
//   1. same sentence: a trigger token (induced, caused, provoked, precipitated,
//      triggered) lies between a mention of C and a mention of D, in either order
//      ("C induced D", "D caused by C", "C-induced D"), and the sentence holds no
//      negation cue (not, never, no, none, without);
//   2. across two sentences: a sentence with an administration cue (received,
//      administered) mentions C, and the next sentence starts with "Subsequently",
//      mentions D and holds no negation cue.
// Distractors that must not be taken for evidence: the same triggers under negation
// ("C never induced D", "D was not caused by C"), treatment statements ("C was used to
// treat D", "C relieved D"), a following sentence about the past ("Previously , ...
// had D") or negated ("Subsequently , none of them developed D"), co-occurrence in
// titles and filler sentences. Which pairs are related follows a knowledge base (each
// chemical causes three diseases); a knowledge-base pair is stated in 75% of the
// documents where both occur. Annotation noise: 3% of stated relations are left
// unannotated and 1% of other pairs are annotated, so no reader can reach F1 = 1.
// train_ds.pubtator labels every co-occurring knowledge-base pair CID whether or not
// the text states it: the distant-supervision data of the "+Data" experiments.
// Rule: same seed and --docs, same bytes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/synth_common.h"
#include "experiments/data/tokenizer.h"

namespace mare::data {

namespace {

using synth::LocalEntity;
using synth::Piece;
using synth::Sentence;

const std::vector<std::string> kTriggers{"induced", "caused", "provoked", "precipitated",
                                         "triggered"};
const std::vector<std::string> kNegations{"not", "never", "no", "none", "without"};
const std::vector<std::string> kAdminCues{"received", "administered"};

bool in(const std::vector<std::string>& set, const std::string& w) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

struct Pools {
  std::vector<LocalEntity> chemicals;
  std::vector<LocalEntity> diseases;
  std::set<std::pair<int, int>> kb;  // (chemical, disease) pool indices
};

std::string mesh_id(int n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "D%06d", n);
  return buf;
}

Pools make_pools(Rng rng) {
  Pools p;
  const std::vector<std::string> heads{"ami",   "beno", "cara", "dexa", "flu",  "halo",  "keto",
                                       "lido",  "meto", "nalo", "oxa",  "pra",  "quina", "rani",
                                       "sulfa", "tera", "vala", "zolo", "cefa", "doxo"};
  const std::vector<std::string> mids{"", "xo", "ti", "pro", "me", "na", "lo", "ra"};
  const std::vector<std::string> tails{"zole",   "mycin", "pril",    "olol",   "caine",  "pine",
                                       "statin", "mab",   "dronate", "xetine", "profen", "azepam"};
  std::set<std::string> used;
  while (p.chemicals.size() < 80) {
    const std::string name = synth::syllable_name(rng, heads, mids, tails);
    if (!used.insert(name).second) continue;
    p.chemicals.push_back(
        {mesh_id(1000 + 7 * static_cast<int>(p.chemicals.size())), "Chemical", name});
  }
  const std::vector<std::string> organs{"renal",      "hepatic",  "cardiac",  "pulmonary",
                                        "cerebral",   "gastric",  "ocular",   "cutaneous",
                                        "pancreatic", "muscular", "vascular", "biliary"};
  const std::vector<std::string> nouns{"failure", "necrosis",    "fibrosis", "toxicity",
                                       "edema",   "hemorrhage",  "ischemia", "dysfunction",
                                       "lesions", "inflammation"};
  const std::vector<std::string> single{"hypotension", "seizures",         "hepatitis",
                                        "nephropathy", "neutropenia",      "delirium",
                                        "myopathy",    "thrombocytopenia", "arrhythmia",
                                        "bradycardia", "agranulocytosis",  "psychosis"};
  std::vector<std::string> names(single);
  for (const auto& o : organs)
    for (const auto& n : nouns) names.push_back(o + " " + n);
  rng.shuffle(names);
  names.resize(100);
  for (std::size_t i = 0; i < names.size(); ++i)
    p.diseases.push_back({mesh_id(300000 + 11 * static_cast<int>(i)), "Disease", names[i]});
  for (int c = 0; c < static_cast<int>(p.chemicals.size()); ++c)
    while (std::count_if(p.kb.begin(), p.kb.end(), [c](const auto& e) { return e.first == c; }) < 3)
      p.kb.insert({c, static_cast<int>(rng.below(p.diseases.size()))});
  return p;
}

std::string number(Rng& rng) {
  return std::to_string(rng.range(2, 240));
}

const std::vector<std::string> kAdjectives{"randomized",  "retrospective", "prospective",
                                           "multicenter", "controlled",    "observational"};

Sentence filler(Rng& rng) {
  Sentence s;
  switch (rng.below(10)) {
    case 0:
      synth::words(
          s, "The study enrolled " + number(rng) + " patients at " + number(rng) + " centers .");
      break;
    case 1:
      synth::words(s, "Blood samples were collected at baseline and after " +
                          std::to_string(rng.range(2, 52)) + " weeks .");
      break;
    case 2:
      synth::words(s, "Data were analysed with a " + rng.pick(kAdjectives) + " regression model .");
      break;
    case 3:
      synth::words(s, "Follow-up lasted " + std::to_string(rng.range(3, 60)) + " months in the " +
                          rng.pick(kAdjectives) + " cohort .");
      break;
    case 4:
      synth::words(s, "The treated group was compared with the control group .");
      break;
    case 5:
      synth::words(s, "Baseline characteristics were similar between groups .");
      break;
    case 6:
      synth::words(s, "Serum levels were measured by liquid chromatography .");
      break;
    case 7:
      synth::words(s, "Outcomes were assessed by two independent reviewers .");
      break;
    case 8:
      synth::words(s, "The protocol was approved by the local ethics committee .");
      break;
    default:
      synth::words(s, "Mean age was " + std::to_string(rng.range(25, 75)) + " years and " +
                          number(rng) + " were women .");
      break;
  }
  return s;
}

Sentence chem_filler(Rng& rng, int c, const std::string& name) {
  Sentence s;
  switch (rng.below(3)) {
    case 0:
      synth::words(s, "Plasma concentrations of");
      synth::mention(s, c, name);
      synth::words(s, "were measured .");
      break;
    case 1:
      synth::words(s, "The pharmacokinetics of");
      synth::mention(s, c, name);
      synth::words(s, "were characterised in " + number(rng) + " volunteers .");
      break;
    default:
      synth::mention(s, c, name);
      synth::words(s, "is widely prescribed in this population .");
      break;
  }
  return s;
}

Sentence disease_filler(Rng& rng, int d, const std::string& name) {
  Sentence s;
  switch (rng.below(3)) {
    case 0:
      synth::words(s, "Patients with");
      synth::mention(s, d, name);
      synth::words(s, "were included .");
      break;
    case 1:
      synth::words(s, "The incidence of");
      synth::mention(s, d, name);
      synth::words(s, "was recorded at each visit .");
      break;
    default:
      synth::mention(s, d, name);
      synth::words(s, "is a common clinical problem .");
      break;
  }
  return s;
}

// One unit: one sentence, or two that must stay adjacent.
using Unit = std::vector<Sentence>;

Unit positive_unit(Rng& rng, int c, const std::string& cn, int d, const std::string& dn) {
  const std::string trig = rng.pick(kTriggers);
  Sentence s;
  switch (rng.below(5)) {
    case 0:
      synth::mention(s, c, cn);
      synth::words(s, trig);
      synth::mention(s, d, dn);
      synth::words(s, "in " + number(rng) + " of the treated patients .");
      return {s};
    case 1:
      synth::mention(s, d, dn);
      synth::words(s, trig + " by");
      synth::mention(s, c, cn);
      synth::words(s, "was observed in " + number(rng) + " patients .");
      return {s};
    case 2:
      synth::words(s, "In " + number(rng) + " patients ,");
      synth::mention(s, c, cn);
      s.push_back({"-" + trig, -1, true});
      synth::mention(s, d, dn);
      synth::words(s, "was reported .");
      return {s};
    default: {
      Sentence a, b;
      if (rng.chance(0.5)) {
        synth::words(a, number(rng) + " patients received");
        synth::mention(a, c, cn);
        synth::words(a, ".");
      } else {
        synth::mention(a, c, cn);
        synth::words(a, "was administered to " + number(rng) + " patients .");
      }
      if (rng.chance(0.5)) {
        synth::words(b, "Subsequently , " + number(rng) + " of them developed");
        synth::mention(b, d, dn);
        synth::words(b, ".");
      } else {
        synth::words(b, "Subsequently ,");
        synth::mention(b, d, dn);
        synth::words(b, "occurred in " + number(rng) + " cases .");
      }
      return {a, b};
    }
  }
}

Unit distractor_unit(Rng& rng, int c, const std::string& cn, int d, const std::string& dn) {
  const std::string trig = rng.pick(kTriggers);
  Sentence s;
  switch (rng.below(7)) {
    case 0:
      synth::mention(s, c, cn);
      synth::words(s, "never " + trig);
      synth::mention(s, d, dn);
      synth::words(s, "in these patients .");
      return {s};
    case 1:
      synth::mention(s, d, dn);
      synth::words(s, "was not " + trig + " by");
      synth::mention(s, c, cn);
      synth::words(s, "in any patient .");
      return {s};
    case 2:
      synth::mention(s, c, cn);
      synth::words(s, "was used to treat");
      synth::mention(s, d, dn);
      synth::words(s, ".");
      return {s};
    case 3:
      synth::mention(s, c, cn);
      synth::words(s, "relieved");
      synth::mention(s, d, dn);
      synth::words(s, "in " + number(rng) + " patients .");
      return {s};
    case 4:
      synth::words(s, "Both");
      synth::mention(s, c, cn);
      synth::words(s, "and");
      synth::mention(s, d, dn);
      synth::words(s, "were assessed at baseline .");
      return {s};
    default: {
      Sentence a, b;
      synth::words(a, number(rng) + " patients received");
      synth::mention(a, c, cn);
      synth::words(a, ".");
      if (rng.chance(0.5)) {
        synth::words(b, "Previously , " + number(rng) + " of them had");
        synth::mention(b, d, dn);
        synth::words(b, ".");
      } else {
        synth::words(b, "Subsequently , none of them developed");
        synth::mention(b, d, dn);
        synth::words(b, ".");
      }
      return {a, b};
    }
  }
}

// How many entities a document has, and how often its chemicals bring diseases they
// cause: tuned so that 500 documents give about the pair counts of thesis Table 4.4's
// CDR training split (1 038 positive, 4 280 negative: ~2.1 and ~8.6 a document).
constexpr std::pair<int, int> kChemicals{2, 4}, kDiseases{2, 4};
constexpr double kFirstBringsKb = 0.9, kOtherBringsKb = 0.6;

struct CdrDoc {
  Document gold;
  Document distant;  // same text, knowledge-base labels
};

// A document's chemicals and diseases (indices into the pools): distinct, and each
// chemical may bring knowledge-base diseases of its own: the first one to three most of the
// time, the others one now and then.
struct Cast {
  std::vector<int> chems, diseases;
};

Cast choose_entities(Rng& rng, const Pools& pools) {
  Cast cast;
  std::vector<int>& chems = cast.chems;
  std::vector<int>& diseases = cast.diseases;
  const int nc = rng.range(kChemicals.first, kChemicals.second),
            nd = rng.range(kDiseases.first, kDiseases.second);
  while (static_cast<int>(chems.size()) < nc) {
    const int c = static_cast<int>(rng.below(pools.chemicals.size()));
    if (std::find(chems.begin(), chems.end(), c) == chems.end()) chems.push_back(c);
  }
  for (int i = 0; i < nc; ++i) {
    std::vector<int> kb_of;
    for (const auto& [c, d] : pools.kb)
      if (c == chems[i]) kb_of.push_back(d);
    if (!rng.chance(i == 0 ? kFirstBringsKb : kOtherBringsKb)) continue;
    const int k = i == 0 ? rng.range(1, 3) : 1;
    for (int j = 0; j < k; ++j) {
      const int d = rng.pick(kb_of);
      if (std::find(diseases.begin(), diseases.end(), d) == diseases.end()) diseases.push_back(d);
    }
  }
  while (static_cast<int>(diseases.size()) < nd) {
    const int d = static_cast<int>(rng.below(pools.diseases.size()));
    if (std::find(diseases.begin(), diseases.end(), d) == diseases.end()) diseases.push_back(d);
  }
  return cast;
}

// The abstract's units before padding: for each (chemical, disease), evidence of a
// knowledge-base pair (three times in four: a stated pair) or a distractor now and then;
// then a filler sentence for each entity not yet mentioned (and some that are).
// Entities are local: chemicals first, then diseases.
struct Abstract {
  std::vector<Unit> units;
  std::set<std::pair<int, int>> stated;  // local (chem, disease)
};

Abstract state_pairs(Rng& rng, const Pools& pools, const Cast& cast,
                     const std::vector<LocalEntity>& local) {
  const int n_chem = static_cast<int>(cast.chems.size());
  auto name = [&](int l) { return local[l].name; };
  Abstract a;
  for (int i = 0; i < n_chem; ++i)
    for (int j = 0; j < static_cast<int>(cast.diseases.size()); ++j) {
      const int lc = i, ld = n_chem + j;
      const bool kb = pools.kb.count({cast.chems[i], cast.diseases[j]}) > 0;
      if (kb && rng.chance(0.75)) {
        a.units.push_back(positive_unit(rng, lc, name(lc), ld, name(ld)));
        a.stated.insert({lc, ld});
      } else if (rng.chance(0.4)) {
        a.units.push_back(distractor_unit(rng, lc, name(lc), ld, name(ld)));
      }
    }
  std::set<int> mentioned;
  for (const Unit& u : a.units)
    for (const Sentence& s : u)
      for (const auto& p : s)
        if (p.entity >= 0) mentioned.insert(p.entity);
  for (int l = 0; l < static_cast<int>(local.size()); ++l)
    if (!mentioned.count(l) || rng.chance(0.3))
      a.units.push_back(
          {l < n_chem ? chem_filler(rng, l, name(l)) : disease_filler(rng, l, name(l))});
  return a;
}

// The title: the first chemical and the first disease, no evidence.
Sentence make_title(Rng& rng, const std::vector<LocalEntity>& local, int n_chem) {
  Sentence title;
  if (rng.chance(0.5)) {
    synth::words(title, "Effects of");
    synth::mention(title, 0, local[0].name);
    synth::words(title, "in patients with");
    synth::mention(title, n_chem, local[n_chem].name);
  } else {
    synth::mention(title, 0, local[0].name);
    synth::words(title, "and");
    synth::mention(title, n_chem, local[n_chem].name);
    synth::words(title, ": a " + rng.pick(kAdjectives) + " study");
  }
  return title;
}

// Filler sentences until title and abstract reach 370–430 tokens.
void pad_to_length(Rng& rng, const Sentence& title, std::vector<Unit>& units) {
  int tokens = synth::token_count(title);
  for (const Unit& u : units)
    for (const Sentence& s : u) tokens += synth::token_count(s);
  const int target = rng.range(370, 430);
  while (tokens < target) {
    units.push_back({filler(rng)});
    tokens += synth::token_count(units.back()[0]);
  }
}

// The gold CID relations (the stated pairs, with 3 % dropped and 1 % of the others added
// as annotation noise) and the distant ones (the knowledge base's pairs).
void label_pairs(Rng& rng, const Pools& pools, const Cast& cast, const Abstract& a,
                 const std::map<int, int>& local_to_doc, CdrDoc& out) {
  const int n_chem = static_cast<int>(cast.chems.size());
  for (int i = 0; i < n_chem; ++i)
    for (int j = 0; j < static_cast<int>(cast.diseases.size()); ++j) {
      const int lc = i, ld = n_chem + j;
      const int h = local_to_doc.at(lc), t = local_to_doc.at(ld);
      bool gold = a.stated.count({lc, ld}) > 0;
      if (gold && rng.chance(0.03))
        gold = false;
      else if (!gold && rng.chance(0.01))
        gold = true;
      if (gold) out.gold.relations.push_back({"CID", h, t, false});
      if (pools.kb.count({cast.chems[i], cast.diseases[j]}))
        out.distant.relations.push_back({"CID", h, t, false});
    }
}

CdrDoc make_document(Rng& rng, const Pools& pools, const std::string& pmid) {
  const Cast cast = choose_entities(rng, pools);
  std::vector<LocalEntity> local;
  for (int c : cast.chems) local.push_back(pools.chemicals[c]);
  for (int d : cast.diseases) local.push_back(pools.diseases[d]);
  const int n_chem = static_cast<int>(cast.chems.size());

  Abstract a = state_pairs(rng, pools, cast, local);
  const Sentence title = make_title(rng, local, n_chem);
  pad_to_length(rng, title, a.units);
  rng.shuffle(a.units);
  std::vector<Sentence> abstract;
  for (const Unit& u : a.units)
    for (const Sentence& s : u) abstract.push_back(s);

  CdrDoc out;
  Document& doc = out.gold;
  doc.id = pmid;
  std::map<int, int> local_to_doc;
  synth::render(doc, {title}, local, local_to_doc);
  const int title_end = static_cast<int>(doc.text.size());
  synth::render(doc, abstract, local, local_to_doc);
  doc.segments = {{"title", 0, title_end},
                  {"abstract", title_end + 1, static_cast<int>(doc.text.size())}};
  annotate_tokens(doc);
  out.distant = doc;
  label_pairs(rng, pools, cast, a, local_to_doc, out);
  return out;
}

std::map<std::string, std::string> cdr_groups() {
  std::map<std::string, std::string> g;
  for (const auto& w : kTriggers) g[w] = "trigger";
  for (const auto& w : kNegations) g[w] = "negation";
  for (const auto& w : kAdminCues) g[w] = "administration";
  return g;
}

}  // namespace

std::vector<Relation> cdr_oracle(const Document& doc) {
  std::vector<Relation> out;
  auto add = [&](int h, int t) {
    for (const Relation& r : out)
      if (r.head == h && r.tail == t) return;
    out.push_back({"CID", h, t, false});
  };
  // mentions by sentence
  const int ns = static_cast<int>(doc.sentences.size());
  std::vector<int> sentence_of(doc.tokens.size(), 0);
  for (int s = 0; s < ns; ++s)
    for (int t = doc.sentences[s].begin; t < doc.sentences[s].end; ++t) sentence_of[t] = s;
  std::vector<std::vector<int>> chem(ns), dis(ns);  // mention indices
  for (std::size_t m = 0; m < doc.mentions.size(); ++m) {
    const Mention& men = doc.mentions[m];
    if (men.entities.empty()) continue;
    const int s = sentence_of[men.tokens.begin];
    if (men.type == "Chemical") chem[s].push_back(static_cast<int>(m));
    if (men.type == "Disease") dis[s].push_back(static_cast<int>(m));
  }
  auto has = [&](int s, const std::vector<std::string>& set) {
    for (int t = doc.sentences[s].begin; t < doc.sentences[s].end; ++t)
      if (in(set, lower(doc.tokens[t].text))) return true;
    return false;
  };
  for (int s = 0; s < ns; ++s) {
    const bool negated = has(s, kNegations);
    if (!negated)
      for (int c : chem[s])
        for (int d : dis[s]) {
          const Span a = doc.mentions[c].tokens, b = doc.mentions[d].tokens;
          const int from = std::min(a.end, b.end), to = std::max(a.begin, b.begin);
          bool trigger = false;
          for (int t = from; t < to; ++t) trigger = trigger || in(kTriggers, doc.tokens[t].text);
          if (trigger)
            for (int h : doc.mentions[c].entities)
              for (int e : doc.mentions[d].entities) add(h, e);
        }
    if (s + 1 < ns && !negated && has(s, kAdminCues) && !chem[s].empty()) {
      const int n = s + 1;
      if (doc.tokens[doc.sentences[n].begin].text == "Subsequently" && !has(n, kNegations))
        for (int c : chem[s])
          for (int d : dis[n])
            for (int h : doc.mentions[c].entities)
              for (int e : doc.mentions[d].entities) add(h, e);
    }
  }
  return out;
}

GenerateReport generate_synth_cdr(const std::string& out_dir, const GenerateOptions& options) {
  const int n = options.docs > 0 ? options.docs : 500;  // thesis Table 4.4: 500 a split
  Rng root(options.seed);
  const Pools pools = make_pools(root.fork("pools"));
  GenerateReport report;
  report.name = "synth-cdr";
  std::filesystem::create_directories(out_dir);
  struct Split {
    std::string name;
    int docs;
    bool distant;
  };
  const std::vector<Split> splits{
      {"train", n, false}, {"valid", n, false}, {"test", n, false}, {"train_ds", 2 * n, true}};
  std::vector<Document> train_docs;
  int pmid = 10000000;
  for (const Split& sp : splits) {
    Rng rng = root.fork("split:" + sp.name);
    std::vector<Document> docs;
    for (int i = 0; i < sp.docs; ++i) {
      CdrDoc d = make_document(rng, pools, std::to_string(pmid++));
      docs.push_back(sp.distant ? std::move(d.distant) : std::move(d.gold));
    }
    const std::string path = (std::filesystem::path(out_dir) / (sp.name + ".pubtator")).string();
    write_file(path, write_pubtator(docs));
    report.files.push_back(path);
    // score the oracle on what the real loader reads back
    const std::vector<Document> loaded = load_pubtator(path);
    std::vector<std::vector<Relation>> predicted;
    for (const Document& d : loaded) predicted.push_back(cdr_oracle(d));
    report.oracle[sp.name] = score_relations(loaded, predicted);
    if (sp.name == "train") train_docs = loaded;
  }
  const Embeddings emb = synth::make_vectors(train_docs, cdr_groups(), 50, root.fork("vectors"));
  for (const std::string& f : synth::write_vectors(out_dir, emb)) report.files.push_back(f);
  return report;
}

}  // namespace mare::data
