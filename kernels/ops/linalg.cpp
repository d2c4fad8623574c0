// matmul / batched matmul on the CPU with Eigen.
//
// With A = op(a) [M, K], B = op(b) [K, N], out = A·B and
//   dA = d_out · Bᵀ   (so d_a += dA, or dAᵀ when trans_a)
//   dB = Aᵀ · d_out   (so d_b += dB, or dBᵀ when trans_b)
#include "kernels/ops/linalg.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "kernels/ops/common.h"
#include "kernels/ops/gemm_count.h"
#include "kernels/parallel.h"

namespace mare {

namespace {
std::atomic<MatmulPrecision> g_matmul_precision{MatmulPrecision::highest};
}  // namespace

void set_matmul_precision(MatmulPrecision p) {
  g_matmul_precision.store(p, std::memory_order_relaxed);
}
MatmulPrecision matmul_precision() {
  return g_matmul_precision.load(std::memory_order_relaxed);
}
const char* to_string(MatmulPrecision p) {
  return p == MatmulPrecision::high ? "high" : "highest";
}
MatmulPrecision parse_matmul_precision(const std::string& name) {
  if (name == "highest") return MatmulPrecision::highest;
  if (name == "high") return MatmulPrecision::high;
  throw std::invalid_argument("unknown matmul precision '" + name + "' (known: highest, high)");
}
std::vector<std::string> matmul_precision_names() {
  return {"highest", "high"};
}
using namespace detail;

namespace {

struct Dims {
  int64_t m, k, n;
};

Dims product_dims(const Shape& sa, const Shape& sb, bool ta, bool tb, const char* op) {
  int r = sa.rank();
  int64_t m = ta ? sa[r - 1] : sa[r - 2], ka = ta ? sa[r - 2] : sa[r - 1];
  int64_t kb = tb ? sb[r - 1] : sb[r - 2], n = tb ? sb[r - 2] : sb[r - 1];
  if (ka != kb)
    throw ShapeError(std::string(op) + ": inner dimensions differ: a " + sa.str() +
                     (ta ? " (transposed)" : "") + " vs b " + sb.str() +
                     (tb ? " (transposed)" : ""));
  return {m, ka, n};
}

// Calls f(op(A), op(B)) with op(X) = X or Xᵀ as Eigen expressions.
template <class F>
void with_ops(const CMapRM& A, const CMapRM& B, bool ta, bool tb, F&& f) {
  if (!ta && !tb)
    f(A, B);
  else if (ta && !tb)
    f(A.transpose(), B);
  else if (!ta && tb)
    f(A, B.transpose());
  else
    f(A.transpose(), B.transpose());
}

// Products below this many multiply-adds run as one Eigen call; above it the
// output is cut into blocks of at least kMinBlockWork each (at most kMaxBlocks).
constexpr double kMinSplitWork = 1 << 18, kMinBlockWork = 1 << 16;
constexpr int64_t kMaxBlocks = 32;

// out (+)= op(a)·op(b) for one matrix pair; `accumulate` adds instead of assigning.
//
// Threads: the output is cut into fixed blocks of rows (M >= N) or columns,
// chosen from (M, N, K) alone, and each block is one Eigen product over the
// whole K. An element's sum is therefore the same Eigen reduction whatever the
// thread count (a block's bytes may differ from those of one unsplit product:
// Eigen's kernels pick their paths by block size, not by thread count).
void gemm(float* out, const float* a, const float* b, Dims d, bool ta, bool tb, bool accumulate) {
  count_gemm(d.m, d.n, d.k);
  MapRM o(out, d.m, d.n);
  CMapRM A(a, ta ? d.k : d.m, ta ? d.m : d.k);
  CMapRM B(b, tb ? d.n : d.k, tb ? d.k : d.n);
  const bool by_rows = d.m >= d.n;
  const int64_t extent = by_rows ? d.m : d.n;
  const double work = static_cast<double>(d.m) * d.n * d.k;
  int64_t grain = extent;
  if (split_work(work, kMinSplitWork)) {
    grain = whole_panels(grain_for(extent, work / extent, kMinBlockWork, kMaxBlocks), extent);
  }
  // One block of rows or columns [begin, end) of `o` from the matching block of A or B.
  auto block = [&](const auto& lhs, const auto& rhs, int64_t begin, int64_t end) {
    const int64_t len = end - begin;
    if (by_rows) {
      auto ob = o.middleRows(begin, len);
      if (!accumulate) ob.setZero();
      ob.noalias() += lhs.middleRows(begin, len) * rhs;
    } else {
      auto ob = o.middleCols(begin, len);
      if (!accumulate) ob.setZero();
      ob.noalias() += lhs * rhs.middleCols(begin, len);
    }
  };
  parallel_for_chunks(extent, grain, [&](int64_t begin, int64_t end) {
    with_ops(A, B, ta, tb, [&](const auto& lhs, const auto& rhs) { block(lhs, rhs, begin, end); });
  });
}

void backward_one(float* da, float* db, const float* dout, const float* a, const float* b, Dims d,
                  bool ta, bool tb) {
  // dA [M, K] = dout [M, N] · Bᵀ; with B = op(b):
  //   !tb: Bᵀ = bᵀ      -> dA = dout · bᵀ  (gemm with tb = true on b)
  //    tb: Bᵀ = b       -> dA = dout · b
  if (da) {
    if (!ta)
      gemm(da, dout, b, {d.m, d.n, d.k}, false, !tb, true);
    else
      gemm(da, b, dout, {d.k, d.n, d.m}, tb, true, true);  // dAᵀ = B · doutᵀ
  }
  // dB [K, N] = Aᵀ · dout
  if (db) {
    if (!tb)
      gemm(db, a, dout, {d.k, d.m, d.n}, !ta, false, true);
    else
      gemm(db, dout, a, {d.n, d.m, d.k}, true, ta, true);  // dBᵀ = doutᵀ · A
  }
}

}  // namespace

namespace detail {
void gemm(float* out, const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool ta,
          bool tb, bool accumulate) {
  ::mare::gemm(out, a, b, Dims{m, k, n}, ta, tb, accumulate);
}

void gemm_serial(float* out, const float* a, const float* b, int64_t m, int64_t k, int64_t n,
                 bool ta, bool tb, bool accumulate) {
  count_gemm(m, n, k);
  MapRM o(out, m, n);
  CMapRM A(a, ta ? k : m, ta ? m : k);
  CMapRM B(b, tb ? n : k, tb ? k : n);
  if (!accumulate) o.setZero();
  with_ops(A, B, ta, tb, [&](const auto& lhs, const auto& rhs) { o.noalias() += lhs * rhs; });
}

void add_cell_gradients(std::initializer_list<CellGradient> parts, int64_t rows, int64_t w) {
  int64_t cols = 0;
  for (const CellGradient& p : parts) {
    if (p.dw) count_gemm(w, p.cols, rows);
    cols += p.cols;
  }
  const double per_col = 2.0 * static_cast<double>(w) * rows;
  int64_t grain = std::max<int64_t>(cols, 1);
  if (split_work(per_col * cols, kSplitWork))
    grain = whole_panels(grain_for(cols, per_col, kSplitWork, 32), cols);
  parallel_for_chunks(cols, grain, [&](int64_t c0, int64_t c1) {
    int64_t base = 0;  // the part's first column in the concatenation
    for (const CellGradient& p : parts) {
      const int64_t b = std::max(c0, base) - base, e = std::min(c1, base + p.cols) - base;
      base += p.cols;
      if (b >= e) continue;
      CMapRM dz(p.dz, rows, p.cols);
      if (p.dw) {
        StridedMap out(p.dw + b, w, e - b, Eigen::OuterStride<>(p.cols));
        out.noalias() += CMapRM(p.in, rows, w).transpose() * dz.middleCols(b, e - b);
      }
      if (p.db)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = b; j < e; ++j) p.db[j] += dz(r, j);
    }
  });
}
}  // namespace detail

