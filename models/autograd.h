// Reverse-mode autograd over the kernel pairs (after flashlight's Variable).
//
// A Var is a node holding a value and, when it needs one, a gradient. Every
// differentiable function (models/functions.h) runs an op's forward, returns
// new Vars, and records a closure that calls the op's backward: these records
// are the tape. backward(loss) replays it from the loss in reverse topological
// order. Kernel backward functions accumulate (+=), so a Var used twice
// receives the sum of both gradients.
//
// An op with several outputs (record_multi) records one hidden op node that
// its outputs depend on: its closure runs once, after every consumer of every
// output has contributed, and receives all the outputs' gradients together.
//
// backward() releases the graph it ran: the closures and input links of the
// visited nodes are dropped, so saved activations are freed as soon as the
// caller lets go of the loss; leaves keep their gradients. Running backward
// again through a released node throws (one backward per forward).
//
// Nothing is recorded when no input requires a gradient (inference is free of
// bookkeeping).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/tensor.h"

namespace mare::ag {

struct Node;
using Var = std::shared_ptr<Node>;

struct Node {
  Tensor value;  // undefined on the hidden op node of record_multi
  Tensor grad;   // undefined until something flows into it
  bool requires_grad = false;
  std::string name;         // parameters carry their name; intermediates are unnamed
  std::vector<Var> inputs;  // what backward propagates into
  // Reads `grad` (op nodes: their outputs' gradients) and accumulates into the
  // inputs' gradients.
  std::function<void(Node& self)> backward_fn;
  // Only on the hidden op node of record_multi: its outputs, not owned (they
  // own the op node through `inputs`).
  std::vector<std::weak_ptr<Node>> outputs;
  bool released = false;  // backward() has run through this node and dropped its links

  // The gradient buffer, allocated as zeros on first use.
  Tensor& grad_buffer();
};

// A leaf that never receives a gradient (data, masks).
Var constant(Tensor value);
// A leaf that receives a gradient (parameters).
Var leaf(Tensor value, std::string name = {});

// Used by function implementations: a result node recording `backward_fn`
// when any input requires a gradient. backward_fn reads self.grad, which is
// always defined when it runs.
Var record(Tensor value, std::vector<Var> inputs, std::function<void(Node& self)> backward_fn);
// An op with several outputs: one Var per value, all depending on one hidden op
// node. `backward` runs once per backward() when any output received a
// gradient, with grads[k] the gradient of output k (undefined when output k
// received none: unused, dropped, or not on the loss's path). Without an input
// that requires a gradient the outputs are constants.
std::vector<Var> record_multi(std::vector<Tensor> values, std::vector<Var> inputs,
                              std::function<void(const std::vector<Tensor>& grads)> backward);
// The gradient tensor of `v` to accumulate into, or an undefined tensor when
// `v` needs none (kernel backward functions skip undefined gradients).
Tensor grad_of(const Var& v);

// Hands `g`, a gradient its owner is done with (the output's gradient inside the
// output's backward_fn), to `v` when v is an intermediate that has received
// nothing yet: v's gradient becomes g itself, reshaped to v's shape. That is the
// accumulation into fresh zeros without the zeros and the pass over memory
// (0 + g is g). Returns false, changing nothing, when v needs no gradient,
// already has one, is a leaf (a parameter keeps its own buffer) or differs from
// g in size or device; the caller then accumulates as usual. A gradient is handed
// to one input only: the other inputs read it before anything adds into it again.
bool hand_over_gradient(const Var& v, const Tensor& g);

// An op whose kernel backward takes the inputs' gradients, then the output's, then the
// inputs' values: backward(d_in..., d_out, in->value...). Records it over `value`, the
// forward's output; the gradients are taken in the inputs' order.
template <class Backward, class... In>
Var record_op(Tensor value, Backward backward, const In&... in) {
  return record(std::move(value), {in...}, [backward, in...](Node& s) {
    std::array<Tensor, sizeof...(In)> grads{grad_of(in)...};  // left to right
    std::apply([&](auto&... g) { backward(g..., s.grad, in->value...); }, grads);
  });
}

// The same, running the forward too: forward(in->value...) is the output.
//   Var link_update(a, b, c) { return apply_op(link_update_forward, link_update_backward, a, b, c);
//   }
template <class Forward, class Backward, class... In>
Var apply_op(Forward forward, Backward backward, const In&... in) {
  return record_op(forward(in->value...), backward, in...);
}

// Seeds d loss = 1 (loss must have one element), runs the tape backward, then
// releases the graph. Throws std::logic_error when the graph (or part of it)
// was already released by an earlier backward().
void backward(const Var& loss);

}  // namespace mare::ag
