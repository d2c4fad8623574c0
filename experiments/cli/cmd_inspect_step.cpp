// `mare inspect step --model M --data KIND:DIR --out DIR`: one training step's
// parameters, batch, loss and gradients as NPY files (experiments/inspect_step.h
// says what is written), for a check against an independent implementation.
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/inspect_step.h"

namespace mare::cli {

void add_inspect_step_command(CLI::App& inspect) {
  auto [cmd, a] = add_command<InspectStepOptions>(
      inspect, "step",
      "Dump one training step of a relation model (parameters, batch, loss, every gradient) "
      "as NPY files and a JSON index",
      [](const InspectStepOptions& o) {
        const InspectStepResult r = inspect_step(o);
        std::cout << "loss " << r.index.at("loss").get<double>() << "\nwrote " << r.files.size()
                  << " files under " << o.out.string() << "\n";
      });
  cmd->add_option("--model", a->model, "Model name, as for mare train (e.g. utre+d=32+dropout=0)")
      ->required();
  cmd->add_option("--data", a->data, "KIND:DIR, as for mare train")->required();
  cmd->add_option("--out", a->out, "Output directory")->required();
  cmd->add_option("--seed", a->seed, "Seed of the weights and the batch draw")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch, "Examples (RE) or documents (NER) in the batch")
      ->capture_default_str();
  cmd->add_option("--task", a->task, "re or ner")->capture_default_str();
  cmd->add_option("--batching", a->batching, "RE sampler: bran, balanced or natural")
      ->capture_default_str();
  cmd->add_option("--class-weights", a->class_weights, "auto, on or off, as mare train")
      ->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Cut documents to this many tokens (0: default)")
      ->capture_default_str();
}

}  // namespace mare::cli
