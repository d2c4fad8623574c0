// max over an axis, embedding gather / scatter-add, concat and split on the
// GPU, mirroring kernels/ops/indexing.cpp. Every op views its tensor as
// [outer, size, inner] around its axis.
//
// - max: one thread per output element scans the axis in order with the CPU's
//   strict `>`, so the first index reaching the maximum wins (NaN alike).
//   Backward: argmax values are checked on the device (as ids are, below); each
//   output element adds its gradient to the one input element its argmax
//   names; distinct outputs name distinct inputs, so no conflicts.
// - embedding forward: ids are checked on the device first (one block finds
//   the first position whose id is outside the table, a fixed-order min
//   reduction); that position comes back to the host and the op throws the
//   CPU's std::out_of_range message. Then one thread per output element gathers.
// - embedding backward, deterministic without float atomics: the (id,
//   position) pairs are sorted by id with cub::DeviceRadixSort (a stable LSD
//   radix sort, so equal ids keep their positions in increasing order); one
//   thread per (run of equal ids, feature) then starts from d_table's value
//   and adds the run's d_out rows in position order: the CPU's sum, in the
//   CPU's order, so the bits match it. Ids are checked first, as in forward.
// - concat / split: one kernel copies (or adds) an [outer, width] block
//   between two row strides; one launch per piece.
#include <cub/device/device_radix_sort.cuh>

#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops/axis.h"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
// File-local (internal linkage): other family files define kernels of the same names.
namespace {

// out[o, in] = max_k x[o, k, in]; argmax = the first k reaching it.
__global__ void max_forward_kernel(const float* __restrict__ x, float* __restrict__ out,
                                   int32_t* __restrict__ argmax, int64_t outer, int64_t size,
                                   int64_t inner) {
  int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    const float* base = x + (t / inner) * size * inner + t % inner;
    int32_t best = 0;
    float best_value = base[0];
    for (int64_t k = 1; k < size; ++k) {
      float value = base[k * inner];
      if (value > best_value) {
        best = static_cast<int32_t>(k);
        best_value = value;
      }
    }
    out[t] = best_value;
    argmax[t] = best;
  }
}

// d_x[o, argmax[o, in], in] += d_out[o, in] (argmax outside the axis skipped).
__global__ void max_backward_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                                    const int32_t* __restrict__ argmax, int64_t outer, int64_t size,
                                    int64_t inner) {
  int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t k = argmax[t];
    if (k < 0 || k >= size) continue;
    d_x[((t / inner) * size + k) * inner + t % inner] += d_out[t];
  }
}

// *first_bad = the first position n with ids[n] outside [0, rows), or n_ids if
// none (ids or argmax indices). One block: a strided scan per thread, then a fixed shared-memory
// tree.
__global__ void first_bad_id_kernel(const int32_t* __restrict__ ids, int64_t n_ids, int64_t rows,
                                    int64_t* __restrict__ first_bad) {
  __shared__ int64_t best[kThreads];
  int64_t mine = n_ids;
  for (int64_t n = threadIdx.x; n < n_ids && mine == n_ids; n += blockDim.x)
    if (ids[n] < 0 || ids[n] >= rows) mine = n;
  best[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) best[threadIdx.x] = min(best[threadIdx.x], best[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *first_bad = best[0];
}

// out[n, j] = table[ids[n], j] (ids already checked). A row launch over [n_ids, dim].
__global__ void embedding_gather_kernel(const float* __restrict__ table,
                                        const int32_t* __restrict__ ids, float* __restrict__ out,
                                        int64_t n_ids, int64_t dim) {
  for (int64_t u = launch_row_begin(); u < n_ids; u += launch_row_step()) {
    const float* row = table + static_cast<int64_t>(ids[u]) * dim;
    for (int64_t j = launch_col_begin(); j < dim; j += launch_col_step()) out[u * dim + j] = row[j];
  }
}

__global__ void grid_ids_kernel(int32_t* __restrict__ p, int64_t rows, int64_t cols, bool by_row) {
  const int64_t n = rows * cols;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x)
    p[t] = static_cast<int32_t>(by_row ? t / cols : t % cols);
}

__global__ void iota_kernel(int32_t* __restrict__ p, int64_t n) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x)
    p[t] = static_cast<int32_t>(t);
}

// sorted_ids / positions: the (id, position) pairs sorted by id, positions
// increasing within an id. A run of equal ids is cut into pieces at every
// multiple of kScatterPiece (a piece never crosses a run's start). Pass 1: the
// thread of (u, j), where u starts a piece, sums the piece's d_out rows in
// position order into partial[u, j]. Pass 2: the thread of (u, j), where u
// starts a run, adds the run's piece sums in order to d_table[id, j]. The
// pieces depend only on the sorted ids, so the sums are the same bytes on every
// run; a long run (the padding id of a batch: thousands of positions) costs
// kScatterPiece + length / kScatterPiece additions a thread instead of length.
constexpr int64_t kScatterPiece = 64;