Tensor matmul_forward(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_rank(a, 2, "matmul_forward: a");
  check_rank(b, 2, "matmul_forward: b");
  check_same_device(a, b, "matmul_forward");
  Dims d = product_dims(a.shape(), b.shape(), ta, tb, "matmul_forward");
  MARE_CUDA_DISPATCH("matmul_forward", matmul_forward(a, b, ta, tb), &a, &b);
  Tensor out = Tensor::empty({d.m, d.n}, a.device());
  gemm(out.f32(), a.f32(), b.f32(), d, ta, tb, false);
  return out;
}

void matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                     const Tensor& b, bool ta, bool tb) {
  check_rank(a, 2, "matmul_backward: a");
  check_rank(b, 2, "matmul_backward: b");
  Dims d = product_dims(a.shape(), b.shape(), ta, tb, "matmul_backward");
  check_shape(d_out, {d.m, d.n}, "matmul_backward: d_out");
  if (d_a.defined()) check_same_shape(d_a, a, "matmul_backward: d_a");
  if (d_b.defined()) check_same_shape(d_b, b, "matmul_backward: d_b");
  MARE_CUDA_DISPATCH("matmul_backward", matmul_backward(d_a, d_b, d_out, a, b, ta, tb), &d_a, &d_b,
                     &d_out, &a, &b);
  backward_one(d_a.defined() ? d_a.f32() : nullptr, d_b.defined() ? d_b.f32() : nullptr,
               d_out.f32(), a.f32(), b.f32(), d, ta, tb);
}

