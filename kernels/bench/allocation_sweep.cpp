// The allocation sweep: inputs, the timed passes, the copy floor, the
// parallel-eps disagreement counts and the Table-4.14-shaped text. The timing
// protocol is described in allocation_sweep.h; nothing here asserts a time.
#include "kernels/bench/allocation_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "kernels/parallel.h"
#include "kernels/random.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/timing.h"
#endif

namespace mare {

namespace {

// Compiler barrier: the pointed-to memory counts as read and written.
inline void clobber(const void* p) {
  asm volatile("" : : "r"(p) : "memory");
}

using Clock = std::chrono::steady_clock;

// Seconds of `calls` back-to-back calls: wall time (steady_clock) and the
// CPU time of this thread (CLOCK_THREAD_CPUTIME_ID, which leaves out the time
// the thread waited for a core on a shared machine); on cuda also the GPU time
// between two events around the calls.
struct Elapsed {
  double wall = 0.0, cpu = 0.0, gpu = 0.0;
};

double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class F>
Elapsed seconds_of(F&& f, int64_t calls) {
  const double c0 = thread_cpu_now();
  const auto t0 = Clock::now();
  for (int64_t c = 0; c < calls; ++c) f();
  const auto t1 = Clock::now();
  const double c1 = thread_cpu_now();
  return {std::chrono::duration<double>(t1 - t0).count(), c1 - c0};
}

#ifdef MARE_WITH_CUDA
// The same on the GPU: `timer` brackets the calls on the op stream; wall and
// CPU time run until the host has seen the stop event, i.e. the work is done.
template <class F>
Elapsed gpu_seconds_of(cuda::EventTimer& timer, F&& f, int64_t calls) {
  const double c0 = thread_cpu_now();
  const auto t0 = Clock::now();
  timer.start();
  for (int64_t c = 0; c < calls; ++c) f();
  const double ms = timer.stop();
  const auto t1 = Clock::now();
  const double c1 = thread_cpu_now();
  return {std::chrono::duration<double>(t1 - t0).count(), c1 - c0, ms * 1e-3};
}
#endif

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

const char* pass_name(bool backward) {
  return backward ? "forward+backward" : "forward";
}

}  // namespace

AllocationProblem make_allocation_problem(int64_t batch, int64_t seq, int64_t slots, uint64_t seed,
                                          Device device) {
  if (batch < 1 || seq < 1 || slots < 1)
    throw std::invalid_argument(
        "allocation problem: batch, seq and memory size must be >= 1 (got " +
        std::to_string(batch) + ", " + std::to_string(seq) + ", " + std::to_string(slots) + ")");
  AllocationProblem p;
  p.batch = batch;
  p.seq = seq;
  p.slots = slots;
  const Shape s{batch * seq, slots};
  p.usage = Tensor::empty(s, device);
  fill_uniform(p.usage, seed, kStreamData, 0.0f, 1.0f);
  p.d_out = Tensor::empty(s, device);
  fill_uniform(p.d_out, seed + 1, kStreamData, -1.0f, 1.0f);
  p.out = Tensor::zeros(s, device);
  p.d_usage = Tensor::zeros(s, device);
  p.free_lists = Tensor::zeros(s, device, DType::i32);
  return p;
}

int64_t allocation_pass_bytes(int64_t memories, int64_t slots, bool backward) {
  const int64_t plane = memories * slots * static_cast<int64_t>(sizeof(float));
  return backward ? 6 * plane : 2 * plane;
}

void run_allocation_pass(AllocationProblem& p, AllocationVariant v, bool backward) {
  // Forward+backward as a model's step runs it: the backward reads the free lists
  // its forward kept (where the variant keeps them), as PyTorch's autograd keeps
  // the indices of its sort.
  const bool kept = allocation_forward_into(p.out, p.usage, v, backward ? &p.free_lists : nullptr);
  if (backward) allocation_backward(p.d_usage, p.d_out, p.usage, v, kept ? &p.free_lists : nullptr);
  clobber(p.out.f32());
  clobber(p.d_usage.f32());
}

CopyFloor::CopyFloor(int64_t bytes, Device device) {
  if (device == Device::cpu) {
    src_.assign(bytes / 2, 1);
    dst_.assign(bytes / 2, 0);
    return;
  }
  const int64_t floats = (bytes / 2 + 3) / 4;
  src_gpu_ = Tensor::full({floats}, 1.0f, device);
  dst_gpu_ = Tensor::zeros({floats}, device);
}

void CopyFloor::run() {
  if (src_gpu_.defined()) {
    dst_gpu_.copy_from(src_gpu_);  // device to device: queued on the op stream, no wait
    return;
  }
  const int64_t size = static_cast<int64_t>(src_.size());
  char* dst = dst_.data();
  const char* src = src_.data();
  if (threads() == 1 || size <= kCopyChunk) {
    std::memcpy(dst, src, size);  // one call: the C library's large-copy path
  } else {
    const int64_t chunk = std::max(kCopyChunk, (size / 64 + 63) / 64 * 64);
    parallel_for_chunks(size, chunk, [&](int64_t first, int64_t last) {
      std::memcpy(dst + first, src + first, last - first);
    });
  }
  clobber(dst_.data());
}

namespace {

// The microbenchmarks of ComputePeak, in vectors of the kernels' lane width.
constexpr int kPeakLanes = kAllocationLanes;
using PeakVec = float __attribute__((vector_size(kPeakLanes * sizeof(float))));

// The partners of every microbenchmark: values in [0.9, 1), n of them.
void fill_partners(float* partners, int n) {
  for (int i = 0; i < n; ++i)
    partners[i] = 0.9f + 0.1f * static_cast<float>((i * 37) % 101) / 101.0f;
}

// Eight products advance over 64 partners (in L1) per round; renormalised
// between rounds so that nothing reaches the subnormal range.
double simd_pair_rate() {
  alignas(64) static float partners[64 * kPeakLanes];
  fill_partners(partners, 64 * kPeakLanes);
  const PeakVec* h = reinterpret_cast<const PeakVec*>(partners);
  PeakVec p[8], hi[8];
  for (int t = 0; t < 8; ++t) {
    p[t] = PeakVec{} + 1.0f;
    hi[t] = h[(t * 7) % 64];
  }
  const int64_t rounds = 64000 / kPeakLanes;
  const double c0 = thread_cpu_now();
  for (int64_t r = 0; r < rounds; ++r) {
    for (int k = 0; k < 64; ++k) {
      const PeakVec hk = h[k];
      for (int t = 0; t < 8; ++t) p[t] = hk < hi[t] ? p[t] * hk : p[t];
    }
    for (int t = 0; t < 8; ++t) {
      asm volatile("" : "+m"(p[t]));
      p[t] = p[t] < 1e-12f ? PeakVec{} + 1.0f : p[t];
    }
  }
  const double dt = thread_cpu_now() - c0;
  return 2.0 * kPeakLanes * 8.0 * 64.0 * static_cast<double>(rounds) / dt;  // lane-operations / s
}

using PeakInt = int32_t __attribute__((vector_size(kPeakLanes * sizeof(int32_t))));

double simd_count_rate() {
  alignas(64) static float partners[64 * kPeakLanes];
  fill_partners(partners, 64 * kPeakLanes);
  const PeakVec* h = reinterpret_cast<const PeakVec*>(partners);
  PeakInt r[8];
  PeakVec hi[8];
  for (int t = 0; t < 8; ++t) {
    r[t] = PeakInt{};
    hi[t] = h[(t * 7) % 64];
  }
  const int64_t rounds = 64000 / kPeakLanes;
  const double c0 = thread_cpu_now();
  for (int64_t r0 = 0; r0 < rounds; ++r0) {
    for (int k = 0; k < 64; ++k) {
      const PeakVec hk = h[k];
      for (int t = 0; t < 8; ++t) r[t] -= hk < hi[t];
    }
    for (int t = 0; t < 8; ++t) asm volatile("" : "+m"(r[t]), "+m"(hi[t]));  // nothing hoisted
  }
  const double dt = thread_cpu_now() - c0;
  return 2.0 * kPeakLanes * 8.0 * 64.0 * static_cast<double>(rounds) / dt;
}

double scalar_pair_rate() {
  float partners[64];
  fill_partners(partners, 64);
  float p[8], hi[8];
  for (int t = 0; t < 8; ++t) {
    p[t] = 1.0f;
    hi[t] = partners[(t * 7) % 64];
  }
  const int64_t rounds = 20000;
  const double c0 = thread_cpu_now();
  for (int64_t r = 0; r < rounds; ++r) {
    for (int k = 0; k < 64; ++k) {
      const float hk = partners[k];
      for (int t = 0; t < 8; ++t) {
        p[t] = hk < hi[t] ? p[t] * hk : p[t];
        asm volatile("" : "+x"(p[t]));  // keeps the eight products scalar
      }
    }
    for (int t = 0; t < 8; ++t) p[t] = p[t] < 1e-12f ? 1.0f : p[t];
  }
  const double dt = thread_cpu_now() - c0;
  return 2.0 * 8.0 * 64.0 * static_cast<double>(rounds) / dt;
}

// One dependent integer add per cycle on every x86 core since the Pentium 4;
// eight per loop step so that the loop's own instructions do not count.
double clock_rate() {
  const int64_t steps = 2500000;
  int64_t x = 0;
  const double c0 = thread_cpu_now();
  for (int64_t i = 0; i < steps; ++i) {
#if defined(__x86_64__)
    asm volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
        : "+r"(x));
#else
    asm volatile("" : "+r"(x));
    x += 8;
#endif
  }
  const double dt = thread_cpu_now() - c0;
  return 8.0 * static_cast<double>(steps) / dt;
}

}  // namespace

