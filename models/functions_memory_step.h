// Autograd wrapper of the fused memory step (kernels/memory/fused_step.h): one
// node with seven outputs (the new state and the read vectors) whose backward
// runs the fused backward once with every output's gradient. No gradient
// reaches the previous write weights (DeepMind's DNC), as with ag::usage.
#pragma once

#include <cstdint>

#include "kernels/memory/allocation.h"
#include "models/autograd.h"

namespace mare::ag {

struct MemoryStepVars {
  Var memory, usage, write_weights, read_weights, precedence, links, read_vectors;
  Var allocation;  // the step's allocation weighting (a constant: for inspection only)
};

// xi [M, R·W + 3W + 5R + 3]; the previous state's shapes as in kernels/memory/fused_step.h.
MemoryStepVars memory_step(const Var& xi, const Var& memory, const Var& usage,
                           const Var& write_weights, const Var& read_weights, const Var& precedence,
                           const Var& links, int64_t read_heads, AllocationVariant variant);

}  // namespace mare::ag
