#include "experiments/bench_iteration.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <sys/resource.h>

#include "experiments/grpu_tasks.h"
#include "experiments/run_dir.h"
#include "kernels/memory/allocation.h"
#include "kernels/ops/linalg.h"
#include "kernels/parallel.h"
#include "mare_build_info.h"
#include "models/bench/gemm_bound.h"
#include "models/bench/re_iteration_setup.h"
#include "models/functions.h"
#include "models/grpu.h"
#include "models/optim.h"
#include "models/re_model.h"
#include "models/registry.h"
#include "stats/descriptive.h"

namespace mare {

namespace {

using Clock = std::chrono::steady_clock;
// CPU time of the whole process (every thread), seconds: on a shared machine
// wall time includes waiting for a core, CPU time does not.
using bench::process_cpu_seconds;

// The thesis's GRPU setting (Table 5.1 row 1): the addition task's full
// lengths (50–55 steps), batch 100, Adam lr 1e-4 without clipping.
constexpr int64_t kSeqBatch = 100;
constexpr float kSeqLr = 1e-4f;

// One training step: the loss (read back) and halting's steps and token mask
// (undefined without halting), which the row reads after the step's clocks and counts.
struct StepOut {
  double loss = 0;
  Tensor halting_steps, token_mask;
};
using StepFn = std::function<StepOut(uint64_t step)>;

// Builds a fresh model (the same seed: the same bytes) and returns its step.
using RowFactory = std::function<StepFn()>;

// System CPU time (seconds) and minor page faults of the process so far.
std::pair<double, double> sys_and_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<double>(u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_stime.tv_usec),
          static_cast<double>(u.ru_minflt)};
}

struct RowTiming {
  std::vector<double> warm, times, cpu_times, flops, sys_times, minor_faults;
  // dispatch_counts() per timed iteration
  std::vector<double> ops, device_reads, uploads, host_reads, host_tensors, allocations;
  std::map<std::string, int64_t> ops_by_name;  // op_tally() of the last timed one (by_op)
  double steps_sum = 0, last_loss = 0;
};

// What the op tally counted between two snapshots (the ops with none left out).
std::map<std::string, int64_t> tally_between(const std::map<std::string, int64_t>& before,
                                             const std::map<std::string, int64_t>& after) {
  std::map<std::string, int64_t> out;
  for (const auto& [op, n] : after) {
    const auto it = before.find(op);
    const int64_t used = n - (it == before.end() ? 0 : it->second);
    if (used > 0) out[op] = used;
  }
  return out;
}

// `before_timed` runs before each timed iteration, outside its clocks.
RowTiming time_row(const IterationBenchOptions& opt, const std::string& what, const StepFn& step_fn,
                   const std::function<void()>& before_timed) {
  RowTiming r;
  uint64_t step = 0;
  for (int i = 0; i < opt.warmup + opt.iterations; ++i) {
    uint64_t flops = 0;
    if (i >= opt.warmup && before_timed) before_timed();
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    const auto [sys0, faults0] = sys_and_faults();
    const std::map<std::string, int64_t> tally0 =
        opt.by_op ? op_tally() : std::map<std::string, int64_t>{};
    const DispatchCounts d0 = dispatch_counts();
    const StepOut s = bench::count_gemm_flops(flops, [&] { return step_fn(step++); });
    const DispatchCounts used = dispatch_counts() - d0;
    if (opt.by_op) r.ops_by_name = tally_between(tally0, op_tally());
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = process_cpu_seconds() - c0;
    const auto [sys1, faults1] = sys_and_faults();
    if (!std::isfinite(s.loss))
      throw std::runtime_error("bench iteration: " + what +
                               ": the loss is not finite at iteration " + std::to_string(i));
    r.last_loss = s.loss;
    if (i < opt.warmup) {
      r.warm.push_back(sec);
    } else {
      r.times.push_back(sec);
      r.cpu_times.push_back(cpu);
      r.sys_times.push_back(sys1 - sys0);
      r.minor_faults.push_back(faults1 - faults0);
      r.flops.push_back(static_cast<double>(flops));
      r.ops.push_back(static_cast<double>(used.ops));
      r.device_reads.push_back(static_cast<double>(used.device_reads));
      r.uploads.push_back(static_cast<double>(used.uploads));
      r.host_reads.push_back(static_cast<double>(used.host_reads));
      r.host_tensors.push_back(static_cast<double>(used.host_tensors));
      r.allocations.push_back(static_cast<double>(used.allocations));
      r.steps_sum += mean_halting_steps(s.halting_steps, s.token_mask);
    }
  }
  return r;
}

