// Reverse-mode autograd over the kernel pairs (after flashlight's Variable).
//
// A Var is a node holding a value and, when it needs one, a gradient. Every
// differentiable function (models/functions.h) runs an op's forward, returns a
// new Var, and records on it a closure that calls the op's backward: these
// records, in creation order, are the tape. backward(loss) replays the tape
// from the loss in reverse topological order. Kernel backward functions
// accumulate (+=), so a Var used twice receives the sum of both gradients.
//
// Nothing is recorded when no input requires a gradient (inference is free of
// bookkeeping).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace mare::ag {

struct Node;
using Var = std::shared_ptr<Node>;

struct Node {
  Tensor value;
  Tensor grad;  // undefined until something flows into it
  bool requires_grad = false;
  std::string name;         // parameters carry their name; intermediates are unnamed
  std::vector<Var> inputs;  // what backward propagates into
  // Reads `grad` and accumulates into the inputs' gradients.
  std::function<void(Node& self)> backward_fn;

  // The gradient buffer, allocated as zeros on first use.
  Tensor& grad_buffer();
};

// A leaf that never receives a gradient (data, masks).
Var constant(Tensor value);
// A leaf that receives a gradient (parameters).
Var leaf(Tensor value, std::string name = {});

// Used by function implementations: a result node recording `backward_fn`
// when any input requires a gradient.
Var record(Tensor value, std::vector<Var> inputs, std::function<void(Node& self)> backward_fn);
// The gradient tensor of `v` to accumulate into, or an undefined tensor when
// `v` needs none (kernel backward functions skip undefined gradients).
Tensor grad_of(const Var& v);

// Seeds d loss = 1 (loss must have one element) and runs the tape backward.
void backward(const Var& loss);

}  // namespace mare::ag
