// One whole DNC memory step (SPEC §3 steps 1–11, the interface split included)
// as a single forward/backward op pair: what nn::MemoryController runs per
// iteration, fused so that each memory's state is read once, in cache,
// instead of through the twelve ops of access.h/interface.h/allocation.h, each
// of which walks every [M, N, W] tensor again and keeps its own intermediates
// (the composed step at the paper size moves ~1 GB a call through memory).
//
// Same equations as the composed ops, to rounding (not bit for bit: the
// content lookups' double sums run over eight interleaved partial sums); the
// allocation (step 4) is the allocation op of allocation.h itself, run on all
// memories between the two passes of each direction, so every variant behaves
// exactly as in the composed step. The tests compare forward and backward with
// the composed ops, and a double-precision instantiation of the same code (with
// a sorted allocation written here) with central differences.
//
// Shapes: M memories, N slots, W word, R read heads; xi [M, R·W + 3W + 5R + 3]
// (kernels/memory/interface.h order). No gradient flows into the previous write
// weights (DeepMind's DNC; usage_backward's rule). Backward accumulates (+=)
// and skips undefined gradients, as every op of the kernel layer. On the CPU
// the passes run over chunks of memories on the kernel threads; GPU tensors go
// to kernels/cuda/memory_step.cu (one warp a memory; equal to the CPU to
// rounding, tested against it), which takes N up to 3072 slots.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/memory/allocation.h"
#include "kernels/tensor.h"

namespace mare {

struct MemoryStepState {
  Tensor memory;         // [M, N, W]
  Tensor usage;          // [M, N]
  Tensor write_weights;  // [M, N]
  Tensor read_weights;   // [M, R, N]
  Tensor precedence;     // [M, N]
  Tensor links;          // [M, N, N]
};

struct MemoryStepResult {
  MemoryStepState state;  // the new state
  Tensor read_vectors;    // [M, R, W]
  // Saved for the backward (small: [M, N] and [M, R, N]).
  Tensor retention, allocation, write_content;             // [M, N]
  Tensor forward_weights, backward_weights, read_content;  // [M, R, N]
  // The allocation's free lists (int32 [M, N]) where the variant keeps them on
  // this device (allocation_keeps_free_list), for the backward; else undefined.
  Tensor free_lists;
};

MemoryStepResult memory_step_forward(const Tensor& xi, const MemoryStepState& prev,
                                     int64_t read_heads, AllocationVariant variant);

// d_out: gradients of the result's state and read vectors (any may be
// undefined). d_prev.write_weights is never written (no gradient flows there).
void memory_step_backward(Tensor& d_xi, MemoryStepState& d_prev, const MemoryStepState& d_state,
                          const Tensor& d_read_vectors, const Tensor& xi,
                          const MemoryStepState& prev, const MemoryStepResult& out,
                          int64_t read_heads, AllocationVariant variant);

// The same code in double precision with the sorted allocation, on flat
// arrays (the layout of the tensors above), for the gradient tests. `outputs`
// receives memory, usage, write_weights, read_weights, precedence, links,
// read_vectors in that order, concatenated; `d_outputs` is laid out alike and
// the gradients of xi and of the previous state (same order, write_weights
// left zero) are accumulated into d_xi and d_prev.
struct MemoryStepDims {
  int64_t M = 1, N = 1, W = 1, R = 1;
};
void memory_step_forward_f64(const MemoryStepDims& dims, const std::vector<double>& xi,
                             const std::vector<double>& prev, std::vector<double>& outputs);
void memory_step_backward_f64(const MemoryStepDims& dims, const std::vector<double>& xi,
                              const std::vector<double>& prev, const std::vector<double>& d_outputs,
                              std::vector<double>& d_xi, std::vector<double>& d_prev);

}  // namespace mare
