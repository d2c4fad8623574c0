// The device backend's dispatch table: every op is declared once, by its CPU entry
// point (kernels/ops/*.h, kernels/memory/*.h, kernels/random.h), and this file lists
// the ops that have a CUDA implementation by name. The table's slots take their types
// from the CPU declarations, so a CUDA kernel has exactly its op's signature (less the
// default arguments), and a new op is its declaration, its kernels, and its name here.
//
// The CPU entry points validate their arguments and, when the tensors are on the GPU,
// call through cuda_backend() (MARE_CUDA_DISPATCH, kernels/ops/common.h). The table is
// filled by the CUDA backend (kernels/cuda/backend.cu), which the CPU layer does not
// include: the dependency runs one way, from kernels/cuda/ to the ops.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "kernels/memory/fused_step.h"
#include "kernels/ops.h"
#include "kernels/ops/grpu.h"
#include "kernels/ops/recurrent.h"
#include "kernels/random.h"

// X(op) for every op with a CUDA implementation of the CPU entry point's signature.
// clang-format off
#define MARE_CUDA_OPS(X) \
  X(matmul_forward) X(matmul_backward)                        \
  X(batched_matmul_forward) X(batched_matmul_backward)        \
  X(bias_add_forward) X(bias_add_backward)                    \
  X(add_forward) X(add_backward)                              \
  X(mul_forward) X(mul_backward)                              \
  X(scale_forward) X(scale_backward)                          \
  X(div_forward) X(div_backward)                              \
  X(select_rows_forward) X(select_rows_backward)              \
  X(scale_rows_forward) X(scale_rows_backward)                \
  X(relu_forward) X(relu_backward)                            \
  X(relu6_forward) X(relu6_backward)                          \
  X(sigmoid_forward) X(sigmoid_backward)                      \
  X(tanh_forward) X(tanh_backward)                            \
  X(oneplus_forward) X(oneplus_backward)                      \
  X(hard_sigmoid_forward) X(hard_sigmoid_backward)            \
  X(dropout_forward) X(dropout_backward)                      \
  X(softmax_forward) X(softmax_backward)                      \
  X(log_softmax_forward) X(log_softmax_backward)              \
  X(logsumexp_sets_forward) X(logsumexp_sets_backward)        \
  X(layer_norm_forward) X(layer_norm_backward)                \
  X(batch_norm_forward) X(batch_norm_backward)                \
  X(halting_forward) X(halting_backward)                      \
  X(conv1d_forward) X(conv1d_backward)                        \
  X(depthwise_conv1d_forward) X(depthwise_conv1d_backward)    \
  X(max_forward) X(max_backward)                              \
  X(embedding_forward) X(embedding_backward)                  \
  X(concat_forward) X(concat_backward)                        \
  X(split_forward) X(split_backward)                          \
  X(cross_entropy_forward) X(cross_entropy_backward)          \
  X(mse_forward) X(mse_backward)                              \
  X(attention_forward) X(attention_backward)                  \
  X(grpu_cell_forward) X(grpu_cell_backward)                  \
  X(gru_cell_forward) X(gru_cell_backward)                    \
  X(lstm_cell_forward) X(lstm_cell_backward)                  \
  X(interface_split_forward) X(interface_split_backward)      \
  X(content_weighting_forward) X(content_weighting_backward)  \
  X(retention_forward) X(retention_backward)                  \
  X(usage_forward) X(usage_backward)                          \
  X(write_weighting_forward) X(write_weighting_backward)      \
  X(memory_update_forward) X(memory_update_backward)          \
  X(link_update_forward) X(link_update_backward)              \
  X(precedence_update_forward) X(precedence_update_backward)  \
  X(link_weights_forward) X(link_weights_backward)            \
  X(read_weights_forward) X(read_weights_backward)            \
  X(read_vectors_forward) X(read_vectors_backward)            \
  X(allocation_forward_into)                                  \
  X(allocation_backward)                                      \
  X(memory_step_forward) X(memory_step_backward)              \
  X(fill_uniform)                                             \
  X(fill_normal)                                              \
  X(fill_bernoulli)                                           \
  X(l2_grad_add)                                              \
  X(scale_inplace)                                            \
  X(adam_step)                                                \
  X(adam_update)
// clang-format on

namespace mare {

// CUDA helpers whose CPU counterparts differ in signature (the CPU sum_squares is
// overloaded; grid_ids takes the device).
using CudaSumSquares = double (*)(std::span<const Tensor>);
using CudaGridIds = Tensor (*)(int64_t rows, int64_t cols, bool by_row);

struct CudaBackend {
#define MARE_CUDA_SLOT(op) decltype(&::mare::op) op = nullptr;
  MARE_CUDA_OPS(MARE_CUDA_SLOT)
#undef MARE_CUDA_SLOT
  CudaSumSquares sum_squares = nullptr;
  CudaGridIds grid_ids = nullptr;
};

// The CUDA backend's table; defined only in builds with the CUDA backend
// (MARE_WITH_CUDA), where no GPU tensor can reach a CPU entry point without it.
const CudaBackend& cuda_backend();

}  // namespace mare
