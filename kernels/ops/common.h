// Internal helpers shared by the CPU op implementations (not a public header).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/ops/axis.h"
#include "kernels/parallel.h"
#include "kernels/tensor.h"

namespace mare::detail {

using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapRM = Eigen::Map<MatRM>;
using CMapRM = Eigen::Map<const MatRM>;
using StridedMap = Eigen::Map<MatRM, 0, Eigen::OuterStride<>>;
using CStridedMap = Eigen::Map<const MatRM, 0, Eigen::OuterStride<>>;

inline MapRM as_matrix(Tensor& t, int64_t rows, int64_t cols) {
  return MapRM(t.f32(), rows, cols);
}
inline CMapRM as_matrix(const Tensor& t, int64_t rows, int64_t cols) {
  return CMapRM(t.f32(), rows, cols);
}

// The CPU implementation is the reference; a CUDA tensor reaching it means the
// CUDA backend is absent from this build.
inline void require_cpu(const Tensor& t, const char* op) {
  if (t.defined() && t.device() != Device::cpu)
    throw std::invalid_argument(std::string(op) +
                                ": tensor is on cuda but this build has no CUDA backend");
}

// Device dispatch. True when the op's (defined) tensors are all on the GPU,
// false when all are on the host; mixed devices throw, naming the op.
inline bool on_cuda(const char* op, std::initializer_list<const Tensor*> ts) {
  bool any_cuda = false, any_cpu = false;
  for (const Tensor* t : ts) {
    if (t == nullptr || !t->defined()) continue;  // an optional tensor not given
    (t->device() == Device::cuda ? any_cuda : any_cpu) = true;
  }
  if (any_cuda && any_cpu)
    throw std::invalid_argument(std::string(op) +
                                ": tensors on different devices (cpu and cuda); move them with "
                                "Tensor::to() first");
  return any_cuda;
}

}  // namespace mare::detail

// In an op's CPU entry point, after its argument checks:
//   MARE_CUDA_DISPATCH("relu_forward", relu_forward(x), &x);
// returns cuda_backend().relu_forward(x) (kernels/backend.h) when the listed tensors are
// on the GPU.
// Without the CUDA backend no GPU tensor can exist and it expands to nothing.
// Every dispatch is counted (dispatch_counts(), kernels/tensor.h) on both devices.
#ifdef MARE_WITH_CUDA
#define MARE_CUDA_DISPATCH(op, call, ...)                                               \
  do {                                                                                  \
    ::mare::detail::count_op(op);                                                       \
    if (::mare::detail::on_cuda(op, {__VA_ARGS__})) return ::mare::cuda_backend().call; \
  } while (0)
#else
#define MARE_CUDA_DISPATCH(op, call, ...) \
  do {                                    \
    ::mare::detail::count_op(op);         \
  } while (0)
#endif

namespace mare::detail {

// rows x cols view of a tensor whose last axis is the feature axis.
inline int64_t last_dim(const Tensor& t) {
  return t.dim(-1);
}
inline int64_t leading_rows(const Tensor& t) {
  return t.dim(-1) == 0 ? 0 : t.numel() / t.dim(-1);
}

}  // namespace mare::detail

