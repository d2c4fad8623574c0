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

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "kernels/ops.h"
#include "kernels/random.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/timing.h"
#endif

namespace {

using namespace mare;

// Where the benchmarks run (set once in main, before any benchmark).
Device g_device = Device::cpu;
double g_copy_gbs = 0.0;  // cuda: the device's measured copy bandwidth, GB/s

Tensor rnd(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s, g_device);
  fill_uniform(t, seed, 1, -1, 1);
  return t;
}

Tensor zeros(const Shape& s) {
  return Tensor::zeros(s, g_device);
}

// The timed loop: Google Benchmark's clock on the host; on the GPU, CUDA
// events around each iteration, reported as its manual time. Returns the
// seconds reported that way (0 on the host).
template <class F>
double time_iterations(benchmark::State& st, F&& body) {
  double gpu_seconds = 0.0;
#ifdef MARE_WITH_CUDA
  if (g_device == Device::cuda) {
    cuda::EventTimer timer;
    for (auto _ : st) {
      try {
        timer.start();
        body();
        const double s = timer.stop() * 1e-3;
        st.SetIterationTime(s);
        gpu_seconds += s;
      } catch (const std::exception& e) {  // e.g. an op without its CUDA kernel
        st.SkipWithError(e.what());
        break;
      }
    }
    return gpu_seconds;
  }
#endif
  for (auto _ : st) body();
  return gpu_seconds;
}

void set_flops(benchmark::State& st, double flops_per_iter) {
  st.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iter * st.iterations(), benchmark::Counter::kIsRate);
}

// bytes_per_second, and on the GPU that rate over the device's copy bandwidth
// (gpu_seconds: what time_iterations returned).
void set_bytes(benchmark::State& st, int64_t bytes_per_iter, double gpu_seconds) {
  st.SetBytesProcessed(st.iterations() * bytes_per_iter);
  if (g_device == Device::cuda && gpu_seconds > 0.0)
    st.counters["copy_bw_fraction"] = static_cast<double>(bytes_per_iter) *
                                      static_cast<double>(st.iterations()) / gpu_seconds /
                                      (g_copy_gbs * 1e9);
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

// Takes `--device X` / `--device=X` out of argv (the rest is Google Benchmark's).
Device take_device_flag(int& argc, char** argv) {
  std::string value = "cpu";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0) {
      if (i + 1 >= argc) throw std::invalid_argument("--device needs a value (cpu or cuda)");
      value = argv[++i];
    } else if (std::strncmp(argv[i], "--device=", 9) == 0) {
      value = argv[i] + 9;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return parse_device(value);
}

// The reason `--device cuda` cannot run here, or "" when it can.
std::string cuda_unavailable_reason() {
  if (!cuda_compiled())
    return "this build has no CUDA backend (configure with -DMARE_CUDA=ON on a machine with nvcc)";
#ifdef MARE_WITH_CUDA
  if (!cuda_available()) return "no CUDA device (" + cuda::no_device_reason() + ")";
#endif
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    g_device = take_device_flag(argc, argv);
    if (g_device == Device::cuda) {
      if (std::string why = cuda_unavailable_reason(); !why.empty())
        throw std::runtime_error("--device cuda: " + why);
#ifdef MARE_WITH_CUDA
      g_copy_gbs = cuda::measured_copy_bandwidth_gbs();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", g_copy_gbs);
      benchmark::AddCustomContext("mare_device", "cuda");
      benchmark::AddCustomContext("cuda_device_name",
                                  cuda::device_info(cuda::current_device()).name);
      benchmark::AddCustomContext("cuda_copy_bandwidth_GBps", buf);
#endif
    }
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
