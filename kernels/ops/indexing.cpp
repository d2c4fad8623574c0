// Max, embedding, concat and split on the CPU. Every op views its tensor as
// [outer, axis, inner] around the axis it works on.
#include "kernels/ops/indexing.h"

#include <cstdint>
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

}  // namespace detail

namespace {

// The list ops dispatch on one tensor `t`; every defined piece must be on its
// device (on_cuda throws on a mix, naming the op).
void check_pieces_device(const char* op, const Tensor& t, const std::vector<Tensor>& pieces) {
  for (const Tensor& p : pieces) on_cuda(op, {&t, &p});
}

// The gradient pieces of concat_backward / split_backward against the whole
// tensor along axis a: every piece defined (an undefined piece's extent is
// unknown, and it places the pieces after it), of the whole's rank and extents
// outside the axis, the extents along the axis summing to the whole's. Looks at
// shapes only (the tensors may be on the GPU).
void check_pieces_fit(const char* op, const std::vector<Tensor>& pieces, const Tensor& whole,
                      int a) {
  int64_t covered = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Tensor& p = pieces[i];
    if (!p.defined())
      throw std::invalid_argument(std::string(op) + ": piece " + std::to_string(i) +
                                  " is undefined; every piece needs a gradient tensor (its "
                                  "extent places the later pieces)");
    if (p.rank() != whole.rank() ||
        with_extent(p.shape(), a, 0) != with_extent(whole.shape(), a, 0))
      throw ShapeError(std::string(op) + ": piece " + std::to_string(i) + " " + p.shape().str() +
                       " does not fit " + whole.shape().str() + " outside axis " +
                       std::to_string(a));
    covered += p.dim(a);
  }
  if (covered != whole.dim(a))
    throw ShapeError(std::string(op) + ": pieces cover " + std::to_string(covered) + " of " +
                     std::to_string(whole.dim(a)) + " along axis " + std::to_string(a) + " of " +
                     whole.shape().str());
}

}  // namespace

MaxResult max_forward(const Tensor& x, int axis) {
  check_defined(x, "max_forward");
  int a = normalize_axis(axis, x.rank(), "max_forward");
  AxisSplit s = split_at_axis(x.shape(), a, "max_forward");
  if (s.size == 0) throw ShapeError("max_forward: empty axis in shape " + x.shape().str());
  MARE_CUDA_DISPATCH("max_forward", max_forward(x, axis), &x);
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
  int a = normalize_axis(axis, d_x.rank(), "max_backward");
  AxisSplit s = split_at_axis(d_x.shape(), a, "max_backward");
  check_shape(d_out, without_axis(d_x.shape(), a), "max_backward: d_out");
  check_same_shape(argmax, d_out, "max_backward: argmax");
  check_dtype(argmax, DType::i32, "max_backward: argmax");
  MARE_CUDA_DISPATCH("max_backward", max_backward(d_x, d_out, argmax, axis), &d_x, &d_out, &argmax);
  // Host tensors from here on: every argmax must index the axis, checked before any write.
  for (int64_t n = 0, n_n = argmax.numel(); n < n_n; ++n) {
    int32_t k = argmax.i32()[n];
    if (k < 0 || k >= s.size)
      throw std::out_of_range("max_backward: argmax " + std::to_string(k) + " at position " +
                              std::to_string(n) + " is outside axis " + std::to_string(a) +
                              " of d_x " + d_x.shape().str());
  }
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t k = argmax.i32()[o * s.inner + in];
      d_x.f32()[(o * s.size + k) * s.inner + in] += d_out.f32()[o * s.inner + in];
    }
}

