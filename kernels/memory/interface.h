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

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/tensor.h"

namespace mare {

// How a part maps its entries of ξ to its domain (the table above).
enum class InterfaceDomain : int { identity, oneplus, sigmoid, softmax3 };

inline constexpr int kInterfaceParts = 10;

// Part p (the order above) for R read heads and words of W: its shape after the
// leading M (its width in ξ is the product) and its domain. The one place the layout
// of ξ is written down; the offsets, interface_width, the CPU split (interface.cpp),
// the fused steps and the GPU's split (kernels/cuda/memory.cu) all derive from it.
struct InterfacePart {
  Shape tail;
  InterfaceDomain domain;
  int64_t width() const { return tail.numel(); }
  Shape shape(int64_t memories) const;  // [M, tail…]
};
std::array<InterfacePart, kInterfaceParts> interface_parts(int64_t R, int64_t W);

// Where part p starts in one row of ξ, p < 10; [10] is the width of ξ. The running
// sum of interface_parts' widths, taken here only.
std::array<int64_t, kInterfaceParts + 1> interface_offsets(int64_t R, int64_t W);

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
  static InterfaceLayoutOf of(I R, I W) {
    const auto o = interface_offsets(R, W);
    auto at = [&](int p) { return static_cast<I>(o[p]); };
    return {at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8), at(9)};
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

  // The ten fields in the order above: as members, as a list, and back.
  static constexpr std::array<T InterfaceOf::*, kInterfaceParts> members() {
    return {&InterfaceOf::read_keys,      &InterfaceOf::read_strengths,  &InterfaceOf::write_key,
            &InterfaceOf::write_strength, &InterfaceOf::erase,           &InterfaceOf::write_vector,
            &InterfaceOf::free_gates,     &InterfaceOf::allocation_gate, &InterfaceOf::write_gate,
            &InterfaceOf::read_modes};
  }
  std::vector<T> fields() const {
    std::vector<T> f;
    for (auto member : members()) f.push_back(this->*member);
    return f;
  }
  static InterfaceOf from_fields(const std::vector<T>& f) {
    InterfaceOf out;
    for (int p = 0; p < kInterfaceParts; ++p) out.*members()[p] = f.at(static_cast<size_t>(p));
    return out;
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
