// The allocation benchmark sweep (SPEC §10): every allocation variant
// over sequence length × memory size, forward and forward+backward, each next
// to a plain copy of exactly the bytes the pass must read and write (the
// floor no allocation kernel can beat), plus how many memories `parallel-eps`
// allocates differently from `sorted`. Shared by `mare bench allocation` and
// the Google Benchmark binary kernels/bench/bench_allocation.
//
// Timing protocol (rule of this file): the variants and the copy floor on
// threads() threads (each repetition of both also on 1 thread when that is
// more, for the 1-thread statement); a sweep point's inputs
// are built before anything is timed; per (point, pass) each contestant's first call is a warm-up,
// timed only to size a repetition to at least `min_rep_seconds` of back-to-back calls, and not
// recorded; then `repetitions` rounds in which every variant's repetition is preceded by a
// repetition of the copy floor (interleaved, so that noise from a shared
// machine hits them alike; the floor is sampled repetitions × variants
// times). Reported: the median over repetitions of seconds per call, with min
// and max. std::chrono::steady_clock around whole repetitions; a compiler
// barrier after every call keeps the copy from being elided (the kernels live
// in another translation unit and cannot be).
//
// On the GPU (SweepConfig::device = cuda; needs a build with the CUDA backend
// and a device): the problem's tensors live on the GPU, the variants are the
// CUDA allocation kernels (allocation_forward_into / allocation_backward on
// cuda tensors), the copy floor is a device-to-device cudaMemcpyAsync of the
// same bytes, and each repetition is timed with CUDA events recorded on the op
// stream around its back-to-back calls (kernels/cuda/timing.h): GPU time, not
// launch time. Same protocol otherwise, plus one untimed call per contestant
// before the warm-up (so lazy module loading and first allocations do not size
// the repetitions). The result also carries the device's measured copy
// bandwidth, and every row its GB/s as a fraction of it. The parallel-eps
// disagreement counts are a property of the inputs and come from the CPU
// reference on a host copy of the same usages.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/memory/allocation.h"
#include "kernels/tensor.h"

namespace mare {

// Inputs of one sweep point: M = batch · seq memories of N slots.
struct AllocationProblem {
  int64_t batch = 0, seq = 0, slots = 0;
  Tensor usage;       // [M, N], uniform in [0, 1) from Philox (24-bit values, so exact ties occur)
  Tensor d_out;       // [M, N], uniform in [−1, 1): the cotangent of the backward pass
  Tensor out;         // [M, N], preallocated output of the forward
  Tensor d_usage;     // [M, N], preallocated gradient (the backward accumulates into it)
  Tensor free_lists;  // [M, N] int32: the free lists a forward+backward pass keeps between the two
  int64_t memories() const { return batch * seq; }
};
// The tensors are made on `device` (Philox gives the same bits on both).
AllocationProblem make_allocation_problem(int64_t batch, int64_t seq, int64_t slots, uint64_t seed,
                                          Device device = Device::cpu);

// Bytes one pass must read and write: forward reads u and writes a (8·M·N);
// forward+backward adds reading u, d_a, d_u and writing d_u (24·M·N in all).
int64_t allocation_pass_bytes(int64_t memories, int64_t slots, bool backward);

// One timed call of a pass (forward, or forward then backward) on a problem.
void run_allocation_pass(AllocationProblem& p, AllocationVariant v, bool backward);

// The copy floor: copies bytes/2 from one buffer to another (bytes/2 read,
// bytes/2 written): memcpy on the host, a device-to-device cudaMemcpyAsync on
// the GPU (bytes/2 rounded up to whole floats there). On the host, with
// threads() > 1, the copy is cut into at most 64 chunks of at least 64 KiB
// (from the size alone) run on the kernel threads (kernels/parallel.h), so it
// runs on as many threads as the variants beside it; on 1 thread it is one
// memcpy (the C library's large-copy path; 64 KiB pieces measured up to 1.5x
// slower on one core).
class CopyFloor {
 public:
  static constexpr int64_t kCopyChunk = 64 * 1024;
  explicit CopyFloor(int64_t bytes, Device device = Device::cpu);
  void run();

