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

}  // namespace

nlohmann::json train_sequence_model(const SequenceTrainOptions& opt, std::ostream* progress,
                                    bool tty) {
  if (opt.out.empty()) throw std::invalid_argument("train: --out DIR is required");
  if (opt.epochs < 1 || opt.batch < 1 || opt.samples < 1 || opt.test_samples < 1 ||
      opt.eval_every < 1)
    throw std::invalid_argument("train: --epochs, --batch, --samples and --eval-every must be ≥ 1");
  require_training_device(opt.device);
  ModelSpec spec = ModelSpec::parse(opt.model);
  SequenceTask task =
      make_sequence_task(opt.task, opt.seed, opt.samples, opt.test_samples, opt.curriculum);
  std::unique_ptr<SequenceModel> model = build_sequence_model(spec, task.shape, opt.seed);
  ParameterSet& params = model->parameters();
  params.to(opt.device);
  Adam adam(params, {.clip_norm = opt.clip_norm});

  nlohmann::json config = {{"model", spec.canonical()},
                           {"model_structure", model->describe()},
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
  RunLifecycle life(opt.out, config, opt.force, opt.device);
  const RunLifecycle::Start begun =
      life.begin(training_manifest(opt.seed, to_string(opt.device), params.count()), progress);
  if (begun == RunLifecycle::Start::finished) return life.finished_result();

  PhiloxStream shuffle(opt.seed, kStreamShuffle);
  int64_t step = 0, first_epoch = 1;
  std::string status = "completed";
  nlohmann::json diverged_at;
  double train_mse = NAN, test_mse = NAN;
  std::vector<double> epoch_seconds;
  std::vector<int64_t> order;
  if (begun == RunLifecycle::Start::resumed) {
    const nlohmann::json s = resume_epoch_run(life, params, adam, shuffle, first_epoch, step);
    // JSON has no NaN: a state saved before the first evaluation holds null.
    train_mse = s.at("train_mse").is_number() ? s.at("train_mse").get<double>() : NAN;
    test_mse = s.at("test_mse").is_number() ? s.at("test_mse").get<double>() : NAN;
    if (progress)
      *progress << "resuming " << opt.out.string() << " at epoch " << first_epoch << "\n";
  }
  auto start = Clock::now();

  for (int64_t epoch = first_epoch; epoch <= opt.epochs && status == "completed"; ++epoch) {
    auto epoch_start = Clock::now();
    int64_t phase = opt.curriculum ? curriculum_phase(epoch, opt.epochs) : 0;
    const SequenceSet& train = task.train[phase];
    const int64_t n = static_cast<int64_t>(train.samples.size());
    shuffle_epoch(order, n, shuffle);
    double batch_loss_sum = 0.0;
    int64_t batches = 0;
    for (int64_t b = 0; b < n; b += opt.batch) {
      Tensor target;
      SequenceBatch batch =
          make_sequence_batch(train, order, b, std::min(n, b + opt.batch), &target);
      params.zero_grad();
      ag::Var loss = ag::mse(model->forward(batch), ag::constant(target.on(opt.device)));
      const float value = loss->value.item();
      if (stops_on_divergence(value, step, {{"epoch", epoch}}, diverged_at)) {
        status = "diverged";
        break;
      }
      ag::backward(loss);
      adam.step(opt.lr);
      batch_loss_sum += value;
      ++batches;
      ++step;
    }
    if (status != "completed") break;
    if (epoch % opt.eval_every == 0 || epoch == opt.epochs) {
      train_mse = evaluate(*model, train);
      test_mse = evaluate(*model, task.test);
      life.append_metrics({{"epoch", epoch},
                           {"step", step},
                           {"phase", phase},
                           {"min_length", train.min_length},
                           {"max_length", train.max_length},
                           {"batch_mse", batch_loss_sum / batches},
                           {"train_mse", train_mse},
                           {"test_mse", test_mse}});
      if (opt.after_evaluation) opt.after_evaluation(epoch);
      if (epoch < opt.epochs)
        life.save_state(params, adam, {},
                        {{"epoch", epoch},
                         {"step", step},
                         {"shuffle_position", shuffle.position()},
                         {"train_mse", train_mse},
                         {"test_mse", test_mse}});
    }
    epoch_seconds.push_back(std::chrono::duration<double>(Clock::now() - epoch_start).count());
    // A terminal gets every epoch on one line; a log (a sweep's, a pipe) about 20 lines.
    const bool line_due =
        tty || epoch == opt.epochs || epoch % std::max<int64_t>(1, opt.epochs / 20) == 0;
    if (progress && line_due) {
      double per =
          std::chrono::duration<double>(Clock::now() - start).count() / (epoch - first_epoch + 1);
      *progress << (tty ? "\r" : "") << "epoch " << epoch << "/" << opt.epochs << "  loss "
                << batch_loss_sum / batches << "  train mse " << train_mse << "  test mse "
                << test_mse << "  ETA " << static_cast<int64_t>(per * (opt.epochs - epoch)) << " s"
                << (tty ? "   " : "\n") << std::flush;
    }
  }
  if (progress && tty) *progress << "\n";
  nlohmann::json result = epoch_run_result(status, spec.canonical(), opt.task, opt.seed, opt.device,
                                           step, params.count(), diverged_at);
  result["epochs"] = opt.epochs;
  result["batch"] = opt.batch;
  result["samples"] = opt.samples;
  result["curriculum"] = opt.curriculum;
  result["final"] = {{"train_mse", train_mse}, {"test_mse", test_mse}};
  return finish_epoch_run(life, params, adam,
                          std::chrono::duration<double>(Clock::now() - start).count(), step,
                          epoch_seconds, std::move(result));
}

}  // namespace mare
