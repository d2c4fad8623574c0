// The CUDA implementations of every op, declared from the list in kernels/backend.h
// with exactly the types of the CPU entry points (minus default arguments): one .cu
// file per family under kernels/cuda/ defines them, and kernels/cuda/backend.cu puts
// them in the dispatch table. Nothing outside kernels/cuda/ includes this header.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "kernels/backend.h"

namespace mare::cuda {

#define MARE_CUDA_DECLARE(op) std::remove_pointer_t<decltype(&::mare::op)> op;
MARE_CUDA_OPS(MARE_CUDA_DECLARE)
#undef MARE_CUDA_DECLARE

double sum_squares(std::span<const Tensor> xs);
Tensor grid_ids(int64_t rows, int64_t cols, bool by_row);

}  // namespace mare::cuda
