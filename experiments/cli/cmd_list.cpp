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
    for (const ModelInfo& m : model_registry()) {
      std::cout << "  " << std::left << std::setw(18) << m.name << std::setw(16) << m.task_kind
                << m.summary << "\n";
      for (const SwitchInfo& sw : m.switches) {
        std::string form = std::string("+").append(sw.name);
        if (sw.kind != SwitchInfo::Kind::flag) form += "=";
        if (sw.kind == SwitchInfo::Kind::choice) form += std::string(sw.choices);
        // A form wider than its column (a long choice list) takes a line of its own.
        if (form.size() > 30) {
          std::cout << "      " << form << "\n";
          form.clear();
        }
        std::cout << "      " << std::left << std::setw(30) << form << " " << sw.help
                  << " (default " << sw.default_value << ")\n";
      }
    }
    std::cout << "\nmodel aliases (the thesis's names):\n";
    for (const AliasInfo& a : model_aliases())
      std::cout << "  " << std::left << std::setw(18) << a.alias << a.expansion << "\n";
    std::cout << "\nnamed grids:\n";
    for (const GridInfo& g : model_grids()) {
      std::cout << "  " << std::left << std::setw(18) << g.name << g.summary << "\n";
      for (const GridRow& r : g.rows)
        std::cout << "      row " << std::left << std::setw(11) << r.label << std::setw(32)
                  << r.model << (r.needs_memory ? "(memory)" : "") << "\n";
    }
    std::cout << "\ntasks (experiments/tasks.cpp):\n";
    for (const TaskInfo& t : task_registry())
      std::cout << "  " << std::left << std::setw(18) << t.name << std::setw(16) << t.kind
                << t.summary << "\n";
  });
}

}  // namespace mare::cli