// The GEMM throughputs of the bound at the row's thread count: the model's
// dominant shape (the bound's; sampled before the row and before each timed
// iteration) and the 1024³ square (the peak; before the row).
struct Rates {
  bench::GemmRate dominant, square;
};

// The time fields of one run of a row, and its GEMM bound.
nlohmann::json timing_fields(const RowTiming& t, const Rates& rates, int threads_used) {
  const TimeSummary w = summarize_times(t.times), c = summarize_times(t.cpu_times);
  nlohmann::json j = {
      {"threads", threads_used},    {"times_s", t.times},         {"warmup_s", t.warm},
      {"mean_s", w.mean},           {"median_s", w.median},       {"sd_s", w.sd},
      {"cpu_times_s", t.cpu_times}, {"cpu_mean_s", c.mean},       {"cpu_median_s", c.median},
      {"cpu_sd_s", c.sd},           {"sys_times_s", t.sys_times}, {"minor_faults", t.minor_faults}};
  const double flops = stats::median(t.flops);
  j["ops"] = static_cast<int64_t>(stats::median(t.ops));
  j["device_reads"] = static_cast<int64_t>(stats::median(t.device_reads));
  j["uploads"] = static_cast<int64_t>(stats::median(t.uploads));
  j["host_reads"] = static_cast<int64_t>(stats::median(t.host_reads));
  j["host_tensors"] = static_cast<int64_t>(stats::median(t.host_tensors));
  j["allocations"] = static_cast<int64_t>(stats::median(t.allocations));
  if (!t.ops_by_name.empty()) j["ops_by_name"] = t.ops_by_name;
  j["gemm_flops"] = static_cast<uint64_t>(flops);
  j["gemm_gflop"] = flops / 1e9;
  j["gemm_shape"] = rates.dominant.shape();
  j["gemm_gflops_per_s"] = rates.dominant.gflops;
  j["gemm_gflops_per_s_cpu"] = rates.dominant.gflops_cpu;
  j["gemm_square_gflops_per_s"] = rates.square.gflops;
  if (flops > 0) {
    const double bound = flops / (rates.dominant.gflops * 1e9);
    const double bound_cpu = flops / (rates.dominant.gflops_cpu * 1e9);
    const double bound_square = flops / (rates.square.gflops * 1e9);
    j["bound_s"] = bound;
    j["bound_cpu_s"] = bound_cpu;
    j["bound_square_s"] = bound_square;
    j["bound_ratio"] = w.median / bound;
    j["bound_ratio_cpu"] = c.median / bound_cpu;
    j["bound_ratio_square"] = w.median / bound_square;
  } else {  // nothing counted (the GPU's kernels are not counted)
    j["bound_s"] = j["bound_cpu_s"] = j["bound_square_s"] = nullptr;
    j["bound_ratio"] = j["bound_ratio_cpu"] = j["bound_ratio_square"] = nullptr;
  }
  return j;
}

struct SizeInfo {
  const char* name;
  int64_t d, heads, batch;
};
constexpr SizeInfo kSizes[] = {{"paper", 300, 4, 32}, {"default", 32, 4, 32}};

}  // namespace

std::vector<std::string> iteration_size_names() {
  std::vector<std::string> names;
  for (const SizeInfo& s : kSizes) names.emplace_back(s.name);
  return names;
}

