// Autograd wrappers of the DNC memory-access ops (SPEC §3, kernels/memory/):
// each runs the kernel's forward and records its backward on the tape. Ops
// with several outputs are one node (record_multi): the interface split (ten
// parts) and the link weights (forward and backward weights), so each runs one
// kernel backward per backward pass with every part's gradient. Shapes are
// those of kernels/memory/{interface,access,allocation}.h: M memories, N slots,
// W word, R read heads.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/memory/allocation.h"
#include "kernels/memory/interface.h"
#include "models/autograd.h"

namespace mare::ag {

// The interface vector's parts, each in its domain (kernels/memory/interface.h).
using MemoryInterface = InterfaceOf<Var>;
// xi: [M, R·W + 3W + 5R + 3]
MemoryInterface interface_split(const Var& xi, int64_t read_heads, int64_t word);

// Steps 1, 5, 10. memory [M, N, W], keys [M, H, W], strengths [M, H] -> [M, H, N]
Var content_weighting(const Var& memory, const Var& keys, const Var& strengths);
// Step 2. free_gates [M, R], read_weights_prev [M, R, N] -> [M, N]
Var retention(const Var& free_gates, const Var& read_weights_prev);
// Step 3. No gradient flows into write_weights_prev (DeepMind's DNC): it is
// read as a constant even when it requires a gradient.
Var usage(const Var& usage_prev, const Var& write_weights_prev, const Var& retention);
// Step 4. usage [M, N] -> [M, N]; the gradient holds the free list fixed.
Var allocation(const Var& usage, AllocationVariant variant);
// Same, the variant by name ("sorted" | "parallel" | "parallel-eps" | "rank" |
// "parallel-block" | "network"; anything else throws naming them).
Var allocation(const Var& usage, std::string_view variant);
// Step 6. allocation, write_content [M, N], gates [M] -> [M, N]
Var write_weighting(const Var& allocation, const Var& write_content, const Var& allocation_gate,
                    const Var& write_gate);
// Step 7. memory [M, N, W], write_weights [M, N], erase, write_vector [M, W] -> [M, N, W]
Var memory_update(const Var& memory, const Var& write_weights, const Var& erase,
                  const Var& write_vector);
// Step 8a. links_prev [M, N, N], precedence_prev, write_weights [M, N] -> [M, N, N]
Var link_update(const Var& links_prev, const Var& precedence_prev, const Var& write_weights);
// Step 8b. precedence_prev, write_weights [M, N] -> [M, N]
Var precedence_update(const Var& precedence_prev, const Var& write_weights);
// Step 9, one node with two outputs. links [M, N, N], read_weights_prev [M, R, N]
struct LinkWeightVars {
  Var forward;   // f = L · w^r_{t−1}  [M, R, N]
  Var backward;  // b = Lᵀ · w^r_{t−1} [M, R, N]
};
LinkWeightVars link_weights(const Var& links, const Var& read_weights_prev);
// Step 10. read_modes [M, R, 3], backward/content/forward weights [M, R, N] -> [M, R, N]
Var read_weights(const Var& read_modes, const Var& backward_weights, const Var& read_content,
                 const Var& forward_weights);
// Step 11. memory [M, N, W], read_weights [M, R, N] -> [M, R, W]
Var read_vectors(const Var& memory, const Var& read_weights);

}  // namespace mare::ag
