// A relation model's predictions on a real corpus, scored as its task scores them and
// written in its task's format (experiments/data/official_scores.h).
//
//   cdr          BioCreative V CDR: the document-level (PMID, chemical, disease) triples
//                of the pairs predicted CID, against every CID relation of the split's
//                documents; predictions as PubTator (each document with its predicted
//                CID lines).
//   semeval2018  SemEval 2018 Task 7 subtask 1.1 / 1.2: each given pair's predicted type
//                with the pair's own direction flag, against the split's keys (for test,
//                the official keys.test.S.txt); the organisers' macro F1; predictions
//                as LABEL(E1,E2[,REVERSE]) lines in the key file's order.
//
// Rule: predicted[i] is the class id decided for example i of the split (ReCorpus::
// relation_names), -1 for an example not scored; `documents`, when given, restricts the
// gold to those documents (the training-split sample of metrics.jsonl).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/re_data.h"

namespace mare {

// {"score": name, "precision", "recall", "f1", and the task's counts}; null when the
// corpus has no official score.
nlohmann::json official_score(const ReCorpus& corpus, const ReSplit& split,
                              const std::vector<int>& predicted,
                              const std::vector<int>* documents = nullptr);

// The name of the test predictions file of a run ("" when the corpus has no official
// format) and its contents.
std::string official_predictions_name(const ReCorpus& corpus);
std::string official_predictions(const ReCorpus& corpus, const ReSplit& split,
                                 const std::vector<int>& predicted);

}  // namespace mare
