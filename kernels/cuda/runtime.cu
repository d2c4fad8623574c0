// The CUDA runtime of the kernel layer: error checks, device selection, the
// per-device stream and cuBLAS handle, the caching allocator, copies and fills.
// See runtime.h and common.cuh for the contracts.
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
namespace {

__global__ void fill_kernel(float* __restrict__ p, int64_t n, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

}  // namespace

// ------------------------------------------------------------------ errors
void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ") in " + call + " at " + file + ":" +
                           std::to_string(line));
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
                           cublasGetStatusString(status) + ") in " + call + " at " + file + ":" +
                           std::to_string(line));
}

void require_cuda(std::initializer_list<const Tensor*> ts, const char* op) {
  for (const Tensor* t : ts)
    if (t->defined() && t->device() != Device::cuda)
      throw std::invalid_argument(std::string(op) +
                                  ": tensors on different devices (expected all on cuda)");
}

int to_int(int64_t n, const char* what) {
  if (n > INT32_MAX)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                " elements exceed the 32-bit indices of the CUDA kernels");
  return static_cast<int>(n);
}

// ------------------------------------------------------------------ devices
namespace {

struct PerDevice {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
};

std::mutex g_mutex;  // guards everything below
int g_device = -1;   // -1: not chosen yet
std::vector<PerDevice> g_per_device;

int default_device() {
  const char* env = std::getenv("MARE_CUDA_DEVICE");
  if (!env || !*env) return 0;
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 0)
    throw std::invalid_argument(std::string("MARE_CUDA_DEVICE='") + env +
                                "': expected a device index (0, 1, ...)");
  return static_cast<int>(v);
}

void check_index(int index) {
  int n = device_count();
  if (index < 0 || index >= n)
    throw std::invalid_argument("CUDA device " + std::to_string(index) + " does not exist (" +
                                std::to_string(n) + " visible)");
}

// The chosen device, made current on the calling thread. Caller holds g_mutex.
int ensure_device_locked() {
  if (g_device < 0) {
    int d = default_device();
    check_index(d);
    g_device = d;
  }
  thread_local int thread_device = -1;
  if (thread_device != g_device) {
    MARE_CUDA_CHECK(cudaSetDevice(g_device));
    thread_device = g_device;
  }
  if (static_cast<int>(g_per_device.size()) <= g_device) g_per_device.resize(g_device + 1);
  return g_device;
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string no_device_reason() {
  int n = 0;
  cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string(cudaGetErrorName(st)) + ": " + cudaGetErrorString(st);
  }
  return n == 0 ? "no CUDA device visible" : "";
}

bool device_present() {
  return device_count() > 0;
}

