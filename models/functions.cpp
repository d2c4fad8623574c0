// Each function: forward through the kernel, then record the matching kernel
// backward. Closures capture what backward needs (saved outputs, statistics,
// masks) by value; tensors are shallow handles, so this copies no data.
#include "models/functions.h"

#include "kernels/ops.h"

namespace mare::ag {

namespace {
Tensor g_of(Node& self) {
  return self.grad;
}
}  // namespace

Var matmul(const Var& a, const Var& b, bool ta, bool tb) {
  return record(matmul_forward(a->value, b->value, ta, tb), {a, b}, [a, b, ta, tb](Node& s) {
    Tensor da = grad_of(a), db = grad_of(b);
    matmul_backward(da, db, g_of(s), a->value, b->value, ta, tb);
  });
}

Var batched_matmul(const Var& a, const Var& b, bool ta, bool tb) {
  return record(batched_matmul_forward(a->value, b->value, ta, tb), {a, b},
                [a, b, ta, tb](Node& s) {
                  Tensor da = grad_of(a), db = grad_of(b);
                  batched_matmul_backward(da, db, g_of(s), a->value, b->value, ta, tb);
                });
}

Var bias_add(const Var& x, const Var& bias) {
  return record(bias_add_forward(x->value, bias->value), {x, bias}, [x, bias](Node& s) {
    // d_x += d_out: an intermediate x with no gradient yet takes d_out itself.
    Tensor dx = hand_over_gradient(x, s.grad) ? Tensor() : grad_of(x), db = grad_of(bias);
    bias_add_backward(dx, db, g_of(s));
  });
}

Var add(const Var& a, const Var& b) {
  return record(add_forward(a->value, b->value), {a, b}, [a, b](Node& s) {
    // d_a += d_out, d_b += d_out: one input with no gradient yet takes d_out itself
    // (not when a and b are one Var: it gets d_out twice).
    const bool a_took = a != b && hand_over_gradient(a, s.grad);
    const bool b_took = a != b && !a_took && hand_over_gradient(b, s.grad);
    Tensor da = a_took ? Tensor() : grad_of(a), db = b_took ? Tensor() : grad_of(b);
    add_backward(da, db, g_of(s));
  });
}

Var mul(const Var& a, const Var& b) {
  return record(mul_forward(a->value, b->value), {a, b}, [a, b](Node& s) {
    Tensor da = grad_of(a), db = grad_of(b);
    mul_backward(da, db, g_of(s), a->value, b->value);
  });
}

Var select_rows(const Tensor& keep, const Var& a, const Var& b) {
  return record(select_rows_forward(keep, a->value, b->value), {a, b}, [keep, a, b](Node& s) {
    Tensor da = grad_of(a), db = grad_of(b);
    select_rows_backward(da, db, g_of(s), keep);
  });
}

Var scale_rows(const Var& x, const Var& s) {
  return apply_op(scale_rows_forward, scale_rows_backward, x, s);
}

Var scale(const Var& x, float k) {
  return record(scale_forward(x->value, k), {x}, [x, k](Node& s) {
    Tensor dx = grad_of(x);
    scale_backward(dx, g_of(s), k);
  });
}

#define MARE_UNARY_FROM_INPUT(fn)                             \
  Var fn(const Var& x) {                                      \
    return record(fn##_forward(x->value), {x}, [x](Node& s) { \
      Tensor dx = grad_of(x);                                 \
      fn##_backward(dx, g_of(s), x->value);                   \
    });                                                       \
  }
#define MARE_UNARY_FROM_OUTPUT(fn)          \
  Var fn(const Var& x) {                    \
    Tensor y = fn##_forward(x->value);      \
    return record(y, {x}, [x, y](Node& s) { \
      Tensor dx = grad_of(x);               \
      fn##_backward(dx, g_of(s), y);        \
    });                                     \
  }
MARE_UNARY_FROM_INPUT(relu)
MARE_UNARY_FROM_INPUT(relu6)
MARE_UNARY_FROM_INPUT(oneplus)
MARE_UNARY_FROM_INPUT(hard_sigmoid)
MARE_UNARY_FROM_OUTPUT(sigmoid)
MARE_UNARY_FROM_OUTPUT(tanh)
#undef MARE_UNARY_FROM_INPUT
#undef MARE_UNARY_FROM_OUTPUT

