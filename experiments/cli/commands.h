// The `mare` command line: one registration function per sub-command.
//
// Each sub-command lives in its own file under experiments/cli/ and adds itself
// to the CLI11 app. Callbacks report user errors by throwing std::exception
// subclasses whose message names the file, line and what was expected; main()
// prints "mare: error: <message>" and exits with status 2.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace mare::cli {

// The one shape of a sub-command: its options fill one Args, and `run` gets that
// Args once CLI11 has parsed the line (with the sub-command itself where it asks
// for it, to tell a given option from its default: cmd.count("--x")). Returns the
// sub-command, to add options to, and the Args they bind to.
//
//   auto [cmd, args] = add_command<CollectArgs>(app, "collect", "Merge ...", run_collect);
//   cmd->add_option("--out", args->out, "CSV file to write")->required();
template <class Args, class Run>
std::pair<CLI::App*, Args*> add_command(CLI::App& parent, std::string name, std::string description,
                                        Run run) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = parent.add_subcommand(std::move(name), std::move(description));
  cmd->callback([args, cmd, run] {
    if constexpr (std::is_invocable_v<Run, const Args&, const CLI::App&>)
      run(*args, *cmd);
    else
      run(*args);
  });
  return {cmd, args.get()};
}

// A sub-command made of sub-commands (mare data, stats, bench, inspect): one of them
// must be given. Returns it, to add_command to.
inline CLI::App* add_group(CLI::App& parent, std::string name, std::string description) {
  CLI::App* group = parent.add_subcommand(std::move(name), std::move(description));
  group->require_subcommand(1);
  return group;
}

void add_doctor_command(CLI::App& app);   // cmd_doctor.cpp
void add_list_command(CLI::App& app);     // cmd_list.cpp
void add_train_command(CLI::App& app);    // cmd_train.cpp
void add_stats_command(CLI::App& app);    // cmd_stats.cpp
void add_data_command(CLI::App& app);     // cmd_data.cpp
void add_bench_command(CLI::App& app);    // cmd_bench.cpp
void add_sweep_command(CLI::App& app);    // cmd_sweep.cpp: mare sweep
void add_collect_command(CLI::App& app);  // cmd_collect.cpp: mare collect
void add_compare_command(CLI::App& app);  // cmd_compare.cpp: mare compare
void add_report_command(CLI::App& app);   // cmd_report.cpp: mare report
void add_inspect_command(CLI::App& app);  // cmd_inspect.cpp: mare inspect
void add_score_command(CLI::App& app);    // cmd_score.cpp: mare score
// cmd_inspect_step.cpp: mare inspect step (added to the inspect group)
void add_inspect_step_command(CLI::App& inspect);

}  // namespace mare::cli
