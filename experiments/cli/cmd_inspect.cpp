// `mare inspect memory RUN --doc ID --out DIR`: the memories of a trained NTCRE
// while it reads one document (experiments/inspect_memory.h says what is
// written).
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/inspect_memory.h"

namespace mare::cli {

void add_inspect_command(CLI::App& app) {
  auto* inspect = app.add_subcommand("inspect", "Look inside trained models");
  inspect->require_subcommand(1);
  auto o = std::make_shared<InspectMemoryOptions>();
  auto run = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto no_plots = std::make_shared<bool>(false);
  auto* mem = inspect->add_subcommand(
      "memory",
      "Record an NTCRE run's memories (usage, contents, write/read weights, reads) per token and "
      "iteration on one document; JSON, CSV and gnuplot heatmaps (thesis Figs 4.2, 4.3)");
  mem->add_option("RUN", *run, "Run directory of `mare train` with an NTCRE model")->required();
  mem->add_option("--doc", o->doc, "Document id in the split, or its 0-based index")->required();
  mem->add_option("--out", *out, "Output directory")->required();
  mem->add_option("--split", o->split, "train, valid or test")->capture_default_str();
  mem->add_option("--data", o->data, "KIND:DIR instead of the manifest's data source");
  mem->add_flag("--no-plots", *no_plots, "Skip the gnuplot heatmaps");
  mem->callback([o, run, out, no_plots] {
    o->run = *run;
    o->out = *out;
    o->plots = !*no_plots;
    const InspectMemoryResult r = inspect_memory(*o);
    for (const auto& f : r.files) std::cout << "wrote " << f.string() << "\n";
  });
}

}  // namespace mare::cli
