// Allocation benchmarks (Google Benchmark): every allocation variant over
// seq ∈ {1, 10, 50, 100, 200, 500, 1000} × N ∈ {4, 16, 32, 64, 128}, batch 32
// (M = 32·seq memories), forward (bwd:0) and forward+backward (bwd:1), beside
// BM_CopyFloor: a memcpy of exactly the bytes the same pass must read and
// write. Inputs and problem sizes come from kernels/memory/allocation_sweep.h,
// the code `mare bench allocation` runs, so both time the same thing; this
// binary adds Google Benchmark's own repetitions, aggregates and JSON:
//   build/kernels/bench/bench_allocation --benchmark_repetitions=5
//       --benchmark_out=allocation.json --benchmark_out_format=json
// Counters: bytes_per_second (from SetBytesProcessed), items_per_second
// (memories), and on parallel-eps rows `alloc_differs`, the memories it
// allocates differently from sorted (computed before timing).
//
// `--device cuda` (or `--device=cuda`; taken out of argv before Google
// Benchmark parses the rest; default cpu) times the CUDA allocation kernels on
// problems made on the GPU, with the copy floor a device-to-device
// cudaMemcpyAsync of the same bytes. Each iteration is timed with CUDA events
// on the op stream (kernels/cuda/timing.h) and reported with SetIterationTime
// (UseManualTime: names gain `/manual_time`); every row adds
// `copy_bw_fraction`, its bytes/s over the device's measured copy bandwidth
// (which, with the device's name, goes to the JSON context). Without the CUDA
// backend or without a GPU, `--device cuda` exits with the reason.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "kernels/memory/allocation_sweep.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/timing.h"
#endif

namespace {

using namespace mare;

constexpr int64_t kBatch = 32;
const std::vector<int64_t> kSeqs{1, 10, 50, 100, 200, 500, 1000};
const std::vector<int64_t> kMems{4, 16, 32, 64, 128};

// Where the benchmarks run (set once in main, before any benchmark).
Device g_device = Device::cpu;
double g_copy_gbs = 0.0;  // cuda: the device's measured copy bandwidth, GB/s

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
      } catch (const std::exception& e) {  // e.g. a variant without its CUDA kernel
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

// On the GPU: bytes/s over the device's copy bandwidth (gpu_seconds: what
// time_iterations returned).
void set_copy_fraction(benchmark::State& st, int64_t bytes_per_iter, double gpu_seconds) {
  if (g_device == Device::cuda && gpu_seconds > 0.0)
    st.counters["copy_bw_fraction"] = static_cast<double>(bytes_per_iter) *
                                      static_cast<double>(st.iterations()) / gpu_seconds /
                                      (g_copy_gbs * 1e9);
}

void bm_allocation(benchmark::State& st, AllocationVariant v) {
  const int64_t seq = st.range(0), mem = st.range(1);
  const bool backward = st.range(2) != 0;
  AllocationProblem p = make_allocation_problem(kBatch, seq, mem, 1, g_device);
  if (v == AllocationVariant::parallel_eps)
    st.counters["alloc_differs"] = static_cast<double>(count_eps_disagreement(p).alloc_differs);
  const double gpu_s = time_iterations(st, [&] { run_allocation_pass(p, v, backward); });
  const int64_t bytes = allocation_pass_bytes(p.memories(), mem, backward);
  st.SetBytesProcessed(st.iterations() * bytes);
  st.SetItemsProcessed(st.iterations() * p.memories());
  set_copy_fraction(st, bytes, gpu_s);
}

void bm_copy_floor(benchmark::State& st) {
  const int64_t seq = st.range(0), mem = st.range(1);
  const bool backward = st.range(2) != 0;
  const int64_t bytes = allocation_pass_bytes(kBatch * seq, mem, backward);
  CopyFloor floor(bytes, g_device);
  const double gpu_s = time_iterations(st, [&] { floor.run(); });
  st.SetBytesProcessed(st.iterations() * bytes);
  st.SetItemsProcessed(st.iterations() * kBatch * seq);
  set_copy_fraction(st, bytes, gpu_s);
}

// Wall-clock time on the host, CUDA-event time on the GPU.
benchmark::internal::Benchmark* timed(benchmark::internal::Benchmark* b) {
  return g_device == Device::cuda ? b->UseManualTime() : b->UseRealTime();
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

}  // namespace

int main(int argc, char** argv) {
  try {
    g_device = take_device_flag(argc, argv);
    if (std::string why = benchmark_device_unavailable(g_device); !why.empty())
      throw std::runtime_error("--device cuda: " + why);
#ifdef MARE_WITH_CUDA
    if (g_device == Device::cuda) {
      g_copy_gbs = cuda::measured_copy_bandwidth_gbs();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", g_copy_gbs);
      benchmark::AddCustomContext("mare_device", "cuda");
      benchmark::AddCustomContext("cuda_device_name",
                                  cuda::device_info(cuda::current_device()).name);
      benchmark::AddCustomContext("cuda_copy_bandwidth_GBps", buf);
    }
#endif
  } catch (const std::exception& e) {
    std::cerr << "bench_allocation: " << e.what() << "\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (AllocationVariant v : allocation_variants())
    timed(
        benchmark::RegisterBenchmark(("BM_Allocation/variant:" + std::string(to_string(v))).c_str(),
                                     [v](benchmark::State& st) { bm_allocation(st, v); }))
        ->ArgsProduct({kSeqs, kMems, {0, 1}})
        ->ArgNames({"seq", "mem", "bwd"})
        ->Unit(benchmark::kMicrosecond);
  timed(benchmark::RegisterBenchmark("BM_CopyFloor", bm_copy_floor))
      ->ArgsProduct({kSeqs, kMems, {0, 1}})
      ->ArgNames({"seq", "mem", "bwd"})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
