// Which kinds of model read each option of `mare train` (the registry's task_kind:
// classification, sequence, relation). One table for the two places that refuse an
// option a model does not read: the command line (experiments/cli/cmd_train.cpp:
// "--l2 does not apply to model 'grpu'") and a sweep spec (experiments/sweep/spec.cpp:
// "option 'l2' applies to classification models, relation models, not to cell …").
// A new train option is a row here, its CLI11 declaration, and, for specs, its type
// in spec.cpp's kOptions.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace mare {

enum ModelKinds : unsigned {
  kClassificationModels = 1,
  kSequenceModels = 2,
  kRelationModels = 4,
  kEveryModel = kClassificationModels | kSequenceModels | kRelationModels,
};

struct TrainOptionKinds {
  std::string_view flag;  // --name
  unsigned kinds;         // ModelKinds that read it
};

// Options every model reads (--model, --seed, --out, --device, --force, --threads) are
// kEveryModel; the rest in the order `mare train --help` prints them.
inline constexpr TrainOptionKinds kTrainOptionKinds[] = {
    {"--model", kEveryModel},
    {"--task", kClassificationModels | kSequenceModels},
    {"--seed", kEveryModel},
    {"--out", kEveryModel},
    {"--epochs", kClassificationModels | kSequenceModels},
    {"--batch", kEveryModel},
    {"--lr", kEveryModel},
    {"--schedule", kClassificationModels},
    {"--clip", kEveryModel},
    {"--l2", kClassificationModels | kRelationModels},
    {"--samples", kSequenceModels},
    {"--test-samples", kSequenceModels},
    {"--curriculum", kSequenceModels},
    {"--hidden", kSequenceModels},
    {"--neutral-one", kSequenceModels},
    {"--eval-every", kSequenceModels | kRelationModels},
    {"--data", kRelationModels},
    {"--steps", kRelationModels},
    {"--eval-batch", kRelationModels},
    {"--patience", kRelationModels},
    {"--max-tokens", kRelationModels},
    {"--word2vec", kRelationModels},
    {"--class-weights", kRelationModels},
    {"--batching", kRelationModels},
    {"--null-margin", kRelationModels},
    {"--hypernym-filter", kRelationModels},
    {"--grad-norms", kRelationModels},
    {"--static-step", kRelationModels},
    {"--time-limit", kRelationModels},
    {"--device", kEveryModel},
    {"--matmul-precision", kEveryModel},
    {"--force", kEveryModel},
    {"--threads", kEveryModel},
};

// The ModelKinds bit of a registry task_kind ("relation" → kRelationModels).
inline unsigned model_kind_bit(std::string_view task_kind) {
  return task_kind == "relation"   ? kRelationModels
         : task_kind == "sequence" ? kSequenceModels
                                   : kClassificationModels;
}

// The kinds that read `flag`; 0 for an option not in the table.
inline unsigned train_option_kinds(std::string_view flag) {
  for (const TrainOptionKinds& o : kTrainOptionKinds)
    if (o.flag == flag) return o.kinds;
  return 0;
}

}  // namespace mare
