// Timing of GPU work for the benchmarks, as seen from plain C++ (no CUDA
// headers here, so Google Benchmark binaries and the sweep compile with the
// host compiler): an event timer and the device's measured copy bandwidth, the
// yardstick every GPU benchmark reports its GB/s against. Only compiled when
// the CUDA backend is (MARE_WITH_CUDA); callers guard their uses.
//
// Why events: ops are queued asynchronously on `cuda::stream()`, so a host clock
// around the calls measures the launches, not the work. The timer records one
// event before and one after the calls on that same stream and reports the GPU
// time between them (cudaEventElapsedTime, resolution about 0.5 µs). The host's
// wait for the second event is not part of the time; launch gaps between the
// recorded calls are (a launch-bound op is reported as launch-bound).
#pragma once

// cudaEvent_t is `CUevent_st*` (driver_types.h); declared here so that this
// header needs no CUDA include.
struct CUevent_st;

namespace mare::cuda {

// Milliseconds of GPU time between start() and stop(), both recorded on
// cuda::stream() of the current device. stop() waits for the stop event.
//   EventTimer t;  t.start();  op(...);  double ms = t.stop();
// A timer belongs to the device that was current when it was made.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start();
  double stop();  // milliseconds since start(); throws if start() was not called

 private:
  CUevent_st* start_ = nullptr;
  CUevent_st* stop_ = nullptr;
  bool started_ = false;
};

// Bytes of one copy behind measured_copy_bandwidth_gbs (256 MiB, or an eighth
// of the device's memory when that is smaller).
inline constexpr long long kCopyBandwidthBytes = 256LL << 20;

// The current device's copy bandwidth in GB/s (1e9 bytes per second): the best
// of 5 device-to-device cudaMemcpyAsync of kCopyBandwidthBytes (after one
// untimed warm-up copy), each timed with an EventTimer, counting the bytes read
// plus the bytes written (2 x the copy's size), as the CPU benchmarks count
// their copy floor (kernels/bench/allocation_sweep.h: a copy of B/2 bytes
// stands for B bytes of traffic). Measured on the first call per device and
// cached; the two buffers go back to the caching allocator afterwards.
double measured_copy_bandwidth_gbs();

}  // namespace mare::cuda
