// One training iteration of the relation-extraction models (Google Benchmark;
// SPEC §10, thesis Table 4.15 and Figure 4.11): exactly the RE step of
// experiments/re_trainer.cpp — gradients reset, forward on a batch,
// cross-entropy on the pairs' logits plus the model's aux loss (the ponder
// cost), the loss read back (the trainer's divergence check), backward, and an
// Adam step with L2 1e-4 and global-norm clipping 3 (thesis Table 4.1) — on a
// synthetic batch (models/ may not read data files or include experiments/).
// The batch and the step live in re_iteration_setup.h, shared with
// `mare bench iteration` (the same step as a JSON-writing command).
//
// The batch: 32 documents at the SemEval 2018 shape (T = 96 tokens) or the
// BioCreative CDR shape (T = 398), random word/n-gram/char/entity-tag ids from a
// fixed seed; every document has 90–100% of T real tokens (document 0 exactly
// T), 2 entity pairs per document whose entities have 1–2 mentions of 1–3
// tokens. Class weights off, gold entity tags an input, RE steps only (the
// trainer's NER steps are a different, cheaper head).
//
// Configurations: cnn, bran, utre (Table 4.6 row 1), UTRE (utre+ngram+transition),
// UTRE-CPD, NTCRE and NTCRE-CPD, each at the paper size (d 300, heads 4) and at the default
// profile's small size (d 64, heads 4; cnn: d 64, filters 64). Names:
//   re_iteration/<model>/<paper|small>/<semeval|cdr>
// so `--benchmark_filter=/small/` or `=/paper/semeval` pick a group. The
// attention models at the paper size on the CDR shape take more than 20 s an
// iteration on a 2-core CPU: they are re_iteration_slow/<model>/paper/cdr, run
// one timed iteration, and only when a --benchmark_filter names them (without
// a filter the program runs everything else: `--benchmark_filter=.` runs all).
//
// Counters: items_per_second (items = real tokens of the batch per iteration),
// the GEMM bound (gemm_bound.h): gemm_gflop (the GEMM flops of one
// iteration as the kernels count them, the median over the timed iterations),
// gemm_gflops_per_s (bench_ops's matmul forward+backward at [B·T, d] × [d, d],
// measured after the warm-up at the same thread count), bound_s (the one over
// the other), bound_ratio (iter_median_s / bound_s) and threads;
// parameters, iter_{min,median,max}_s (the distribution of the timed
// iterations, Figure 4.11; `--benchmark_repetitions=N` gives Google Benchmark's
// own aggregates on top), mean_steps (UTRE-CPD: halting's mean iterations
// per real token over the timed iterations), first_iter_s (one untimed warm-up step before the
// loop: Adam's first update, first-touch of gradient buffers), and
// peak_rss_delta_MiB: the process's peak resident set during this benchmark
// minus its resident set when the benchmark started. Linux only: the peak
// (VmHWM) is reset by writing 5 to /proc/self/clear_refs and free heap pages are
// returned with malloc_trim first; memory that the allocator kept resident from
// an earlier benchmark and reuses is not counted. Where clear_refs cannot be
// written the counter is ru_maxrss's growth instead (zero unless this
// benchmark raised the process's all-time peak) and is named
// maxrss_growth_MiB.
//
//   build/models/bench/bench_re_iteration --benchmark_filter=/small/
//   build/models/bench/bench_re_iteration --benchmark_out=re_iteration.json
//       --benchmark_out_format=json
//
// `--device cuda` moves the model and the batch to the GPU (bench_device.h's
// flag and checks); each iteration then ends with a device synchronisation so
// the host clock covers the GPU work.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_device.h"
#include "kernels/parallel.h"
#include "models/bench/gemm_bound.h"
#include "models/bench/re_iteration_setup.h"
#include "models/optim.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace {

using namespace mare;
using namespace mare::bench;
using Clock = std::chrono::steady_clock;

using DataShape = ReDataShape;
constexpr const ReDataShape (&kShapes)[2] = kReShapes;

// ---- resident memory (Linux /proc) -------------------------------------------

// A "VmXXX:  1234 kB" line of /proc/self/status in MiB, or −1.
double proc_status_mib(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::strtod(line.c_str() + key.size() + 1, nullptr) / 1024.0;
  return -1.0;
}

double maxrss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kB on Linux
}

struct PeakRss {
  bool reset = false;  // VmHWM was reset, so the peak is this benchmark's own
  double base = 0.0;
  void start() {
    malloc_trim(0);
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    reset = static_cast<bool>(f);
    base = reset ? proc_status_mib("VmRSS") : maxrss_mib();
    if (reset && base < 0) reset = false, base = maxrss_mib();
  }
  void report(benchmark::State& st) const {
    if (reset)
      st.counters["peak_rss_delta_MiB"] = proc_status_mib("VmHWM") - base;
    else
      st.counters["maxrss_growth_MiB"] = maxrss_mib() - base;
  }
};

// ---- the benchmark -----------------------------------------------------------

// d of a registry name's "+d=N" switch (the bound's [B·T, d] × [d, d] GEMM).
int64_t bound_d(const std::string& name) {
  const size_t at = name.find("+d=");
  return at == std::string::npos ? 300 : std::strtoll(name.c_str() + at + 3, nullptr, 10);
}

