#include "kernels/ops/gemm_count.h"

namespace mare {

namespace detail {
std::atomic<bool> g_gemm_counting{false};
std::atomic<uint64_t> g_gemm_flops{0};
}  // namespace detail

void set_gemm_counting(bool on) {
  detail::g_gemm_counting.store(on, std::memory_order_relaxed);
}
bool gemm_counting() {
  return detail::g_gemm_counting.load(std::memory_order_relaxed);
}
uint64_t gemm_flops() {
  return detail::g_gemm_flops.load(std::memory_order_relaxed);
}
void reset_gemm_flops() {
  detail::g_gemm_flops.store(0, std::memory_order_relaxed);
}

}  // namespace mare
