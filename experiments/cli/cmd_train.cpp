// `mare train --model M --task T --seed S --out DIR`: one run, one directory.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/trainer.h"

namespace mare::cli {

void add_train_command(CLI::App& app) {
  auto opt = std::make_shared<TrainOptions>();
  auto* cmd =
      app.add_subcommand("train", "Train one model on one task and write its run directory");
  cmd->add_option("--model", opt->model, "Model name from `mare list`, with +switches")
      ->capture_default_str();
  cmd->add_option("--task", opt->task, "Task name from `mare list`")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of data, initial weights, order and dropout")
      ->capture_default_str();
  cmd->add_option("--out", opt->out, "Run directory to write")->required();
  cmd->add_option("--epochs", opt->epochs, "Epochs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", opt->batch, "Batch size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--lr", opt->lr, "Adam learning rate")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--schedule", opt->schedule, "constant | warmup:STEPS | step:SIZE:GAMMA")
      ->capture_default_str();
  cmd->add_option("--clip", opt->clip_norm, "Global gradient-norm clip (0: off)")
      ->capture_default_str();
  cmd->add_option("--l2", opt->l2, "L2 regularisation λ (loss += λ·Σw²)")->capture_default_str();
  cmd->add_flag("--force", opt->force, "Run again even if DIR/result.json exists");
  cmd->callback([opt] {
    bool tty = ::isatty(STDERR_FILENO);
    nlohmann::json r = train_classifier(*opt, tty ? &std::cerr : nullptr);
    const auto& f = r["final"];
    std::cout << r["model"].get<std::string>() << " on " << r["task"].get<std::string>()
              << " (seed " << r["seed"] << "): " << r["status"].get<std::string>() << ", "
              << r["steps"] << " steps, train accuracy " << f["train_accuracy"]
              << ", test accuracy " << f["test_accuracy"] << "\n"
              << "run directory: " << opt->out.string() << "\n";
  });
}

}  // namespace mare::cli
