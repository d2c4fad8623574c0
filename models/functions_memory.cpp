#include "models/functions_memory.h"

#include <memory>

#include "kernels/memory/access.h"
#include "kernels/memory/interface.h"

namespace mare::ag {

MemoryInterface interface_split(const Var& xi, int64_t read_heads, int64_t word) {
  auto parts =
      std::make_shared<InterfaceParts>(interface_split_forward(xi->value, read_heads, word));
  std::vector<Var> out = record_multi(
      parts->fields(), {xi}, [xi, parts, read_heads, word](const std::vector<Tensor>& g) {
        // An undefined part gradient (part unused) contributes nothing.
        Tensor dxi = grad_of(xi);
        interface_split_backward(dxi, InterfaceParts::from_fields(g), xi->value, *parts, read_heads,
                                 word);
      });
  return MemoryInterface::from_fields(out);
}

Var content_weighting(const Var& memory, const Var& keys, const Var& strengths) {
  Tensor out = content_weighting_forward(memory->value, keys->value, strengths->value);
  return record(out, {memory, keys, strengths}, [memory, keys, strengths, out](Node& s) {
    Tensor dm = grad_of(memory), dk = grad_of(keys), ds = grad_of(strengths);
    content_weighting_backward(dm, dk, ds, s.grad, memory->value, keys->value, strengths->value,
                               out);
  });
}

Var retention(const Var& free_gates, const Var& read_weights_prev) {
  return apply_op(retention_forward, retention_backward, free_gates, read_weights_prev);
}

Var usage(const Var& usage_prev, const Var& write_weights_prev, const Var& retention) {
  // write_weights_prev is not an input of the node: no gradient reaches it.
  const Tensor ww = write_weights_prev->value;
  return record(usage_forward(usage_prev->value, ww, retention->value), {usage_prev, retention},
                [usage_prev, ww, retention](Node& s) {
                  Tensor du = grad_of(usage_prev), dr = grad_of(retention);
                  usage_backward(du, dr, s.grad, usage_prev->value, ww, retention->value);
                });
}

Var allocation(const Var& usage, AllocationVariant variant) {
  // The free lists the forward keeps (where it can) spare the backward a sort.
  const Tensor& u = usage->value;
  Tensor out = Tensor::empty(u.shape(), u.device());
  Tensor lists;
  if (allocation_keeps_free_list(variant, u.device()))
    lists = Tensor::empty(u.shape(), u.device(), DType::i32);
  if (!allocation_forward_into(out, u, variant, lists.defined() ? &lists : nullptr))
    lists = Tensor();
  return record(std::move(out), {usage}, [usage, variant, lists](Node& s) {
    Tensor du = grad_of(usage);
    allocation_backward(du, s.grad, usage->value, variant, lists.defined() ? &lists : nullptr);
  });
}

Var allocation(const Var& usage, std::string_view variant) {
  return allocation(usage, parse_allocation_variant(variant));
}

Var write_weighting(const Var& allocation, const Var& write_content, const Var& allocation_gate,
                    const Var& write_gate) {
  return apply_op(write_weighting_forward, write_weighting_backward, allocation, write_content,
                  allocation_gate, write_gate);
}

Var memory_update(const Var& memory, const Var& write_weights, const Var& erase,
                  const Var& write_vector) {
  return apply_op(memory_update_forward, memory_update_backward, memory, write_weights, erase,
                  write_vector);
}

Var link_update(const Var& links_prev, const Var& precedence_prev, const Var& write_weights) {
  return apply_op(link_update_forward, link_update_backward, links_prev, precedence_prev,
                  write_weights);
}

Var precedence_update(const Var& precedence_prev, const Var& write_weights) {
  return apply_op(precedence_update_forward, precedence_update_backward, precedence_prev,
                  write_weights);
}

LinkWeightVars link_weights(const Var& links, const Var& read_weights_prev) {
  LinkWeights lw = link_weights_forward(links->value, read_weights_prev->value);
  std::vector<Var> out = record_multi({lw.forward, lw.backward}, {links, read_weights_prev},
                                      [links, read_weights_prev](const std::vector<Tensor>& g) {
                                        Tensor dl = grad_of(links), dw = grad_of(read_weights_prev);
                                        link_weights_backward(dl, dw, g[0], g[1], links->value,
                                                              read_weights_prev->value);
                                      });
  return {out[0], out[1]};
}

Var read_weights(const Var& read_modes, const Var& backward_weights, const Var& read_content,
                 const Var& forward_weights) {
  return apply_op(read_weights_forward, read_weights_backward, read_modes, backward_weights,
                  read_content, forward_weights);
}

Var read_vectors(const Var& memory, const Var& read_weights) {
  return apply_op(read_vectors_forward, read_vectors_backward, memory, read_weights);
}

}  // namespace mare::ag
