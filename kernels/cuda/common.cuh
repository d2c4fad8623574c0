// Shared by every .cu file of the CUDA backend: error checks that name the
// failing call, file and line; the stream and cuBLAS handle all ops use; launch
// sizing; device scratch memory; tensor checks.
//
// Conventions of the backend (each family file follows them):
// - A file holds its kernels first (device functions, __global__ kernels), then
//   the host launchers, which have exactly the signature of the CPU op and live
//   in namespace mare::cuda (declared in kernels/cuda/ops_cuda.h).
// - The CPU entry point validates shapes and dtypes, then dispatches here when
//   its tensors are on the GPU; launchers check that every tensor they touch is
//   on the GPU (require_cuda) and launch on `stream()`.
// - Backward accumulates (+=) like on the CPU and skips undefined gradients.
// - No floating-point atomics: every reduction has a fixed order, so the same
//   inputs give the same bits on the same device (the harness's determinism).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <string>
#include <utility>

#include "kernels/cuda/runtime.h"
#include "kernels/tensor.h"

namespace mare::cuda {

// Throws std::runtime_error "CUDA error <name> (<text>) in <call> at <file>:<line>".
void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

#define MARE_CUDA_CHECK(call) ::mare::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define MARE_CUBLAS_CHECK(call) ::mare::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration under the kernel's name.
#define MARE_LAUNCH_CHECK(kernel) \
  ::mare::cuda::check_cuda(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

// The stream every op of the current device is queued on, and a cuBLAS handle
// bound to it (created on first use, one per device).
cudaStream_t stream();
cublasHandle_t cublas();

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items (at least 1, at most 65 535 · 32).
inline unsigned int blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 2097120) b = 2097120;
  return static_cast<unsigned int>(b);
}

#ifdef __CUDACC__
// A kernel's name as a launch error shows it, with the launching line (taken where
// the name is written, so errors point at the launcher, not at this header).
struct KernelName {
  KernelName(const char* name, std::source_location where = std::source_location::current())
      : name(name), where(where) {}
  const char* name;
  std::source_location where;
};

// The one-dimensional launch of the backend: `kernel` over a grid-stride loop of
// `count` items (blocks_for(count) blocks of kThreads threads) on `stream()`, then
// the launch check (as MARE_LAUNCH_CHECK) under `name`:
//   launch("scale_kernel", n, scale_kernel, out.f32(), x.f32(), s, n);
template <class... Params, class... Args>
void launch(KernelName name, int64_t count, void (*kernel)(Params...), Args&&... args) {
  kernel<<<blocks_for(count), kThreads, 0, stream()>>>(std::forward<Args>(args)...);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    check_cuda(status, (std::string("launch of ") + name.name).c_str(), name.where.file_name(),
               static_cast<int>(name.where.line()));
}
#endif

// Launches over the rows of a [rows, cols] matrix. A block is lanes × (kThreads / lanes)
// threads: threadIdx.x walks a row's columns (lanes = the power of two ≥ cols, at
// most 32: coalesced, no idle lanes on narrow rows), threadIdx.y picks the row, and
// the blocks stride over the rows. When the rows are too few to fill the GPU
// (a few thousand blocks), grid.y splits each row's columns among blocks too.
// Kernels get the row and the column from the launch instead of dividing a flat
// index: a 64-bit division is dozens of instructions on the GPU, more than most
// elements' work (im2col spent 4× its memory time on them). In the kernel:
//   for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step())
//     for (int64_t j = launch_col_begin(); j < cols; j += launch_col_step()) ...
struct RowLaunch {
  dim3 grid, block;
};
inline RowLaunch row_launch(int64_t rows, int64_t cols) {
  constexpr int64_t kFillBlocks = 4096;
  int lanes = 1;
  while (lanes < 32 && lanes < cols) lanes *= 2;
  const int per_block = kThreads / lanes;
  const unsigned int blocks = blocks_for(rows, per_block);
  int64_t groups = (cols + lanes - 1) / lanes;               // column groups a row has
  const int64_t want = (kFillBlocks + blocks - 1) / blocks;  // groups that fill the GPU
  if (groups > want) groups = want;
  if (groups > 65535) groups = 65535;
  if (groups < 1) groups = 1;
  return {dim3(blocks, static_cast<unsigned int>(groups)), dim3(lanes, per_block)};
}
#ifdef __CUDACC__
// Sum over the 32 lanes of a warp by a fixed xor butterfly (offsets 16, 8, 4, 2, 1):
// every lane ends with the same bits (each step adds the same two operands, only
// swapped), run after run. Every lane of the warp must call it.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline int64_t launch_row_begin() {
  return blockIdx.x * int64_t(blockDim.y) + threadIdx.y;
}
__device__ inline int64_t launch_row_step() {
  return int64_t(gridDim.x) * blockDim.y;
}
__device__ inline int64_t launch_col_begin() {
  return blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
}
__device__ inline int64_t launch_col_step() {
  return int64_t(gridDim.y) * blockDim.x;
}
#endif

// Device scratch memory from the caching allocator, released at scope exit
// (stream-ordered: safe even while kernels using it are still queued).
class Workspace {
 public:
  explicit Workspace(size_t bytes) : bytes_(bytes), ptr_(bytes ? device_alloc(bytes) : nullptr) {}
  ~Workspace() {
    if (ptr_) device_free(ptr_, bytes_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  void* ptr_;
};

// The one GEMM of the backend (linalg.cu), for every family: for each of
// `count` triples (pointers advanced by the strides)
//   C [m, n] = alpha · op(A) · op(B) + beta · C       (all row-major)
// A is stored [m, k] ([k, m] if trans_a) with row stride lda, B [k, n] ([n, k] if
// trans_b) with row stride ldb, C with row stride ldc. cuBLAS (column-major) is
// asked for Cᵀ = op(B)ᵀ · op(A)ᵀ. beta = 0 never reads C; k = 0 leaves beta · C.
void gemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                    int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c,
                    int64_t count);

// A tensor's data, or null where it is undefined (an optional input, a gradient the
// kernels skip).
inline float* ptr_or_null(Tensor& t) {
  return t.defined() ? t.f32() : nullptr;
}
inline const float* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.f32() : nullptr;
}

// Throws std::invalid_argument naming `op` when a defined tensor is not on the GPU.
void require_cuda(std::initializer_list<const Tensor*> ts, const char* op);

// int64 element counts are checked to fit the 32-bit indices kernels use.
int to_int(int64_t n, const char* what);

}  // namespace mare::cuda
