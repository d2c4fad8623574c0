// The GEMM bound of a training iteration (issue 17): the GEMM flops that one
// iteration spends (kernels/ops/gemm_count.h, counted exactly by the kernels)
// over the GEMM throughput that this machine reaches at the same thread count,
// measured in the same process just before. Header-only, shared by
// bench_re_iteration and `mare bench iteration` (experiments/bench_iteration.h).
//
// The throughput is measured with exactly bench_ops's BM_Matmul step
// (kernels/bench/bench_ops.cpp): out = x·w, then matmul_backward into dx and dw
// (three GEMMs of 2·rows·k·n flops). The bound uses the model's dominant shape,
// [B·T, d] × [d, d] for the relation models and [B, I + H] × [I + H, 2(H + K)]
// for the GRPU: it is what the model's largest products actually reach, so
// ratio = 1 means "nothing but GEMMs, each as fast as the projection GEMM". A
// large square GEMM (1024³) is measured beside it as the core's peak (its
// bound is the lower, harder one: products smaller than the square one, such
// as attention's per-head T × d/heads × T, run below the peak).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <time.h>

#include "kernels/ops/gemm_count.h"
#include "kernels/ops/linalg.h"
#include "kernels/random.h"
#include "kernels/tensor.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::bench {

// CPU time of the whole process (every thread), seconds.
inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct GemmRate {
  int64_t rows = 0, k = 0, n = 0;
  double gflops = 0;      // median rep, wall clock
  double gflops_cpu = 0;  // median rep, process CPU time
  int reps = 0;
  std::string shape() const {
    return "[" + std::to_string(rows) + ", " + std::to_string(k) + "] x [" + std::to_string(k) +
           ", " + std::to_string(n) + "] forward+backward";
  }
};

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// bench_ops's BM_Matmul step at [rows, k] × [k, n] on `device`: one warm-up
// rep, then at least `min_reps` reps and until `min_seconds` have passed (at
// most 50); the median rep's rate. GEMM counting is paused meanwhile.
inline GemmRate measure_gemm_rate(int64_t rows, int64_t k, int64_t n, Device device = Device::cpu,
                                  int min_reps = 5, double min_seconds = 0.4) {
  using Clock = std::chrono::steady_clock;
  const bool counting = gemm_counting();
  set_gemm_counting(false);
  auto rnd = [device](const Shape& s, uint64_t seed) {
    Tensor t = Tensor::empty(s);
    fill_uniform(t, seed, 1, -1, 1);
    return t.to(device);
  };
  Tensor x = rnd({rows, k}, 1), w = rnd({k, n}, 2), g = rnd({rows, n}, 3);
  Tensor dx = Tensor::zeros({rows, k}).to(device), dw = Tensor::zeros({k, n}).to(device);
  auto rep = [&] {
    Tensor y = matmul_forward(x, w);
    matmul_backward(dx, dw, g, x, w);
#ifdef MARE_WITH_CUDA
    if (device == Device::cuda) cuda::synchronize();
#endif
  };
  rep();
  std::vector<double> wall, cpu;
  const auto start = Clock::now();
  while (static_cast<int>(wall.size()) < 50 &&
         (static_cast<int>(wall.size()) < min_reps ||
          std::chrono::duration<double>(Clock::now() - start).count() < min_seconds)) {
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    rep();
    cpu.push_back(process_cpu_seconds() - c0);
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  set_gemm_counting(counting);
  const double flops = 6.0 * static_cast<double>(rows) * static_cast<double>(k) * n;
  GemmRate r;
  r.rows = rows;
  r.k = k;
  r.n = n;
  r.reps = static_cast<int>(wall.size());
  r.gflops = flops / median_of(wall) / 1e9;
  r.gflops_cpu = flops / std::max(1e-12, median_of(cpu)) / 1e9;
  return r;
}

// Counts the GEMM flops of one call of `fn` (counting on only meanwhile).
template <class F>
auto count_gemm_flops(uint64_t& flops, F&& fn) {
  const bool was = gemm_counting();
  reset_gemm_flops();
  set_gemm_counting(true);
  struct Restore {
    bool was;
    ~Restore() { set_gemm_counting(was); }
  } restore{was};
  auto r = fn();
  flops = gemm_flops();
  return r;
}

}  // namespace mare::bench