void BM_ReIteration(benchmark::State& st, const std::string& model_name, const DataShape& shape) {
  PeakRss rss;
  rss.start();
  try {
    ReModelConfig cfg;
    cfg.sizes = re_bench_vocab(shape);
    std::unique_ptr<ReModel> model = build_re_model(resolve_model(model_name), cfg, kReBenchSeed);
    if (g_device != Device::cpu) model->to(g_device);
    Adam adam(model->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
    ReBatch batch = synthetic_re_batch(shape, cfg.sizes, g_device);
    model->stage(batch, ReTask::relations);  // as the trainer stages its batches
    const int64_t tokens = real_tokens(batch);

    uint64_t step = 0;
    auto t0 = Clock::now();
    re_training_step(*model, adam, batch, step++);
    const double first = std::chrono::duration<double>(Clock::now() - t0).count();
    // The GEMM bound's rate (gemm_bound.h), after the warm-up, at this thread count.
    const int64_t d = bound_d(model_name);
    const GemmRate rate = measure_gemm_rate(batch.B * batch.T, d, d, g_device);
    std::vector<double> seconds, flops;
    double steps_sum = 0.0;
    for (auto _ : st) {
      uint64_t f = 0;
      t0 = Clock::now();
      const ReStepResult r =
          count_gemm_flops(f, [&] { return re_training_step(*model, adam, batch, step++); });
      seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      steps_sum += r.mean_steps();
      flops.push_back(static_cast<double>(f));
    }
    std::sort(seconds.begin(), seconds.end());
    const size_t n = seconds.size();
    st.SetItemsProcessed(st.iterations() * tokens);
    st.SetLabel(model->describe());
    st.counters["parameters"] = static_cast<double>(model->parameters().count());
    st.counters["tokens"] = static_cast<double>(tokens);
    st.counters["first_iter_s"] = first;
    if (n > 0) {
      st.counters["iter_min_s"] = seconds.front();
      st.counters["iter_median_s"] =
          n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
      st.counters["iter_max_s"] = seconds.back();
      if (steps_sum > 0) st.counters["mean_steps"] = steps_sum / static_cast<double>(n);
      const double gf = median_of(flops);
      st.counters["gemm_gflop"] = gf / 1e9;
      st.counters["gemm_gflops_per_s"] = rate.gflops;
      if (gf > 0) {
        const double bound = gf / (rate.gflops * 1e9);
        st.counters["bound_s"] = bound;
        st.counters["bound_ratio"] = st.counters["iter_median_s"] / bound;
      }
    }
    st.counters["threads"] = g_device == Device::cpu ? threads() : 1;
    rss.report(st);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
  }
}

struct Config {
  const char* label;
  const char* paper;
  const char* small;
};
constexpr Config kConfigs[] = {
    {"cnn", "cnn+d=300", "cnn+d=64+filters=64"},
    {"bran", "bran+d=300+heads=4", "bran+d=64+heads=4"},
    {"utre", "utre+d=300+heads=4", "utre+d=64+heads=4"},
    {"UTRE", "UTRE+d=300+heads=4", "UTRE+d=64+heads=4"},
    {"UTRE-CPD", "UTRE-CPD+d=300+heads=4", "UTRE-CPD+d=64+heads=4"},
    {"NTCRE", "NTCRE+d=300+heads=4", "NTCRE+d=64+heads=4"},
    {"NTCRE-CPD", "NTCRE-CPD+d=300+heads=4", "NTCRE-CPD+d=64+heads=4"},
};

// Rows whose single iteration takes more than 20 s on the 2-core development
// machine (README.md): the attention models at the paper size on the CDR shape.
// They are named re_iteration_slow/…, run one timed iteration (after the
// warm-up), and are left out of a run without --benchmark_filter.
bool slow(const Config& c, const std::string& size, const DataShape& shape) {
  return size == "paper" && std::string(shape.name) == "cdr" && std::string(c.label) != "cnn";
}

void register_benchmarks() {
  for (const std::string size : {"small", "paper"})
    for (const DataShape& shape : kShapes)
      for (const Config& c : kConfigs) {
        const bool is_slow = slow(c, size, shape);
        const std::string name = std::string(is_slow ? "re_iteration_slow/" : "re_iteration/") +
                                 c.label + "/" + size + "/" + shape.name;
        benchmark::internal::Benchmark* b =
            benchmark::RegisterBenchmark(name.c_str(), BM_ReIteration,
                                         std::string(size == "small" ? c.small : c.paper), shape)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        if (is_slow) b->Iterations(1);
      }
}

}  // namespace

int main(int argc, char** argv) {
  if (!setup_device(argc, argv, "bench_re_iteration")) return 2;
  bool filtered = false;
  for (int i = 1; i < argc; ++i)
    filtered = filtered || std::strncmp(argv[i], "--benchmark_filter", 18) == 0;
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // A negative filter (Google Benchmark ≥ 1.6): everything but the slow rows.
  if (!filtered) benchmark::SetBenchmarkFilter("-^re_iteration_slow/");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
