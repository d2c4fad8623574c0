// The data-driven op test table (after ggml's test-backend-ops).
//
// Each OpCase builds its inputs (odd shapes), runs the op's forward and
// backward through closures, and carries a naive double-precision reference
// written independently of the kernel. The table checks, per case:
//   1. forward outputs are finite and match the reference (atol + rtol·|ref|);
//   2. backward matches central differences of the reference in double
//      precision, for a fixed random cotangent on every output;
//   3. backward accumulates: gradients that start at 1 end at 1 + gradient.
// The CUDA column (test_op_table.cpp, OpTableCuda) runs the same closures with
// the inputs on the GPU and compares forward and backward with the CPU run,
// with fresh GPU allocations poisoned (NaN) so that unwritten outputs show.
// Closures that capture tensors (masks, indices) pass them through on_dev().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace mare::test {

using VecD = std::vector<double>;

struct Tol {
  double atol;
  double rtol;
};

struct OpCase {
  std::string name;  // "<op>/<variant>", unique
  std::string op;    // the op_registry() name this case covers
  std::vector<Tensor> inputs;
  std::vector<bool> differentiable;  // per input
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> forward;
  // Accumulates into d_in[i] for every differentiable input (others undefined).
  std::function<void(const std::vector<Tensor>& in, const std::vector<Tensor>& d_out,
                     std::vector<Tensor>& d_in)>
      backward;
  // Naive reference: same inputs as doubles (flattened, row-major) -> outputs.
  std::function<std::vector<VecD>(const std::vector<VecD>&)> reference;
  Tol forward_tol{1e-5, 1e-5};
  Tol grad_tol{2e-5, 2e-4};
  double fd_step = 1e-6;
  // GPU against CPU. Default by family: elementwise {1e-6, 1e-5}, everything
  // after a reduction or a GEMM {1e-5, 1e-4} (SPEC §2).
  std::optional<Tol> cuda_tol;
};

// The device the table currently runs its closures on (cpu, or cuda in the
// CUDA column). on_dev(t) returns t on that device (a copy when it is not
// there already; undefined stays undefined).
Device table_device();
void set_table_device(Device d);
Tensor on_dev(const Tensor& t);

std::vector<OpCase> all_op_cases();
// Cases of later op families, each in its own file, joined by all_op_cases().
std::vector<OpCase> memory_op_cases();   // tests/kernels/memory_cases.cpp (SPEC §3)
std::vector<OpCase> grpu_op_cases();     // tests/kernels/grpu_cases.cpp (SPEC §4.6)
std::vector<OpCase> halting_op_cases();  // tests/kernels/halting_cases.cpp (SPEC §4.4)

// Helpers shared by case definitions and other kernel tests.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
VecD to_double(const Tensor& t);

}  // namespace mare::test
