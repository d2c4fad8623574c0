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
#include <benchmark/benchmark.h>

#include <iostream>
#include <stdexcept>
#include <string>

#include "kernels/bench/bench_device.h"
#include "kernels/ops.h"
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

// [B·I, d] × [d, d]: the projections of every layer.
void BM_Matmul(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  const bool backward = st.range(2);
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
  Tensor x = rnd({rows, cols}, 4);
  const double gpu_s = time_iterations(st, [&] {
    Tensor y = softmax_forward(x);
    benchmark::DoNotOptimize(y.f32());
  });
  set_bytes(st, rows * cols * 8, gpu_s);  // read x, write y
}

void BM_LayerNorm(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  Tensor x = rnd({rows, d}, 5), gamma = rnd({d}, 6), beta = rnd({d}, 7);
  const double gpu_s = time_iterations(st, [&] {
    NormResult r = layer_norm_forward(x, gamma, beta);
    benchmark::DoNotOptimize(r.out.f32());
  });
  set_bytes(st, rows * d * 8, gpu_s);
}

void BM_Conv1d(benchmark::State& st) {
  const int64_t b = 32, len = st.range(0), d = st.range(1), k = st.range(2);
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

// Registration in one place, in the order the file defines them; on the GPU
// every benchmark reports the CUDA-event time.
void register_benchmarks() {
  auto reg = [](const char* name, void (*fn)(benchmark::State&)) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, fn);
    if (g_device == Device::cuda) b->UseManualTime();
    return b;
  };
  reg("BM_Matmul", BM_Matmul)
      ->ArgsProduct({{64, 512}, {100, 300}, {0, 1}})
      ->ArgNames({"seq", "d", "bwd"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Softmax", BM_Softmax)
      ->Arg(64)
      ->Arg(256)
      ->Arg(512)
      ->ArgName("seq")
      ->Unit(benchmark::kMillisecond);
  reg("BM_LayerNorm", BM_LayerNorm)
      ->ArgsProduct({{64, 512}, {100, 300}})
      ->ArgNames({"seq", "d"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Conv1d", BM_Conv1d)
      ->ArgsProduct({{64, 256}, {100, 300}, {1, 5}})
      ->ArgNames({"seq", "d", "k"})
      ->Unit(benchmark::kMillisecond);
  reg("BM_Attention", BM_Attention)
      ->ArgsProduct({{64, 256}, {0, 1}})
      ->ArgNames({"seq", "bwd"})
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    setup_device(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_ops: " << e.what() << "\n";
    return 2;
  }
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