__device__ __forceinline__ bool starts_run(const int32_t* sorted_ids, int64_t u) {
  return u == 0 || sorted_ids[u - 1] != sorted_ids[u];
}

__global__ void embedding_piece_sums_kernel(float* __restrict__ partial,
                                            const float* __restrict__ d_out,
                                            const int32_t* __restrict__ sorted_ids,
                                            const int32_t* __restrict__ positions, int64_t n_ids,
                                            int64_t dim) {
  int64_t total = n_ids * dim;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t u = t / dim, j = t % dim;
    if (u % kScatterPiece != 0 && !starts_run(sorted_ids, u)) continue;
    const int32_t id = sorted_ids[u];
    const int64_t end = min(n_ids, (u / kScatterPiece + 1) * kScatterPiece);
    float acc = d_out[static_cast<int64_t>(positions[u]) * dim + j];
    for (int64_t w = u + 1; w < end && sorted_ids[w] == id; ++w)
      acc += d_out[static_cast<int64_t>(positions[w]) * dim + j];
    partial[u * dim + j] = acc;
  }
}

__global__ void embedding_scatter_add_kernel(float* __restrict__ d_table,
                                             const float* __restrict__ partial,
                                             const int32_t* __restrict__ sorted_ids, int64_t n_ids,
                                             int64_t dim, int64_t rows) {
  int64_t total = n_ids * dim;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t u = t / dim, j = t % dim;
    if (!starts_run(sorted_ids, u)) continue;
    const int32_t id = sorted_ids[u];
    if (id < 0 || id >= rows) continue;
    float acc = d_table[static_cast<int64_t>(id) * dim + j];
    for (int64_t w = u; w < n_ids && sorted_ids[w] == id;
         w = (w / kScatterPiece + 1) * kScatterPiece)
      acc += partial[w * dim + j];
    d_table[static_cast<int64_t>(id) * dim + j] = acc;
  }
}

// dst[r, c] = src[r, c] (or += when Accumulate) for r < rows, c < width, with
// row strides dst_stride and src_stride.
template <bool Accumulate>
__global__ void copy_block_kernel(float* __restrict__ dst, int64_t dst_stride,
                                  const float* __restrict__ src, int64_t src_stride, int64_t rows,
                                  int64_t width) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step())  // a row launch
    for (int64_t c = launch_col_begin(); c < width; c += launch_col_step()) {
      if (Accumulate)
        dst[r * dst_stride + c] += src[r * src_stride + c];
      else
        dst[r * dst_stride + c] = src[r * src_stride + c];
    }
}

}  // namespace

