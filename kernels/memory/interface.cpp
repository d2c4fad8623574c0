// Interface-vector split on the CPU: the table of parts (shape, transform), written
// down here once (interface_parts) and walked in order.
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

using Domain = InterfaceDomain;
constexpr auto kMembers = InterfaceParts::members();

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

std::array<InterfacePart, kInterfaceParts> interface_parts(int64_t r, int64_t w) {
  return {{{{r, w}, Domain::identity},    // read keys
           {{r}, Domain::oneplus},        // read strengths
           {{1, w}, Domain::identity},    // write key
           {{1}, Domain::oneplus},        // write strength
           {{w}, Domain::sigmoid},        // erase vector
           {{w}, Domain::identity},       // write vector
           {{r}, Domain::sigmoid},        // free gates
           {{}, Domain::sigmoid},         // allocation gate
           {{}, Domain::sigmoid},         // write gate
           {{r, 3}, Domain::softmax3}}};  // read modes
}

Shape InterfacePart::shape(int64_t memories) const {
  std::vector<int64_t> dims{memories};
  for (int i = 0; i < tail.rank(); ++i) dims.push_back(tail[i]);
  return Shape(std::span<const int64_t>(dims));
}

std::array<int64_t, kInterfaceParts + 1> interface_offsets(int64_t r, int64_t w) {
  const auto parts = interface_parts(r, w);
  std::array<int64_t, kInterfaceParts + 1> o{};
  for (int p = 0; p < kInterfaceParts; ++p) o[p + 1] = o[p] + parts[p].width();
  return o;
}

int64_t interface_width(int64_t read_heads, int64_t word) {
  return interface_offsets(read_heads, word)[kInterfaceParts];
}

InterfaceParts interface_split_forward(const Tensor& xi, int64_t read_heads, int64_t word) {
  check_xi(xi, read_heads, word, "interface_split_forward: xi");
  MARE_CUDA_DISPATCH("interface_split_forward", interface_split_forward(xi, read_heads, word), &xi);
  const int64_t m = xi.dim(0), x = xi.dim(1);
  InterfaceParts parts;
  const auto table = interface_parts(read_heads, word);
  const auto offsets = interface_offsets(read_heads, word);
  for (int part = 0; part < kInterfaceParts; ++part) {
    const InterfacePart& p = table[part];
    const int64_t width = p.width(), offset = offsets[part];
    Tensor out = Tensor::empty(p.shape(m));
    for (int64_t b = 0; b < m; ++b) {
      const float* in = xi.f32() + b * x + offset;
      float* y = out.f32() + b * width;
      for (int64_t j = 0; j < width; ++j) {
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
        for (int64_t g = 0; g < width; g += 3) {
          const float mx = std::max({y[g], y[g + 1], y[g + 2]});
          const float e0 = std::exp(y[g] - mx), e1 = std::exp(y[g + 1] - mx),
                      e2 = std::exp(y[g + 2] - mx), sum = e0 + e1 + e2;
          y[g] = e0 / sum;
          y[g + 1] = e1 / sum;
          y[g + 2] = e2 / sum;
        }
    }
    parts.*kMembers[part] = out;
  }
  return parts;
}

void interface_split_backward(Tensor& d_xi, const InterfaceParts& d_parts, const Tensor& xi,
                              const InterfaceParts& parts, int64_t read_heads, int64_t word) {
  if (!d_xi.defined()) return;
  check_xi(xi, read_heads, word, "interface_split_backward: xi");
  check_same_shape(d_xi, xi, "interface_split_backward: d_xi");
  const int64_t m = xi.dim(0), x = xi.dim(1);
  const auto table = interface_parts(read_heads, word);
  for (int part = 0; part < kInterfaceParts; ++part)
    if ((d_parts.*kMembers[part]).defined()) {
      check_shape(d_parts.*kMembers[part], table[part].shape(m),
                  "interface_split_backward: part gradient");
      check_shape(parts.*kMembers[part], table[part].shape(m), "interface_split_backward: part");
    }
  MARE_CUDA_DISPATCH("interface_split_backward",
                     interface_split_backward(d_xi, d_parts, xi, parts, read_heads, word), &d_xi,
                     &xi, &d_parts.read_keys, &d_parts.read_strengths, &d_parts.write_key,
                     &d_parts.write_strength, &d_parts.erase, &d_parts.write_vector,
                     &d_parts.free_gates, &d_parts.allocation_gate, &d_parts.write_gate,
                     &d_parts.read_modes, &parts.read_keys, &parts.read_strengths, &parts.write_key,
                     &parts.write_strength, &parts.erase, &parts.write_vector, &parts.free_gates,
                     &parts.allocation_gate, &parts.write_gate, &parts.read_modes);
  const auto offsets = interface_offsets(read_heads, word);
  for (int part = 0; part < kInterfaceParts; ++part) {
    const InterfacePart& p = table[part];
    const int64_t width = p.width(), offset = offsets[part];
    const Tensor& g = d_parts.*kMembers[part];
    const Tensor& y = parts.*kMembers[part];
    if (g.defined()) {
      for (int64_t b = 0; b < m; ++b) {
        const float* in = xi.f32() + b * x + offset;
        const float *gy = g.f32() + b * width, *yy = y.f32() + b * width;
        float* dx = d_xi.f32() + b * x + offset;
        for (int64_t j = 0; j < width; ++j) {
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
  }
}

}  // namespace mare
