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
#include <vector>

#include "kernels/tensor.h"

namespace mare {

// Width of ξ for R read heads and words of W: R·W + 3W + 5R + 3.
int64_t interface_width(int64_t read_heads, int64_t word);

// Where each part starts in one row of ξ (the order above), for R read heads and
// words of W, in the index type I: for code that reads ξ in place (the fused memory
// step, fused_step.cpp; its GPU kernels, kernels/cuda/memory_step.cu, take it as a
// kernel argument with int offsets).
template <class I>
struct InterfaceLayoutOf {
  I read_keys, read_strengths, write_key, write_strength, erase, write_vector, free_gates,
      allocation_gate, write_gate, read_modes;
  static constexpr InterfaceLayoutOf of(I R, I W) {
    return {0,
            R * W,
            R * W + R,
            R * W + R + W,
            R * W + R + W + 1,
            R * W + R + 2 * W + 1,
            R * W + R + 3 * W + 1,
            R * W + 2 * R + 3 * W + 1,
            R * W + 2 * R + 3 * W + 2,
            R * W + 2 * R + 3 * W + 3};
  }
};
using InterfaceLayout = InterfaceLayoutOf<int64_t>;

// The interface vector's parts, each in its domain, over a tensor kind: Tensor here
// (InterfaceParts), ag::Var in models/functions_memory.h (ag::MemoryInterface); one field
// list for both.
template <class T>
struct InterfaceOf {
  T read_keys;        // [M, R, W]
  T read_strengths;   // [M, R]
  T write_key;        // [M, 1, W]
  T write_strength;   // [M, 1]
  T erase;            // [M, W]
  T write_vector;     // [M, W]
  T free_gates;       // [M, R]
  T allocation_gate;  // [M]
  T write_gate;       // [M]
  T read_modes;       // [M, R, 3]

  // The ten fields in the order above, and back, for code that treats them alike.
  std::vector<T> fields() const {
    return {read_keys,    read_strengths, write_key,       write_strength, erase,
            write_vector, free_gates,     allocation_gate, write_gate,     read_modes};
  }
  static InterfaceOf from_fields(const std::vector<T>& f) {
    return {f.at(0), f.at(1), f.at(2), f.at(3), f.at(4),
            f.at(5), f.at(6), f.at(7), f.at(8), f.at(9)};
  }
};
using InterfaceParts = InterfaceOf<Tensor>;

// xi: [M, interface_width(R, W)]
InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word);
// d_xi: [M, X]; d_parts: gradients w.r.t. the transformed parts (any may be
// undefined); parts: the forward's outputs.
void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word);

}  // namespace mare