// ------------------------------------------------------------------ launchers
namespace {

using detail::AxisSplit;
using detail::with_extent;
using detail::without_axis;

// dst block [rows, width] (row stride dst_stride) = or += src block (row stride src_stride).
void copy_block(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t rows,
                int64_t width, bool accumulate) {
  if (rows * width == 0) return;
  const RowLaunch l = row_launch(rows, width);
  if (accumulate) {
    copy_block_kernel<true>
        <<<l.grid, l.block, 0, stream()>>>(dst, dst_stride, src, src_stride, rows, width);
    MARE_LAUNCH_CHECK("copy_block_kernel<true>");
  } else {
    copy_block_kernel<false>
        <<<l.grid, l.block, 0, stream()>>>(dst, dst_stride, src, src_stride, rows, width);
    MARE_LAUNCH_CHECK("copy_block_kernel<false>");
  }
}

// Moves the pieces of a tensor cut along axis a to or from their slabs of `whole`, in
// order, piece i taking the next pieces[i].dim(a) entries of the axis: into the whole
// (to_whole) or out of it, copied or added (accumulate). One copy_block a piece moves
// all its rows. Tensors are shallow handles: the writes go to the callers' storage;
// sources are read through const views (a GPU tensor keeps its host mirror).
void move_pieces(Tensor whole, std::vector<Tensor> pieces, int a, bool to_whole, bool accumulate,
                 const char* op) {
  const AxisSplit w = detail::split_at_axis(whole.shape(), a, op);
  const int64_t stride = w.size * w.inner;  // a row of the whole
  int64_t at = 0;                           // the piece's first entry in a row of the whole
  for (Tensor& piece : pieces) {
    const int64_t len = piece.dim(a) * w.inner;  // a row of the piece
    if (to_whole)
      copy_block(whole.f32() + at, stride, std::as_const(piece).f32(), len, w.outer, len,
                 accumulate);
    else
      copy_block(piece.f32(), len, std::as_const(whole).f32() + at, stride, w.outer, len,
                 accumulate);
    at += len;
  }
}

// The first position n < count with values[n] outside [0, limit) (count if
// none) and the value there: the device check behind the CPU's out_of_range
// errors for ids and argmax indices. Waits for the stream (a few bytes come back).
struct BadIndex {
  int64_t position;
  int32_t value;
};
// Ids whose range the host knows (uploaded from host memory, or vouched for by
// the kernel that made them: Tensor::known_index_range) are checked there, with
// no launch and no wait; only ids of unknown range, or a known range that
// breaks the bound (to find the position for the message), take the device scan.
BadIndex first_out_of_range(const Tensor& ids, int64_t count, int64_t limit) {
  int32_t lo = 0, hi = 0;
  if (ids.known_index_range(lo, hi) && lo >= 0 && hi < limit) return {count, 0};
  const int32_t* values = ids.i32();
  Workspace first_bad(sizeof(int64_t));
  first_bad_id_kernel<<<1, kThreads, 0, stream()>>>(values, count, limit, first_bad.as<int64_t>());
  MARE_LAUNCH_CHECK("first_bad_id_kernel");
  BadIndex bad{count, 0};
  copy_bytes(&bad.position, Device::cpu, first_bad.get(), Device::cuda, sizeof(bad.position));
  if (bad.position < count)
    copy_bytes(&bad.value, Device::cpu, values + bad.position, Device::cuda, sizeof(bad.value));
  return bad;
}

// The gradient pieces of concat_backward / split_backward against the whole
// tensor `whole` along axis a: all defined and on the GPU, equal outside the
// axis, covering it exactly. Checked before any kernel runs.
void check_pieces(const std::vector<Tensor>& pieces, const Tensor& whole, int a, const char* op) {
  int64_t covered = 0;
  for (const Tensor& p : pieces) {
    if (!p.defined())
      throw std::invalid_argument(std::string(op) + ": every piece needs a gradient tensor");
    require_cuda({&p}, op);
    if (p.rank() != whole.rank() ||
        with_extent(p.shape(), a, 0) != with_extent(whole.shape(), a, 0))
      throw ShapeError(std::string(op) + ": piece " + p.shape().str() + " does not fit " +
                       whole.shape().str() + " outside axis " + std::to_string(a));
    covered += p.dim(a);
  }
  if (covered != whole.dim(a))
    throw ShapeError(std::string(op) + ": pieces cover " + std::to_string(covered) + " of " +
                     std::to_string(whole.dim(a)) + " along axis " + std::to_string(a));
}

}  // namespace

MaxResult max_forward(const Tensor& x, int axis) {
  require_cuda({&x}, "max_forward");
  int a = detail::normalize_axis(axis, x.rank(), "max_forward");
  AxisSplit s = detail::split_at_axis(x.shape(), a, "max_forward");
  Shape os = without_axis(x.shape(), a);
  MaxResult r{Tensor::empty(os, Device::cuda), Tensor::empty(os, Device::cuda, DType::i32)};
  int64_t total = s.outer * s.inner;
  if (total == 0) return r;
  launch("max_forward_kernel", total, max_forward_kernel, x.f32(), r.out.f32(), r.argmax.i32(),
         s.outer, s.size, s.inner);
  // Each thread writes a k of [0, size): max_backward checks it on the host.
  if (s.size > 0) r.argmax.vouch_index_range(0, static_cast<int32_t>(s.size - 1));
  return r;
}

void max_backward(Tensor& d_x, const Tensor& d_out, const Tensor& argmax, int axis) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &argmax}, "max_backward");
  int a = detail::normalize_axis(axis, d_x.rank(), "max_backward");
  AxisSplit s = detail::split_at_axis(d_x.shape(), a, "max_backward");
  int64_t total = s.outer * s.inner;
  if (total == 0) return;
  // The CPU's check, before anything is accumulated.
  BadIndex bad = first_out_of_range(argmax, total, s.size);
  if (bad.position < total)
    throw std::out_of_range("max_backward: argmax " + std::to_string(bad.value) + " at position " +
                            std::to_string(bad.position) + " is outside axis " + std::to_string(a) +
                            " of d_x " + d_x.shape().str());
  launch("max_backward_kernel", total, max_backward_kernel, d_x.f32(), d_out.f32(), argmax.i32(),
         s.outer, s.size, s.inner);
}

Tensor grid_ids(int64_t rows, int64_t cols, bool by_row) {
  Tensor out = Tensor::empty({rows, cols}, Device::cuda, DType::i32);
  if (rows * cols == 0) return out;
  launch("grid_ids_kernel", rows * cols, grid_ids_kernel, out.i32(), rows, cols, by_row);
  out.vouch_index_range(0, static_cast<int32_t>((by_row ? rows : cols) - 1));
  return out;
}

