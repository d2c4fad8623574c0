// matmul and batched matmul on the GPU with cuBLAS, mirroring kernels/ops/linalg.cpp.
//
// Tensors are row-major and cuBLAS is column-major: a row-major [r, c] matrix
// with row stride ld is, read column-major, its transpose [c, r] with leading
// dimension ld. So for C = op(A)·op(B) we ask cuBLAS for Cᵀ = op(B)ᵀ·op(A)ᵀ:
// the operands swap places, each keeps its own transpose flag, and m and n
// swap. `gemm_row_major` below does this once for every GEMM of the backend
// (conv.cu and attention.cu call it too); it also takes leading dimensions and
// batch strides, so strided views (one head's columns of q) need no copies.
//
// With A = op(a) [M, K], B = op(b) [K, N], out = A·B, backward is the CPU's:
//   dA = d_out · Bᵀ  (d_a += dA, or dAᵀ when trans_a)
//   dB = Aᵀ · d_out  (d_b += dB, or dBᵀ when trans_b)
// accumulated with beta = 1. cuBLAS runs with atomics off and pedantic math, or
// TF32 tensor-op math under matmul_precision() == high (kernels/ops/linalg.h), so
// a GEMM gives the same bits for the same inputs and precision.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops/gemm_count.h"
#include "kernels/ops/linalg.h"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
// File-local (internal linkage): other family files define kernels of the same names.
namespace {

// C = beta · C over `count` strided [m, n] matrices with row stride ldc: a GEMM
// with an empty inner dimension (cuBLAS rejects its leading dimension of 0).
// beta = 0 writes zeros without reading C (which may hold NaN poison).
__global__ void scale_matrices_kernel(float* __restrict__ c, int64_t total, int64_t m, int64_t n,
                                      int64_t ldc, int64_t stride_c, float beta) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = t % n, row = (t / n) % m, mat = t / (m * n);
    float* p = c + mat * stride_c + row * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

}  // namespace

// ------------------------------------------------------------------ launchers

// For each of `count` triples (pointers advanced by the strides):
//   C [m, n] = alpha · op(A) · op(B) + beta · C       (all row-major)
// A is stored [m, k] ([k, m] if trans_a) with row stride lda, B [k, n] ([n, k]
// if trans_b) with row stride ldb, C with row stride ldc. beta = 0 never reads C.
void gemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb,
                    int64_t stride_b, float beta, float* c, int64_t ldc, int64_t stride_c,
                    int64_t count) {
  if (m == 0 || n == 0 || count == 0) return;
  if (k == 0) {  // op(A)·op(B) is zero: C = beta · C
    if (beta == 1.0f) return;
    int64_t total = count * m * n;
    launch("scale_matrices_kernel", total, scale_matrices_kernel, c, total, m, n, ldc, stride_c,
           beta);
    return;
  }
  // Counted as the CPU counts its products (kernels/ops/gemm_count.h): every
  // cuBLAS product of the backend, the memory access ops' small ones included.
  ::mare::detail::count_gemm(m, n, k * count);
  // Column-major: Cᵀ [n, m] = op(B)ᵀ [n, k] · op(A)ᵀ [k, m].
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  int im = to_int(m, "gemm m"), in = to_int(n, "gemm n"), ik = to_int(k, "gemm k");
  int ilda = to_int(lda, "gemm lda"), ildb = to_int(ldb, "gemm ldb"),
      ildc = to_int(ldc, "gemm ldc");
  // The process's matmul precision (kernels/ops/linalg.h): fp32 (pedantic) or TF32.
  MARE_CUBLAS_CHECK(cublasSetMathMode(cublas(), matmul_precision() == MatmulPrecision::high
                                                    ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_PEDANTIC_MATH));
  if (count == 1) {
    MARE_CUBLAS_CHECK(
        cublasSgemm(cublas(), op_b, op_a, in, im, ik, &alpha, b, ildb, a, ilda, &beta, c, ildc));
  } else {
    MARE_CUBLAS_CHECK(cublasSgemmStridedBatched(
        cublas(), op_b, op_a, in, im, ik, &alpha, b, ildb, static_cast<long long>(stride_b), a,
        ilda, static_cast<long long>(stride_a), &beta, c, ildc, static_cast<long long>(stride_c),
        to_int(count, "gemm batch count")));
  }
}

