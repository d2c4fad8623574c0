// The tape: topological order by depth-first search from the loss, then the
// recorded closures in reverse, then the release of what was visited.
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

namespace {
bool any_requires_grad(const std::vector<Var>& inputs) {
  for (const Var& in : inputs)
    if (in->requires_grad) return true;
  return false;
}
}  // namespace

Var record(Tensor value, std::vector<Var> inputs, std::function<void(Node&)> backward_fn) {
  auto n = std::make_shared<Node>();
  n->value = std::move(value);
  n->requires_grad = any_requires_grad(inputs);
  if (n->requires_grad) {
    n->inputs = std::move(inputs);
    n->backward_fn = std::move(backward_fn);
  }
  return n;
}

std::vector<Var> record_multi(std::vector<Tensor> values, std::vector<Var> inputs,
                              std::function<void(const std::vector<Tensor>&)> backward) {
  std::vector<Var> out;
  out.reserve(values.size());
  if (!any_requires_grad(inputs)) {
    for (Tensor& v : values) out.push_back(constant(std::move(v)));
    return out;
  }
  auto op = std::make_shared<Node>();
  op->requires_grad = true;
  op->inputs = std::move(inputs);
  for (Tensor& v : values) {
    auto n = std::make_shared<Node>();
    n->value = std::move(v);
    n->requires_grad = true;
    n->inputs = {op};
    op->outputs.push_back(n);
    out.push_back(std::move(n));
  }
  op->backward_fn = [fn = std::move(backward)](Node& self) {
    std::vector<Tensor> grads;
    grads.reserve(self.outputs.size());
    for (const std::weak_ptr<Node>& w : self.outputs) {
      Var o = w.lock();
      grads.push_back(o ? o->grad : Tensor());
    }
    fn(grads);
  };
  return out;
}

Tensor grad_of(const Var& v) {
  return v->requires_grad ? v->grad_buffer() : Tensor();
}

bool hand_over_gradient(const Var& v, const Tensor& g) {
  if (!v->requires_grad || v->grad.defined() || v->inputs.empty()) return false;
  if (!g.defined() || g.numel() != v->value.numel() || g.device() != v->value.device() ||
      g.dtype() != v->value.dtype())
    return false;
  v->grad = g.shape() == v->value.shape() ? g : g.reshape(v->value.shape());
  return true;
}

namespace {

void check_not_released(const Node* n) {
  if (n->released)
    throw std::logic_error(
        "backward: the graph was already released by an earlier backward() (run the forward "
        "again: one backward per forward)");
}

// Whether anything flowed into n (an op node: into any of its outputs).
bool received_gradient(const Node* n) {
  if (n->grad.defined()) return true;
  for (const std::weak_ptr<Node>& w : n->outputs) {
    Var o = w.lock();
    if (o && o->grad.defined()) return true;
  }
  return false;
}

}  // namespace

void backward(const Var& loss) {
  if (loss->value.numel() != 1)
    throw std::invalid_argument("backward: the loss must have one element, got shape " +
                                loss->value.shape().str());
  if (!loss->requires_grad) return;
  check_not_released(loss.get());
  // Iterative post-order DFS: a node comes after everything it depends on, so
  // an op node comes after none of its outputs and runs after all of them.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack{{loss.get(), 0}};
  seen.insert(loss.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* child = node->inputs[next++].get();
      if (child->requires_grad && seen.insert(child).second) {
        check_not_released(child);
        stack.push_back({child, 0});
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  loss->grad_buffer().fill(1.0f);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (n->backward_fn && received_gradient(n)) n->backward_fn(*n);
  }
  // Release: drop closures (saved activations) and links. What they held is
  // destroyed only after the loop, so no node in `order` dies while it is
  // visited, and a chain is torn down link by link instead of recursively.
  std::vector<std::function<void(Node&)>> dead_fns;
  std::vector<Var> dead_links;
  for (Node* n : order) {
    if (!n->backward_fn && n->inputs.empty() && n->outputs.empty()) continue;  // a leaf
    if (n->backward_fn) dead_fns.push_back(std::move(n->backward_fn));
    n->backward_fn = nullptr;
    for (Var& in : n->inputs) dead_links.push_back(std::move(in));
    n->inputs.clear();
    n->outputs.clear();
    n->released = true;
  }
}

}  // namespace mare::ag
