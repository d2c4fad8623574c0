// Official scores of the real corpora (see official_scores.h).
#include "experiments/data/official_scores.h"

#include <stdexcept>

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
  std::map<std::pair<std::string, std::string>, const SemevalPairLine*> key_of;
  for (const SemevalPairLine& k : keys) {
    known(k, keys_file);
    if (!key_of.emplace(std::make_pair(k.e1, k.e2), &k).second)
      fail(keys_file, k.line, k.column_e1, "the pair (" + k.e1 + "," + k.e2 + ") is keyed twice");
    ++s.per_label[k.label].gold;
  }
  std::set<std::pair<std::string, std::string>> predicted;
  for (const SemevalPairLine& p : predictions) {
    known(p, predictions_file);
    if (!predicted.emplace(p.e1, p.e2).second)
      fail(predictions_file, p.line, p.column_e1,
           "the pair (" + p.e1 + "," + p.e2 + ") is predicted twice");
    ++s.per_label[p.label].predicted;
    auto it = key_of.find({p.e1, p.e2});
    if (it == key_of.end()) {
      ++s.unscored;
      continue;
    }
    const SemevalPairLine& k = *it->second;
    if (k.label == p.label && k.reverse == p.reverse) ++s.per_label[p.label].correct, ++s.correct;
    if (k.label == p.label && k.reverse != p.reverse) ++s.wrong_direction;
  }
  s.keys = static_cast<long>(keys.size());
  s.predictions = static_cast<long>(predictions.size());
  for (const auto& [label, c] : s.per_label) {
    s.macro_precision += c.precision() / s.per_label.size();
    s.macro_recall += c.recall() / s.per_label.size();
    s.macro_f1 += c.f1() / s.per_label.size();
  }
  return s;
}

std::string write_semeval_predictions(const std::vector<SemevalPairLine>& predictions) {
  std::string out;
  for (const SemevalPairLine& p : predictions)
    out += p.label + "(" + p.e1 + "," + p.e2 + (p.reverse ? ",REVERSE" : "") + ")\n";
  return out;
}

}  // namespace mare::data
