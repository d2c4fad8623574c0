// The GPU side of benchmark timing (see timing.h): the event timer and the
// measured copy bandwidth. No kernels of its own: the yardstick is the
// runtime's device-to-device cudaMemcpyAsync, queued on the op stream like
// everything the benchmarks time.
#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/timing.h"

namespace mare::cuda {

// ------------------------------------------------------------------ event timer
EventTimer::EventTimer() {
  (void)stream();  // makes the chosen device current on this thread: the events belong to it
  MARE_CUDA_CHECK(cudaEventCreate(&start_));
  MARE_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  // No throwing from a destructor; a failure here has no one to report to.
  if (start_) (void)cudaEventDestroy(start_);
  if (stop_) (void)cudaEventDestroy(stop_);
}

void EventTimer::start() {
  MARE_CUDA_CHECK(cudaEventRecord(start_, stream()));
  started_ = true;
}

double EventTimer::stop() {
  if (!started_) throw std::logic_error("EventTimer::stop() called without start()");
  started_ = false;
  MARE_CUDA_CHECK(cudaEventRecord(stop_, stream()));
  MARE_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  MARE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms);
}

// ------------------------------------------------------------------ copy bandwidth
double measured_copy_bandwidth_gbs() {
  static std::mutex mutex;
  static std::map<int, double> measured;  // device -> GB/s
  const int device = current_device();
  std::lock_guard lock(mutex);
  if (auto it = measured.find(device); it != measured.end()) return it->second;

  size_t bytes = static_cast<size_t>(kCopyBandwidthBytes);
  bytes = std::min(bytes, device_info(device).total_memory / 8 / 4096 * 4096);
  if (bytes == 0) throw std::runtime_error("measured_copy_bandwidth_gbs: device memory too small");
  Workspace src(bytes), dst(bytes);
  // Write the source once so the copies read memory that has been touched.
  MARE_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, stream()));
  auto copy = [&] {
    MARE_CUDA_CHECK(
        cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream()));
  };
  copy();  // warm-up, not timed
  EventTimer timer;
  double best_ms = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < 5; ++rep) {
    timer.start();
    copy();
    best_ms = std::min(best_ms, timer.stop());
  }
  if (!(best_ms > 0.0))
    throw std::runtime_error("measured_copy_bandwidth_gbs: the timed copy took no measurable time");
  // Bytes read plus bytes written, as the CPU copy floor counts them.
  const double gbs = 2.0 * static_cast<double>(bytes) / (best_ms * 1e-3) / 1e9;
  measured[device] = gbs;
  return gbs;
}

}  // namespace mare::cuda