std::string device_choice_problem() {
  std::lock_guard lock(g_mutex);
  if (g_device >= 0) return "";  // chosen (and checked) already
  try {
    check_index(default_device());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

DeviceInfo device_info(int index) {
  check_index(index);
  cudaDeviceProp p{};
  MARE_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceInfo info;
  info.index = index;
  info.name = p.name;
  info.compute_major = p.major;
  info.compute_minor = p.minor;
  info.total_memory = p.totalGlobalMem;
  info.multiprocessors = p.multiProcessorCount;
  MARE_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  MARE_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

int current_device() {
  std::lock_guard lock(g_mutex);
  return ensure_device_locked();
}

void set_device(int index) {
  check_index(index);
  std::lock_guard lock(g_mutex);
  g_device = index;
  ensure_device_locked();
}

cudaStream_t stream() {
  std::lock_guard lock(g_mutex);
  int d = ensure_device_locked();
  PerDevice& pd = g_per_device[d];
  if (!pd.stream) MARE_CUDA_CHECK(cudaStreamCreateWithFlags(&pd.stream, cudaStreamNonBlocking));
  return pd.stream;
}

cublasHandle_t cublas() {
  cudaStream_t s = stream();
  std::lock_guard lock(g_mutex);
  PerDevice& pd = g_per_device[g_device];
  if (!pd.cublas) {
    MARE_CUBLAS_CHECK(cublasCreate(&pd.cublas));
    // Deterministic results: no tensor-core TF32 shortcuts, no atomics in GEMMs.
    MARE_CUBLAS_CHECK(cublasSetMathMode(pd.cublas, CUBLAS_PEDANTIC_MATH));
    MARE_CUBLAS_CHECK(cublasSetAtomicsMode(pd.cublas, CUBLAS_ATOMICS_NOT_ALLOWED));
  }
  MARE_CUBLAS_CHECK(cublasSetStream(pd.cublas, s));
  return pd.cublas;
}

void synchronize() {
  MARE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

// ------------------------------------------------------------------ allocator
namespace {

struct Allocator {
  std::mutex mutex;
  // (device, rounded size) -> cached free blocks
  std::unordered_map<uint64_t, std::vector<void*>> free_blocks;
  std::unordered_map<void*, int> owner;  // block -> device, for blocks in use
  AllocatorStats stats;
  bool poison = false;
};

Allocator& allocator() {
  static Allocator* a = new Allocator;  // never destroyed: frees may run at exit
  return *a;
}

// 512-byte granularity up to 1 MiB, 64 KiB above: steady-state training asks
// for the same sizes every step, so exact size classes hit the cache.
size_t round_size(size_t bytes) {
  size_t g = bytes <= (size_t{1} << 20) ? 512 : (size_t{1} << 16);
  return (bytes + g - 1) / g * g;
}

uint64_t cache_key(int device, size_t rounded) {
  return (static_cast<uint64_t>(device) << 56) | rounded;
}

}  // namespace

void* device_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  cudaStream_t s = stream();
  int device = current_device();
  size_t rounded = round_size(bytes);
  Allocator& a = allocator();
  void* p = nullptr;
  {
    std::lock_guard lock(a.mutex);
    auto it = a.free_blocks.find(cache_key(device, rounded));
    if (it != a.free_blocks.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      a.stats.cache_hits++;
      a.stats.bytes_cached -= rounded;
    }
  }
  if (!p) {
    cudaError_t st = cudaMalloc(&p, rounded);
    if (st == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      empty_cache();
      st = cudaMalloc(&p, rounded);
    }
    if (st != cudaSuccess)
      check_cuda(st, ("cudaMalloc of " + std::to_string(rounded) + " bytes").c_str(), __FILE__,
                 __LINE__);
    std::lock_guard lock(a.mutex);
    a.stats.driver_allocations++;
  }
  std::lock_guard lock(a.mutex);
  a.owner[p] = device;
  a.stats.bytes_in_use += rounded;
  if (a.poison) MARE_CUDA_CHECK(cudaMemsetAsync(p, 0xFF, rounded, s));
  return p;
}

void device_free(void* p, size_t bytes) {
  if (!p) return;
  Allocator& a = allocator();
  std::lock_guard lock(a.mutex);
  auto it = a.owner.find(p);
  if (it == a.owner.end()) return;  // not ours (cannot happen through Storage)
  size_t rounded = round_size(bytes);
  a.free_blocks[cache_key(it->second, rounded)].push_back(p);
  a.owner.erase(it);
  a.stats.bytes_in_use -= rounded;
  a.stats.bytes_cached += rounded;
}

void empty_cache() {
  Allocator& a = allocator();
  // Blocks may still be used by queued kernels.
  if (device_present()) (void)cudaDeviceSynchronize();
  std::lock_guard lock(a.mutex);
  for (auto& [key, blocks] : a.free_blocks)
    for (void* p : blocks) (void)cudaFree(p);
  a.free_blocks.clear();
  a.stats.bytes_cached = 0;
}

AllocatorStats allocator_stats() {
  Allocator& a = allocator();
  std::lock_guard lock(a.mutex);
  return a.stats;
}

void set_poison_allocations(bool on) {
  Allocator& a = allocator();
  std::lock_guard lock(a.mutex);
  a.poison = on;
}

// ------------------------------------------------------------------ copies, fills
void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes) {
  if (bytes == 0) return;
  cudaStream_t s = stream();
  MARE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // A read by the host waits for the stream. An upload from pageable host memory
  // does not: cudaMemcpyAsync has staged the bytes before it returns (CUDA's API
  // synchronisation rules), so the caller may free or reuse its buffer at once.
  if (dst_dev == Device::cpu && src_dev != Device::cpu) {
    ::mare::detail::count_device_read();
    MARE_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (src_dev == Device::cpu && dst_dev != Device::cpu) {
    ::mare::detail::count_upload();
  }
}

void fill_f32(float* p, size_t n, float value) {
  if (n == 0) return;
  cudaStream_t s = stream();
  if (value == 0.0f && !std::signbit(value)) {
    MARE_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), s));
    return;
  }
  fill_kernel<<<blocks_for(static_cast<int64_t>(n)), kThreads, 0, s>>>(p, static_cast<int64_t>(n),
                                                                       value);
  MARE_LAUNCH_CHECK("fill_kernel");
}

}  // namespace mare::cuda
