// An exact count of the multiply-add flops (2·m·n·k per product) that the CPU
// kernels spend in GEMMs: every matmul and batched matmul forward and backward,
// the recurrent cells' (GRPU, GRU, LSTM) products, attention's QKᵀ, PV and their
// four backward products, and conv1d's per-tap products forward and backward.
// The benchmarks read it around one training iteration to put a GEMM bound
// beside the iteration's time (experiments/bench_iteration.h).
//
// Off by default; when off a kernel pays one relaxed atomic load per product.
// When on, each product adds its flops once (not per output block) with a
// relaxed atomic add, so the total is the same integer at any thread count.
// Not counted on the CPU: the memory access ops' small products
// (kernels/memory/). On the GPU every cuBLAS product of the backend counts
// (kernels/cuda/linalg.cu's one GEMM), those small products included, so an
// NTCRE row counts a little more there than on the CPU.
#pragma once

#include <atomic>
#include <cstdint>

namespace mare {

// Turns counting on or off (the count itself is kept).
void set_gemm_counting(bool on);
bool gemm_counting();
// Flops counted since the last reset.
uint64_t gemm_flops();
void reset_gemm_flops();

namespace detail {
extern std::atomic<bool> g_gemm_counting;
extern std::atomic<uint64_t> g_gemm_flops;
// Adds 2·m·n·k when counting is on.
inline void count_gemm(int64_t m, int64_t n, int64_t k) {
  if (g_gemm_counting.load(std::memory_order_relaxed) && m > 0 && n > 0 && k > 0)
    g_gemm_flops.fetch_add(
        2 * static_cast<uint64_t>(m) * static_cast<uint64_t>(n) * static_cast<uint64_t>(k),
        std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace mare
