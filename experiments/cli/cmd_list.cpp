// `mare list`: the ops, models and tasks the registries know.
#include <iomanip>
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/tasks.h"
#include "kernels/ops.h"
#include "models/registry.h"

namespace mare::cli {

void add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the ops, models and tasks known to the registry");
  cmd->callback([] {
    std::cout << "ops (forward/backward pairs, kernels/ops/):\n";
    for (const OpInfo& op : op_registry())
      std::cout << "  " << std::left << std::setw(18) << op.name << std::setw(13) << op.family
                << op.summary << "\n";
    std::cout << "\nmodels (models/registry.cpp):\n";
    for (const ModelInfo& m : model_registry())
      std::cout << "  " << std::left << std::setw(18) << m.name << std::setw(16) << m.task_kind
                << m.summary << "\n";
    std::cout << "\ntasks (experiments/tasks.cpp):\n";
    for (const TaskInfo& t : task_registry())
      std::cout << "  " << std::left << std::setw(18) << t.name << std::setw(16) << t.kind
                << t.summary << "\n";
  });
}

}  // namespace mare::cli
