// Interface-vector split on the CPU: a table of (part, width, transform)
// walked in order, so that the layout of ξ is written down exactly once.
//
//   oneplus:  y = 1 + softplus(x);  dy/dx = sigmoid(x)
//   sigmoid:  y = 1 / (1 + e^−x);   dy/dx = y (1 − y)
//   softmax over each group of 3:   d_x = y ⊙ (d_y − Σ d_y y)
#include "kernels/memory/interface.h"

#include <array>
#include <cmath>
#include <string>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {

enum class Domain { identity, oneplus, sigmoid, softmax3 };

struct Part {
  Tensor InterfaceParts::*field;
  int64_t width;  // per memory
  Domain domain;
  Shape shape;  // without the leading M
};

std::array<Part, 10> layout(int64_t r, int64_t w) {
  return {{{&InterfaceParts::read_keys, r * w, Domain::identity, {r, w}},
           {&InterfaceParts::read_strengths, r, Domain::oneplus, {r}},
           {&InterfaceParts::write_key, w, Domain::identity, {1, w}},
           {&InterfaceParts::write_strength, 1, Domain::oneplus, {1}},
           {&InterfaceParts::erase, w, Domain::sigmoid, {w}},
           {&InterfaceParts::write_vector, w, Domain::identity, {w}},
           {&InterfaceParts::free_gates, r, Domain::sigmoid, {r}},
           {&InterfaceParts::allocation_gate, 1, Domain::sigmoid, {}},
           {&InterfaceParts::write_gate, 1, Domain::sigmoid, {}},
           {&InterfaceParts::read_modes, 3 * r, Domain::softmax3, {r, 3}}}};
}

Shape with_rows(int64_t m, const Shape& tail) {
  std::vector<int64_t> dims{m};
  for (int i = 0; i < tail.rank(); ++i) dims.push_back(tail[i]);
  return Shape(std::span<const int64_t>(dims));
}

float sigmoid(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x));
}

void check_xi(const Tensor& xi, int64_t r, int64_t w, const char* op) {
  check_defined(xi, op);
  check_rank(xi, 2, op);
  if (r < 1 || w < 1)
    throw std::invalid_argument(std::string(op) + ": need at least one read head and word size 1");
  check_shape(xi, {xi.dim(0), interface_width(r, w)}, op);
}

}  // namespace

int64_t interface_width(int64_t read_heads, int64_t word) {
  return read_heads * word + 3 * word + 5 * read_heads + 3;
}

InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word) {
  check_xi(xi, read_heads, word, "interface_split_forward: xi");
  MARE_CUDA_DISPATCH("interface_split_forward", interface_split_forward(xi, read_heads, word), &xi);
  const int64_t m = xi.dim(0), x = xi.dim(1);
  InterfaceParts parts;
  int64_t offset = 0;
  for (const Part& p : layout(read_heads, word)) {
    Tensor out = Tensor::empty(with_rows(m, p.shape));
    for (int64_t b = 0; b < m; ++b) {
      const float* in = xi.f32() + b * x + offset;
      float* y = out.f32() + b * p.width;
      for (int64_t j = 0; j < p.width; ++j) {
        const float v = in[j];
        switch (p.domain) {
          case Domain::identity:
          case Domain::softmax3:
            y[j] = v;
            break;
          case Domain::oneplus:
            y[j] = 1.0f + std::max(v, 0.0f) + std::log1p(std::exp(-std::fabs(v)));
            break;
          case Domain::sigmoid:
            y[j] = sigmoid(v);
            break;
        }
      }
      if (p.domain == Domain::softmax3)
        for (int64_t g = 0; g < p.width; g += 3) {
          const float mx = std::max({y[g], y[g + 1], y[g + 2]});
          const float e0 = std::exp(y[g] - mx), e1 = std::exp(y[g + 1] - mx),
                      e2 = std::exp(y[g + 2] - mx), sum = e0 + e1 + e2;
          y[g] = e0 / sum;
          y[g + 1] = e1 / sum;
          y[g + 2] = e2 / sum;
        }
    }
    parts.*p.field = out;
    offset += p.width;
  }
  return parts;
}

void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word) {
  if (!d_xi.defined()) return;
  check_xi(xi, read_heads, word, "interface_split_backward: xi");
  check_same_shape(d_xi, xi, "interface_split_backward: d_xi");
  const int64_t m = xi.dim(0), x = xi.dim(1);
  for (const Part& p : layout(read_heads, word))
    if ((d_parts.*p.field).defined()) {
      check_shape(d_parts.*p.field, with_rows(m, p.shape),
                  "interface_split_backward: part gradient");
      check_shape(parts.*p.field, with_rows(m, p.shape), "interface_split_backward: part");
    }
  MARE_CUDA_DISPATCH("interface_split_backward",
                     interface_split_backward(d_xi, d_parts, xi, parts, read_heads, word), &d_xi,
                     &xi, &d_parts.read_keys, &d_parts.read_strengths, &d_parts.write_key,
                     &d_parts.write_strength, &d_parts.erase, &d_parts.write_vector,
                     &d_parts.free_gates, &d_parts.allocation_gate, &d_parts.write_gate,
                     &d_parts.read_modes, &parts.read_keys, &parts.read_strengths, &parts.write_key,
                     &parts.write_strength, &parts.erase, &parts.write_vector, &parts.free_gates,
                     &parts.allocation_gate, &parts.write_gate, &parts.read_modes);
  int64_t offset = 0;
  for (const Part& p : layout(read_heads, word)) {
    const Tensor& g = d_parts.*p.field;
    const Tensor& y = parts.*p.field;
    if (g.defined()) {
      for (int64_t b = 0; b < m; ++b) {
        const float* in = xi.f32() + b * x + offset;
        const float *gy = g.f32() + b * p.width, *yy = y.f32() + b * p.width;
        float* dx = d_xi.f32() + b * x + offset;
        for (int64_t j = 0; j < p.width; ++j) {
          switch (p.domain) {
            case Domain::identity:
              dx[j] += gy[j];
              break;
            case Domain::oneplus:
              dx[j] += gy[j] * sigmoid(in[j]);
              break;
            case Domain::sigmoid:
              dx[j] += gy[j] * yy[j] * (1.0f - yy[j]);
              break;
            case Domain::softmax3:
              if (j % 3 == 0) {
                const float dot = gy[j] * yy[j] + gy[j + 1] * yy[j + 1] + gy[j + 2] * yy[j + 2];
                for (int64_t k = j; k < j + 3; ++k) dx[k] += yy[k] * (gy[k] - dot);
              }
              break;
          }
        }
      }
    }
    offset += p.width;
  }
}

}  // namespace mare
