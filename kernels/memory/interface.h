// The DNC interface vector (SPEC §3): one vector ξ per memory, split into its
// parts in this order, each mapped to its domain.
//
//   part               width   domain transform
//   read keys          R·W     identity            -> [M, R, W]
//   read strengths     R       oneplus (1+softplus) -> [M, R]
//   write key          W       identity            -> [M, 1, W]
//   write strength     1       oneplus             -> [M, 1]
//   erase vector       W       sigmoid             -> [M, W]
//   write vector       W       identity            -> [M, W]
//   free gates         R       sigmoid             -> [M, R]
//   allocation gate    1       sigmoid             -> [M]
//   write gate         1       sigmoid             -> [M]
//   read modes         3·R     softmax over each 3 -> [M, R, 3]  (backward, content, forward)
//
// Rule: backward ACCUMULATES into d_xi; a part whose gradient is undefined
// contributes nothing.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace mare {

// Width of ξ for R read heads and words of W: R·W + 3W + 5R + 3.
int64_t interface_width(int64_t read_heads, int64_t word);

struct InterfaceParts {
  Tensor read_keys;        // [M, R, W]
  Tensor read_strengths;   // [M, R]
  Tensor write_key;        // [M, 1, W]
  Tensor write_strength;   // [M, 1]
  Tensor erase;            // [M, W]
  Tensor write_vector;     // [M, W]
  Tensor free_gates;       // [M, R]
  Tensor allocation_gate;  // [M]
  Tensor write_gate;       // [M]
  Tensor read_modes;       // [M, R, 3]
};

// xi: [M, interface_width(R, W)]
InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word);
// d_xi: [M, X]; d_parts: gradients w.r.t. the transformed parts (any may be
// undefined); parts: the forward's outputs.
void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word);

}  // namespace mare
