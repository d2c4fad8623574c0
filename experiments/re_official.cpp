// Official scores and prediction files of the real corpora (see re_official.h).
#include "experiments/re_official.h"

#include <set>
#include <stdexcept>

#include "experiments/data/official_scores.h"

namespace mare {

namespace {

std::set<data::CidTriple> predicted_triples(const ReCorpus& c, const ReSplit& split,
                                            const std::vector<int>& predicted) {
  const int cid = c.relation_id("CID");
  std::set<data::CidTriple> out;
  for (std::size_t i = 0; i < split.examples.size(); ++i) {
    if (predicted[i] != cid) continue;
    const data::Example& e = split.examples[i];
    const data::Document& d = split.documents[e.doc];
    out.emplace(d.id, d.entities[e.head].id, d.entities[e.tail].id);
  }
  return out;
}

// The split's given pairs as key lines (gold) and as prediction lines.
void semeval_lines(const ReCorpus& c, const ReSplit& split, const std::vector<int>& predicted,
                   const std::vector<bool>& in_scope, std::vector<data::SemevalPairLine>* keys,
                   std::vector<data::SemevalPairLine>* predictions) {
  for (std::size_t i = 0; i < split.examples.size(); ++i) {
    const data::Example& e = split.examples[i];
    if (!in_scope[e.doc]) continue;
    const data::Document& d = split.documents[e.doc];
    data::SemevalPairLine line;
    line.e1 = d.entities[e.head].id;
    line.e2 = d.entities[e.tail].id;
    line.reverse = e.reverse;
    line.line = i + 1;
    if (keys) {
      line.label = e.label;
      keys->push_back(line);
    }
    if (predictions && predicted[i] > 0) {
      line.label = c.relation_names[predicted[i]];
      predictions->push_back(line);
    }
  }
}

void check_sizes(const ReSplit& split, const std::vector<int>& predicted) {
  if (predicted.size() != split.examples.size())
    throw std::invalid_argument("official score: " + std::to_string(predicted.size()) +
                                " predictions for the " + std::to_string(split.examples.size()) +
                                " examples of the " + split.name + " split");
}

}  // namespace

nlohmann::json official_score(const ReCorpus& c, const ReSplit& split,
                              const std::vector<int>& predicted,
                              const std::vector<int>* documents) {
  if (c.official == OfficialScore::none) return nullptr;
  check_sizes(split, predicted);
  std::vector<bool> in_scope(split.documents.size(), documents == nullptr);
  if (documents)
    for (int d : *documents) in_scope.at(d) = true;
  switch (c.official) {
    case OfficialScore::cdr: {
      std::vector<data::Document> gold;
      for (std::size_t d = 0; d < split.documents.size(); ++d)
        if (in_scope[d]) gold.push_back(split.documents[d]);
      std::set<data::CidTriple> triples;
      for (const data::CidTriple& t : predicted_triples(c, split, predicted)) triples.insert(t);
      const data::Prf s = data::score_cdr(gold, triples);
      return {{"score", "BioCreative V CDR CID: document-level (PMID, chemical, disease) triples"},
              {"precision", s.precision()},
              {"recall", s.recall()},
              {"f1", s.f1()},
              {"gold", s.gold},
              {"predicted", s.predicted},
              {"correct", s.correct}};
    }
    case OfficialScore::semeval2018: {
      std::vector<data::SemevalPairLine> keys, predictions;
      semeval_lines(c, split, predicted, in_scope, &keys, &predictions);
      const data::SemevalScore s =
          data::score_semeval2018(keys, predictions, "keys", "predictions");
      nlohmann::json per = nlohmann::json::object();
      for (const auto& [label, p] : s.per_label)
        per[label] = {
            {"precision", p.precision()}, {"recall", p.recall()}, {"f1", p.f1()}, {"gold", p.gold},
            {"predicted", p.predicted},   {"correct", p.correct}};
      return {{"score", "SemEval 2018 Task 7 subtask " + c.subtask +
                            ": macro F1 (harmonic mean of the macro P and R over the keyed types), "
                            "direction included"},
              {"precision", s.macro_precision},
              {"recall", s.macro_recall},
              {"f1", s.macro_f1},
              {"keys", s.keys},
              {"predictions", s.predictions},
              {"correct", s.correct},
              {"wrong_direction", s.wrong_direction},
              {"per_type", per}};
    }
    case OfficialScore::none:
      break;
  }
  return nullptr;
}

std::string official_predictions_name(const ReCorpus& c) {
  switch (c.official) {
    case OfficialScore::cdr:
      return "test_predictions.pubtator";
    case OfficialScore::semeval2018:
      return "test_predictions.txt";
    case OfficialScore::none:
      break;
  }
  return "";
}

std::string official_predictions(const ReCorpus& c, const ReSplit& split,
                                 const std::vector<int>& predicted) {
  check_sizes(split, predicted);
  switch (c.official) {
    case OfficialScore::cdr:
      return data::write_cdr_predictions(split.documents, predicted_triples(c, split, predicted));
    case OfficialScore::semeval2018: {
      std::vector<data::SemevalPairLine> lines;
      semeval_lines(c, split, predicted, std::vector<bool>(split.documents.size(), true), nullptr,
                    &lines);
      return data::write_semeval_predictions(lines);
    }
    case OfficialScore::none:
      break;
  }
  return "";
}

}  // namespace mare