ComputePeak measure_compute_peak() {
  ComputePeak peak;
  peak.simd_lanes = kPeakLanes;
  const double c0 = thread_cpu_now();
  for (int i = 0; i < 3; ++i) {
    peak.select_ops_per_second = std::max(peak.select_ops_per_second, simd_pair_rate());
    peak.count_ops_per_second = std::max(peak.count_ops_per_second, simd_count_rate());
    peak.scalar_ops_per_second = std::max(peak.scalar_ops_per_second, scalar_pair_rate());
    peak.clock_hz = std::max(peak.clock_hz, clock_rate());
  }
  peak.seconds = thread_cpu_now() - c0;
  return peak;
}

const char* to_string(OpsPeak p) {
  return p == OpsPeak::select ? "simd_select" : p == OpsPeak::count ? "simd_count" : "scalar";
}

double allocation_ops_per_memory(AllocationVariant v, int64_t slots, bool backward, OpsPeak* peak,
                                 std::string* what) {
  const double n = static_cast<double>(slots), pairs = n * (n - 1.0);
  const double log2n = slots > 1 ? std::ceil(std::log2(n)) : 0.0;
  double ops = 0.0;
  std::string w;
  OpsPeak kind = OpsPeak::select;
  switch (v) {
    case AllocationVariant::parallel:
    case AllocationVariant::parallel_eps:
    case AllocationVariant::parallel_block:
      ops = 2.0 * pairs + (backward ? 6.0 * pairs : 0.0);
      w = backward ? "N(N-1) compares + N(N-1) select-multiplies (forward) + N(N-1) compares + "
                     "4N(N-1) multiplies + N(N-1) select-adds (backward), simd select peak"
                   : "N(N-1) compares + N(N-1) select-multiplies, simd select peak";
      break;
    case AllocationVariant::rank:
      ops = 2.0 * pairs + 2.0 * n + (backward ? 2.0 * pairs + 4.0 * n : 0.0);
      kind = OpsPeak::count;
      w = backward ? "2 x (N(N-1) compares + N(N-1) adds) + 6N multiplies, simd count peak"
                   : "N(N-1) compares + N(N-1) adds + 2N multiplies, simd count peak";
      break;
    case AllocationVariant::network: {
      // The register kernels' packed keys (AVX-512 builds, N = 4 and 16), else
      // the general path: (û, slot) compared lexicographically (two float
      // compares, one integer compare, two mask operations) and both moved
      // (four selects), the results placed per lane by slot (counted as one
      // operation per slot; the backward also gathers d_a by slot).
      const double c = static_cast<double>(network_comparators(slots));
      kind = OpsPeak::count;
      if (kAllocationLanes == 16 && (slots == 4 || slots == 16)) {
        ops = 5.0 * c + 2.0 * n + (backward ? 7.0 * c + 4.0 * n : 0.0);
        w = backward ? "2 x (C compares + 2C min/max) + 6C selects (results to their slots, "
                       "d_a into free-list order) + 6N multiplies, C = Batcher comparators, "
                       "packed keys, simd count peak"
                     : "C compares + 2C min/max + 2C selects (results to their slots) + 2N "
                       "multiplies, C = Batcher comparators, packed keys, simd count peak";
      } else if (const NetworkWideCounts wc = network_wide_comparators(slots); wc.merge64 > 0) {
        // 32-bit min and max: one lane-operation each; 64-bit (two 32-bit
        // lanes per memory): two each.
        const double net = 2.0 * static_cast<double>(wc.sort16_32) +
                           4.0 * static_cast<double>(wc.sort16_64 + wc.merge64);
        ops = net + 3.0 * n + (backward ? net + 6.0 * n : 0.0);
        w = backward ? "2 x (2 C32 + 4 C64) + 6N multiplies + 3N placements by slot; C32, C64 = "
                       "compare-exchanges (a min and a max) on 32-bit and 64-bit keys: Batcher's "
                       "16-input network per group of 16 slots, then bitonic merges; simd count "
                       "peak"
                     : "2 C32 + 4 C64 + 2N multiplies + N placements by slot; C32, C64 = "
                       "compare-exchanges (a min and a max) on 32-bit and 64-bit keys: Batcher's "
                       "16-input network per group of 16 slots, then bitonic merges; simd count "
                       "peak";
      } else {
        ops = 9.0 * c + 3.0 * n + (backward ? 9.0 * c + 6.0 * n : 0.0);
        w = backward ? "2 x (5C compare operations + 4C selects) + 6N multiplies + 3N "
                       "placements by slot, C = Batcher comparators, simd count peak"
                     : "5C compare operations + 4C selects + 2N multiplies + N placements by "
                       "slot, C = Batcher comparators, simd count peak";
      }
      break;
    }
    case AllocationVariant::sorted:
      kind = OpsPeak::scalar;
      ops = n * log2n + 2.0 * n + (backward ? n * log2n + 4.0 * n : 0.0);
      w = backward ? "2 x N ceil(log2 N) comparisons + 6N multiplies, scalar peak"
                   : "N ceil(log2 N) comparisons + 2N multiplies, scalar peak";
      break;
  }
  if (peak) *peak = kind;
  if (what) *what = w;
  return ops;
}

