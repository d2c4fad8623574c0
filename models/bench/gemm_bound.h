// The GEMM bound of a training iteration: the GEMM flops that one
// iteration spends (kernels/ops/gemm_count.h, counted exactly by the kernels)
// over the GEMM throughput that this machine reaches at the same thread count,
// measured in the same process around the iterations (`mare bench iteration`:
// before the row and before each timed iteration; bench_re_iteration: once
// after the warm-up). Header-only, shared by
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

// bench_ops's BM_Matmul step at [rows, k] × [k, n] on `device`, its inputs
// made once; sample() times reps and keeps every rep's time, rate() is the
// median rep's. `mare bench iteration` samples before a row and again before
// each timed iteration, so the rate spans the same minutes as the iteration
// times (on a shared machine the load changes within a row). GEMM counting is
// paused while it runs.
class GemmRateSampler {
 public:
  GemmRateSampler(int64_t rows, int64_t k, int64_t n, Device device = Device::cpu)
      : rows_(rows), k_(k), n_(n), device_(device) {
    auto rnd = [device](const Shape& s, uint64_t seed) {
      Tensor t = Tensor::empty(s);
      fill_uniform(t, seed, 1, -1, 1);
      return t.to(device);
    };
    x_ = rnd({rows, k}, 1);
    w_ = rnd({k, n}, 2);
    g_ = rnd({rows, n}, 3);
    dx_ = Tensor::zeros({rows, k}).to(device);
    dw_ = Tensor::zeros({k, n}).to(device);
  }
  // One untimed rep the first time, then at least `min_reps` timed reps and
  // until `min_seconds` have passed (at most 50 a call).
  void sample(int min_reps, double min_seconds) {
    using Clock = std::chrono::steady_clock;
    const bool counting = gemm_counting();
    set_gemm_counting(false);
    if (!warm_) rep(), warm_ = true;
    const auto start = Clock::now();
    for (int i = 0;
         i < 50 && (i < min_reps ||
                    std::chrono::duration<double>(Clock::now() - start).count() < min_seconds);
         ++i) {
      const auto t0 = Clock::now();
      const double c0 = process_cpu_seconds();
      rep();
      cpu_.push_back(process_cpu_seconds() - c0);
      wall_.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    set_gemm_counting(counting);
  }
  GemmRate rate() const {
    const double flops = 6.0 * static_cast<double>(rows_) * static_cast<double>(k_) * n_;
    GemmRate r;
    r.rows = rows_;
    r.k = k_;
    r.n = n_;
    r.reps = static_cast<int>(wall_.size());
    r.gflops = flops / std::max(1e-12, median_of(wall_)) / 1e9;
    r.gflops_cpu = flops / std::max(1e-12, median_of(cpu_)) / 1e9;
    return r;
  }

 private:
  void rep() {
    Tensor y = matmul_forward(x_, w_);
    matmul_backward(dx_, dw_, g_, x_, w_);
#ifdef MARE_WITH_CUDA
    if (device_ == Device::cuda) cuda::synchronize();
#endif
  }
  int64_t rows_, k_, n_;
  Device device_;
  Tensor x_, w_, g_, dx_, dw_;
  bool warm_ = false;
  std::vector<double> wall_, cpu_;
};

// One sampler's rate: at least `min_reps` reps and `min_seconds`.
inline GemmRate measure_gemm_rate(int64_t rows, int64_t k, int64_t n, Device device = Device::cpu,
                                  int min_reps = 5, double min_seconds = 0.4) {
  GemmRateSampler s(rows, k, n, device);
  s.sample(min_reps, min_seconds);
  return s.rate();
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
