#include "experiments/trainer.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <thread>
#include <vector>

#include "experiments/run_dir.h"
#include "experiments/run_lifecycle.h"
#include "experiments/tasks.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "mare_build_info.h"
#include "models/checkpoint.h"
#include "models/functions.h"
#include "models/optim.h"
#include "models/registry.h"

namespace mare {

nlohmann::json build_description() {
  return {{"version", MARE_VERSION},
          {"git_commit", MARE_GIT_COMMIT},
          {"build_type", MARE_BUILD_TYPE},
          {"compiler", MARE_CXX_COMPILER},
          {"cuda_compiled", cuda_compiled()},
          {"libraries",
           {{"eigen", MARE_EIGEN_VERSION},
            {"cli11", MARE_CLI11_VERSION},
            {"nlohmann_json", MARE_JSON_VERSION}}}};
}

nlohmann::json training_manifest(uint64_t seed, const std::string& device, int64_t parameters) {
  return {{"command", "train"},       {"seed", seed},
          {"device", device},         {"threads", threads()},
          {"parameters", parameters}, {"build", build_description()}};
}

void require_training_device(Device device) {
  if (std::string why = device_unavailable(device); !why.empty())
    throw std::invalid_argument(std::string("train: --device ") + to_string(device) + ": " + why);
}

namespace {

using Clock = std::chrono::steady_clock;

ClassificationData gather(const ClassificationData& d, const std::vector<int64_t>& idx,
                          size_t begin, size_t end) {
  int64_t f = d.x.dim(1), n = static_cast<int64_t>(end - begin);
  ClassificationData b{Tensor::empty({n, f}), Tensor::empty({n}, Device::cpu, DType::i32)};
  for (int64_t r = 0; r < n; ++r) {
    int64_t src = idx[begin + r];
    for (int64_t j = 0; j < f; ++j) b.x.f32()[r * f + j] = d.x.f32()[src * f + j];
    b.y.i32()[r] = d.y.i32()[src];
  }
  return b;
}

struct Eval {
  double loss, accuracy;
};

Eval evaluate(Classifier& model, const ClassificationData& d, Device device) {
  ag::Var logits = model.forward(ag::constant(d.x.on(device)), false);
  double loss = ag::cross_entropy(logits, d.y.on(device))->value.item();
  const Tensor host = logits->value.on(Device::cpu);
  int64_t n = d.x.dim(0), c = host.dim(1), correct = 0;
  const float* z = host.f32();
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (z[i * c + j] > z[i * c + best]) best = j;
    correct += best == d.y.i32()[i];
  }
  return {loss, static_cast<double>(correct) / n};
}

}  // namespace