EpsDisagreement count_eps_disagreement(const AllocationProblem& p) {
  if (p.usage.device() != Device::cpu) {
    AllocationProblem host;
    host.batch = p.batch;
    host.seq = p.seq;
    host.slots = p.slots;
    host.usage = p.usage.to(Device::cpu);
    return count_eps_disagreement(host);
  }
  const int64_t m = p.memories(), n = p.slots;
  Tensor a_sorted = allocation_forward(p.usage, AllocationVariant::sorted);
  Tensor a_eps = allocation_forward(p.usage, AllocationVariant::parallel_eps);
  std::vector<int32_t> o_sorted(n), o_eps(n);
  EpsDisagreement d;
  d.memories = m;
  for (int64_t b = 0; b < m; ++b) {
    const float* u = p.usage.f32() + b * n;
    allocation_order(u, n, AllocationVariant::sorted, o_sorted.data());
    allocation_order(u, n, AllocationVariant::parallel_eps, o_eps.data());
    d.order_differs += o_sorted != o_eps;
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i)
      worst =
          std::max(worst, std::fabs(double(a_eps.f32()[b * n + i]) - a_sorted.f32()[b * n + i]));
    d.alloc_differs += worst > EpsDisagreement::kThreshold;
    d.max_abs_diff = std::max(d.max_abs_diff, worst);
  }
  return d;
}

