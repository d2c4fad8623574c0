// Op benchmarks (Google Benchmark): matmul, softmax, layer norm, conv1d and
// attention at the thesis's sizes (batch 32, sequence up to 512, d up to 300),
// forward and forward+backward. Counters: FLOP/s for products, bytes/s for
// memory-bound ops (bytes a single pass must read and write).
//   build/kernels/bench/bench_ops --benchmark_out=ops.json --benchmark_out_format=json
//
// `--device cuda` (or `--device=cuda`; taken out of argv before Google
// Benchmark parses the rest; default cpu) runs the same benchmarks, same names
// plus Google Benchmark's `/manual_time` suffix, on the GPU: inputs are made
// on the device before timing, and each iteration is timed with CUDA events on
// the op stream (kernels/cuda/timing.h) and reported with SetIterationTime
// (UseManualTime), so the times are GPU time, not launch time. The memory-bound
// benchmarks add `copy_bw_fraction`: their bytes/s over the device's measured
// copy bandwidth (which, with the device's name, goes to the JSON context).
// Without the CUDA backend or without a GPU, `--device cuda` exits with the
// reason.
//   build/kernels/bench/bench_ops --device cuda --benchmark_out=ops_cuda.json
//       --benchmark_out_format=json
//
// Threads (cpu): every benchmark runs on 1 thread and on all of them (the
// last argument, `threads`; all = `--threads K`, else MARE_THREADS, else every
// core), and a table of the 1-thread time, the K-thread time and their ratio
// follows Google Benchmark's output on stdout.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_device.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/random.h"

namespace {

using namespace mare;
using namespace mare::bench;

Tensor rnd(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s, g_device);
  fill_uniform(t, seed, 1, -1, 1);
  return t;
}

Tensor zeros(const Shape& s) {
  return Tensor::zeros(s, g_device);
}

// The thread counts every benchmark runs at (set in main): {1} or {1, K}.
std::vector<int64_t> g_thread_counts{1};

// The benchmark's last argument is its thread count.
void use_threads(const benchmark::State& st, int index) {
  set_threads(static_cast<int>(st.range(index)));
}

void set_flops(benchmark::State& st, double flops_per_iter) {
  st.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iter * st.iterations(), benchmark::Counter::kIsRate);
}

// bytes_per_second, and on the GPU that rate over the device's copy bandwidth
// (gpu_seconds: what time_iterations returned).
void set_bytes(benchmark::State& st, int64_t bytes_per_iter, double gpu_seconds) {
  st.SetBytesProcessed(st.iterations() * bytes_per_iter);
  set_copy_fraction(st, bytes_per_iter, gpu_seconds);
}

// [B·I, d] × [d, d]: the projections of every layer. Forward+backward (bwd:1)
// at seq 96 and 398, d 300 is the GEMM whose rate `mare bench iteration` and
// bench_re_iteration measure in-process for their GEMM bound (the same step:
// models/bench/gemm_bound.h), at the SemEval and CDR shapes of batch 32.
void BM_Matmul(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  const bool backward = st.range(2);
  use_threads(st, 3);
  Tensor x = rnd({rows, d}, 1), w = rnd({d, d}, 2), g = rnd({rows, d}, 3);
  Tensor dx = zeros({rows, d}), dw = zeros({d, d});
  time_iterations(st, [&] {
    Tensor y = matmul_forward(x, w);
    if (backward) matmul_backward(dx, dw, g, x, w);
    benchmark::DoNotOptimize(y.f32());
  });
  set_flops(st, 2.0 * rows * d * d * (backward ? 3 : 1));
}

void BM_Softmax(benchmark::State& st) {
  const int64_t rows = 32 * 4 * st.range(0), cols = st.range(0);
  use_threads(st, 1);
  Tensor x = rnd({rows, cols}, 4);
  const double gpu_s = time_iterations(st, [&] {
    Tensor y = softmax_forward(x);
    benchmark::DoNotOptimize(y.f32());
  });
  set_bytes(st, rows * cols * 8, gpu_s);  // read x, write y
}

void BM_LayerNorm(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  use_threads(st, 2);
  Tensor x = rnd({rows, d}, 5), gamma = rnd({d}, 6), beta = rnd({d}, 7);
  const double gpu_s = time_iterations(st, [&] {
    NormResult r = layer_norm_forward(x, gamma, beta);
    benchmark::DoNotOptimize(r.out.f32());
  });
  set_bytes(st, rows * d * 8, gpu_s);
}

void BM_Conv1d(benchmark::State& st) {
  const int64_t b = 32, len = st.range(0), d = st.range(1), k = st.range(2);
  use_threads(st, 3);
  Tensor x = rnd({b, len, d}, 8), w = rnd({k, d, d}, 9), bias = rnd({d}, 10);
  time_iterations(st, [&] {
    Tensor y = conv1d_forward(x, w, bias);
    benchmark::DoNotOptimize(y.f32());
  });
  set_flops(st, 2.0 * b * len * d * d * k);
}