namespace {

struct Dims {
  int64_t m, k, n;
};

// The CPU's gemm on `batch` contiguous matrix triples: out [m, n] (+)= op(a) · op(b),
// a stored [m, k] ([k, m] if ta), b stored [k, n] ([n, k] if tb).
void gemm(float* out, const float* a, const float* b, Dims d, bool ta, bool tb, bool accumulate,
          int64_t batch) {
  gemm_row_major(ta, tb, d.m, d.n, d.k, 1.0f, a, ta ? d.m : d.k, d.m * d.k, b, tb ? d.k : d.n,
                 d.k * d.n, accumulate ? 1.0f : 0.0f, out, d.n, d.m * d.n, batch);
}

// Line for line the CPU's backward_one, on `batch` matrix triples at once.
void backward_batch(float* da, float* db, const float* dout, const float* a, const float* b, Dims d,
                    bool ta, bool tb, int64_t batch) {
  // dA [M, K] = dout [M, N] · Bᵀ
  if (da) {
    if (!ta)
      gemm(da, dout, b, {d.m, d.n, d.k}, false, !tb, true, batch);
    else
      gemm(da, b, dout, {d.k, d.n, d.m}, tb, true, true, batch);  // dAᵀ = B · doutᵀ
  }
  // dB [K, N] = Aᵀ · dout
  if (db) {
    if (!tb)
      gemm(db, a, dout, {d.k, d.m, d.n}, !ta, false, true, batch);
    else
      gemm(db, dout, a, {d.n, d.m, d.k}, true, ta, true, batch);  // dBᵀ = doutᵀ · A
  }
}

// The last two axes of a (rank 2 or 3) as the CPU's product_dims reads them.
Dims dims_of(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  int r = a.rank();
  return {ta ? a.dim(r - 1) : a.dim(r - 2), ta ? a.dim(r - 2) : a.dim(r - 1),
          tb ? b.dim(r - 2) : b.dim(r - 1)};
}

// The CPU backward entry points check d_out and the gradients but not a and b
// against each other; a kernel reading past them fails far from the cause.
void check_operands(const Tensor& a, const Tensor& b, int rank, bool ta, bool tb, const char* op) {
  check_rank(a, rank, op);
  check_rank(b, rank, op);
  int64_t ka = ta ? a.dim(rank - 2) : a.dim(rank - 1), kb = tb ? b.dim(rank - 1) : b.dim(rank - 2);
  if (ka != kb || (rank == 3 && a.dim(0) != b.dim(0)))
    throw ShapeError(std::string(op) + ": a " + a.shape().str() + " and b " + b.shape().str() +
                     " do not multiply");
}

// out (+)= op(a) · op(b) on rank-2 operands (one product) or rank-3 ones (a.dim(0) products).
Tensor product_forward(const Tensor& a, const Tensor& b, bool ta, bool tb, int rank,
                       const char* op) {
  require_cuda({&a, &b}, op);
  Dims d = dims_of(a, b, ta, tb);
  const int64_t batch = rank == 3 ? a.dim(0) : 1;
  Tensor out = Tensor::empty(rank == 3 ? Shape{batch, d.m, d.n} : Shape{d.m, d.n}, Device::cuda);
  gemm(out.f32(), a.f32(), b.f32(), d, ta, tb, false, batch);
  return out;
}

void product_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                      const Tensor& b, bool ta, bool tb, int rank, const char* op) {
  require_cuda({&d_a, &d_b, &d_out, &a, &b}, op);
  check_operands(a, b, rank, ta, tb, op);
  backward_batch(ptr_or_null(d_a), ptr_or_null(d_b), d_out.f32(), a.f32(), b.f32(),
                 dims_of(a, b, ta, tb), ta, tb, rank == 3 ? a.dim(0) : 1);
}

}  // namespace

Tensor matmul_forward(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return product_forward(a, b, trans_a, trans_b, 2, "matmul_forward");
}

void matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                     const Tensor& b, bool trans_a, bool trans_b) {
  product_backward(d_a, d_b, d_out, a, b, trans_a, trans_b, 2, "matmul_backward");
}

Tensor batched_matmul_forward(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return product_forward(a, b, trans_a, trans_b, 3, "batched_matmul_forward");
}

void batched_matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                             const Tensor& b, bool trans_a, bool trans_b) {
  product_backward(d_a, d_b, d_out, a, b, trans_a, trans_b, 3, "batched_matmul_backward");
}

}  // namespace mare::cuda