Var dropout(const Var& x, float p, bool training, uint64_t seed, uint32_t stream, uint64_t offset) {
  if (!training || p == 0.0f) return x;
  DropoutResult r = dropout_forward(x->value, p, seed, stream, offset);
  return record(r.out, {x}, [x, mask = r.mask](Node& s) {
    Tensor dx = grad_of(x);
    dropout_backward(dx, g_of(s), mask);
  });
}

Var softmax(const Var& x, const Tensor& mask) {
  Tensor y = softmax_forward(x->value, mask);
  return record(y, {x}, [x, y](Node& s) {
    Tensor dx = grad_of(x);
    softmax_backward(dx, g_of(s), y);
  });
}

Var log_softmax(const Var& x, const Tensor& mask) {
  Tensor y = log_softmax_forward(x->value, mask);
  return record(y, {x}, [x, y, mask](Node& s) {
    Tensor dx = grad_of(x);
    log_softmax_backward(dx, g_of(s), y, mask);
  });
}

Var logsumexp_sets(const Var& x, const Tensor& offsets, const Tensor& rows) {
  Tensor y = logsumexp_sets_forward(x->value, offsets, rows);
  return record(y, {x}, [x, y, offsets, rows](Node& s) {
    Tensor dx = grad_of(x);
    logsumexp_sets_backward(dx, g_of(s), x->value, y, offsets, rows);
  });
}

Var layer_norm(const Var& x, const Var& gamma, const Var& beta, float eps) {
  NormResult r = layer_norm_forward(x->value, gamma->value, beta->value, eps);
  return record(r.out, {x, gamma, beta}, [x, gamma, beta, r](Node& s) {
    Tensor dx = grad_of(x), dg = grad_of(gamma), db = grad_of(beta);
    layer_norm_backward(dx, dg, db, g_of(s), x->value, gamma->value, r.mean, r.rstd);
  });
}

Var batch_norm(const Var& x, const Var& gamma, const Var& beta, Tensor& running_mean,
               Tensor& running_var, bool training, float momentum, float eps) {
  NormResult r = batch_norm_forward(x->value, gamma->value, beta->value, running_mean, running_var,
                                    training, momentum, eps);
  return record(r.out, {x, gamma, beta}, [x, gamma, beta, r, training](Node& s) {
    Tensor dx = grad_of(x), dg = grad_of(gamma), db = grad_of(beta);
    batch_norm_backward(dx, dg, db, g_of(s), x->value, gamma->value, r.mean, r.rstd, training);
  });
}

namespace {

// A convolution with an optional bias (conv1d, depthwise_conv1d): the forward and
// backward kernels of kernels/ops/conv.h, recorded with the inputs it has.
template <class Forward, class Backward>
Var record_conv(const Var& x, const Var& w, const Var& bias, Forward forward, Backward backward) {
  Tensor y = forward(x->value, w->value, bias ? bias->value : Tensor());
  std::vector<Var> in = {x, w};
  if (bias) in.push_back(bias);
  return record(y, in, [x, w, bias, backward](Node& s) {
    Tensor dx = grad_of(x), dw = grad_of(w), db = bias ? grad_of(bias) : Tensor();
    backward(dx, dw, db, g_of(s), x->value, w->value);
  });
}

}  // namespace

Var conv1d(const Var& x, const Var& w, const Var& bias) {
  return record_conv(x, w, bias, conv1d_forward, conv1d_backward);
}

Var depthwise_conv1d(const Var& x, const Var& w, const Var& bias) {
  return record_conv(x, w, bias, depthwise_conv1d_forward, depthwise_conv1d_backward);
}

Var max(const Var& x, int axis) {
  MaxResult r = max_forward(x->value, axis);
  return record(r.out, {x}, [x, argmax = r.argmax, axis](Node& s) {
    Tensor dx = grad_of(x);
    max_backward(dx, g_of(s), argmax, axis);
  });
}