SweepResult run_allocation_sweep(const SweepConfig& config_in,
                                 const std::function<void(const std::string&)>& progress) {
  SweepResult result;
  result.config = config_in;
  SweepConfig& config = result.config;
  if (config.variants.empty())
    config.variants.assign(allocation_variants().begin(), allocation_variants().end());
  if (config.repetitions < 1)
    throw std::invalid_argument("allocation sweep: repetitions must be >= 1");
  const bool on_gpu = config.device == Device::cuda;
  if (std::string why = device_unavailable(config.device); !why.empty())
    throw std::runtime_error("allocation sweep: device cuda: " + why);
  if (on_gpu && config.cpu_clock)
    throw std::invalid_argument(
        "allocation sweep: on cuda the times come from CUDA events (no thread-CPU clock)");
#ifdef MARE_WITH_CUDA
  std::unique_ptr<cuda::EventTimer> timer;
  if (on_gpu) {
    result.device_name = cuda::device_info(cuda::current_device()).name;
    result.copy_bandwidth_gbs = cuda::measured_copy_bandwidth_gbs();
    timer = std::make_unique<cuda::EventTimer>();
  }
#endif
  if (!on_gpu) result.peak = measure_compute_peak();
  const bool has_eps = std::find(config.variants.begin(), config.variants.end(),
                                 AllocationVariant::parallel_eps) != config.variants.end();
  const auto start = Clock::now();
  // The variants run on `k_threads`; a 1-thread repetition beside each one
  // gives the speedup of the threads (cpu only).
  const int k_threads = on_gpu ? 1 : threads();
  const bool baseline = !on_gpu && config.thread_baseline && k_threads > 1;
  struct RestoreThreads {
    int k;
    ~RestoreThreads() { set_threads(k); }
  } restore{threads()};
  std::vector<bool> passes{false};
  if (config.backward) passes.push_back(true);

  for (int64_t mem : config.mems)
    for (int64_t seq : config.seqs) {
      AllocationProblem p =
          make_allocation_problem(config.batch, seq, mem, config.seed, config.device);
      for (bool backward : passes) {
        const int64_t bytes = allocation_pass_bytes(p.memories(), mem, backward);
        CopyFloor floor(bytes, config.device);
        // Contestants: index 0 is the copy floor, then the variants.
        const size_t k = config.variants.size() + 1;
        auto call = [&](size_t i) {
          if (i == 0)
            floor.run();
          else
            run_allocation_pass(p, config.variants[i - 1], backward);
        };
        // `calls` back-to-back calls of contestant i; on cuda the sizing and
        // the recorded time are the GPU's.
        auto measure = [&](size_t i, int64_t n) {
#ifdef MARE_WITH_CUDA
          if (on_gpu)
            return gpu_seconds_of(
                *timer, [&] { call(i); }, n);
#endif
          return seconds_of([&] { call(i); }, n);
        };
        // Warm-up: the first call of each contestant is timed only to size
        // its repetitions and is not recorded (on cuda it is preceded by an
        // untimed call: module loading and first allocations).
        std::vector<int64_t> calls(k);
        for (size_t i = 0; i < k; ++i) {
          if (on_gpu) measure(i, 1);
          const Elapsed e = measure(i, 1);
          const double once = std::max(on_gpu ? e.gpu : e.wall, 1e-9);
          calls[i] = std::max<int64_t>(1, std::llround(std::ceil(config.min_rep_seconds / once)));
        }
        // Timed repetitions, interleaved: the copy floor runs once before
        // every variant's repetition, so it is sampled repetitions × variants
        // times under the same conditions as the variants.
        std::vector<std::vector<double>> per_call(k), cpu_per_call(k), gpu_per_call(k),
            one_thread(k);
        auto time_rep = [&](size_t i) {
          const Elapsed e = measure(i, calls[i]);
          per_call[i].push_back(e.wall / calls[i]);
          cpu_per_call[i].push_back(e.cpu / calls[i]);
          if (on_gpu) gpu_per_call[i].push_back(e.gpu / calls[i]);
        };
        // On 1 thread (the pool is resized outside the timed calls).
        auto time_rep_1thread = [&](size_t i) {
          set_threads(1);
          const Elapsed e = measure(i, calls[i]);
          one_thread[i].push_back((config.cpu_clock ? e.cpu : e.wall) / calls[i]);
          set_threads(k_threads);
        };
        // The floor runs on the variants' thread count beside every variant
        // repetition, and on 1 thread beside every 1-thread repetition.
        for (int rep = 0; rep < config.repetitions; ++rep)
          for (size_t i = 1; i < k; ++i) {
            time_rep(0);
            time_rep(i);
            if (baseline) {
              time_rep_1thread(0);
              time_rep_1thread(i);
            }
          }

        // The chosen clock fills seconds/min/max and the ratios; both medians
        // are kept. On cuda the chosen clock is the GPU's.
        auto& chosen = on_gpu ? gpu_per_call : config.cpu_clock ? cpu_per_call : per_call;
        const double floor_s = median(chosen[0]);
        for (size_t i = 0; i < k; ++i) {
          SweepRow row;
          row.variant = i == 0 ? "copy" : std::string(to_string(config.variants[i - 1]));
          row.pass = pass_name(backward);
          row.seq = seq;
          row.mem = mem;
          row.batch = config.batch;
          row.memories = p.memories();
          row.bytes = bytes;
          row.calls_per_repetition = calls[i];
          row.repetitions = static_cast<int64_t>(chosen[i].size());
          row.seconds = median(chosen[i]);
          row.seconds_min = *std::min_element(chosen[i].begin(), chosen[i].end());
          row.seconds_max = *std::max_element(chosen[i].begin(), chosen[i].end());
          row.wall_seconds = median(per_call[i]);
          row.cpu_seconds = median(cpu_per_call[i]);
          row.floor_seconds = floor_s;
          row.floor_ratio = row.seconds / floor_s;
          row.gbytes_per_second = bytes / row.seconds / 1e9;
          if (on_gpu)
            row.copy_bandwidth_fraction = row.gbytes_per_second / result.copy_bandwidth_gbs;
          row.threads = on_gpu ? 1 : k_threads;
          if (baseline) {
            row.seconds_1thread = median(one_thread[i]);
            row.thread_speedup = row.seconds_1thread / row.seconds;
            row.floor_seconds_1thread = median(one_thread[0]);
          } else if (!on_gpu) {
            row.floor_seconds_1thread = floor_s;
          }
          if (!on_gpu && i > 0) {
            const double one = baseline ? row.seconds_1thread : row.seconds;
            row.floor_ratio_1thread = one / row.floor_seconds_1thread;
            row.ops_per_memory =
                allocation_ops_per_memory(config.variants[i - 1], mem, backward, &row.ops_peak);
            const double rate = result.peak.rate(row.ops_peak);
            row.bound_seconds = row.ops_per_memory * static_cast<double>(p.memories()) / rate;
            row.peak_fraction = row.bound_seconds / one;
          }
          result.rows.push_back(row);
        }
      }
      if (has_eps) result.disagreements.push_back({seq, mem, count_eps_disagreement(p)});
      if (progress) {
        std::ostringstream line;
        line << "  N " << mem << ", seq " << seq << " (" << p.memories() << " memories) done";
        progress(line.str());
      }
    }

  // Speedup over sorted, point by point.
  std::map<std::tuple<std::string, int64_t, int64_t>, double> sorted_s;
  for (const SweepRow& r : result.rows)
    if (r.variant == "sorted") sorted_s[{r.pass, r.seq, r.mem}] = r.seconds;
  for (SweepRow& r : result.rows) {
    auto it = sorted_s.find({r.pass, r.seq, r.mem});
    if (it != sorted_s.end() && r.variant != "copy") r.speedup_vs_sorted = it->second / r.seconds;
  }
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

std::string format_sweep_tables(const SweepResult& result) {
  const SweepConfig& c = result.config;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, const SweepRow*> at;
  for (const SweepRow& r : result.rows) at[{r.variant, r.pass, r.seq, r.mem}] = &r;
  std::vector<std::string> names{"copy"};
  for (AllocationVariant v : c.variants) names.emplace_back(to_string(v));

  std::ostringstream os;
  char buf[64];
  auto header = [&](const std::string& title) {
    os << "\n" << title << "\n";
    std::snprintf(buf, sizeof buf, "%-15s %5s", "variant", "N");
    os << buf;
    for (int64_t s : c.seqs) {
      std::snprintf(buf, sizeof buf, " %10s", ("seq " + std::to_string(s)).c_str());
      os << buf;
    }
    os << "\n";
  };
  auto table = [&](const std::string& title, const std::string& pass, bool with_copy,
                   const std::function<double(const SweepRow&)>& value, const char* fmt) {
    header(title);
    for (int64_t mem : c.mems)
      for (const std::string& name : names) {
        if (name == "copy" && !with_copy) continue;
        std::snprintf(buf, sizeof buf, "%-15s %5lld", name.c_str(), static_cast<long long>(mem));
        os << buf;
        for (int64_t s : c.seqs) {
          auto it = at.find({name, pass, s, mem});
          if (it == at.end() || (value(*it->second) == 0.0 && name != "copy")) {
            std::snprintf(buf, sizeof buf, " %10s", "-");
          } else {
            std::snprintf(buf, sizeof buf, fmt, value(*it->second));
          }
          os << buf;
        }
        os << "\n";
      }
  };

  const bool on_gpu = c.device == Device::cuda;
  if (!on_gpu) {
    int k = 1;
    for (const SweepRow& r : result.rows) k = std::max(k, r.threads);
    os << "allocation benchmark: batch " << c.batch << " (M = " << c.batch
       << " x seq memories), device cpu, " << k << (k == 1 ? " thread" : " threads")
       << ", medians of " << c.repetitions << " repetitions (warm-up excluded), "
       << (c.cpu_clock ? "thread CPU time" : "wall-clock time")
       << "; copy = memcpy of the bytes the pass reads and writes on the variants' threads (one "
          "memcpy on 1 thread, up to 64 chunks of >= 64 KiB otherwise; ratios: variant / copy on "
          "the same thread count)\n";
    const ComputePeak& pk = result.peak;
    std::snprintf(buf, sizeof buf, "%.2f", pk.clock_hz * 1e-9);
    os << "compute peak of one core (measured in this run): clock " << buf
       << " GHz (dependent adds)";
    auto rate = [&](double ops) {
      char b[96];
      std::snprintf(b, sizeof b, "%.1f G lane-ops/s (%.1f per cycle)", ops * 1e-9,
                    ops / pk.clock_hz);
      return std::string(b);
    };
    os << "; " << pk.simd_lanes << "-lane vectors: compare + select-multiply "
       << rate(pk.select_ops_per_second) << ", compare + add " << rate(pk.count_ops_per_second);
    std::snprintf(buf, sizeof buf, "%.2f", pk.scalar_ops_per_second * 1e-9);
    os << "; scalar compare + select-multiply " << buf << " G ops/s\n";
    os << "operations counted per memory (P = N(N-1)):\n";
    for (bool backward : {false, true}) {
      if (backward && !c.backward) continue;
      for (AllocationVariant v : c.variants) {
        std::string what;
        allocation_ops_per_memory(v, 4, backward, nullptr, &what);
        os << "  " << pass_name(backward) << ", " << to_string(v) << ": " << what << "\n";
      }
    }
  } else {
    os << "allocation benchmark: batch " << c.batch << " (M = " << c.batch
       << " x seq memories), device cuda (" << result.device_name << "), medians of "
       << c.repetitions
       << " repetitions (warm-up excluded), GPU time from CUDA events; copy = device-to-device "
          "cudaMemcpyAsync of the bytes the pass reads and writes\n";
    std::snprintf(buf, sizeof buf, "%.1f", result.copy_bandwidth_gbs);
    os << "copy bandwidth of the device: " << buf
       << " GB/s (best of 5 large device-to-device copies, bytes read + written)\n";
  }
  // The tables of each pass, in order: what each shows, and where it applies.
  enum class Where { always, one_thread_measured, cpu, gpu };
  struct Metric {
    const char* title;
    bool with_copy;  // the copy floor has a row of its own
    double SweepRow::*field;
    double scale;
    const char* format;
    Where where;
  };
  static constexpr Metric kMetrics[] = {
      {"milliseconds per call", true, &SweepRow::seconds, 1e3, " %10.4f", Where::always},
      {"speedup over sorted (sorted time / variant time)", false, &SweepRow::speedup_vs_sorted, 1.0,
       " %10.2f", Where::always},
      {"ratio to the copy floor (variant time / copy time)", false, &SweepRow::floor_ratio, 1.0,
       " %10.2f", Where::always},
      {"milliseconds per call on 1 thread", true, &SweepRow::seconds_1thread, 1e3, " %10.4f",
       Where::one_thread_measured},
      {"1 thread: ratio to the 1-thread copy floor", false, &SweepRow::floor_ratio_1thread, 1.0,
       " %10.2f", Where::one_thread_measured},
      {"speedup of the threads over 1 thread (1-thread time / time)", false,
       &SweepRow::thread_speedup, 1.0, " %10.2f", Where::one_thread_measured},
      {"compute bound of one core, milliseconds (ops per memory x memories / peak)", false,
       &SweepRow::bound_seconds, 1e3, " %10.4f", Where::cpu},
      {"achieved / peak (bound / 1-thread time)", false, &SweepRow::peak_fraction, 1.0, " %10.3f",
       Where::cpu},
      {"fraction of the copy bandwidth (GB/s / ", true, &SweepRow::copy_bandwidth_fraction, 1.0,
       " %10.3f", Where::gpu}};
  bool have_1thread = false;
  for (const SweepRow& r : result.rows) have_1thread = have_1thread || r.seconds_1thread > 0.0;
  std::snprintf(buf, sizeof buf, "%.1f", result.copy_bandwidth_gbs);
  const std::string copy_gbs = std::string(buf) + " GB/s)";
  std::vector<bool> passes{false};
  if (c.backward) passes.push_back(true);
  for (bool backward : passes) {
    const std::string pass = pass_name(backward);
    for (const Metric& m : kMetrics) {
      if ((m.where == Where::one_thread_measured && !have_1thread) ||
          (m.where == Where::cpu && on_gpu) || (m.where == Where::gpu && !on_gpu))
        continue;
      table(
          pass + ": " + m.title + (m.where == Where::gpu ? copy_gbs : ""), pass, m.with_copy,
          [&m](const SweepRow& r) { return r.*m.field * m.scale; }, m.format);
    }
  }
  if (!result.disagreements.empty()) {
    os << "\nparallel-eps vs sorted: memories allocated differently (max |a_eps - a_sorted| > "
       << EpsDisagreement::kThreshold << ") / memories; [memories with a different free list];"
       << " largest difference\n";
    for (const SweepPointDisagreement& d : result.disagreements)
      os << "  N " << d.mem << ", seq " << d.seq << ": " << d.eps.alloc_differs << " / "
         << d.eps.memories << "  [" << d.eps.order_differs << "]  max " << d.eps.max_abs_diff
         << "\n";
  }
  // Summary: the fastest variant per memory size at the longest sequence.
  const int64_t last_seq = c.seqs.empty() ? 0 : *std::max_element(c.seqs.begin(), c.seqs.end());
  os << "\nfastest variant at seq " << last_seq << ":\n";
  for (bool backward : passes)
    for (int64_t mem : c.mems) {
      const SweepRow* best = nullptr;
      for (const SweepRow& r : result.rows)
        if (r.variant != "copy" && r.pass == pass_name(backward) && r.mem == mem &&
            r.seq == last_seq && (!best || r.seconds < best->seconds))
          best = &r;
      if (!best) continue;
      std::snprintf(buf, sizeof buf, "%.2f", best->floor_ratio);
      os << "  " << pass_name(backward) << ", N " << mem << ": " << best->variant << " ("
         << best->seconds * 1e3 << " ms, " << buf << "x the copy floor";
      if (!on_gpu && best->threads > 1 && best->floor_ratio_1thread > 0) {
        std::snprintf(buf, sizeof buf, "%.2f", best->floor_ratio_1thread);
        os << " (1 thread: " << buf << "x the 1-thread floor)";
      }
      if (!on_gpu && best->peak_fraction > 0) {
        std::snprintf(buf, sizeof buf, "%.2f", best->peak_fraction);
        os << ", " << buf << " of its compute peak";
      }
      if (best->speedup_vs_sorted > 0) {
        std::snprintf(buf, sizeof buf, "%.2f", best->speedup_vs_sorted);
        os << ", " << buf << "x faster than sorted";
      }
      os << ")\n";
    }
  std::snprintf(buf, sizeof buf, "%.1f", result.wall_seconds);
  os << "sweep wall time " << buf << " s\n";
  return os.str();
}

}  // namespace mare
