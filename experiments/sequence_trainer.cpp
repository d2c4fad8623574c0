// The sequence training run (see experiments/sequence_trainer.h).
#include "experiments/sequence_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <vector>

#include "experiments/grpu_tasks.h"
#include "experiments/run_dir.h"
#include "experiments/run_lifecycle.h"
#include "experiments/trainer.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "models/checkpoint.h"
#include "models/functions.h"
#include "models/optim.h"
#include "models/registry.h"

namespace mare {

namespace {

using Clock = std::chrono::steady_clock;

// Rows per evaluation forward: bounds the memory of the step contexts.
constexpr int64_t kEvalRows = 250;

double evaluate(SequenceModel& model, const SequenceSet& set) {
  std::vector<int64_t> idx(set.samples.size());
  std::iota(idx.begin(), idx.end(), 0);
  double sq = 0.0;
  for (size_t b = 0; b < idx.size(); b += kEvalRows) {
    size_t e = std::min(idx.size(), b + kEvalRows);
    Tensor target;
    SequenceBatch batch = make_sequence_batch(set, idx, b, e, &target);
    const Tensor pred = model.forward(batch)->value.on(Device::cpu);
    for (int64_t i = 0; i < pred.numel(); ++i) {
      double d = static_cast<double>(pred.f32()[i]) - target.f32()[i];
      sq += d * d;
    }
  }
  return sq / static_cast<double>(idx.size());
}

void check_options(const SequenceTrainOptions& opt) {
  if (opt.out.empty()) throw std::invalid_argument("train: --out DIR is required");
  if (opt.epochs < 1 || opt.batch < 1 || opt.samples < 1 || opt.test_samples < 1 ||
      opt.eval_every < 1)
    throw std::invalid_argument("train: --epochs, --batch, --samples and --eval-every must be ≥ 1");
  require_training_device(opt.device);
}

// What identifies the run (the run directory's config.json).
nlohmann::json run_config(const SequenceTrainOptions& opt, const ModelSpec& spec,
                          const SequenceModel& model) {
  return {{"model", spec.canonical()},
          {"model_structure", model.describe()},
          {"task", opt.task},
          {"seed", opt.seed},
          {"epochs", opt.epochs},
          {"batch", opt.batch},
          {"samples", opt.samples},
          {"test_samples", opt.test_samples},
          {"curriculum", opt.curriculum},
          {"lr", decimal(opt.lr)},
          {"clip_norm", decimal(opt.clip_norm)},
          {"eval_every", opt.eval_every},
          {"loss", "mse"},
          {"optimizer", "adam(0.9, 0.999, 1e-8)"}};
}

// The model, its optimiser, the task's data and the run's progress so far.
struct SequenceRun {
  SequenceRun(SequenceTask t, std::unique_ptr<SequenceModel> m, const SequenceTrainOptions& opt)
      : task(std::move(t)),
        model(std::move(m)),
        adam(model->parameters(), {.clip_norm = opt.clip_norm}),
        shuffle(opt.seed, kStreamShuffle) {}
  SequenceTask task;
  std::unique_ptr<SequenceModel> model;
  Adam adam;
  PhiloxStream shuffle;
  int64_t step = 0;
  std::string status = "completed";
  nlohmann::json diverged_at;
  double train_mse = NAN, test_mse = NAN;
  std::vector<double> epoch_seconds;
  std::vector<int64_t> order;
};

// Picks up a run where its saved state left it; returns the first epoch to train.
int64_t resume(const SequenceTrainOptions& opt, RunLifecycle& life, SequenceRun& run,
               std::ostream* progress) {
  int64_t first_epoch = 1;
  const nlohmann::json s =
      resume_epoch_run(life, run.model->parameters(), run.adam, run.shuffle, first_epoch, run.step);
  // JSON has no NaN: a state saved before the first evaluation holds null.
  run.train_mse = s.at("train_mse").is_number() ? s.at("train_mse").get<double>() : NAN;
  run.test_mse = s.at("test_mse").is_number() ? s.at("test_mse").get<double>() : NAN;
  if (progress) *progress << "resuming " << opt.out.string() << " at epoch " << first_epoch << "\n";
  return first_epoch;
}

// The summed batch loss of an epoch and its batch count.
struct EpochLoss {
  double sum = 0.0;
  int64_t batches = 0;
};

// One epoch over the shuffled training set, a step a batch; stops at a diverged loss
// (run.status says so).
EpochLoss train_epoch(const SequenceTrainOptions& opt, const SequenceSet& train, int64_t epoch,
                      SequenceRun& run) {
  ParameterSet& params = run.model->parameters();
  const int64_t n = static_cast<int64_t>(train.samples.size());
  shuffle_epoch(run.order, n, run.shuffle);
  EpochLoss loss_sum;
  for (int64_t b = 0; b < n; b += opt.batch) {
    Tensor target;
    SequenceBatch batch =
        make_sequence_batch(train, run.order, b, std::min(n, b + opt.batch), &target);
    params.zero_grad();
    ag::Var loss = ag::mse(run.model->forward(batch), ag::constant(target.on(opt.device)));
    const float value = loss->value.item();
    if (stops_on_divergence(value, run.step, {{"epoch", epoch}}, run.diverged_at)) {
      run.status = "diverged";
      break;
    }
    ag::backward(loss);
    run.adam.step(opt.lr);
    loss_sum.sum += value;
    ++loss_sum.batches;
    ++run.step;
  }
  return loss_sum;
}

// The train and test MSE as a metrics line, then the state a resume starts from (but
// after the last epoch, which the finished run's checkpoint holds).
void evaluate_and_save(const SequenceTrainOptions& opt, RunLifecycle& life,
                       const SequenceSet& train, int64_t epoch, int64_t phase,
                       const EpochLoss& loss, SequenceRun& run) {
  run.train_mse = evaluate(*run.model, train);
  run.test_mse = evaluate(*run.model, run.task.test);
  life.append_metrics({{"epoch", epoch},
                       {"step", run.step},
                       {"phase", phase},
                       {"min_length", train.min_length},
                       {"max_length", train.max_length},
                       {"batch_mse", loss.sum / loss.batches},
                       {"train_mse", run.train_mse},
                       {"test_mse", run.test_mse}});
  if (opt.after_evaluation) opt.after_evaluation(epoch);
  if (epoch < opt.epochs)
    life.save_state(run.model->parameters(), run.adam, {},
                    {{"epoch", epoch},
                     {"step", run.step},
                     {"shuffle_position", run.shuffle.position()},
                     {"train_mse", run.train_mse},
                     {"test_mse", run.test_mse}});
}

// A terminal gets every epoch on one line; a log (a sweep's, a pipe) about 20 lines.
void print_epoch(const SequenceTrainOptions& opt, int64_t epoch, int64_t first_epoch,
                 Clock::time_point start, const EpochLoss& loss, const SequenceRun& run,
                 std::ostream* progress, bool tty) {
  const bool line_due =
      tty || epoch == opt.epochs || epoch % std::max<int64_t>(1, opt.epochs / 20) == 0;
  if (!progress || !line_due) return;
  double per =
      std::chrono::duration<double>(Clock::now() - start).count() / (epoch - first_epoch + 1);
  *progress << (tty ? "\r" : "") << "epoch " << epoch << "/" << opt.epochs << "  loss "
            << loss.sum / loss.batches << "  train mse " << run.train_mse << "  test mse "
            << run.test_mse << "  ETA " << static_cast<int64_t>(per * (opt.epochs - epoch)) << " s"
            << (tty ? "   " : "\n") << std::flush;
}

}  // namespace

nlohmann::json train_sequence_model(const SequenceTrainOptions& opt, std::ostream* progress,
                                    bool tty) {
  check_options(opt);
  ModelSpec spec = ModelSpec::parse(opt.model);
  SequenceTask task =
      make_sequence_task(opt.task, opt.seed, opt.samples, opt.test_samples, opt.curriculum);
  std::unique_ptr<SequenceModel> model = build_sequence_model(spec, task.shape, opt.seed);
  ParameterSet& params = model->parameters();
  params.to(opt.device);
  SequenceRun run(std::move(task), std::move(model), opt);

  RunLifecycle life(opt.out, run_config(opt, spec, *run.model), opt.force, opt.device);
  const RunLifecycle::Start begun =
      life.begin(training_manifest(opt.seed, to_string(opt.device), params.count()), progress);
  if (begun == RunLifecycle::Start::finished) return life.finished_result();
  const int64_t first_epoch =
      begun == RunLifecycle::Start::resumed ? resume(opt, life, run, progress) : 1;
  auto start = Clock::now();

  for (int64_t epoch = first_epoch; epoch <= opt.epochs && run.status == "completed"; ++epoch) {
    auto epoch_start = Clock::now();
    int64_t phase = opt.curriculum ? curriculum_phase(epoch, opt.epochs) : 0;
    const SequenceSet& train = run.task.train[phase];
    const EpochLoss loss = train_epoch(opt, train, epoch, run);
    if (run.status != "completed") break;
    if (epoch % opt.eval_every == 0 || epoch == opt.epochs)
      evaluate_and_save(opt, life, train, epoch, phase, loss, run);
    run.epoch_seconds.push_back(std::chrono::duration<double>(Clock::now() - epoch_start).count());
    print_epoch(opt, epoch, first_epoch, start, loss, run, progress, tty);
  }
  if (progress && tty) *progress << "\n";
  nlohmann::json result = epoch_run_result(run.status, spec.canonical(), opt.task, opt.seed,
                                           opt.device, run.step, params.count(), run.diverged_at);
  result["epochs"] = opt.epochs;
  result["batch"] = opt.batch;
  result["samples"] = opt.samples;
  result["curriculum"] = opt.curriculum;
  result["final"] = {{"train_mse", run.train_mse}, {"test_mse", run.test_mse}};
  return finish_epoch_run(life, params, run.adam,
                          std::chrono::duration<double>(Clock::now() - start).count(), run.step,
                          run.epoch_seconds, std::move(result));
}

}  // namespace mare
