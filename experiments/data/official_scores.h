// The official scores of the real corpora, as their tasks define them, on files in
// the tasks' own formats.
//
// BioCreative V CDR, relation task (CID): a system's output is a set of document-level
// (PMID, chemical MeSH id, disease MeSH id) triples; precision, recall and F1 count
// triples over the whole test split against every CID relation of the gold file
// (a gold relation that no candidate pair could reach is a false negative). A
// prediction file is PubTator: documents with CID lines (mention lines optional).
//
// SemEval 2018 Task 7, subtasks 1.1 and 1.2 (the organisers' scorer, version 1.2): each
// given pair (E1,E2[,REVERSE]) gets one of six relation types. A prediction counts for its
// type; it is correct when a key line has its pair, its direction flag and its type (a
// right type in the wrong direction is wrong: a false positive of its type and a false
// negative of the key's). Per type P = correct / predicted, R = correct / keyed (0 when
// the denominator is 0); the official score is the harmonic mean of the macro precision
// and the macro recall, each the mean over the types that the keys hold.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "experiments/data/document.h"
#include "experiments/data/semeval.h"

namespace mare::data {

struct Prf {
  long gold = 0, predicted = 0, correct = 0;
  double precision() const { return predicted ? double(correct) / predicted : 0.0; }
  double recall() const { return gold ? double(correct) / gold : 0.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

// ---- BioCreative V CDR --------------------------------------------------------------
using CidTriple = std::tuple<std::string, std::string, std::string>;  // PMID, chemical, disease
// The CID relations of documents as triples.
std::set<CidTriple> cid_triples(const std::vector<Document>& docs);
// Scores predicted triples against every CID relation of the gold documents; a predicted
// triple of a PMID that they do not hold is refused (std::invalid_argument naming it).
Prf score_cdr(const std::vector<Document>& gold, const std::set<CidTriple>& predicted);
// The CDR prediction file: every document of `docs` (title, abstract and its mention
// lines as given) with the CID lines of `predicted` for it, in PubTator.
std::string write_cdr_predictions(const std::vector<Document>& docs,
                                  const std::set<CidTriple>& predicted);

// ---- SemEval 2018 Task 7, subtasks 1.1 / 1.2 ----------------------------------------
const std::vector<std::string>& semeval2018_labels();  // the six, in thesis Table 4.11 order

struct SemevalScore {
  std::map<std::string, Prf> per_label;  // the six labels
  // Means over the keys' types; macro_f1 = 2 P R / (P + R) of those two.
  double macro_precision = 0, macro_recall = 0, macro_f1 = 0;
  long averaged_labels = 0;  // types the keys hold
  long keys = 0, predictions = 0, correct = 0;
  long wrong_direction = 0;  // predictions with the key's type but not its direction
  long unscored = 0;         // predictions of pairs the keys hold in neither direction
};
// keys and predictions as read by parse_semeval_pair_lines (LabelRule::required). A pair
// (E1,E2[,REVERSE]) predicted twice, or keyed twice, is a DataError naming the file and line.
SemevalScore score_semeval2018(const std::vector<SemevalPairLine>& keys,
                               const std::vector<SemevalPairLine>& predictions,
                               std::string_view keys_file, std::string_view predictions_file);
// One line per prediction: LABEL(E1,E2) or LABEL(E1,E2,REVERSE).
std::string write_semeval_predictions(const std::vector<SemevalPairLine>& predictions);

}  // namespace mare::data
