// Max, embedding, concat and split on the CPU. Every op views its tensor as
// [outer, axis, inner] around the axis it works on.
#include "kernels/ops/indexing.h"

#include <cstring>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace detail {

int normalize_axis(int axis, int rank, const char* op) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw std::invalid_argument(std::string(op) + ": axis " + std::to_string(axis) +
                                " out of range for rank " + std::to_string(rank));
  return a;
}

AxisSplit split_at_axis(const Shape& s, int axis, const char* op) {
  int a = normalize_axis(axis, s.rank(), op);
  AxisSplit r;
  for (int i = 0; i < a; ++i) r.outer *= s[i];
  r.size = s[a];
  for (int i = a + 1; i < s.rank(); ++i) r.inner *= s[i];
  return r;
}

}  // namespace detail

namespace {

Shape without_axis(const Shape& s, int axis) {
  std::vector<int64_t> d;
  for (int i = 0; i < s.rank(); ++i)
    if (i != axis) d.push_back(s[i]);
  return Shape(d);
}

Shape with_extent(const Shape& s, int axis, int64_t extent) {
  std::vector<int64_t> d = s.vec();
  d[axis] = extent;
  return Shape(d);
}

}  // namespace

MaxResult max_forward(const Tensor& x, int axis) {
  check_defined(x, "max_forward");
  require_cpu(x, "max_forward");
  int a = normalize_axis(axis, x.rank(), "max_forward");
  AxisSplit s = split_at_axis(x.shape(), a, "max_forward");
  if (s.size == 0) throw ShapeError("max_forward: empty axis in shape " + x.shape().str());
  Shape os = without_axis(x.shape(), a);
  MaxResult r{Tensor::empty(os), Tensor::empty(os, Device::cpu, DType::i32)};
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      const float* base = x.f32() + o * s.size * s.inner + in;
      int32_t best = 0;
      for (int64_t k = 1; k < s.size; ++k)
        if (base[k * s.inner] > base[best * s.inner]) best = static_cast<int32_t>(k);
      r.out.f32()[o * s.inner + in] = base[best * s.inner];
      r.argmax.i32()[o * s.inner + in] = best;
    }
  return r;
}

void max_backward(Tensor& d_x, const Tensor& d_out, const Tensor& argmax, int axis) {
  if (!d_x.defined()) return;
  require_cpu(d_out, "max_backward");
  int a = normalize_axis(axis, d_x.rank(), "max_backward");
  AxisSplit s = split_at_axis(d_x.shape(), a, "max_backward");
  check_shape(d_out, without_axis(d_x.shape(), a), "max_backward: d_out");
  check_same_shape(argmax, d_out, "max_backward: argmax");
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t k = argmax.i32()[o * s.inner + in];
      d_x.f32()[(o * s.size + k) * s.inner + in] += d_out.f32()[o * s.inner + in];
    }
}

Tensor embedding_forward(const Tensor& table, const Tensor& ids) {
  check_rank(table, 2, "embedding_forward: table");
  check_dtype(ids, DType::i32, "embedding_forward: ids");
  require_cpu(table, "embedding_forward");
  if (ids.rank() > 3)
    throw ShapeError("embedding_forward: ids must have rank ≤ 3, got " + ids.shape().str());
  int64_t v = table.dim(0), d = table.dim(1);
  std::vector<int64_t> os = ids.shape().vec();
  os.push_back(d);
  Tensor out = Tensor::empty(Shape(os));
  for (int64_t n = 0; n < ids.numel(); ++n) {
    int32_t id = ids.i32()[n];
    if (id < 0 || id >= v)
      throw std::out_of_range("embedding_forward: id " + std::to_string(id) + " at position " +
                              std::to_string(n) + " is outside the table's " + std::to_string(v) +
                              " rows");
    std::memcpy(out.f32() + n * d, table.f32() + id * d, d * sizeof(float));
  }
  return out;
}

void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& ids) {
  if (!d_table.defined()) return;
  require_cpu(d_out, "embedding_backward");
  int64_t d = d_table.dim(1);
  if (d_out.numel() != ids.numel() * d)
    throw ShapeError("embedding_backward: d_out " + d_out.shape().str() + " does not match ids " +
                     ids.shape().str() + " × " + std::to_string(d));
  for (int64_t n = 0; n < ids.numel(); ++n) {
    float* row = d_table.f32() + static_cast<int64_t>(ids.i32()[n]) * d;
    const float* g = d_out.f32() + n * d;
    for (int64_t j = 0; j < d; ++j) row[j] += g[j];
  }
}

