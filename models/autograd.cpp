// The tape: topological order by depth-first search from the loss, then the
// recorded closures in reverse.
#include "models/autograd.h"

#include <stdexcept>
#include <unordered_set>

namespace mare::ag {

Tensor& Node::grad_buffer() {
  if (!grad.defined()) grad = Tensor::zeros(value.shape(), value.device());
  return grad;
}

Var constant(Tensor value) {
  auto n = std::make_shared<Node>();
  n->value = std::move(value);
  return n;
}

Var leaf(Tensor value, std::string name) {
  auto n = std::make_shared<Node>();
  n->value = std::move(value);
  n->requires_grad = true;
  n->name = std::move(name);
  return n;
}

Var record(Tensor value, std::vector<Var> inputs, std::function<void(Node&)> backward_fn) {
  auto n = std::make_shared<Node>();
  n->value = std::move(value);
  for (const Var& in : inputs) n->requires_grad = n->requires_grad || in->requires_grad;
  if (n->requires_grad) {
    n->inputs = std::move(inputs);
    n->backward_fn = std::move(backward_fn);
  }
  return n;
}

Tensor grad_of(const Var& v) {
  return v->requires_grad ? v->grad_buffer() : Tensor();
}

void backward(const Var& loss) {
  if (loss->value.numel() != 1)
    throw std::invalid_argument("backward: the loss must have one element, got shape " +
                                loss->value.shape().str());
  if (!loss->requires_grad) return;
  // Iterative post-order DFS: a node comes after everything it depends on.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack{{loss.get(), 0}};
  seen.insert(loss.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* child = node->inputs[next++].get();
      if (child->requires_grad && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  loss->grad_buffer().fill(1.0f);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (n->backward_fn && n->grad.defined()) n->backward_fn(*n);
  }
}

}  // namespace mare::ag
