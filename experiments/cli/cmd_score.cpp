// `mare score`: the official scores of the real corpora on files in the tasks' formats,
// for a run's prediction file or any system's.
//
//   mare score cdr GOLD.pubtator PREDICTIONS.pubtator [--json FILE]
//   mare score semeval2018 KEYS.txt PREDICTIONS.txt [--json FILE]
//
// Rule: the work lives in experiments/data/official_scores (unit-tested on hand-worked
// files); this file reads, prints and writes.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "experiments/cli/commands.h"
#include "experiments/data/error.h"
#include "experiments/data/official_scores.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/run_dir.h"

namespace mare::cli {

namespace {

struct ScoreArgs {
  std::string gold, predictions, json;
};

std::string line(const char* name, const data::Prf& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%-16s gold %5ld  predicted %5ld  correct %5ld  P %.4f  R %.4f  F1 %.4f\n", name,
                p.gold, p.predicted, p.correct, p.precision(), p.recall(), p.f1());
  return buf;
}

nlohmann::json prf_json(const data::Prf& p) {
  return {{"gold", p.gold},       {"predicted", p.predicted},
          {"correct", p.correct}, {"precision", p.precision()},
          {"recall", p.recall()}, {"f1", p.f1()}};
}

void finish(const ScoreArgs& a, const nlohmann::json& j) {
  if (!a.json.empty()) atomic_write(a.json, json_text(j));
}

void run_cdr(const ScoreArgs& a) {
  if (!a.json.empty()) check_writable_file(a.json, "--json");
  const auto gold = data::load_pubtator(a.gold);
  const auto predicted = data::load_pubtator(a.predictions);
  const data::Prf s = data::score_cdr(gold, data::cid_triples(predicted));
  std::cout
      << "BioCreative V CDR, CID relations: document-level (PMID, chemical, disease) triples\n"
      << line("all", s);
  finish(a, {{"score", "cdr"},
             {"gold_file", a.gold},
             {"predictions_file", a.predictions},
             {"cid", prf_json(s)}});
}

void run_semeval(const ScoreArgs& a) {
  if (!a.json.empty()) check_writable_file(a.json, "--json");
  const auto labels = data::SemevalOptions{}.relation_types;
  const auto keys = data::parse_semeval_pair_lines(data::read_file(a.gold), a.gold,
                                                   data::LabelRule::required, labels);
  const auto pred = data::parse_semeval_pair_lines(data::read_file(a.predictions), a.predictions,
                                                   data::LabelRule::required, labels);
  const data::SemevalScore s = data::score_semeval2018(keys, pred, a.gold, a.predictions);
  std::cout << "SemEval 2018 Task 7, subtask 1: macro F1 of the macro P and R over the keyed types "
               "(direction "
               "included)\n";
  nlohmann::json per = nlohmann::json::object();
  for (const std::string& l : data::semeval2018_labels()) {
    std::cout << line(l.c_str(), s.per_label.at(l));
    per[l] = prf_json(s.per_label.at(l));
  }
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "macro            P %.4f  R %.4f  F1 %.4f  (over %ld keyed types; %ld keys, %ld "
                "predictions, %ld with "
                "the key's type in the wrong direction, %ld for pairs without a key)\n",
                s.macro_precision, s.macro_recall, s.macro_f1, s.averaged_labels, s.keys,
                s.predictions, s.wrong_direction, s.unscored);
  std::cout << buf;
  finish(a, {{"score", "semeval2018"},
             {"keys_file", a.gold},
             {"predictions_file", a.predictions},
             {"macro_precision", s.macro_precision},
             {"macro_recall", s.macro_recall},
             {"macro_f1", s.macro_f1},
             {"wrong_direction", s.wrong_direction},
             {"unscored", s.unscored},
             {"per_type", per}});
}

template <class Run>
void add_scorer(CLI::App* group, const char* name, const char* what, const char* gold, Run run) {
  auto [cmd, args] = add_command<ScoreArgs>(*group, name, what, run);
  cmd->add_option(gold, args->gold, "The gold file")->required()->check(CLI::ExistingFile);
  cmd->add_option("PREDICTIONS", args->predictions, "The predictions, in the same format")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--json", args->json, "Also write the scores as JSON to this file");
}

}  // namespace

void add_score_command(CLI::App& app) {
  CLI::App* group =
      add_group(app, "score", "Official scores of the real corpora on prediction files");
  add_scorer(group, "cdr",
             "BioCreative V CDR: P/R/F1 of CID (PMID, chemical, disease) triples; both files "
             "PubTator",
             "GOLD", run_cdr);
  add_scorer(
      group, "semeval2018",
      "SemEval 2018 Task 7 subtask 1.1/1.2: the organisers' macro F1; LABEL(E1,E2[,REVERSE]) "
      "lines",
      "KEYS", run_semeval);
}

}  // namespace mare::cli
