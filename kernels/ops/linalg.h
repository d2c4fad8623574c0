// Dense products: matmul and batched matmul with transpose flags (Eigen on CPU,
// cuBLAS on CUDA). Backward accumulates (+=) into d_a and d_b; an undefined
// gradient tensor is skipped.
#pragma once

#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace mare {

// The precision of the GPU's GEMMs (every cuBLAS product of the backend: matmul,
// attention, convolution, the memory ops' small products), process-wide, as
// PyTorch's torch.set_float32_matmul_precision:
//   highest  fp32 products and sums (cuBLAS pedantic math; the default);
//   high     TF32 tensor cores: inputs rounded to a 10-bit mantissa, fp32 sums
//            (CUBLAS_TF32_TENSOR_OP_MATH); several times the fp32 rate on an
//            H100, with products good to about 1e-3 relative.
// The CPU computes in fp32 whatever the setting; the commands refuse `high`
// where no GPU runs. Same inputs, same precision, same GPU: same bits.
enum class MatmulPrecision { highest, high };
void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();
const char* to_string(MatmulPrecision p);
MatmulPrecision parse_matmul_precision(const std::string& name);  // "highest" | "high"
std::vector<std::string> matmul_precision_names();

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