std::vector<std::string> iteration_shape_names() {
  std::vector<std::string> names;
  for (const bench::ReDataShape& s : bench::kReShapes) names.emplace_back(s.name);
  names.emplace_back("both");
  return names;
}

namespace {

SizeInfo size_info(const std::string& size) {
  for (const SizeInfo& s : kSizes)
    if (size == s.name) return s;
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

// The UTRE row an NTCRE row is compared with: the same name with UTRE for NTCRE and
// without the memory's own switches (NTCRE-CPD+word=64 -> UTRE-CPD); empty for any
// other model.
std::string utre_partner(const std::string& model) {
  std::string rest;
  if (model.rfind("NTCRE", 0) == 0)
    rest = "UTRE" + model.substr(5);
  else if (model.rfind("ntcre", 0) == 0)
    rest = "utre" + model.substr(5);
  else
    return {};
  std::string out;
  for (size_t at = 0; at < rest.size();) {
    size_t next = rest.find('+', at + 1);
    if (next == std::string::npos) next = rest.size();
    const std::string part = rest.substr(at, next - at);
    bool memory_switch = false;
    for (const char* k : {"+word=", "+slots=", "+read_heads=", "+alloc="})
      memory_switch = memory_switch || part.rfind(k, 0) == 0;
    if (!memory_switch) out += part;
    at = next;
  }
  return out;
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

namespace {

// The run's counts, models, allocation variants and device, checked before any row is
// built (after --size and --shape, which size_info and shapes_of check).
void check_options(const IterationBenchOptions& opt) {
  if (opt.iterations < 1) throw std::invalid_argument("bench iteration: --iterations must be >= 1");
  if (opt.warmup < 0) throw std::invalid_argument("bench iteration: --warmup must be >= 0");
  if (opt.models.empty())
    throw std::invalid_argument("bench iteration: --models needs at least one model");
  for (const std::string& a : opt.allocs) parse_allocation_variant(a);  // names the valid ones
  if (std::string why = device_unavailable(opt.device); !why.empty())
    throw std::runtime_error("bench iteration: --device cuda: " + why);
}

// One row to measure: a model of --models (one per --alloc variant for ntcre) or the GRPU.
struct Row {
  std::string label, name, alloc;  // alloc empty: none (UTRE) or the model's default
  bool sequence = false;           // a sequence model (the GRPU): one `addition` row
};

// A --models entry must be a relation-extraction model that leaves d and heads to --size
// and, when --alloc lists the variants, alloc to --alloc.
void check_row_model(const std::string& m, const ModelSpec& spec, const IterationBenchOptions& opt,
                     const SizeInfo& size) {
  const ModelInfo* info = find_model(spec.base);
  if (!info || info->task_kind != "relation")
    throw std::invalid_argument(
        "bench iteration: --models: '" + m + "' is not a relation-extraction model" +
        (info && info->task_kind == "sequence" ? std::string(" (the GRPU's row: --grpu)")
                                               : std::string()));
  // The size's d and heads apply to every row (they were appended after the row's own,
  // timing d 32 for a row named +d=8).
  for (const char* k : {"d", "heads"})
    if (ModelSpec::parse(m).switches.count(k))
      throw std::invalid_argument("bench iteration: --models: '" + m + "' sets " + k +
                                  ", which comes from --size (" + opt.size + ": d " +
                                  std::to_string(size.d) + ", heads " + std::to_string(size.heads) +
                                  "); leave it out");
  if (!opt.allocs.empty() && ModelSpec::parse(m).switches.count("alloc"))
    throw std::invalid_argument("bench iteration: --models: '" + m +
                                "' sets alloc and --alloc lists the variants; give one of them");
}

// Every row's registry name, checked before anything runs.
std::vector<Row> bench_rows(const IterationBenchOptions& opt, const SizeInfo& size) {
  std::vector<Row> rows;
  const std::string suffix =
      "+d=" + std::to_string(size.d) + "+heads=" + std::to_string(size.heads);
  for (const std::string& m : opt.models) {
    const ModelSpec spec = resolve_model(m);  // unknown model or switch: names the valid ones
    check_row_model(m, spec, opt, size);
    // cnn has no heads switch.
    const std::string row_suffix = spec.base == "cnn" ? "+d=" + std::to_string(size.d) : suffix;
    if (spec.base == "ntcre" && !opt.allocs.empty()) {
      for (const std::string& a : opt.allocs)
        rows.push_back({m, m + row_suffix + "+alloc=" + a, a});
    } else {
      const std::string alloc =
          spec.base == "ntcre"
              ? (spec.switches.count("alloc") ? spec.switches.at("alloc") : std::string("sorted"))
              : std::string();
      rows.push_back({m, m + row_suffix, alloc});
    }
  }
  if (!opt.allocs.empty() &&
      std::none_of(opt.models.begin(), opt.models.end(),
                   [](const std::string& m) { return resolve_model(m).base == "ntcre"; }))
    throw std::invalid_argument(
        "bench iteration: --alloc applies to ntcre rows, and none of --models is an ntcre model");
  if (opt.grpu) rows.push_back({"grpu", "grpu", "", true});
  for (const Row& r : rows) resolve_model(r.name);
  return rows;
}

// Turns the op tally on (--by-op) for as long as it lives.
struct TallyScope {
  bool on;
  explicit TallyScope(bool on) : on(on) {
    if (on) set_op_tally(true);
  }
  ~TallyScope() {
    if (on) set_op_tally(false);
  }
};

// The run's top-level fields: its settings, the build, and what the rows' fields mean.
nlohmann::json bench_header(const IterationBenchOptions& opt, const SizeInfo& size,
                            int main_threads, bool speedup) {
  nlohmann::json out;
  out["benchmark"] = "iteration";
  out["device"] = to_string(opt.device);
  out["matmul_precision"] = to_string(matmul_precision());  // kernels/ops/linalg.h
  out["static_step"] = opt.static_step;                     // models/layers.h: Context::static_step
  out["threads"] = main_threads;
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
      "Adam lr 5e-4; synthetic batch (models/bench/re_iteration_setup.h); wall clock. Sequence "
      "models (grpu): the sequence trainer's step on the addition task, batch 100, 50-55 steps, "
      "MSE, Adam lr 1e-4";
  out["ratio"] =
      "mean_s of the NTCRE-x row over mean_s of the UTRE-x row of the same shape (ratio_median: "
      "medians; ratio_cpu: process CPU time, the fairer one on a shared machine; "
      "ratio_gemm_flops: the rows' GEMM flops, what the ratio would be if both ran at the GEMM "
      "rate and everything else were free). An NTCRE row's partner is the UTRE row of the same "
      "name without the memory's switches (word, slots, read_heads, alloc)";
  out["dispatch"] =
      "ops: the op dispatches of one timed iteration (median; on the GPU each is at least one "
      "kernel launch); device_reads: the reads of GPU memory by the host in it (each waits for "
      "the GPU; 0 on the CPU); uploads: its copies of host memory to the GPU; host_reads: "
      "the host's reads of data the iteration computed, on either device (on the GPU each is "
      "a device read); host_tensors: tensors it filled from host data (on the GPU, uploads); "
      "allocations: tensor storages it made (kernels/tensor.h, dispatch_counts); ops_by_name "
      "(--by-op): the last timed iteration's dispatches per op (kernels/tensor.h, op_tally)";
  out["gemm_bound"] =
      "gemm_flops: the GEMM flops (2mnk per product: matmuls, attention's products, conv taps, "
      "recurrent cells) of one timed iteration as the CPU kernels count them (median over the "
      "timed iterations); gemm_gflops_per_s: bench_ops's matmul forward+backward at the model's "
      "dominant shape (gemm_shape) at the same thread count, sampled before the row and before "
      "each timed iteration (the median rep; _cpu: on process CPU time); bound_s = gemm_flops / "
      "that rate; bound_ratio = "
      "median_s / bound_s (bound_ratio_cpu: cpu_median_s / bound_cpu_s); the _square fields use "
      "a 1024^3 GEMM's rate instead (the core's peak, measured before the row). sys_times_s and "
      "minor_faults: each timed iteration's system CPU time and minor page faults (getrusage)";
  if (speedup)
    out["speedup"] =
        "every row also ran at 1 thread (threads_1: the same fields); speedup = its median_s over "
        "the row's median_s at `threads`";
  return out;
}

// What every row shares: the options, the main thread count, whether each row also runs
// at one thread, and where the summary lines go (none when null).
struct RowContext {
  const IterationBenchOptions& opt;
  int main_threads;
  bool speedup;
  std::ostream* progress;
};

// One row's model step (a fresh model per run) and the fields that describe what it ran.
struct RowSetup {
  std::string shape_name;
  int64_t shape_T;
  RowFactory factory;
  int64_t parameters, real_tokens, batch, d;
  std::array<int64_t, 3> gemm_shape;  // the dominant GEMM, the bound's rate
};

// One run of a row: its timed iterations and the GEMM rates of its bound.
struct RowRun {
  RowTiming t;
  Rates rates;
};

// Runs a row at k threads from a fresh model: the square GEMM's rate before the row, the
// dominant shape's before the row and before each timed iteration (outside its clocks).
RowRun run_at(const RowContext& ctx, const std::string& what, const RowSetup& s, int k) {
  if (ctx.opt.device == Device::cpu) set_threads(k);
  const bench::GemmRate square = bench::measure_gemm_rate(1024, 1024, 1024, ctx.opt.device);
  bench::GemmRateSampler dominant(s.gemm_shape[0], s.gemm_shape[1], s.gemm_shape[2],
                                  ctx.opt.device);
  dominant.sample(5, 0.4);
  const RowTiming t = time_row(ctx.opt, what, s.factory(), [&] { dominant.sample(2, 0.0); });
  return {t, Rates{dominant.rate(), square}};
}

// A row's JSON at the main thread count; ratio stays null until its UTRE partner is known.
nlohmann::json row_json(const Row& r, const RowSetup& s, const RowRun& run, int main_threads) {
  const RowTiming& t = run.t;
  nlohmann::json j = {{"model", r.label},
                      {"registry_name", r.name},
                      {"shape", s.shape_name},
                      {"tokens", s.shape_T},
                      {"real_tokens", s.real_tokens},
                      {"batch", s.batch},
                      {"d", s.d},
                      {"alloc", r.alloc.empty() ? nlohmann::json() : nlohmann::json(r.alloc)},
                      {"parameters", s.parameters}};
  j.update(timing_fields(t, run.rates, main_threads));
  j["mean_steps"] = t.steps_sum / static_cast<double>(t.times.size());
  j["last_loss"] = t.last_loss;
  j["ratio"] = nullptr;
  return j;
}

// The row's progress line: its times, its GEMM bound where flops were counted, and
// (speedup) its one-thread run.
void print_row_summary(std::ostream& progress, const Row& r, const RowSetup& s,
                       const nlohmann::json& j, size_t iterations, bool speedup) {
  progress << "bench iteration: " << r.name << " " << s.shape_name << " (T " << s.shape_T
           << "): mean " << fixed(j["mean_s"].get<double>(), 3) << " s, median "
           << fixed(j["median_s"].get<double>(), 3) << " s, sd "
           << fixed(j["sd_s"].get<double>(), 3) << " s (CPU mean "
           << fixed(j["cpu_mean_s"].get<double>(), 3) << " s) over " << iterations << " iterations";
  if (!j["bound_s"].is_null())
    progress << "; GEMM " << fixed(j["gemm_gflop"].get<double>(), 1) << " GFLOP at "
             << fixed(j["gemm_gflops_per_s"].get<double>(), 1) << " GFLOP/s: bound "
             << fixed(j["bound_s"].get<double>(), 3) << " s, ratio "
             << fixed(j["bound_ratio"].get<double>(), 2);
  if (speedup)
    progress << "; 1 thread median " << fixed(j["threads_1"]["median_s"].get<double>(), 3)
             << " s (ratio " << fixed(j["threads_1"]["bound_ratio"].get<double>(), 2)
             << "), speedup " << fixed(j["speedup"].get<double>(), 2);
  progress << std::endl;
}

// The rows of one shape (or the sequence rows, shape null): each run at the
// main thread count, then (speedup) again at one thread from a fresh model.
nlohmann::json run_row(const RowContext& ctx, const Row& r, const RowSetup& s) {
  const std::string what = r.name + " on " + s.shape_name;
  const RowRun run = run_at(ctx, what, s, ctx.main_threads);
  nlohmann::json j = row_json(r, s, run, ctx.main_threads);
  if (ctx.speedup) {
    const RowRun run1 = run_at(ctx, what, s, 1);
    j["threads_1"] = timing_fields(run1.t, run1.rates, 1);
    j["speedup"] = j["threads_1"]["median_s"].get<double>() / j["median_s"].get<double>();
    set_threads(ctx.main_threads);
  }
  if (ctx.progress) print_row_summary(*ctx.progress, r, s, j, run.t.times.size(), ctx.speedup);
  return j;
}

// An RE row on one shape: the shape's synthetic batch and, per run, a fresh model and
// Adam taking the trainer's step; both are freed before the next row is built.
nlohmann::json run_re_row(const RowContext& ctx, const Row& r, const bench::ReDataShape& shape,
                          const SizeInfo& size) {
  const IterationBenchOptions& opt = ctx.opt;
  ReModelConfig cfg;
  cfg.sizes = bench::re_bench_vocab(shape);
  ReBatch batch = bench::synthetic_re_batch(shape, cfg.sizes, opt.device, size.batch);
  std::unique_ptr<ReModel> model;
  std::unique_ptr<Adam> adam;
  auto factory = [&]() -> StepFn {
    adam.reset();
    model.reset();
    model = build_re_model(resolve_model(r.name), cfg, bench::kReBenchSeed);
    if (opt.device != Device::cpu) model->to(opt.device);
    adam = std::make_unique<Adam>(model->parameters(), AdamConfig{.l2 = 1e-4f, .clip_norm = 3.0f});
    return [&](uint64_t step) {
      const bench::ReStepResult s =
          bench::re_training_step(*model, *adam, batch, step, opt.static_step);
      return StepOut{s.loss, s.halting_steps, s.token_mask};
    };
  };
  factory();                               // the parameter count before the row runs
  model->stage(batch, ReTask::relations);  // as the trainer stages its batches
  const int64_t parameters = model->parameters().count();
  const std::array<int64_t, 3> gemm_shape = {size.batch * shape.T, size.d, size.d};
  nlohmann::json j = run_row(ctx, r,
                             {shape.name, shape.T, factory, parameters, bench::real_tokens(batch),
                              size.batch, size.d, gemm_shape});
  adam.reset();
  model.reset();
  return j;
}

// NTCRE-x over UTRE-x of this shape (the first UTRE-x row when several), for the rows
// from first_row on.
void add_partner_ratios(nlohmann::json& jrows, size_t first_row) {
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
        const nlohmann::json &fa = jrows[i]["gemm_flops"], &fb = jrows[k]["gemm_flops"];
        jrows[i]["ratio_gemm_flops"] = fa.is_number() && fb.is_number() && fb.get<double>() > 0
                                           ? nlohmann::json(fa.get<double>() / fb.get<double>())
                                           : nlohmann::json();
        break;
      }
  }
}

// The sequence rows' batch: the addition task's first kSeqBatch training sequences and
// their targets on the run's device, with T and the real steps counted on the host.
struct AdditionBatch {
  SequenceTask task;
  SequenceBatch batch;
  Tensor target;
  int64_t T = 0, real = 0;
};

// Draws the addition batch once per row: every fresh model of the row trains on it.
AdditionBatch addition_batch(Device device) {
  AdditionBatch a;
  a.task = make_sequence_task("addition", bench::kReBenchSeed, kSeqBatch, 1, false);
  std::vector<int64_t> idx(kSeqBatch);
  for (int64_t i = 0; i < kSeqBatch; ++i) idx[i] = i;
  a.batch = make_sequence_batch(a.task.train[0], idx, 0, kSeqBatch, &a.target);
  a.T = a.batch.values.dim(0);
  for (int64_t i = 0; i < a.batch.mask.numel(); ++i) a.real += a.batch.mask.f32()[i] > 0;
  if (device != Device::cpu) {
    a.batch.values = a.batch.values.to(device);
    a.batch.controls = a.batch.controls.to(device);
    a.batch.mask = a.batch.mask.to(device);
    a.target = a.target.to(device);
  }
  return a;
}

// A sequence model's row: the sequence trainer's step (MSE, Adam lr 1e-4) on the addition
// batch from a fresh model per run; the bound's shape is the gates' GEMM.
nlohmann::json run_sequence_row(const RowContext& ctx, const Row& r) {
  const IterationBenchOptions& opt = ctx.opt;
  const ModelSpec spec = resolve_model(r.name);
  AdditionBatch a = addition_batch(opt.device);
  std::unique_ptr<SequenceModel> model;
  std::unique_ptr<Adam> adam;
  auto factory = [&]() -> StepFn {
    adam.reset();
    model.reset();
    model = build_sequence_model(spec, a.task.shape, bench::kReBenchSeed);
    if (opt.device != Device::cpu) model->parameters().to(opt.device);
    adam = std::make_unique<Adam>(model->parameters(), AdamConfig{});
    return [&](uint64_t) {
      model->parameters().zero_grad();
      ag::Var loss = ag::mse(model->forward(a.batch), ag::constant(a.target));
      StepOut s{loss->value.item(), {}, {}};
      ag::backward(loss);
      adam->step(kSeqLr);
      return s;
    };
  };
  factory();
  const int64_t parameters = model->parameters().count();
  // The dominant GEMM: the gates' [B, Ic + H] × [Ic + H, 2(H + K)].
  int64_t H = 100, K = 2;
  if (const auto* g = dynamic_cast<const GrpuModel*>(model.get()))
    H = g->hidden(), K = g->config().fields();
  const std::array<int64_t, 3> gemm_shape = {kSeqBatch, 1 + H, 2 * (H + K)};
  return run_row(ctx, r, {"addition", a.T, factory, parameters, a.real, kSeqBatch, H, gemm_shape});
}

}  // namespace

nlohmann::json run_iteration_bench(const IterationBenchOptions& opt, std::ostream* progress) {
  const SizeInfo size = size_info(opt.size);
  const std::vector<const bench::ReDataShape*> shapes = shapes_of(opt.shape);
  check_options(opt);
  const std::vector<Row> rows = bench_rows(opt, size);

  // The tally is on for the whole run and off again after it, however it ends.
  TallyScope tally_scope(opt.by_op);

  const int main_threads = opt.device == Device::cpu ? threads() : 1;  // kernels/parallel.h
  const bool speedup = opt.speedup && opt.device == Device::cpu && main_threads > 1;
  nlohmann::json out = bench_header(opt, size, main_threads, speedup);
  const RowContext ctx{opt, main_threads, speedup, progress};

  nlohmann::json jrows = nlohmann::json::array();
  for (const bench::ReDataShape* shape : shapes) {
    const size_t first_row = jrows.size();
    for (const Row& r : rows) {
      if (r.sequence) continue;
      jrows.push_back(run_re_row(ctx, r, *shape, size));
    }
    add_partner_ratios(jrows, first_row);
  }
  // Sequence models: the addition task at the thesis's size, whatever --shape/--size.
  for (const Row& r : rows) {
    if (!r.sequence) continue;
    jrows.push_back(run_sequence_row(ctx, r));
  }
  out["rows"] = jrows;
  return out;
}

}  // namespace mare