Tensor concat_forward(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("concat_forward: nothing to concatenate");
  require_cpu(xs[0], "concat_forward");
  int a = normalize_axis(axis, xs[0].rank(), "concat_forward");
  int64_t total = 0;
  for (const Tensor& x : xs) {
    if (with_extent(x.shape(), a, 0) != with_extent(xs[0].shape(), a, 0))
      throw ShapeError("concat_forward: shapes " + xs[0].shape().str() + " and " + x.shape().str() +
                       " differ outside axis " + std::to_string(a));
    total += x.dim(a);
  }
  Tensor out = Tensor::empty(with_extent(xs[0].shape(), a, total));
  AxisSplit so = split_at_axis(out.shape(), a, "concat_forward");
  int64_t at = 0;
  for (const Tensor& x : xs) {
    AxisSplit s = split_at_axis(x.shape(), a, "concat_forward");
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(out.f32() + (o * so.size + at) * so.inner, x.f32() + o * s.size * s.inner,
                  s.size * s.inner * sizeof(float));
    at += s.size;
  }
  return out;
}

void concat_backward(std::vector<Tensor>& d_xs, const Tensor& d_out, int axis) {
  require_cpu(d_out, "concat_backward");
  int a = normalize_axis(axis, d_out.rank(), "concat_backward");
  AxisSplit so = split_at_axis(d_out.shape(), a, "concat_backward");
  int64_t at = 0;
  for (Tensor& dx : d_xs) {
    if (!dx.defined())
      throw std::invalid_argument(
          "concat_backward: every piece needs a gradient tensor "
          "(its extent places the later pieces)");
    AxisSplit s = split_at_axis(dx.shape(), a, "concat_backward");
    for (int64_t o = 0; o < s.outer; ++o) {
      const float* src = d_out.f32() + (o * so.size + at) * so.inner;
      float* dst = dx.f32() + o * s.size * s.inner;
      for (int64_t j = 0; j < s.size * s.inner; ++j) dst[j] += src[j];
    }
    at += s.size;
  }
  if (at != so.size)
    throw ShapeError("concat_backward: pieces cover " + std::to_string(at) + " of " +
                     std::to_string(so.size) + " along axis " + std::to_string(a));
}

std::vector<Tensor> split_forward(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  check_defined(x, "split_forward");
  require_cpu(x, "split_forward");
  int a = normalize_axis(axis, x.rank(), "split_forward");
  AxisSplit sx = split_at_axis(x.shape(), a, "split_forward");
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != sx.size)
    throw ShapeError("split_forward: sizes sum to " + std::to_string(sum) + " but axis " +
                     std::to_string(a) + " of " + x.shape().str() + " has " +
                     std::to_string(sx.size));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t size : sizes) {
    Tensor piece = Tensor::empty(with_extent(x.shape(), a, size));
    for (int64_t o = 0; o < sx.outer; ++o)
      std::memcpy(piece.f32() + o * size * sx.inner, x.f32() + (o * sx.size + at) * sx.inner,
                  size * sx.inner * sizeof(float));
    out.push_back(piece);
    at += size;
  }
  return out;
}

void split_backward(Tensor& d_x, const std::vector<Tensor>& d_outs, int axis) {
  if (!d_x.defined()) return;
  require_cpu(d_x, "split_backward");
  int a = normalize_axis(axis, d_x.rank(), "split_backward");
  AxisSplit sx = split_at_axis(d_x.shape(), a, "split_backward");
  int64_t at = 0;
  for (const Tensor& g : d_outs) {
    AxisSplit s = split_at_axis(g.shape(), a, "split_backward");
    for (int64_t o = 0; o < sx.outer; ++o) {
      const float* src = g.f32() + o * s.size * s.inner;
      float* dst = d_x.f32() + (o * sx.size + at) * sx.inner;
      for (int64_t j = 0; j < s.size * s.inner; ++j) dst[j] += src[j];
    }
    at += s.size;
  }
}

}  // namespace mare
