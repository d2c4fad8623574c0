// Column sums over the leading rows of a row-major matrix, dst[c] += Σ_r src[r, c],
// for every reduction over the rows of the backend's families (d_bias of bias_add
// and conv1d, depthwise d_w), in a fixed order and without atomics: pass 1 sums
// each chunk of kColumnChunkRows rows of a column (one thread per chunk and
// column), pass 2 adds a column's chunk sums in chunk order (one thread per
// column). Acc is the accumulator: float (conv1d, as its CPU op) or double
// (bias_add, as its CPU op).
#pragma once

#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace mare::cuda {
namespace {  // each family file that includes this gets its own kernels

constexpr int64_t kColumnChunkRows = 64;

inline int64_t column_chunks(int64_t rows) {
  return (rows + kColumnChunkRows - 1) / kColumnChunkRows;
}

// Pass 1: partial[chunk, c] = Σ src[r, c] over the rows r of the chunk, in row order.
template <class Acc>
__global__ void column_chunk_sums_kernel(const float* __restrict__ src, Acc* __restrict__ partial,
                                         int64_t rows, int64_t cols, int64_t chunks) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < chunks * cols;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t chunk = t / cols, c = t % cols;
    const int64_t end = min(rows, (chunk + 1) * kColumnChunkRows);
    Acc acc = 0;
    for (int64_t r = chunk * kColumnChunkRows; r < end; ++r) acc += src[r * cols + c];
    partial[t] = acc;
  }
}

// Pass 2: dst[c] += Σ_chunk partial[chunk, c], chunks in order.
template <class Acc>
__global__ void add_chunk_sums_kernel(float* __restrict__ dst, const Acc* __restrict__ partial,
                                      int64_t chunks, int64_t cols) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    Acc acc = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) acc += partial[chunk * cols + c];
    dst[c] += static_cast<float>(acc);
  }
}

// dst [cols] += Σ_r src [rows, cols], both passes.
template <class Acc>
void add_column_sums(float* dst, const float* src, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  const int64_t chunks = column_chunks(rows);
  Workspace partial(static_cast<size_t>(chunks * cols) * sizeof(Acc));
  launch("column_chunk_sums_kernel", chunks * cols, column_chunk_sums_kernel<Acc>, src,
         partial.as<Acc>(), rows, cols, chunks);
  launch("add_chunk_sums_kernel", cols, add_chunk_sums_kernel<Acc>, dst, partial.as<Acc>(), chunks,
         cols);
}

}  // namespace
}  // namespace mare::cuda