 private:
  std::vector<char> src_, dst_;  // on the host
  Tensor src_gpu_, dst_gpu_;     // on cuda: [ceil(bytes / 8)] floats each
};

// How `parallel-eps` differs from `sorted` on one problem's usages.
struct EpsDisagreement {
  int64_t memories = 0;
  int64_t order_differs = 0;  // memories whose free list differs
  int64_t alloc_differs = 0;  // memories with max_n |a_eps − a_sorted| > threshold
  double max_abs_diff = 0.0;  // over all memories
  static constexpr double kThreshold = 1e-3;  // far above the O(N·ε') of raw u vs û
};
// Computed by the CPU reference (on a host copy when the problem is on cuda).
EpsDisagreement count_eps_disagreement(const AllocationProblem& p);

// The compute bound of a variant (cpu): the operations its algorithm performs
// per memory, counted in lane-operations (one compare, select, multiply or add
// on one float), and the peak rate at which this core executes them, measured
// by microbenchmarks in the same run (no clock or port count is assumed), in
// vectors of the build's register width, 8 independent chains over 64
// partners in L1:
//   select  the mask forms' inner step, a compare and a select-multiply
//           (`p = h_k < h_i ? p·h_k : p`), 2 lane-operations per step and lane;
//   count   rank's counting step, a compare and an add of its mask
//           (`r −= h_k < h_i`), 2 lane-operations per step and lane;
//   scalar  the select step on scalars (what a sort's data-dependent
//           comparisons can use at best).
// What is counted, per memory of N slots (P = N(N − 1) ordered pairs):
//   parallel, parallel-eps, parallel-block (select)
//     forward  P compares + P select-multiplies (2P)
//     backward P compares + 4P multiplies (prefix, suffix, two for the term)
//              + P select-adds (6P)
//   rank (count)
//     forward  P compares + P adds (the counting) + 2N multiplies (2P + 2N)
//     backward the counting again + 4N (2P + 4N)
//   network (count), C = Batcher comparators (network_comparators); with
//   packed keys (AVX-512 builds, N = 4 and 16):
//     forward  C compares + 2C min/max + 2C selects (results back to their
//              slots) + 2N multiplies (5C + 2N)
//     backward the network again (3C) + 4C selects (d_a into free-list order,
//              the gradient back) + 4N (7C + 4N)
//   the wide path (AVX-512 builds, 16 < N ≤ 128; network_wide_comparators):
//   C32 compare-exchanges on 32-bit keys (a min and a max, 2 operations) and
//   C64 on 64-bit keys (two 32-bit lanes per memory, 4 operations):
//     forward  2 C32 + 4 C64 + 2N multiplies + N placements by slot
//     backward the network again + 4N + 2N placements
//   otherwise (the general path: (û, slot) pairs compared lexicographically,
//   results placed by slot):
//     forward  5C compare operations + 4C selects + 2N multiplies + N
//              placements (9C + 3N)
//     backward the network again (9C) + 4N + 2N placements (9C + 6N)
//   sorted (scalar)
//     forward  N·ceil(log2 N) comparisons + 2N multiplies
//     backward the same sort + 4N
// The bound of a pass is memories × ops / peak for one core.
enum class OpsPeak { select, count, scalar };
const char* to_string(OpsPeak p);  // "simd_select" | "simd_count" | "scalar"

struct ComputePeak {
  int simd_lanes = 1;                  // float lanes of the build's vector registers (16, 8 or 4)
  double select_ops_per_second = 0.0;  // lane-operations per second, one core
  double count_ops_per_second = 0.0;   // lane-operations per second, one core
  double scalar_ops_per_second = 0.0;  // scalar operations per second, one core
  double clock_hz = 0.0;               // a dependent integer-add chain: cycles per second
  double seconds = 0.0;                // time the microbenchmarks took
  double rate(OpsPeak p) const {
    return p == OpsPeak::select  ? select_ops_per_second
           : p == OpsPeak::count ? count_ops_per_second
                                 : scalar_ops_per_second;
  }
};
// Runs the microbenchmarks on the calling thread (best of 3 each, ~0.1 s in all).
ComputePeak measure_compute_peak();
// Lane-operations per memory of one pass and the peak they run at; `what`
// (may be null) receives the count in words.
double allocation_ops_per_memory(AllocationVariant v, int64_t slots, bool backward, OpsPeak* peak,
                                 std::string* what = nullptr);

// What `mare bench allocation --clock` takes: wall (steady_clock) or cpu (this
// thread's CPU time; SweepConfig::cpu_clock).
inline std::vector<std::string> allocation_clock_names() {
  return {"wall", "cpu"};
}

struct SweepConfig {
  std::vector<AllocationVariant> variants;  // default: every variant
  std::vector<int64_t> seqs{1, 10, 50, 100, 200, 500, 1000};
  std::vector<int64_t> mems{4, 16, 32, 64, 128};
  int64_t batch = 32;
  int repetitions = 5;
  double min_rep_seconds = 1e-3;
  uint64_t seed = 1;
  bool backward = true;  // also time forward+backward
  // Which clock fills SweepRow::seconds and the ratios: wall (steady_clock,
  // default) or this thread's CPU time (robust when the machine is shared).
  // On cuda it is always the CUDA events, and cpu_clock must stay false.
  bool cpu_clock = false;  // `mare bench allocation --clock`: allocation_clock_names()
  Device device = Device::cpu;
  // cpu: the variants run on threads() threads (kernels/parallel.h); when that
  // is more than 1 and thread_baseline is set, each repetition of a variant is
  // also timed on 1 thread (SweepRow::seconds_1thread, thread_speedup).
  bool thread_baseline = true;
};

struct SweepRow {
  std::string variant;  // a variant name, or "copy" for the floor
  std::string pass;     // "forward" | "forward+backward"
  int64_t seq = 0, mem = 0, batch = 0, memories = 0;
  int64_t bytes = 0;  // allocation_pass_bytes
  int64_t calls_per_repetition = 0;
  int64_t repetitions = 0;    // timed repetitions behind the median (the copy: × variants)
  double seconds = 0.0;       // median over repetitions, per call, on the chosen clock
  double wall_seconds = 0.0;  // median of wall-clock time per call (cuda: until the GPU is done)
  double cpu_seconds = 0.0;   // median of thread CPU time per call (cuda: the host thread's)
  double seconds_min = 0.0, seconds_max = 0.0;
  double floor_seconds = 0.0;      // the copy floor's median, same point, pass and thread count
  double floor_ratio = 0.0;        // seconds / floor_seconds (like with like: same threads)
  double speedup_vs_sorted = 0.0;  // sorted's seconds / seconds (0 when sorted was not run)
  double gbytes_per_second = 0.0;  // bytes / seconds / 1e9
  double copy_bandwidth_fraction = 0.0;  // cuda: gbytes_per_second / the device's copy bandwidth
  int threads = 1;                       // threads `seconds` ran on (cpu; the copy as the variants)
  double seconds_1thread = 0.0;          // the same median on 1 thread (0 when not measured)
  double thread_speedup = 0.0;           // seconds_1thread / seconds (0 when not measured)
  // The 1-thread statement: the copy floor on 1 thread (timed beside the
  // variant's 1-thread repetitions; equal to floor_seconds when threads = 1)
  // and the 1-thread time over it.
  double floor_seconds_1thread = 0.0;
  double floor_ratio_1thread = 0.0;
  // Compute bound (cpu variants): allocation_ops_per_memory × memories over
  // one core's measured peak, and the 1-thread time's distance from it
  // (achieved / peak = bound_seconds / the 1-thread time).
  double ops_per_memory = 0.0;
  OpsPeak ops_peak = OpsPeak::select;
  double bound_seconds = 0.0;
  double peak_fraction = 0.0;
};

struct SweepPointDisagreement {
  int64_t seq = 0, mem = 0;
  EpsDisagreement eps;
};

struct SweepResult {
  SweepConfig config;
  std::vector<SweepRow> rows;
  std::vector<SweepPointDisagreement> disagreements;  // when parallel-eps is among the variants
  double wall_seconds = 0.0;
  // cuda only: the device's name and its measured copy bandwidth (GB/s, bytes
  // read + written; kernels/cuda/timing.h).
  std::string device_name;
  double copy_bandwidth_gbs = 0.0;
  ComputePeak peak;  // cpu only: measured once before the sweep
};

// Runs the sweep; `progress` (may be empty) receives one line per point.
SweepResult run_allocation_sweep(const SweepConfig& config,
                                 const std::function<void(const std::string&)>& progress = {});

// The result as Table-4.14-shaped text: for each pass, tables of median ms per
// call, speedup over sorted and ratio to the copy floor (variant × memory size
// × sequence length), the parallel-eps disagreement table, and a summary line
// per memory size (fastest variant at the longest sequence). On cuda the
// header names the device and its copy bandwidth, and each pass adds a table of
// GB/s as a fraction of that bandwidth.
std::string format_sweep_tables(const SweepResult& result);

}  // namespace mare