Tensor batched_matmul_forward(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_rank(a, 3, "batched_matmul_forward: a");
  check_rank(b, 3, "batched_matmul_forward: b");
  check_same_device(a, b, "batched_matmul_forward");
  if (a.dim(0) != b.dim(0))
    throw ShapeError("batched_matmul_forward: batch sizes differ: a " + a.shape().str() + " vs b " +
                     b.shape().str());
  Dims d = product_dims(a.shape(), b.shape(), ta, tb, "batched_matmul_forward");
  MARE_CUDA_DISPATCH("batched_matmul_forward", batched_matmul_forward(a, b, ta, tb), &a, &b);
  int64_t batch = a.dim(0);
  Tensor out = Tensor::empty({batch, d.m, d.n}, a.device());
  // Batch items in parallel (each item's product is split as gemm splits it,
  // inline when nested, so the blocks are the same at any thread count).
  const int64_t grain = grain_for(batch, static_cast<double>(d.m) * d.n * d.k, kMinBlockWork);
  parallel_for_chunks(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gemm(out.f32() + i * d.m * d.n, a.f32() + i * d.m * d.k, b.f32() + i * d.k * d.n, d, ta, tb,
           false);
  });
  return out;
}

void batched_matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                             const Tensor& b, bool ta, bool tb) {
  check_rank(a, 3, "batched_matmul_backward: a");
  check_rank(b, 3, "batched_matmul_backward: b");
  if (a.dim(0) != b.dim(0))
    throw ShapeError("batched_matmul_backward: batch sizes differ: a " + a.shape().str() +
                     " vs b " + b.shape().str());
  Dims d = product_dims(a.shape(), b.shape(), ta, tb, "batched_matmul_backward");
  int64_t batch = a.dim(0);
  check_shape(d_out, {batch, d.m, d.n}, "batched_matmul_backward: d_out");
  if (d_a.defined()) check_same_shape(d_a, a, "batched_matmul_backward: d_a");
  if (d_b.defined()) check_same_shape(d_b, b, "batched_matmul_backward: d_b");
  MARE_CUDA_DISPATCH("batched_matmul_backward",
                     batched_matmul_backward(d_a, d_b, d_out, a, b, ta, tb), &d_a, &d_b, &d_out, &a,
                     &b);
  float* da = d_a.defined() ? d_a.f32() : nullptr;
  float* db = d_b.defined() ? d_b.f32() : nullptr;
  const int64_t grain = grain_for(batch, 2.0 * d.m * d.n * d.k, kMinBlockWork);
  parallel_for_chunks(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      backward_one(da ? da + i * d.m * d.k : nullptr, db ? db + i * d.k * d.n : nullptr,
                   d_out.f32() + i * d.m * d.n, a.f32() + i * d.m * d.k, b.f32() + i * d.k * d.n, d,
                   ta, tb);
  });
}

}  // namespace mare
