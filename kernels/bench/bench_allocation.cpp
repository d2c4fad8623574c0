// Allocation benchmarks (Google Benchmark): every allocation variant over
// seq ∈ {1, 10, 50, 100, 200, 500, 1000} × N ∈ {4, 16, 32, 64, 128}, batch 32
// (M = 32·seq memories), forward (bwd:0) and forward+backward (bwd:1), beside
// BM_CopyFloor: a memcpy of exactly the bytes the same pass must read and
// write (on the kernel threads like the variants: CopyFloor in
// allocation_sweep.h; MARE_THREADS=1 for the 1-thread statement). Inputs and problem sizes come
// from kernels/bench/allocation_sweep.h, the code `mare bench allocation` runs, so both time the
// same thing; this binary adds Google Benchmark's own repetitions, aggregates and JSON:
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

#include <iostream>
#include <stdexcept>
#include <string>

#include "kernels/bench/allocation_sweep.h"
#include "kernels/bench/bench_device.h"

namespace {

using namespace mare;
using namespace mare::bench;

constexpr int64_t kBatch = 32;
const std::vector<int64_t> kSeqs{1, 10, 50, 100, 200, 500, 1000};
const std::vector<int64_t> kMems{4, 16, 32, 64, 128};

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

}  // namespace

int main(int argc, char** argv) {
  if (!setup_device(argc, argv, "bench_allocation")) return 2;
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
