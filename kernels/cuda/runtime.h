// The CUDA runtime of the kernel layer, as seen from plain C++ (no CUDA
// headers here): device selection and information, the caching device
// allocator behind Tensor storage, host <-> device copies, and the switches the
// tests use. Only compiled when the CUDA backend is (MARE_WITH_CUDA).
//
// Allocation: `device_alloc` serves a request from a cache of freed blocks of
// the same rounded size and calls cudaMalloc only on a miss (after a miss that
// fails, it empties the cache and tries once more). Blocks go back to the cache
// on `device_free`, never to the driver, until `empty_cache()`. All work runs on
// one stream per device (see kernels/cuda/common.cuh), so a block freed on the
// host is safe to hand out again: every later use is ordered after its last one.
// Memory is plain device memory (cudaMalloc), never managed memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/tensor.h"

namespace mare::cuda {

struct DeviceInfo {
  int index = -1;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  size_t total_memory = 0;  // bytes
  int multiprocessors = 0;
  int driver_version = 0;   // e.g. 13000 for 13.0
  int runtime_version = 0;  // e.g. 13000
};

// Number of visible devices; 0 when there is no driver or no GPU (never throws).
int device_count();
// Why device_count() is 0, in the driver's words ("" when devices are visible).
std::string no_device_reason();
// Information on device `index` (throws when it does not exist).
DeviceInfo device_info(int index);
// The device every op uses. Chosen from the environment variable MARE_CUDA_DEVICE
// (default 0) on first use; set_device changes it (throws on a bad index).
int current_device();
void set_device(int index);
// Waits for all work queued on the current device.
void synchronize();

// Allocator (Storage calls these for Device::cuda).
void* device_alloc(size_t bytes);
void device_free(void* p, size_t bytes);
void empty_cache();  // returns every cached block to the driver
struct AllocatorStats {
  uint64_t driver_allocations = 0;  // cudaMalloc calls so far
  uint64_t cache_hits = 0;
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
};
AllocatorStats allocator_stats();
// When on, every block handed out is first filled with 0xFF bytes (a NaN in
// float32), so an op that leaves an output element unwritten is caught by the
// tests' finiteness checks. Off by default.
void set_poison_allocations(bool on);

// Copies between any two devices (synchronous for the host side).
void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes);
void fill_f32(float* p, size_t n, float value);

// True when a device is present and usable (a failing driver counts as absent).
bool device_present();
// What is wrong with the device MARE_CUDA_DEVICE chooses, before anything runs on it
// ("MARE_CUDA_DEVICE='x': expected a device index", "CUDA device 3 does not exist (1
// visible)"), or "" when it can be used (or one is in use already).
std::string device_choice_problem();

}  // namespace mare::cuda
