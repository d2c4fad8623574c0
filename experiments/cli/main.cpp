// `mare`: the command line of the harness. Sub-commands live one per file
// (experiments/cli/cmd_*.cpp) and register themselves here.
#include <iostream>

#include "experiments/cli/commands.h"
#include "mare_build_info.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mare — memory-augmented neural networks for relation extraction: a research harness"};
  app.require_subcommand(0, 1);
  app.set_help_all_flag("--help-all", "Print help for every sub-command");
  bool version = false;
  app.add_flag("--version", version, "Print version, git commit and build flags");

  mare::cli::add_doctor_command(app);
  mare::cli::add_list_command(app);
  mare::cli::add_train_command(app);
#ifdef MARE_HAVE_STATS_CLI
  mare::cli::add_stats_command(app);
#endif
#ifdef MARE_HAVE_DATA_CLI
  mare::cli::add_data_command(app);
#endif
#ifdef MARE_HAVE_BENCH_CLI
  mare::cli::add_bench_command(app);
#endif

  try {
    app.parse(argc, argv);
    if (version) {
      std::cout << "mare " << MARE_VERSION << "\n"
                << "commit " << MARE_GIT_COMMIT << "\n"
                << "build " << MARE_BUILD_TYPE << ", " << MARE_CXX_COMPILER << "\n"
                << "flags " << MARE_CXX_FLAGS << "\n"
                << "sanitizers " << (*MARE_SANITIZE_FLAGS ? MARE_SANITIZE_FLAGS : "none") << "\n"
                << "cuda option " << MARE_CUDA_OPTION << "\n";
      return 0;
    }
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return 0;
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "mare: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