namespace mare::detail {

// out (+)= op(a)·op(b) for row-major matrices, op(x) = x or xᵀ: a is [m, k]
// ([k, m] if ta), b is [k, n] ([n, k] if tb), out is [m, n]. Cut into fixed
// output blocks by shape (kernels/ops/linalg.cpp), so the bytes do not depend
// on the thread count. Defined in linalg.cpp.
void gemm(float* out, const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool ta,
          bool tb, bool accumulate);
// The same product as one Eigen call on the calling thread, never split: for
// kernels that already run in fixed chunks (the GRPU cell's row blocks) and
// call it once per chunk. Counted like gemm (kernels/ops/gemm_count.h).
void gemm_serial(float* out, const float* a, const float* b, int64_t m, int64_t k, int64_t n,
                 bool ta, bool tb, bool accumulate);

// A grain of rows or columns of a product's output rounded up to whole 16-wide
// SIMD panels (at most n). Grains up to 16 used to stay as they were: blocks of
// 7 columns ran [100, 101] × [101, 204] (the GRPU's gates) at 28 GFLOP/s on one
// thread, against 66 in blocks of 16 and 82 as one Eigen call. A grain of 1
// (the thread tests' tiny work scale) stays 1.
inline int64_t whole_panels(int64_t grain, int64_t n) {
  return grain > 1 ? std::min(n, (grain + 15) / 16 * 16) : grain;
}

// Work (about one flop per unit) below which an op runs on the calling thread.
constexpr double kSplitWork = 1 << 16;

// Work of one exp or tanh in the grains' units (about one flop each).
constexpr double kTranscendental = 20.0;

// Column-major views of row-major row blocks (a column is a row), for Eigen's
// vectorised float logistic and tanh over a cell's rows: rational polynomials,
// the same in the vector body and the remainder (the logistic below −9 is
// exp(x): Eigen's in the body, the C library's in the remainder; which elements
// fall in the remainder depends on the block's shape alone).
using ArrayMap = Eigen::Map<Eigen::ArrayXXf>;
using CArrayMap = Eigen::Map<const Eigen::ArrayXXf>;
using StridedArrayMap = Eigen::Map<Eigen::ArrayXXf, 0, Eigen::OuterStride<>>;
using CVecMap = Eigen::Map<const Eigen::ArrayXf>;

// The recurrent cells' steps (GRPU, GRU, LSTM): rows of the batch per chunk, at
// work scale 1 (four chunks of the thesis's batch of 100).
constexpr int64_t kCellChunkRows = 25;

// Runs f(b0, b1) over fixed chunks of a recurrent cell's batch rows [0, n), each
// row `per_row` work (its products included): one chunk when the whole is
// small. The chunks depend on n, per_row and the work scale, never on the
// thread count, so a cell that computes every row's values inside its chunk
// (its products by gemm_serial on the chunk's rows) gives the same bytes at any K.
template <class F>
void for_cell_rows(int64_t n, double per_row, F&& f) {
  if (n <= 0) return;
  if (!split_work(static_cast<double>(n) * per_row, kSplitWork)) return f(int64_t{0}, n);
  parallel_for_chunks(n, grain_for(n, per_row, kCellChunkRows * per_row), f);
}

// A recurrent cell's joined input for rows [b0, b1): row r − b0 of `a`
// ([·, ic + h]) is [x_r, v_r ⊙ scale_r] (x: [·, ic]; v, scale: rows of stride
// v_stride, scale_stride; scale null: v alone).
inline void join_rows(float* a, const float* x, int64_t ic, const float* v, int64_t v_stride,
                      int64_t h, const float* scale, int64_t scale_stride, int64_t b0, int64_t b1) {
  for (int64_t r = b0; r < b1; ++r) {
    float* row = a + (r - b0) * (ic + h);
    for (int64_t j = 0; j < ic; ++j) row[j] = x[r * ic + j];
    for (int64_t j = 0; j < h; ++j)
      row[ic + j] = v[r * v_stride + j] * (scale ? scale[r * scale_stride + j] : 1.0f);
  }
}

// One weight's gradient of a recurrent cell: dw [w, cols] += inᵀ · dz and
// db [cols] += dz's column sums (either may be null), in [rows, w] and
// [rows, cols].
struct CellGradient {
  const float* in;
  const float* dz;
  float* dw;
  float* db;
  int64_t cols;
};

// Adds the parts' gradients over `rows` batch rows in fixed blocks of their
// concatenated columns (whole 16-wide panels): each block one product over the
// whole batch, each bias column a sum in row order. The same bytes at any
// thread count. Counted like gemm. Defined in linalg.cpp.
void add_cell_gradients(std::initializer_list<CellGradient> parts, int64_t rows, int64_t w);

// Independent items [0, n) (elements, rows, memories) of `cost` work each, in
// chunks when the whole is large: f(begin, end). Each item's result does not
// depend on its chunk, so the bytes are those of the plain loop.
template <class F>
void for_items(int64_t n, double cost, F&& f) {
  if (n <= 0) return;
  if (!split_work(n * cost, kSplitWork)) return f(int64_t{0}, n);
  parallel_for_chunks(n, grain_for(n, cost, kSplitWork / 2), f);
}

// A reduction over rows [0, n) into accumulators of `width` values each
// (accs[k] may be null: skipped): body(begin, end, dst) adds rows [begin, end)
// into dst[k] (null where accs[k] is). The chunks are fixed by (n, cost)
// alone; one chunk adds straight into the accumulators (the plain loop),
// several add into zeroed partials that are then added into the accumulators
// in chunk order, so the sums are the same at any thread count.
// `max_chunks` bounds the partials' memory (chunks · K · width values).
template <class T, size_t K, class Body>
void reduce_rows(int64_t n, double cost, int64_t width, std::array<T*, K> accs, Body&& body,
                 int64_t max_chunks = 64) {
  if (n <= 0) return;
  const int64_t grain =
      split_work(n * cost, kSplitWork) ? grain_for(n, cost, kSplitWork / 2, max_chunks) : n;
  const int64_t chunks = chunk_count(n, grain);
  if (chunks == 1) return body(int64_t{0}, n, accs);
  std::vector<T> parts(static_cast<size_t>(chunks * K * width), T{});
  parallel_for_chunks(n, grain, [&](int64_t begin, int64_t end) {
    T* base = parts.data() + (begin / grain) * K * width;
    std::array<T*, K> dst;
    for (size_t k = 0; k < K; ++k) dst[k] = accs[k] ? base + k * width : nullptr;
    body(begin, end, dst);
  });
  for (int64_t c = 0; c < chunks; ++c)
    for (size_t k = 0; k < K; ++k)
      if (accs[k])
        for (int64_t j = 0; j < width; ++j) accs[k][j] += parts[(c * K + k) * width + j];
}

}  // namespace mare::detail
