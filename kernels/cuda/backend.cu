// The CUDA backend's dispatch table (kernels/backend.h): every slot points at the
// kernel launcher of the same name in kernels/cuda/*.cu.
#include "kernels/cuda/ops_cuda.h"

namespace mare {

const CudaBackend& cuda_backend() {
  static const CudaBackend table = [] {
    CudaBackend t;
#define MARE_CUDA_FILL(op) t.op = &::mare::cuda::op;
    MARE_CUDA_OPS(MARE_CUDA_FILL)
#undef MARE_CUDA_FILL
    t.sum_squares = &cuda::sum_squares;
    t.grid_ids = &cuda::grid_ids;
    return t;
  }();
  return table;
}

}  // namespace mare
