// `mare data`: write the synthetic corpora and inspect files in the real formats.
//
//   mare data generate NAME --out DIR --seed S [--docs N]
//   mare data inspect PATH --format pubtator|semeval|bran-tsv|word2vec [--relations FILE]
//   mare data stats KIND:DIR [--json FILE] [--max-tokens N]   (experiments/sweep/corpus_stats.h)
//
// Rule: this file only parses arguments and prints; the work lives in experiments/data
// (where it is unit-tested). Errors propagate as exceptions naming file, line and what
// was expected; main() prints them and exits 2.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "experiments/data/bran_tsv.h"
#include "experiments/data/generators.h"
#include "experiments/data/inspect.h"
#include "experiments/data/pubtator.h"
#include "experiments/data/semeval.h"
#include "experiments/data/word2vec.h"
#include "experiments/run_dir.h"
#include "experiments/sweep/corpus_stats.h"
#include "kernels/memory_budget.h"

namespace mare::cli {

namespace {

struct GenerateArgs {
  std::string name;
  std::string out;
  std::uint64_t seed = 1;
  int docs = 0;
};

struct InspectArgs {
  std::string path;
  std::string format;
  std::string relations;
};

void run_generate(const GenerateArgs& a) {
  data::GenerateOptions opt;
  opt.seed = a.seed;
  opt.docs = a.docs;
  require_memory(
      data::generator_memory_bytes(a.name, a.docs), 0,
      a.name + " of " +
          (a.docs > 0 ? std::to_string(a.docs) + " documents" : std::string("its default size")) +
          " (estimated)",
      "fewer --docs");
  const data::GenerateReport r = data::generate_corpus(a.name, a.out, opt);
  std::cout << r.name << " (seed " << a.seed << ") wrote:\n";
  for (const std::string& f : r.files) std::cout << "  " << f << "\n";
  std::cout << "rule-based oracle (reads the documented evidence), micro over relations:\n";
  for (const auto& [split, s] : r.oracle) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %-22s gold %5ld  predicted %5ld  P %.3f  R %.3f  F1 %.3f\n",
                  split.c_str(), s.gold, s.predicted, s.precision(), s.recall(), s.f1());
    std::cout << buf;
  }
  for (const auto& [split, s] : r.oracle)
    if (split.size() >= 4 && split.compare(split.size() - 4, 4, "test") == 0) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "oracle F1 on %s: %.3f\n", split.c_str(), s.f1());
      std::cout << buf;
    }
}

void run_inspect(const InspectArgs& a) {
  if (a.format == "pubtator") {
    std::cout << data::describe_documents(data::load_pubtator(a.path), a.path + " (PubTator)");
  } else if (a.format == "semeval") {
    std::string rel = a.relations;
    if (rel.empty()) {
      rel = data::semeval_relations_path(a.path);
      if (!std::filesystem::exists(rel)) rel.clear();
    }
    std::cout << data::describe_documents(
        data::load_semeval(a.path, rel),
        a.path + " (SemEval 2018 Task 7; relations: " + (rel.empty() ? "none" : rel) + ")");
  } else if (a.format == "bran-tsv") {
    std::cout << data::describe_documents(data::load_bran_tsv(a.path), a.path + " (BRAN TSV)");
  } else if (a.format == "word2vec") {
    std::cout << data::describe_embeddings(
        data::load_word2vec(a.path),
        a.path +
            (data::is_word2vec_binary_path(a.path) ? " (word2vec binary)" : " (word2vec text)"));
  } else {
    throw std::invalid_argument("unknown format '" + a.format +
                                "' (expected pubtator, semeval, bran-tsv or word2vec)");
  }
}

struct StatsArgs {
  std::string source;
  std::string json;
  int max_tokens = -1;
};

void run_stats(const StatsArgs& a) {
  if (!a.json.empty()) check_writable_file(a.json, "--json", /*creates_parents=*/true);
  if (a.max_tokens < -1)
    throw std::invalid_argument("--max-tokens " + std::to_string(a.max_tokens) +
                                ": expected -1 (whole documents), 0 (the corpus's default) or a "
                                "positive cut");
  const sweep::CorpusStatistics s = sweep::corpus_statistics(a.source, a.max_tokens);
  std::cout << sweep::describe(s);
  if (!a.json.empty()) {
    const std::filesystem::path out(a.json);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    atomic_write(out, sweep::to_json(s).dump() + "\n");
    std::cout << "wrote " << a.json << "\n";
  }
}

}  // namespace

void add_data_command(CLI::App& app) {
  CLI::App* data_cmd =
      add_group(app, "data", "Generate synthetic corpora; inspect data files; corpus statistics");

  auto [gen, gen_args] = add_command<GenerateArgs>(
      *data_cmd, "generate",
      "Write a seeded synthetic corpus in the real format (synth-cdr, synth-ctd, "
      "synth-semeval) and print the rule-based oracle's F1",
      run_generate);
  gen->add_option("name", gen_args->name, "Generator: " + data::generator_list())->required();
  gen->add_option("--out", gen_args->out, "Output folder")->required();
  gen->add_option("--seed", gen_args->seed, "Seed (same seed, same bytes)")
      ->required()
      ->check(whole_number(0));
  gen->add_option("--docs", gen_args->docs, "Training documents (default: the generator's)")
      ->check(whole_number(1, data::kMaxDocs));

  auto [ins, ins_args] = add_command<InspectArgs>(
      *data_cmd, "inspect",
      "Load a data file with the real loader and print counts and distributions", run_inspect);
  ins->add_option("path", ins_args->path, "File to inspect")->required();
  ins->add_option("--format", ins_args->format, "pubtator, semeval, bran-tsv or word2vec")
      ->required();
  ins->add_option("--relations", ins_args->relations,
                  "SemEval relation file (default: PATH with .text.xml -> .relations.txt, if "
                  "it exists)");

  auto [st, st_args] = add_command<StatsArgs>(
      *data_cmd, "stats",
      "Corpus statistics through the trainer's loader: documents, tokens, entities, relations "
      "per class, related-pair distances (thesis Tables 4.4/4.9/4.11, Figs 4.4/4.10)",
      run_stats);
  st->add_option("source", st_args->source, "KIND:DIR (synth-cdr, pubtator, bran-tsv, semeval)")
      ->required();
  st->add_option("--json", st_args->json, "Also write the statistics as JSON (atomically)");
  st->add_option("--max-tokens", st_args->max_tokens,
                 "Cut documents as training does: 0 the corpus default (CTD 500), N > 0 that "
                 "many tokens (default -1: whole documents)")
      ->capture_default_str();
}

}  // namespace mare::cli
