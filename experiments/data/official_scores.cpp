// Official scores of the real corpora (see official_scores.h).
#include "experiments/data/official_scores.h"

#include <stdexcept>
#include <tuple>

#include "experiments/data/error.h"
#include "experiments/data/pubtator.h"

namespace mare::data {

std::set<CidTriple> cid_triples(const std::vector<Document>& docs) {
  std::set<CidTriple> out;
  for (const Document& d : docs)
    for (const Relation& r : d.relations)
      if (r.type == "CID") out.emplace(d.id, d.entities[r.head].id, d.entities[r.tail].id);
  return out;
}

Prf score_cdr(const std::vector<Document>& gold_docs, const std::set<CidTriple>& predicted) {
  std::set<std::string> documents;
  for (const Document& d : gold_docs) documents.insert(d.id);
  const std::set<CidTriple> gold = cid_triples(gold_docs);
  Prf s;
  s.gold = static_cast<long>(gold.size());
  s.predicted = static_cast<long>(predicted.size());
  for (const CidTriple& t : predicted) {
    if (!documents.count(std::get<0>(t)))
      throw std::invalid_argument("CDR score: a prediction names document " + std::get<0>(t) +
                                  ", which the gold file does not hold");
    s.correct += gold.count(t) ? 1 : 0;
  }
  return s;
}

std::string write_cdr_predictions(const std::vector<Document>& docs,
                                  const std::set<CidTriple>& predicted) {
  std::vector<Document> out = docs;
  for (Document& d : out) {
    d.relations.clear();
    for (auto it = predicted.lower_bound({d.id, "", ""});
         it != predicted.end() && std::get<0>(*it) == d.id; ++it) {
      const int h = d.find_entity(std::get<1>(*it)), t = d.find_entity(std::get<2>(*it));
      if (h < 0 || t < 0)
        throw std::invalid_argument("CDR predictions: document " + d.id + " has no entity " +
                                    (h < 0 ? std::get<1>(*it) : std::get<2>(*it)));
      d.relations.push_back({"CID", h, t, false});
    }
  }
  return write_pubtator(out);
}

}  // namespace mare::data

namespace mare::data {

const std::vector<std::string>& semeval2018_labels() {
  static const std::vector<std::string> l{"USAGE", "MODEL-FEATURE", "RESULT",
                                          "TOPIC", "PART_WHOLE",    "COMPARE"};
  return l;
}

SemevalScore score_semeval2018(const std::vector<SemevalPairLine>& keys,
                               const std::vector<SemevalPairLine>& predictions,
                               std::string_view keys_file, std::string_view predictions_file) {
  SemevalScore s;
  for (const std::string& l : semeval2018_labels()) s.per_label[l];
  auto known = [&](const SemevalPairLine& p, std::string_view file) {
    if (!s.per_label.count(p.label))
      fail(file, p.line, 1, "unknown relation type " + quote(p.label));
  };
  // A pair's id is "E1,E2" or "E1,E2,REVERSE", as the scorer reads it: the direction is
  // part of what must match.
  using Id = std::tuple<std::string, std::string, bool>;
  auto id_text = [](const SemevalPairLine& p) {
    return "(" + p.e1 + "," + p.e2 + (p.reverse ? ",REVERSE" : "") + ")";
  };
  std::map<Id, const SemevalPairLine*> key_of;
  std::set<std::string> key_labels;
  for (const SemevalPairLine& k : keys) {
    known(k, keys_file);
    if (!key_of.emplace(Id{k.e1, k.e2, k.reverse}, &k).second)
      fail(keys_file, k.line, k.column_e1, "the pair " + id_text(k) + " is keyed twice");
    ++s.per_label[k.label].gold;
    key_labels.insert(k.label);
  }
  std::set<Id> predicted;
  for (const SemevalPairLine& p : predictions) {
    known(p, predictions_file);
    if (!predicted.emplace(p.e1, p.e2, p.reverse).second)
      fail(predictions_file, p.line, p.column_e1, "the pair " + id_text(p) + " is predicted twice");
    ++s.per_label[p.label].predicted;
    auto it = key_of.find({p.e1, p.e2, p.reverse});
    if (it == key_of.end()) {
      auto other = key_of.find({p.e1, p.e2, !p.reverse});
      if (other == key_of.end())
        ++s.unscored;
      else if (other->second->label == p.label)
        ++s.wrong_direction;
      continue;
    }
    if (it->second->label == p.label) ++s.per_label[p.label].correct, ++s.correct;
  }
  s.keys = static_cast<long>(keys.size());
  s.predictions = static_cast<long>(predictions.size());
  // Macro precision and recall: means over the types that the keys hold; macro F1 their
  // harmonic mean (the scorer's version 1.2; 1.1 averaged the per-type F1 instead).
  for (const std::string& label : key_labels) {
    s.macro_precision += s.per_label.at(label).precision() / key_labels.size();
    s.macro_recall += s.per_label.at(label).recall() / key_labels.size();
  }
  const double pr = s.macro_precision + s.macro_recall;
  s.macro_f1 = pr > 0 ? 2 * s.macro_precision * s.macro_recall / pr : 0.0;
  s.averaged_labels = static_cast<long>(key_labels.size());
  return s;
}

std::string write_semeval_predictions(const std::vector<SemevalPairLine>& predictions) {
  std::string out;
  for (const SemevalPairLine& p : predictions)
    out += p.label + "(" + p.e1 + "," + p.e2 + (p.reverse ? ",REVERSE" : "") + ")\n";
  return out;
}

}  // namespace mare::data