nlohmann::json train_classifier(const TrainOptions& opt, std::ostream* progress) {
  if (opt.out.empty()) throw std::invalid_argument("train: --out DIR is required");
  if (opt.epochs < 1 || opt.batch < 1)
    throw std::invalid_argument("train: --epochs and --batch must be ≥ 1");
  require_training_device(opt.device);
  ModelSpec spec = ModelSpec::parse(opt.model);
  ClassificationTask task = make_classification_task(opt.task, opt.seed);
  std::unique_ptr<Classifier> model = build_classifier(spec, task.features, task.classes, opt.seed);
  ParameterSet& params = model->parameters();
  params.to(opt.device);
  Adam adam(params, {.l2 = opt.l2, .clip_norm = opt.clip_norm});
  LrSchedule schedule = LrSchedule::parse(opt.schedule, opt.lr);

  nlohmann::json config = {{"model", spec.canonical()}, {"task", opt.task},
                           {"seed", opt.seed},          {"epochs", opt.epochs},
                           {"batch", opt.batch},        {"lr", decimal(opt.lr)},
                           {"schedule", opt.schedule},  {"clip_norm", decimal(opt.clip_norm)},
                           {"l2", decimal(opt.l2)},     {"optimizer", "adam(0.9, 0.999, 1e-8)"}};
  RunLifecycle life(opt.out, config, opt.force, opt.device);
  const RunLifecycle::Start begun =
      life.begin(training_manifest(opt.seed, to_string(opt.device), params.count()), progress);
  if (begun == RunLifecycle::Start::finished) return life.finished_result();

  const int64_t n = task.train.x.dim(0);
  std::vector<int64_t> order(n);
  PhiloxStream shuffle(opt.seed, kStreamShuffle);
  int64_t step = 0, first_epoch = 1;
  if (begun == RunLifecycle::Start::resumed)
    resume_epoch_run(life, params, adam, shuffle, first_epoch, step);
  std::string status = "completed";
  nlohmann::json diverged_at;
  Eval train_eval{}, test_eval{};
  std::vector<double> epoch_seconds;
  auto start = Clock::now();

  for (int64_t epoch = first_epoch; epoch <= opt.epochs && status == "completed"; ++epoch) {
    auto epoch_start = Clock::now();
    shuffle_epoch(order, n, shuffle);
    for (int64_t b = 0; b < n; b += opt.batch) {
      ClassificationData batch = gather(task.train, order, b, std::min(n, b + opt.batch));
      params.zero_grad();
      ag::Var loss = ag::cross_entropy(model->forward(ag::constant(batch.x.on(opt.device)), true),
                                       batch.y.on(opt.device));
      if (stops_on_divergence(loss->value.item(), step, {{"epoch", epoch}}, diverged_at)) {
        status = "diverged";
        break;
      }
      ag::backward(loss);
      adam.step(schedule.at(step));
      ++step;
    }
    if (status != "completed") break;
    train_eval = evaluate(*model, task.train, opt.device);
    test_eval = evaluate(*model, task.test, opt.device);
    life.append_metrics({{"epoch", epoch},
                         {"step", step},
                         {"lr", decimal(schedule.at(step))},
                         {"train_loss", train_eval.loss},
                         {"train_accuracy", train_eval.accuracy},
                         {"test_loss", test_eval.loss},
                         {"test_accuracy", test_eval.accuracy}});
    if (opt.after_evaluation) opt.after_evaluation(epoch);
    if (epoch < opt.epochs)
      life.save_state(params, adam, {},
                      {{"epoch", epoch}, {"step", step}, {"shuffle_position", shuffle.position()}});
    epoch_seconds.push_back(std::chrono::duration<double>(Clock::now() - epoch_start).count());
    if (progress) {
      double per = std::chrono::duration<double>(Clock::now() - start).count() /
                   static_cast<double>(epoch - first_epoch + 1);
      *progress << "epoch " << epoch << "/" << opt.epochs << "  train loss " << train_eval.loss
                << "  test acc " << test_eval.accuracy << "  ETA "
                << static_cast<int64_t>(per * (opt.epochs - epoch)) << " s\n";
    }
  }
  nlohmann::json result = epoch_run_result(status, spec.canonical(), opt.task, opt.seed, opt.device,
                                           step, params.count(), diverged_at);
  result["final"] = {{"train_loss", train_eval.loss},
                     {"train_accuracy", train_eval.accuracy},
                     {"test_loss", test_eval.loss},
                     {"test_accuracy", test_eval.accuracy}};
  return finish_epoch_run(life, params, adam,
                          std::chrono::duration<double>(Clock::now() - start).count(), step,
                          epoch_seconds, std::move(result));
}

void shuffle_epoch(std::vector<int64_t>& order, int64_t n, PhiloxStream& shuffle) {
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[shuffle.below(static_cast<uint32_t>(i + 1))]);
}

nlohmann::json resume_epoch_run(RunLifecycle& life, ParameterSet& params, Adam& adam,
                                PhiloxStream& shuffle, int64_t& first_epoch, int64_t& step) {
  std::map<std::string, Tensor> no_buffers;
  nlohmann::json s = life.load_state(params, adam, no_buffers);
  first_epoch = s.at("epoch").get<int64_t>() + 1;
  step = s.at("step");
  shuffle.seek(s.at("shuffle_position").get<uint64_t>());
  return s;
}

bool stops_on_divergence(float loss, int64_t step, const nlohmann::json& where,
                         nlohmann::json& diverged_at) {
  if (std::isfinite(loss)) return false;
  diverged_at = where;
  diverged_at["step"] = step;
  diverged_at["loss"] = std::to_string(loss);
  return true;
}

nlohmann::json epoch_run_result(const std::string& status, const std::string& model,
                                const std::string& task, uint64_t seed, Device device,
                                int64_t steps, int64_t parameters,
                                const nlohmann::json& diverged_at) {
  nlohmann::json r = {{"status", status},
                      {"model", model},
                      {"task", task},
                      {"seed", seed},
                      {"device", to_string(device)},
                      {"threads", threads()},
                      {"steps", steps},
                      {"parameters", parameters}};
  if (status == "diverged") r["diverged"] = diverged_at;
  return r;
}

nlohmann::json finish_epoch_run(RunLifecycle& life, const ParameterSet& params, Adam& adam,
                                double wall_seconds, int64_t steps,
                                const std::vector<double>& epoch_seconds, nlohmann::json result) {
  save_checkpoint((life.dir().path() / "checkpoint.bin").string(), params, &adam);
  life.dir().write_training_timing(wall_seconds, steps, epoch_seconds);
  life.finish(result);
  return result;
}

}  // namespace mare