Tensor embedding_forward(const Tensor& table, const Tensor& ids) {
  check_rank(table, 2, "embedding_forward: table");
  check_dtype(ids, DType::i32, "embedding_forward: ids");
  if (ids.rank() > 3)
    throw ShapeError("embedding_forward: ids must have rank ≤ 3, got " + ids.shape().str());
  // The ids are checked against the table inside the loop below; on the GPU the
  // CUDA op makes the same check on the device and throws the same error.
  MARE_CUDA_DISPATCH("embedding_forward", embedding_forward(table, ids), &table, &ids);
  int64_t v = table.dim(0), d = table.dim(1);
  std::vector<int64_t> os = ids.shape().vec();
  os.push_back(d);
  Tensor out = Tensor::empty(Shape(os));
  // Rows in chunks when large; a bad id throws from its chunk, and the pool
  // rethrows the lowest chunk's, so the message names the first bad position.
  for_items(ids.numel(), static_cast<double>(d), [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) {
      int32_t id = ids.i32()[n];
      if (id < 0 || id >= v)
        throw std::out_of_range("embedding_forward: id " + std::to_string(id) + " at position " +
                                std::to_string(n) + " is outside the table's " + std::to_string(v) +
                                " rows");
      std::memcpy(out.f32() + n * d, table.f32() + id * d, d * sizeof(float));
    }
  });
  return out;
}

Tensor grid_ids(int64_t rows, int64_t cols, bool by_row, Device device) {
  if (rows < 0 || cols < 0 || rows > INT32_MAX || cols > INT32_MAX)
    throw std::invalid_argument("grid_ids: rows " + std::to_string(rows) + " and cols " +
                                std::to_string(cols) + " must lie in [0, 2^31)");
  detail::count_op("grid_ids");
  if (device == Device::cuda) {
#ifdef MARE_WITH_CUDA
    return cuda_backend().grid_ids(rows, cols, by_row);
#else
    throw std::invalid_argument("grid_ids: this build has no CUDA backend");
#endif
  }
  Tensor out = Tensor::empty({rows, cols}, Device::cpu, DType::i32);
  int32_t* p = out.i32();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) p[r * cols + c] = static_cast<int32_t>(by_row ? r : c);
  return out;
}

void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& ids) {
  if (!d_table.defined()) return;
  check_rank(d_table, 2, "embedding_backward: d_table");
  check_defined(ids, "embedding_backward: ids");
  check_dtype(ids, DType::i32, "embedding_backward: ids");
  check_defined(d_out, "embedding_backward: d_out");
  int64_t v = d_table.dim(0), d = d_table.dim(1);
  if (d_out.numel() != ids.numel() * d)
    throw ShapeError("embedding_backward: d_out " + d_out.shape().str() + " does not match ids " +
                     ids.shape().str() + " × " + std::to_string(d));
  // The ids' values are checked on the host below; on the GPU the CUDA op
  // handles them (a host read of device memory would crash).
  MARE_CUDA_DISPATCH("embedding_backward", embedding_backward(d_table, d_out, ids), &d_table,
                     &d_out, &ids);
  // embedding_forward's check, before any write so a bad id leaves d_table untouched.
  for (int64_t n = 0, n_n = ids.numel(); n < n_n; ++n) {
    int32_t id = ids.i32()[n];
    if (id < 0 || id >= v)
      throw std::out_of_range("embedding_backward: id " + std::to_string(id) + " at position " +
                              std::to_string(n) + " is outside the table's " + std::to_string(v) +
                              " rows");
  }
  for (int64_t n = 0, n_n = ids.numel(); n < n_n; ++n) {
    float* row = d_table.f32() + static_cast<int64_t>(ids.i32()[n]) * d;
    const float* g = d_out.f32() + n * d;
    for (int64_t j = 0; j < d; ++j) row[j] += g[j];
  }
}

// The pieces of a whole along one axis (concat's inputs, split's outputs): for piece
// i, of extent `extents[i]` along the axis, and each outer index o, move(i, p, w, n)
// with n contiguous floats at offset p of the piece and w of the whole; threaded
// over o.
template <class Extent, class Move>
void for_each_piece_block(const AxisSplit& whole, size_t pieces, Extent extent, Move move) {
  int64_t at = 0;
  for (size_t i = 0; i < pieces; ++i) {
    const int64_t size = extent(i), n = size * whole.inner;
    for_items(whole.outer, static_cast<double>(n), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) move(i, o * n, (o * whole.size + at) * whole.inner, n);
    });
    at += size;
  }
}

