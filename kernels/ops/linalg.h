// Dense products: matmul and batched matmul with transpose flags (Eigen on CPU,
// cuBLAS on CUDA). Backward accumulates (+=) into d_a and d_b; an undefined
// gradient tensor is skipped.
#pragma once

#include "kernels/tensor.h"

namespace mare {

// out = op(a) · op(b), op(x) = x or xᵀ.
// a: [M, K] ([K, M] if trans_a), b: [K, N] ([N, K] if trans_b) -> out: [M, N]
Tensor matmul_forward(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
void matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                     const Tensor& b, bool trans_a = false, bool trans_b = false);

// The same per batch: a: [B, M, K], b: [B, K, N] -> out: [B, M, N].
Tensor batched_matmul_forward(const Tensor& a, const Tensor& b, bool trans_a = false,
                              bool trans_b = false);
void batched_matmul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a,
                             const Tensor& b, bool trans_a = false, bool trans_b = false);

}  // namespace mare