Tensor embedding_forward(const Tensor& table, const Tensor& ids) {
  require_cuda({&table, &ids}, "embedding_forward");
  int64_t v = table.dim(0), d = table.dim(1), n = ids.numel();
  std::vector<int64_t> os = ids.shape().vec();
  os.push_back(d);
  Tensor out = Tensor::empty(Shape(os), Device::cuda);
  if (n == 0) return out;
  // The CPU's check, on the device: the first position holding an id outside the table.
  BadIndex bad = first_out_of_range(ids, n, v);
  if (bad.position < n)
    throw std::out_of_range("embedding_forward: id " + std::to_string(bad.value) + " at position " +
                            std::to_string(bad.position) + " is outside the table's " +
                            std::to_string(v) + " rows");
  if (d == 0) return out;
  const RowLaunch l = row_launch(n, d);
  embedding_gather_kernel<<<l.grid, l.block, 0, stream()>>>(table.f32(), ids.i32(), out.f32(), n,
                                                            d);
  MARE_LAUNCH_CHECK("embedding_gather_kernel");
  return out;
}

void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& ids) {
  if (!d_table.defined()) return;
  require_cuda({&d_table, &d_out, &ids}, "embedding_backward");
  check_dtype(ids, DType::i32, "embedding_backward: ids");
  int64_t rows = d_table.dim(0), d = d_table.dim(1), n = ids.numel();
  if (n == 0) return;
  // The CPU's check, before anything is accumulated.
  BadIndex bad = first_out_of_range(ids, n, rows);
  if (bad.position < n)
    throw std::out_of_range("embedding_backward: id " + std::to_string(bad.value) +
                            " at position " + std::to_string(bad.position) +
                            " is outside the table's " + std::to_string(rows) + " rows");
  if (d == 0) return;
  int items = to_int(n, "embedding_backward: ids");
  // Scratch: sorted ids, positions (in), positions (sorted), then CUB's temporary storage.
  Workspace pairs(3 * static_cast<size_t>(n) * sizeof(int32_t));
  int32_t* sorted_ids = pairs.as<int32_t>();
  int32_t* positions_in = sorted_ids + n;
  int32_t* positions = positions_in + n;
  launch("iota_kernel", n, iota_kernel, positions_in, n);
  size_t temp_bytes = 0;
  MARE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ids.i32(), sorted_ids,
                                                  positions_in, positions, items, 0, 32, stream()));
  Workspace temp(temp_bytes);
  MARE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, ids.i32(), sorted_ids,
                                                  positions_in, positions, items, 0, 32, stream()));
  Workspace partial(static_cast<size_t>(n) * static_cast<size_t>(d) * sizeof(float));
  // Flat launches, a thread per (position, column): a long run (the padding id)
  // is then spread over d threads, where a row launch would give it one warp.
  launch("embedding_piece_sums_kernel", n * d, embedding_piece_sums_kernel, partial.as<float>(),
         d_out.f32(), sorted_ids, positions, n, d);
  launch("embedding_scatter_add_kernel", n * d, embedding_scatter_add_kernel, d_table.f32(),
         partial.as<float>(), sorted_ids, n, d, rows);
}

Tensor concat_forward(const std::vector<Tensor>& xs, int axis) {
  for (const Tensor& x : xs) require_cuda({&x}, "concat_forward");
  int a = detail::normalize_axis(axis, xs[0].rank(), "concat_forward");
  int64_t total = 0;
  for (const Tensor& x : xs) total += x.dim(a);
  Tensor out = Tensor::empty(with_extent(xs[0].shape(), a, total), Device::cuda);
  move_pieces(out, xs, a, true, false, "concat_forward");
  return out;
}

void concat_backward(std::vector<Tensor>& d_xs, const Tensor& d_out, int axis) {
  require_cuda({&d_out}, "concat_backward");
  int a = detail::normalize_axis(axis, d_out.rank(), "concat_backward");
  check_pieces(d_xs, d_out, a, "concat_backward");
  move_pieces(d_out, d_xs, a, false, true, "concat_backward");
}

std::vector<Tensor> split_forward(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  require_cuda({&x}, "split_forward");
  int a = detail::normalize_axis(axis, x.rank(), "split_forward");
  std::vector<Tensor> out;
  for (int64_t size : sizes)
    out.push_back(Tensor::empty(with_extent(x.shape(), a, size), Device::cuda));
  move_pieces(x, out, a, false, false, "split_forward");
  return out;
}

void split_backward(Tensor& d_x, const std::vector<Tensor>& d_outs, int axis) {
  if (!d_x.defined()) return;
  require_cuda({&d_x}, "split_backward");
  int a = detail::normalize_axis(axis, d_x.rank(), "split_backward");
  check_pieces(d_outs, d_x, a, "split_backward");
  move_pieces(d_x, d_outs, a, true, true, "split_backward");
}

}  // namespace mare::cuda
