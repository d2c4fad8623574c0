// Softmax family on the GPU: softmax and log-softmax over the last axis with an
// optional mask, and logsumexp over CSR index sets of rows (kernels/ops/
// softmax.cpp is the reference).
//
// Design:
// - Softmax, log-softmax and their backward: one warp per row (kThreads / 32
//   rows per block, grid-stride over rows). Lane l handles columns l, l + 32,
//   ...; its partial max / sum is combined by a butterfly of warp shuffles,
//   which gives every lane the same bits (a fixed tree; floating-point addition
//   is commutative, so partners compute identical sums). Sums run in double and
//   exp in float, as on the CPU; fully masked rows output zeros, never NaN.
// - logsumexp_sets forward: one thread per output (set, column), looping over
//   the set's rows in order (max, then the double sum of exp), as the CPU does.
// - logsumexp_sets backward scatters into rows that may belong to several sets.
//   Instead of atomics, the (row index, position) pairs are sorted by row with
//   CUB's stable radix sort, and one thread per (row, column) of d_x adds the
//   contributions of its positions in increasing order (the CPU's order).
// - Index sets are validated before use, forward and backward, with the CPU's
//   checks in the CPU's order; the compute kernels then trust the sets. Sets
//   uploaded from host memory (the bi-affine scorer's) are checked on the host
//   by the CPU's own check_index_sets (host_can_check_index_sets), with no launch
//   and no wait. Others are checked on the device: a grid-stride scan finds the
//   first bad set and the first bad row index (integer atomicMin, so the result
//   does not depend on scheduling), one thread turns that into an error code,
//   position and value, and the host reads those few bytes back (one counted
//   device read, a stream synchronisation) and throws the CPU's exception with
//   the CPU's message.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops/softmax.h"

namespace mare::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ------------------------------------------------------------------ device helpers
// std::max(a, b) = a < b ? b : a (NaN in b is ignored, as on the CPU).
__device__ inline float max_like_std(float a, float b) {
  return a < b ? b : a;
}

__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = max_like_std(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline bool kept(const float* mask_row, int64_t j) {
  return !mask_row || mask_row[j] != 0.0f;
}

// Rows handled by this warp: row = first, first + step, ... (the same for all
// 32 lanes, so the shuffles inside the loop see the whole warp).
__device__ inline int64_t first_row() {
  return blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
}
__device__ inline int64_t row_step() {
  return int64_t(gridDim.x) * kRowsPerBlock;
}

// ------------------------------------------------------------------ kernels
// Softmax (log_space = false) or log-softmax of each row.   x, mask, y: [rows, c]
__global__ void softmax_rows_kernel(const float* __restrict__ x, const float* __restrict__ mask,
                                    float* __restrict__ y, int64_t rows, int64_t c,
                                    bool log_space) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_row(); r < rows; r += row_step()) {
    const float* xr = x + r * c;
    const float* mr = mask ? mask + r * c : nullptr;
    float* yr = y + r * c;
    float mx = kNegInf;
    bool any = false;
    for (int64_t j = lane; j < c; j += kWarp)
      if (kept(mr, j)) any = true, mx = max_like_std(mx, xr[j]);
    mx = warp_max(mx);
    // Every position excluded (by the mask, as on the CPU: a row of NaN stays NaN).
    if (!__any_sync(0xffffffffu, any)) {
      for (int64_t j = lane; j < c; j += kWarp) yr[j] = 0.0f;
      continue;
    }
    // exp once per element in float; the sum in double.
    double sum = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      float e = kept(mr, j) ? expf(xr[j] - mx) : 0.0f;
      yr[j] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    if (log_space) {
      const float lse = static_cast<float>(log(sum));
      for (int64_t j = lane; j < c; j += kWarp) yr[j] = kept(mr, j) ? (xr[j] - mx) - lse : 0.0f;
    } else {
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = lane; j < c; j += kWarp) yr[j] *= inv;
    }
  }
}

// d_x += y ⊙ (d_y − Σ d_y ⊙ y)                          all: [rows, c]
__global__ void softmax_backward_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                                        const float* __restrict__ out, int64_t rows, int64_t c) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_row(); r < rows; r += row_step()) {
    const float *y = out + r * c, *g = d_out + r * c;
    float* dx = d_x + r * c;
    double dot = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) dot += static_cast<double>(g[j]) * y[j];
    const float dotf = static_cast<float>(warp_sum(dot));
    for (int64_t j = lane; j < c; j += kWarp)
      dx[j] = __fadd_rn(dx[j], __fmul_rn(y[j], __fsub_rn(g[j], dotf)));
  }
}

