#include "experiments/bench_iteration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <time.h>

#include "experiments/run_dir.h"
#include "kernels/memory/allocation.h"
#include "kernels/memory/allocation_sweep.h"  // benchmark_device_unavailable
#include "kernels/parallel.h"
#include "mare_build_info.h"
#include "models/bench/re_iteration_setup.h"
#include "models/optim.h"
#include "models/re_model.h"
#include "models/registry.h"
#include "stats/descriptive.h"

namespace mare {

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the whole process (every thread), seconds: on a shared machine
// wall time includes waiting for a core, CPU time does not.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct SizeInfo {
  int64_t d, heads, batch;
};

SizeInfo size_info(const std::string& size) {
  if (size == "paper") return {300, 4, 32};
  if (size == "default") return {32, 4, 32};
  throw std::invalid_argument("bench iteration: --size '" + size + "': expected paper or default");
}

std::vector<const bench::ReDataShape*> shapes_of(const std::string& shape) {
  std::vector<const bench::ReDataShape*> out;
  for (const bench::ReDataShape& s : bench::kReShapes)
    if (shape == "both" || shape == s.name) out.push_back(&s);
  if (out.empty())
    throw std::invalid_argument("bench iteration: --shape '" + shape +
                                "': expected semeval, cdr or both");
  return out;
}

// The UTRE row an NTCRE row is compared with: the same name with UTRE for
// NTCRE ("NTCRE-CPD+x" -> "UTRE-CPD+x"); empty for any other model.
std::string utre_partner(const std::string& model) {
  if (model.rfind("NTCRE", 0) == 0) return "UTRE" + model.substr(5);
  if (model.rfind("ntcre", 0) == 0) return "utre" + model.substr(5);
  return {};
}

std::string fmt(double v, int precision = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

}  // namespace

TimeSummary summarize_times(std::vector<double> s) {
  TimeSummary r;
  if (s.empty()) return r;
  r.mean = stats::mean(s);
  r.median = stats::median(s);
  r.sd = s.size() > 1 ? stats::sd(s) : 0.0;  // one timed iteration: no spread (R: NA)
  return r;
}