void BM_Attention(benchmark::State& st) {
  const int64_t b = 32, len = st.range(0), d = 300;
  const int heads = 4;
  const bool backward = st.range(1);
  use_threads(st, 2);
  Tensor q = rnd({b, len, d}, 11), k = rnd({b, len, d}, 12), v = rnd({b, len, d}, 13);
  Tensor g = rnd({b, len, d}, 14), dq = zeros({b, len, d}), dk = zeros({b, len, d}),
         dv = zeros({b, len, d});
  time_iterations(st, [&] {
    AttentionResult r = attention_forward(q, k, v, heads);
    if (backward) attention_backward(dq, dk, dv, g, q, k, v, r.probs, heads);
    benchmark::DoNotOptimize(r.out.f32());
  });
  // QKᵀ and PV: 2 · 2·B·I²·d; backward adds four products of the same size.
  set_flops(st, 4.0 * b * len * len * d * (backward ? 3 : 1));
}

// Inverted dropout of a [B·I, d] activation at p 0.1 (a layer's output at the
// thesis's rate), its mask drawn from Philox: read x, write the output and the mask.
void BM_Dropout(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  use_threads(st, 2);
  Tensor x = rnd({rows, d}, 15);
  uint64_t call = 0;
  const double gpu_s = time_iterations(st, [&] {
    DropoutResult r = dropout_forward(x, 0.1f, 7, kStreamDropoutBase, call++ * rows * d);
    benchmark::DoNotOptimize(r.out.f32());
  });
  set_bytes(st, rows * d * 12, gpu_s);
}

// Registration in one place, in the order the file defines them; on the GPU
// every benchmark reports the CUDA-event time.
void register_benchmarks() {
  auto reg = [](const char* name, void (*fn)(benchmark::State&)) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, fn);
    if (g_device == Device::cuda) b->UseManualTime();
    return b;
  };
  const std::vector<int64_t>& t = g_thread_counts;
  reg("BM_Matmul", BM_Matmul)
      ->ArgsProduct({{64, 96, 398, 512}, {100, 300}, {0, 1}, t})
      ->ArgNames({"seq", "d", "bwd", "threads"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Softmax", BM_Softmax)
      ->ArgsProduct({{64, 256, 512}, t})
      ->ArgNames({"seq", "threads"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_LayerNorm", BM_LayerNorm)
      ->ArgsProduct({{64, 512}, {100, 300}, t})
      ->ArgNames({"seq", "d", "threads"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Conv1d", BM_Conv1d)
      ->ArgsProduct({{64, 256}, {100, 300}, {1, 5}, t})
      ->ArgNames({"seq", "d", "k", "threads"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Attention", BM_Attention)
      ->ArgsProduct({{64, 256}, {0, 1}, t})
      ->ArgNames({"seq", "bwd", "threads"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Dropout", BM_Dropout)
      ->ArgsProduct({{96, 398}, {32, 300}, t})
      ->ArgNames({"seq", "d", "threads"})
      ->Unit(benchmark::kMillisecond);
}

// Takes `--threads K` / `--threads=K` out of argv; 0 when absent.
int take_threads_flag(int& argc, char** argv) {
  const std::optional<std::string> value = take_flag(argc, argv, "--threads", "a positive count");
  if (!value) return 0;
  char* end = nullptr;
  const long k = std::strtol(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || k < 1)
    throw std::invalid_argument("--threads: expected a positive count, got '" + *value + "'");
  return static_cast<int>(k);
}

// The console output plus, at the end, each benchmark's 1-thread and K-thread
// real time and their ratio (names that differ only in threads:1 / threads:K).
class SpeedupReporter : public benchmark::ConsoleReporter {
 public:
  explicit SpeedupReporter(int k) : k_(k) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    // One time per benchmark: the median when repetitions give one, else the run's.
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string name = r.run_name.str();
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median")
        medians_[name] = r.GetAdjustedRealTime();
      else if (r.run_type == Run::RT_Iteration)
        times_[name] = r.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    if (k_ < 2) return;
    for (const auto& [name, t] : medians_) times_[name] = t;
    const std::string one = "threads:1", all = "threads:" + std::to_string(k_);
    std::printf("\n%-52s %12s %12s %8s\n", "benchmark (ms per iteration)", "1 thread",
                (std::to_string(k_) + " threads").c_str(), "speedup");
    for (const auto& [name, t1] : times_) {
      const size_t at = name.find(one);
      if (at == std::string::npos || at + one.size() != name.size()) continue;
      auto it = times_.find(name.substr(0, at) + all);
      if (it == times_.end()) continue;
      std::printf("%-52s %12.3f %12.3f %7.2fx\n", name.substr(0, at - 1).c_str(), t1, it->second,
                  t1 / it->second);
    }
  }

 private:
  int k_;
  std::map<std::string, double> times_, medians_;
};

}  // namespace

int main(int argc, char** argv) {
  if (!setup_device(argc, argv, "bench_ops")) return 2;
  int k = 1;
  try {
    const int flag = take_threads_flag(argc, argv);
    k = g_device == Device::cuda ? 1 : flag > 0 ? flag : threads();
  } catch (const std::exception& e) {
    std::cerr << "bench_ops: " << e.what() << "\n";
    return 2;
  }
  if (k > 1) g_thread_counts.push_back(k);
  benchmark::AddCustomContext("mare_threads", std::to_string(k));
  benchmark::AddCustomContext("mare_device", to_string(g_device));  // mare report's ops table
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SpeedupReporter reporter(k);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