Tensor concat_forward(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("concat_forward: nothing to concatenate");
  for (size_t i = 0; i < xs.size(); ++i)
    if (!xs[i].defined())
      throw std::invalid_argument("concat_forward: piece " + std::to_string(i) + " is undefined");
  check_pieces_device("concat_forward", xs[0], xs);
  int a = normalize_axis(axis, xs[0].rank(), "concat_forward");
  int64_t total = 0;
  for (const Tensor& x : xs) {
    // Ranks first: with_extent(x, a, ..) needs a < x.rank().
    if (x.rank() != xs[0].rank())
      throw ShapeError("concat_forward: shapes " + xs[0].shape().str() + " and " + x.shape().str() +
                       " differ in rank");
    if (with_extent(x.shape(), a, 0) != with_extent(xs[0].shape(), a, 0))
      throw ShapeError("concat_forward: shapes " + xs[0].shape().str() + " and " + x.shape().str() +
                       " differ outside axis " + std::to_string(a));
    total += x.dim(a);
  }
  MARE_CUDA_DISPATCH("concat_forward", concat_forward(xs, axis), &xs[0]);
  Tensor out = Tensor::empty(with_extent(xs[0].shape(), a, total));
  AxisSplit so = split_at_axis(out.shape(), a, "concat_forward");
  float* po = out.f32();
  for_each_piece_block(
      so, xs.size(), [&](size_t i) { return xs[i].dim(a); },
      [&](size_t i, int64_t p, int64_t w, int64_t n) {
        std::memcpy(po + w, xs[i].f32() + p, n * sizeof(float));
      });
  return out;
}

void concat_backward(std::vector<Tensor>& d_xs, const Tensor& d_out, int axis) {
  check_defined(d_out, "concat_backward: d_out");
  check_pieces_device("concat_backward", d_out, d_xs);
  int a = normalize_axis(axis, d_out.rank(), "concat_backward");
  AxisSplit so = split_at_axis(d_out.shape(), a, "concat_backward");
  check_pieces_fit("concat_backward", d_xs, d_out, a);
  MARE_CUDA_DISPATCH("concat_backward", concat_backward(d_xs, d_out, axis), &d_out);
  const float* pg = d_out.f32();
  for_each_piece_block(
      so, d_xs.size(), [&](size_t i) { return d_xs[i].dim(a); },
      [&](size_t i, int64_t p, int64_t w, int64_t n) {
        float* dst = d_xs[i].f32() + p;
        for (int64_t j = 0; j < n; ++j) dst[j] += pg[w + j];
      });
}

std::vector<Tensor> split_forward(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  check_defined(x, "split_forward");
  int a = normalize_axis(axis, x.rank(), "split_forward");
  AxisSplit sx = split_at_axis(x.shape(), a, "split_forward");
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != sx.size)
    throw ShapeError("split_forward: sizes sum to " + std::to_string(sum) + " but axis " +
                     std::to_string(a) + " of " + x.shape().str() + " has " +
                     std::to_string(sx.size));
  MARE_CUDA_DISPATCH("split_forward", split_forward(x, sizes, axis), &x);
  std::vector<Tensor> out;
  for (int64_t size : sizes) out.push_back(Tensor::empty(with_extent(x.shape(), a, size)));
  const float* px = x.f32();
  for_each_piece_block(
      sx, sizes.size(), [&](size_t i) { return sizes[i]; },
      [&](size_t i, int64_t p, int64_t w, int64_t n) {
        std::memcpy(out[i].f32() + p, px + w, n * sizeof(float));
      });
  return out;
}

void split_backward(Tensor& d_x, const std::vector<Tensor>& d_outs, int axis) {
  if (!d_x.defined()) return;
  check_pieces_device("split_backward", d_x, d_outs);
  int a = normalize_axis(axis, d_x.rank(), "split_backward");
  AxisSplit sx = split_at_axis(d_x.shape(), a, "split_backward");
  check_pieces_fit("split_backward", d_outs, d_x, a);
  MARE_CUDA_DISPATCH("split_backward", split_backward(d_x, d_outs, axis), &d_x);
  float* pd = d_x.f32();
  for_each_piece_block(
      sx, d_outs.size(), [&](size_t i) { return d_outs[i].dim(a); },
      [&](size_t i, int64_t p, int64_t w, int64_t n) {
        const float* src = d_outs[i].f32() + p;
        for (int64_t j = 0; j < n; ++j) pd[w + j] += src[j];
      });
}

}  // namespace mare