// d_x += d_y − softmax(x) · Σ d_y over kept positions   all: [rows, c]; y = log-softmax
__global__ void log_softmax_backward_kernel(float* __restrict__ d_x,
                                            const float* __restrict__ d_out,
                                            const float* __restrict__ out,
                                            const float* __restrict__ mask, int64_t rows,
                                            int64_t c) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_row(); r < rows; r += row_step()) {
    const float *y = out + r * c, *g = d_out + r * c;
    const float* mr = mask ? mask + r * c : nullptr;
    float* dx = d_x + r * c;
    double sum = 0.0;
    for (int64_t j = lane; j < c; j += kWarp)
      if (kept(mr, j)) sum += g[j];
    const float sumf = static_cast<float>(warp_sum(sum));
    for (int64_t j = lane; j < c; j += kWarp)
      if (kept(mr, j)) dx[j] = __fadd_rn(dx[j], __fsub_rn(g[j], __fmul_rn(expf(y[j]), sumf)));
  }
}

// out[s, j] = log Σ_{t in set s} exp(x[rows[t], j]), max-subtracted, as on the
// CPU. The sets were validated (check_sets_on_device).
//   x: [num_rows, c]; offsets: [num_sets + 1]; rows: [offsets[num_sets]]; out: [num_sets, c]
__global__ void logsumexp_sets_kernel(const float* __restrict__ x,
                                      const int32_t* __restrict__ offsets,
                                      const int32_t* __restrict__ rows, float* __restrict__ out,
                                      int64_t num_sets, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_sets * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i / c, j = i % c;
    const int64_t begin = offsets[s], end = offsets[s + 1];
    float mx = kNegInf;
    for (int64_t t = begin; t < end; ++t) mx = max_like_std(mx, x[int64_t(rows[t]) * c + j]);
    double sum = 0.0;
    for (int64_t t = begin; t < end; ++t)
      sum += exp(static_cast<double>(x[int64_t(rows[t]) * c + j] - mx));
    out[i] = mx + static_cast<float>(log(sum));
  }
}

// ------------------------------------------------------------------ set validation
// The errors of the CPU's check_sets, in its order of checks.
enum SetError : int {
  kSetsValid = 0,
  kOffsetsStart = 1,  // offsets[0] != 0
  kSetEmpty = 2,      // offsets[s + 1] <= offsets[s] (first such s)
  kOffsetsEnd = 3,    // offsets[num_sets] != number of row indices
  kRowOutside = 4,    // rows[t] outside [0, num_rows) (first such t)
};
constexpr unsigned int kNone = 0xffffffffu;  // no bad position (memset 0xFF)

// first[0] = min s with offsets[s + 1] <= offsets[s], first[1] = min t with rows[t]
// outside [0, num_rows); both start at kNone.
__global__ void scan_sets_kernel(const int32_t* __restrict__ offsets,
                                 const int32_t* __restrict__ rows, int64_t num_sets,
                                 int64_t num_idx, int64_t num_rows,
                                 unsigned int* __restrict__ first) {
  const int64_t n = num_sets > num_idx ? num_sets : num_idx;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (i < num_sets && offsets[i + 1] <= offsets[i])
      atomicMin(&first[0], static_cast<unsigned int>(i));
    if (i < num_idx && (rows[i] < 0 || rows[i] >= num_rows))
      atomicMin(&first[1], static_cast<unsigned int>(i));
  }
}

// One thread: verdict = (error code, position, value), the first error in the
// CPU's order of checks.
__global__ void sets_verdict_kernel(const int32_t* __restrict__ offsets,
                                    const int32_t* __restrict__ rows, int64_t num_sets,
                                    int64_t num_idx, const unsigned int* __restrict__ first,
                                    int* __restrict__ verdict) {
  int code = kSetsValid, pos = 0, value = 0;
  if (offsets[0] != 0) {
    code = kOffsetsStart;
  } else if (first[0] != kNone) {
    code = kSetEmpty;
    pos = static_cast<int>(first[0]);
  } else if (offsets[num_sets] != num_idx) {
    code = kOffsetsEnd;
    value = offsets[num_sets];
  } else if (first[1] != kNone) {
    code = kRowOutside;
    pos = static_cast<int>(first[1]);
    value = rows[pos];
  }
  verdict[0] = code;
  verdict[1] = pos;
  verdict[2] = value;
}