Var embedding(const Var& table, const Tensor& ids) {
  return record(embedding_forward(table->value, ids), {table}, [table, ids](Node& s) {
    Tensor dt = grad_of(table);
    embedding_backward(dt, g_of(s), ids);
  });
}

Var concat(const std::vector<Var>& xs, int axis) {
  std::vector<Tensor> values;
  for (const Var& x : xs) values.push_back(x->value);
  return record(concat_forward(values, axis), xs, [xs, axis](Node& s) {
    // Pieces that need no gradient still place the others: give them scratch.
    std::vector<Tensor> d;
    for (const Var& x : xs)
      d.push_back(x->requires_grad ? x->grad_buffer() : Tensor::zeros_like(x->value));
    concat_backward(d, g_of(s), axis);
  });
}

std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis) {
  std::vector<Tensor> pieces = split_forward(x->value, sizes, axis);
  std::vector<Shape> shapes;
  for (const Tensor& p : pieces) shapes.push_back(p.shape());
  return record_multi(std::move(pieces), {x}, [x, axis, shapes](const std::vector<Tensor>& g) {
    // split_backward places each piece by the extents of the others: a part
    // that received no gradient takes zeros.
    std::vector<Tensor> d;
    for (size_t j = 0; j < g.size(); ++j)
      d.push_back(g[j].defined() ? g[j] : Tensor::zeros(shapes[j], x->value.device()));
    Tensor dx = grad_of(x);
    split_backward(dx, d, axis);
  });
}

Var cross_entropy(const Var& logits, const Tensor& targets, const Tensor& weights) {
  CrossEntropyResult r = cross_entropy_forward(logits->value, targets, weights);
  return record(r.loss, {logits}, [logits, probs = r.probs, targets, weights](Node& s) {
    Tensor dl = grad_of(logits);
    cross_entropy_backward(dl, s.grad, probs, targets, weights);
  });
}

Var mse(const Var& pred, const Var& target) {
  return record(mse_forward(pred->value, target->value), {pred, target}, [pred, target](Node& s) {
    Tensor dp = grad_of(pred), dt = grad_of(target);
    mse_backward(dp, dt, s.grad, pred->value, target->value);
  });
}

Var attention(const Var& q, const Var& k, const Var& v, int heads, const Tensor& key_mask) {
  AttentionResult r = attention_forward(q->value, k->value, v->value, heads, key_mask);
  return record(r.out, {q, k, v}, [q, k, v, heads, probs = r.probs](Node& s) {
    Tensor dq = grad_of(q), dk = grad_of(k), dv = grad_of(v);
    attention_backward(dq, dk, dv, g_of(s), q->value, k->value, v->value, probs, heads);
  });
}

Var reshape(const Var& x, const Shape& shape) {
  return record(x->value.reshape(shape), {x}, [x](Node& s) {
    if (!x->requires_grad || hand_over_gradient(x, s.grad)) return;
    Tensor dx = x->grad_buffer().reshape(s.grad.shape());
    Tensor none;
    add_backward(dx, none, s.grad);
  });
}

Var column(const Var& x, int64_t j) {
  const int64_t b = x->value.dim(0), s = x->value.dim(1);
  if (j < 0 || j >= s)
    throw ShapeError("column " + std::to_string(j) + " of " + x->value.shape().str());
  if (x->value.device() != Device::cpu) {
    // On a device: the middle piece of a split (the loops below read host memory).
    std::vector<int64_t> sizes;
    if (j > 0) sizes.push_back(j);
    const size_t piece = sizes.size();
    sizes.push_back(1);
    if (j + 1 < s) sizes.push_back(s - j - 1);
    return split(x, sizes, 1)[piece];
  }
  Tensor out = Tensor::empty({b, 1});
  for (int64_t r = 0; r < b; ++r) out.f32()[r] = x->value.f32()[r * s + j];
  return record(out, {x}, [x, j, b, s](Node& self) {
    Tensor d = grad_of(x);
    if (!d.defined()) return;
    for (int64_t r = 0; r < b; ++r) d.f32()[r * s + j] += self.grad.f32()[r];
  });
}

}  // namespace mare::ag
