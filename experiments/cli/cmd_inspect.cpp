// `mare inspect memory RUN --doc ID --out DIR`: the memories of a trained NTCRE
// while it reads one document (experiments/inspect_memory.h says what is
// written).
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/inspect_memory.h"

namespace mare::cli {

namespace {

struct InspectArgs {
  InspectMemoryOptions memory;
  std::string run, out;
  bool no_plots = false;
};

void run_inspect_memory(const InspectArgs& a) {
  InspectMemoryOptions o = a.memory;
  o.run = a.run;
  o.out = a.out;
  o.plots = !a.no_plots;
  const InspectMemoryResult r = inspect_memory(o);
  for (const auto& f : r.files) std::cout << "wrote " << f.string() << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  CLI::App* inspect =
      add_group(app, "inspect",
                "Look inside models: a trained NTCRE's memories, one training step's numbers");
  auto [mem, a] = add_command<InspectArgs>(
      *inspect, "memory",
      "Record an NTCRE run's memories (usage, contents, write/read weights, reads) per token and "
      "iteration on one document; JSON, CSV and gnuplot heatmaps (thesis Figs 4.2, 4.3)",
      run_inspect_memory);
  mem->add_option("RUN", a->run, "Run directory of `mare train` with an NTCRE model")->required();
  mem->add_option("--doc", a->memory.doc, "Document id in the split, or its 0-based index")
      ->required();
  mem->add_option("--out", a->out, "Output directory")->required();
  mem->add_option("--split", a->memory.split, "train, valid or test")->capture_default_str();
  mem->add_option("--data", a->memory.data, "KIND:DIR instead of the manifest's data source");
  mem->add_flag("--no-plots", a->no_plots, "Skip the gnuplot heatmaps");
  add_inspect_step_command(*inspect);
}

}  // namespace mare::cli
