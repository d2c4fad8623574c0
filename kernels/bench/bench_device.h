// What the two Google Benchmark binaries (bench_ops, bench_allocation) share
// for `--device cuda`: the flag, the device checks and JSON context, the timed
// loop (CUDA events reported as manual time on the GPU) and the copy-bandwidth
// counter. Header-only; used by those two programs only.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/tensor.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/timing.h"
#endif

namespace mare::bench {

// Where the benchmarks run (set once in main, before any benchmark).
inline Device g_device = Device::cpu;
inline double g_copy_gbs = 0.0;  // cuda: the device's measured copy bandwidth, GB/s

// Takes `NAME VALUE` / `NAME=VALUE` out of argv (the rest is Google Benchmark's);
// nullopt when absent. `expected` names the value in the error when it is missing.
inline std::optional<std::string> take_flag(int& argc, char** argv, const std::string& name,
                                            const std::string& expected) {
  std::optional<std::string> value;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == name) {
      if (i + 1 >= argc) throw std::invalid_argument(name + " needs a value (" + expected + ")");
      value = argv[++i];
    } else if (std::strncmp(argv[i], (name + "=").c_str(), name.size() + 1) == 0) {
      value = argv[i] + name.size() + 1;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return value;
}

inline Device take_device_flag(int& argc, char** argv) {
  return parse_device(take_flag(argc, argv, "--device", "cpu or cuda").value_or("cpu"));
}

// Parses the flag, refuses a device that cannot run here (with the reason),
// and on the GPU measures the copy bandwidth and records the device in the
// JSON context. On failure prints "PROGRAM: why" and returns false (main
// exits 2).
inline bool setup_device(int& argc, char** argv, const char* program) {
  try {
    g_device = take_device_flag(argc, argv);
    if (std::string why = device_unavailable(g_device); !why.empty())
      throw std::runtime_error("--device cuda: " + why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return false;
  }
#ifdef MARE_WITH_CUDA
  if (g_device == Device::cuda) {
    g_copy_gbs = cuda::measured_copy_bandwidth_gbs();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", g_copy_gbs);
    benchmark::AddCustomContext("mare_device", "cuda");
    benchmark::AddCustomContext("cuda_device_name", cuda::device_info(cuda::current_device()).name);
    benchmark::AddCustomContext("cuda_copy_bandwidth_GBps", buf);
  }
#endif
  return true;
}

// The timed loop: Google Benchmark's clock on the host; on the GPU, CUDA
// events around each iteration, reported as its manual time (benchmarks run
// on the GPU are registered with UseManualTime). Returns the seconds reported
// that way (0 on the host).
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
      } catch (const std::exception& e) {
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
inline void set_copy_fraction(benchmark::State& st, int64_t bytes_per_iter, double gpu_seconds) {
  if (g_device == Device::cuda && gpu_seconds > 0.0)
    st.counters["copy_bw_fraction"] = static_cast<double>(bytes_per_iter) *
                                      static_cast<double>(st.iterations()) / gpu_seconds /
                                      (g_copy_gbs * 1e9);
}

}  // namespace mare::bench