// iota[t] = t
__global__ void iota_kernel(int32_t* __restrict__ p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<int32_t>(i);
}

// First k in [0, n) with a[k] >= v (n when none); a sorted ascending.
__device__ inline int64_t lower_bound(const int32_t* a, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The set holding index position t: the last s in [0, num_sets) with
// offsets[s] <= t (offsets validated: 0, strictly increasing, ending at the
// number of indices; the search stays in [0, num_sets) in any case).
__device__ inline int64_t set_of(const int32_t* offsets, int64_t num_sets, int64_t t) {
  int64_t lo = 0, hi = num_sets;  // answer in [lo, hi)
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// d_x[r, j] += Σ_{t: rows[t] = r, t ascending} d_out[s(t), j] · exp(x[r, j] − out[s(t), j])
//   sorted_rows / sorted_pos: rows[] sorted by row index (stable), with the
//   position t of each entry.   x, d_x: [num_rows, c]; d_out, out: [num_sets, c]
__global__ void logsumexp_sets_backward_kernel(
    float* __restrict__ d_x, const float* __restrict__ d_out, const float* __restrict__ x,
    const float* __restrict__ out, const int32_t* __restrict__ offsets,
    const int32_t* __restrict__ sorted_rows, const int32_t* __restrict__ sorted_pos,
    int64_t num_rows, int64_t c, int64_t num_sets, int64_t num_idx) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < num_rows * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / c, j = i % c;
    int64_t k = lower_bound(sorted_rows, num_idx, r);
    if (k == num_idx || sorted_rows[k] != r) continue;  // row in no set
    const float xv = x[i];
    float acc = d_x[i];
    for (; k < num_idx && sorted_rows[k] == r; ++k) {
      const int64_t s = set_of(offsets, num_sets, sorted_pos[k]);
      acc = __fadd_rn(acc, __fmul_rn(d_out[s * c + j], expf(xv - out[s * c + j])));
    }
    d_x[i] = acc;
  }
}

// ------------------------------------------------------------------ helpers
// The CPU's check_index_sets (kernels/ops/softmax.cpp) for index sets on the GPU:
// the same exceptions with the same messages. On the host when it kept their
// bytes; else on the device, synchronising the stream once.
void check_sets_on_device(const Tensor& offsets, const Tensor& rows, int64_t num_rows,
                          const char* op) {
  if (host_can_check_index_sets(offsets, rows, num_rows)) {
    check_index_sets(offsets, rows, num_rows, op);
    return;
  }
  const int64_t num_sets = to_int(offsets.numel(), op) - 1;  // >= 0 (checked by the caller)
  const int64_t num_idx = to_int(rows.numel(), op);
  Workspace ws(5 * sizeof(int));
  unsigned int* first = ws.as<unsigned int>();
  int* verdict = reinterpret_cast<int*>(first + 2);
  MARE_CUDA_CHECK(cudaMemsetAsync(first, 0xFF, 2 * sizeof(unsigned int), stream()));
  launch("scan_sets_kernel", std::max(num_sets, num_idx), scan_sets_kernel, offsets.i32(),
         rows.i32(), num_sets, num_idx, num_rows, first);
  sets_verdict_kernel<<<1, 1, 0, stream()>>>(offsets.i32(), rows.i32(), num_sets, num_idx, first,
                                             verdict);
  MARE_LAUNCH_CHECK("sets_verdict_kernel");
  int v[3] = {0, 0, 0};
  copy_bytes(v, Device::cpu, verdict, Device::cuda, sizeof v);  // a counted device read
  switch (v[0]) {
    case kSetsValid:
      return;
    case kOffsetsStart:
      throw std::invalid_argument(std::string(op) + ": offsets must start at 0");
    case kSetEmpty:
      throw std::invalid_argument(std::string(op) + ": set " + std::to_string(v[1]) +
                                  " is empty or offsets decrease");
    case kOffsetsEnd:
      throw std::invalid_argument(std::string(op) + ": offsets end at " + std::to_string(v[2]) +
                                  " but there are " + std::to_string(num_idx) + " row indices");
    case kRowOutside:
      throw std::out_of_range(std::string(op) + ": row index " + std::to_string(v[2]) +
                              " at position " + std::to_string(v[1]) + " is outside [0, " +
                              std::to_string(num_rows) + ")");
    default:
      throw std::logic_error(std::string(op) + ": unknown index-set verdict " +
                             std::to_string(v[0]));
  }
}

