#include "models/functions_memory_step.h"

#include <memory>

#include "kernels/memory/fused_step.h"

namespace mare::ag {

MemoryStepVars memory_step(const Var& xi, const Var& memory, const Var& usage,
                           const Var& write_weights, const Var& read_weights, const Var& precedence,
                           const Var& links, int64_t read_heads, AllocationVariant variant) {
  const MemoryStepState prev{memory->value,       usage->value,      write_weights->value,
                             read_weights->value, precedence->value, links->value};
  auto out =
      std::make_shared<MemoryStepResult>(memory_step_forward(xi->value, prev, read_heads, variant));
  const MemoryStepState& s = out->state;
  // write_weights is not an input of the node: no gradient reaches it.
  std::vector<Var> v = record_multi(
      {s.memory, s.usage, s.write_weights, s.read_weights, s.precedence, s.links,
       out->read_vectors},
      {xi, memory, usage, read_weights, precedence, links},
      [xi, memory, usage, read_weights, precedence, links, prev, out, read_heads,
       variant](const std::vector<Tensor>& g) {
        Tensor dxi = grad_of(xi);
        MemoryStepState d_prev{grad_of(memory),       grad_of(usage),      Tensor(),
                               grad_of(read_weights), grad_of(precedence), grad_of(links)};
        const MemoryStepState d_state{g[0], g[1], g[2], g[3], g[4], g[5]};
        memory_step_backward(dxi, d_prev, d_state, g[6], xi->value, prev, *out, read_heads,
                             variant);
      });
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], constant(out->allocation)};
}

}  // namespace mare::ag
