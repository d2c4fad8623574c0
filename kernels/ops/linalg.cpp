// matmul / batched matmul on the CPU with Eigen.
//
// With A = op(a) [M, K], B = op(b) [K, N], out = A·B and
//   dA = d_out · Bᵀ   (so d_a += dA, or dAᵀ when trans_a)
//   dB = Aᵀ · d_out   (so d_b += dB, or dBᵀ when trans_b)
#include "kernels/ops/linalg.h"

#include "kernels/ops/common.h"

namespace mare {
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

// out (+)= op(a)·op(b) for one matrix pair; `accumulate` adds instead of assigning.
void gemm(float* out, const float* a, const float* b, Dims d, bool ta, bool tb, bool accumulate) {
  MapRM o(out, d.m, d.n);
  CMapRM A(a, ta ? d.k : d.m, ta ? d.m : d.k);
  CMapRM B(b, tb ? d.n : d.k, tb ? d.k : d.n);
  if (!accumulate) o.setZero();
  if (!ta && !tb)
    o.noalias() += A * B;
  else if (ta && !tb)
    o.noalias() += A.transpose() * B;
  else if (!ta && tb)
    o.noalias() += A * B.transpose();
  else
    o.noalias() += A.transpose() * B.transpose();
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
  for (int64_t i = 0; i < batch; ++i)
    gemm(out.f32() + i * d.m * d.n, a.f32() + i * d.m * d.k, b.f32() + i * d.k * d.n, d, ta, tb,
         false);
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
  for (int64_t i = 0; i < batch; ++i)
    backward_one(d_a.defined() ? d_a.f32() + i * d.m * d.k : nullptr,
                 d_b.defined() ? d_b.f32() + i * d.k * d.n : nullptr, d_out.f32() + i * d.m * d.n,
                 a.f32() + i * d.m * d.k, b.f32() + i * d.k * d.n, d, ta, tb);
}

}  // namespace mare