unsigned int row_blocks(int64_t rows) {
  return blocks_for(rows, kRowsPerBlock);
}

Tensor softmax_rows(const Tensor& x, const Tensor& mask, bool log_space, const char* op) {
  require_cuda({&x, &mask}, op);
  Tensor out = Tensor::empty(x.shape(), Device::cuda);
  if (x.numel() == 0) return out;
  int64_t c = x.dim(-1), rows = x.numel() / c;
  softmax_rows_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(x.f32(), ptr_or_null(mask),
                                                                   out.f32(), rows, c, log_space);
  MARE_LAUNCH_CHECK("softmax_rows_kernel");
  return out;
}

}  // namespace

// ------------------------------------------------------------------ launchers
Tensor softmax_forward(const Tensor& x, const Tensor& mask) {
  return softmax_rows(x, mask, false, "softmax_forward");
}

void softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &out}, "softmax_backward");
  if (out.numel() == 0) return;
  int64_t c = out.dim(-1), rows = out.numel() / c;
  softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(d_x.f32(), d_out.f32(),
                                                                       out.f32(), rows, c);
  MARE_LAUNCH_CHECK("softmax_backward_kernel");
}

Tensor log_softmax_forward(const Tensor& x, const Tensor& mask) {
  return softmax_rows(x, mask, true, "log_softmax_forward");
}

void log_softmax_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out, const Tensor& mask) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &out, &mask}, "log_softmax_backward");
  if (out.numel() == 0) return;
  int64_t c = out.dim(-1), rows = out.numel() / c;
  log_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
      d_x.f32(), d_out.f32(), out.f32(), ptr_or_null(mask), rows, c);
  MARE_LAUNCH_CHECK("log_softmax_backward_kernel");
}

Tensor logsumexp_sets_forward(const Tensor& x, const Tensor& offsets, const Tensor& rows) {
  require_cuda({&x, &offsets, &rows}, "logsumexp_sets_forward");
  check_sets_on_device(offsets, rows, x.dim(0), "logsumexp_sets_forward");
  int64_t s = offsets.numel() - 1, c = x.dim(1);
  Tensor out = Tensor::empty({s, c}, Device::cuda);
  if (s * c == 0) return out;
  launch("logsumexp_sets_kernel", s * c, logsumexp_sets_kernel, x.f32(), offsets.i32(), rows.i32(),
         out.f32(), s, c);
  return out;
}

void logsumexp_sets_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x, const Tensor& out,
                             const Tensor& offsets, const Tensor& rows) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &x, &out, &offsets, &rows}, "logsumexp_sets_backward");
  check_sets_on_device(offsets, rows, x.dim(0), "logsumexp_sets_backward");
  const int64_t num_sets = offsets.numel() - 1, c = x.dim(1), num_rows = x.dim(0);
  const int num_idx = to_int(rows.numel(), "logsumexp_sets_backward: rows");
  if (num_sets <= 0 || num_idx == 0 || num_rows * c == 0) return;

  // Stable sort of (row index, position) by row index: the positions of each
  // row come out in increasing order.
  Workspace pos(num_idx * sizeof(int32_t)), sorted_rows(num_idx * sizeof(int32_t)),
      sorted_pos(num_idx * sizeof(int32_t));
  launch("iota_kernel", num_idx, iota_kernel, pos.as<int32_t>(), num_idx);
  size_t temp_bytes = 0;
  MARE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, rows.i32(), sorted_rows.as<int32_t>(), pos.as<int32_t>(),
      sorted_pos.as<int32_t>(), num_idx, 0, 32, stream()));
  Workspace temp(std::max<size_t>(temp_bytes, 1));  // a null pointer would mean "query" again
  MARE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      temp.get(), temp_bytes, rows.i32(), sorted_rows.as<int32_t>(), pos.as<int32_t>(),
      sorted_pos.as<int32_t>(), num_idx, 0, 32, stream()));

  launch("logsumexp_sets_backward_kernel", num_rows * c, logsumexp_sets_backward_kernel, d_x.f32(),
         d_out.f32(), x.f32(), out.f32(), offsets.i32(), sorted_rows.as<int32_t>(),
         sorted_pos.as<int32_t>(), num_rows, c, num_sets, num_idx);
}

}  // namespace mare::cuda