nlohmann::json run_iteration_bench(const IterationBenchOptions& opt, std::ostream* progress) {
  const SizeInfo size = size_info(opt.size);
  const std::vector<const bench::ReDataShape*> shapes = shapes_of(opt.shape);
  if (opt.iterations < 1) throw std::invalid_argument("bench iteration: --iterations must be >= 1");
  if (opt.warmup < 0) throw std::invalid_argument("bench iteration: --warmup must be >= 0");
  if (opt.models.empty())
    throw std::invalid_argument("bench iteration: --models needs at least one model");
  for (const std::string& a : opt.allocs) parse_allocation_variant(a);  // names the valid ones
  if (std::string why = benchmark_device_unavailable(opt.device); !why.empty())
    throw std::runtime_error("bench iteration: --device cuda: " + why);

  // Every row's registry name, checked before anything runs.
  struct Row {
    std::string label, name, alloc;  // alloc empty: none (UTRE) or the model's default
  };
  std::vector<Row> rows;
  const std::string suffix =
      "+d=" + std::to_string(size.d) + "+heads=" + std::to_string(size.heads);
  for (const std::string& m : opt.models) {
    const ModelSpec spec = resolve_model(m);  // unknown model or switch: names the valid ones
    const ModelInfo* info = find_model(spec.base);
    if (!info || info->task_kind != "relation")
      throw std::invalid_argument("bench iteration: --models: '" + m +
                                  "' is not a relation-extraction model");
    if (spec.base == "ntcre" && !opt.allocs.empty()) {
      for (const std::string& a : opt.allocs) rows.push_back({m, m + suffix + "+alloc=" + a, a});
    } else {
      const std::string alloc =
          spec.base == "ntcre"
              ? (spec.switches.count("alloc") ? spec.switches.at("alloc") : std::string("sorted"))
              : std::string();
      rows.push_back({m, m + suffix, alloc});
    }
  }
  for (const Row& r : rows) resolve_model(r.name);

  nlohmann::json out;
  out["benchmark"] = "iteration";
  out["device"] = to_string(opt.device);
  out["threads"] = opt.device == Device::cpu ? threads() : 1;  // kernels/parallel.h
  out["hardware_threads"] = std::thread::hardware_concurrency();
  out["size"] = opt.size;
  out["d"] = size.d;
  out["heads"] = size.heads;
  out["batch"] = size.batch;
  out["iterations"] = opt.iterations;
  out["warmup"] = opt.warmup;
  out["mare_commit"] = MARE_GIT_COMMIT;
  out["build"] = std::string(MARE_BUILD_TYPE) + ", " + MARE_CXX_COMPILER + ", " + MARE_CXX_FLAGS;
  out["step"] =
      "the trainer's RE step: forward, cross-entropy + ponder cost, backward, L2 1e-4, clip 3, "
      "Adam lr 5e-4; synthetic batch (models/bench/re_iteration_setup.h); wall clock";
  out["ratio"] =
      "mean_s of the NTCRE-x row over mean_s of the UTRE-x row of the same shape (ratio_median: "
      "medians; ratio_cpu: process CPU time, the fairer one on a shared machine)";

  nlohmann::json jrows = nlohmann::json::array();
  for (const bench::ReDataShape* shape : shapes) {
    const size_t first_row = jrows.size();
    for (const Row& r : rows) {
      ReModelConfig cfg;
      cfg.sizes = bench::re_bench_vocab(*shape);
      std::unique_ptr<ReModel> model =
          build_re_model(resolve_model(r.name), cfg, bench::kReBenchSeed);
      if (opt.device != Device::cpu) model->to(opt.device);
      Adam adam(model->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
      const ReBatch batch = bench::synthetic_re_batch(*shape, cfg.sizes, opt.device, size.batch);
      uint64_t step = 0;
      std::vector<double> warm, times, cpu_times;
      double steps_sum = 0, last_loss = 0;
      for (int i = 0; i < opt.warmup + opt.iterations; ++i) {
        const auto t0 = Clock::now();
        const double c0 = process_cpu_seconds();
        const bench::ReStepResult s = bench::re_training_step(*model, adam, batch, step++);
        const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
        const double cpu = process_cpu_seconds() - c0;
        if (!std::isfinite(s.loss))
          throw std::runtime_error("bench iteration: " + r.name + " on " + shape->name +
                                   ": the loss is not finite at iteration " + std::to_string(i));
        last_loss = s.loss;
        if (i < opt.warmup) {
          warm.push_back(sec);
        } else {
          times.push_back(sec);
          cpu_times.push_back(cpu);
          steps_sum += s.mean_steps;
        }
      }
      const TimeSummary t = summarize_times(times), c = summarize_times(cpu_times);
      nlohmann::json j = {{"model", r.label},
                          {"registry_name", r.name},
                          {"shape", shape->name},
                          {"tokens", shape->T},
                          {"real_tokens", bench::real_tokens(batch)},
                          {"batch", size.batch},
                          {"d", size.d},
                          {"alloc", r.alloc.empty() ? nlohmann::json() : nlohmann::json(r.alloc)},
                          {"parameters", model->parameters().count()},
                          {"times_s", times},
                          {"warmup_s", warm},
                          {"mean_s", t.mean},
                          {"median_s", t.median},
                          {"sd_s", t.sd},
                          {"cpu_times_s", cpu_times},
                          {"cpu_mean_s", c.mean},
                          {"cpu_median_s", c.median},
                          {"cpu_sd_s", c.sd},
                          {"mean_steps", steps_sum / static_cast<double>(times.size())},
                          {"last_loss", last_loss},
                          {"ratio", nullptr}};
      jrows.push_back(j);
      if (progress)
        *progress << "bench iteration: " << r.name << " " << shape->name << " (T " << shape->T
                  << "): mean " << fmt(t.mean) << " s, median " << fmt(t.median) << " s, sd "
                  << fmt(t.sd) << " s (CPU mean " << fmt(c.mean) << " s) over " << times.size()
                  << " iterations" << std::endl;
    }
    // NTCRE-x over UTRE-x of this shape (the first UTRE-x row when several).
    for (size_t i = first_row; i < jrows.size(); ++i) {
      const std::string partner = utre_partner(jrows[i]["model"].get<std::string>());
      if (partner.empty()) continue;
      for (size_t k = first_row; k < jrows.size(); ++k)
        if (jrows[k]["model"] == partner) {
          jrows[i]["ratio"] = jrows[i]["mean_s"].get<double>() / jrows[k]["mean_s"].get<double>();
          jrows[i]["ratio_median"] =
              jrows[i]["median_s"].get<double>() / jrows[k]["median_s"].get<double>();
          jrows[i]["ratio_cpu"] =
              jrows[i]["cpu_mean_s"].get<double>() / jrows[k]["cpu_mean_s"].get<double>();
          break;
        }
    }
  }
  out["rows"] = jrows;
  return out;
}

}  // namespace mare
