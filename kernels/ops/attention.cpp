// Attention on the CPU: per (batch, head), strided Eigen views of the head's
// columns, so no data is copied into per-head buffers. The (batch, head) pairs
// run in parallel: each writes only its own rows and columns, so the bytes do
// not depend on the thread count.
//
// Backward per head (P fixed by forward):
//   d_V += Pᵀ d_O,   d_P = d_O Vᵀ,   d_S = P ⊙ (d_P − rowsum(d_P ⊙ P)),
//   d_Q += d_S K / √d_k,   d_K += d_Sᵀ Q / √d_k
#include "kernels/ops/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ops/common.h"
#include "kernels/ops/exp.h"
#include "kernels/ops/gemm_count.h"
#include "kernels/parallel.h"

namespace mare {
using namespace detail;

namespace {

struct Dims {
  int64_t b, i, j, d, heads, dk;
};

Dims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, int heads, const char* op) {
  check_rank(q, 3, op);
  check_rank(k, 3, op);
  check_same_shape(k, v, op);
  if (q.dim(0) != k.dim(0) || q.dim(2) != k.dim(2))
    throw ShapeError(std::string(op) + ": q " + q.shape().str() + " and k " + k.shape().str() +
                     " disagree in batch or feature size");
  if (heads < 1 || q.dim(2) % heads != 0)
    throw std::invalid_argument(std::string(op) + ": feature size " + std::to_string(q.dim(2)) +
                                " is not divisible by " + std::to_string(heads) + " heads");
  return {q.dim(0), q.dim(1), k.dim(1), q.dim(2), heads, q.dim(2) / heads};
}

}  // namespace

AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads,
                                  const Tensor& key_mask) {
  Dims d = attention_dims(q, k, v, heads, "attention_forward");
  if (key_mask.defined()) check_shape(key_mask, {d.b, d.j}, "attention_forward: key_mask");
  MARE_CUDA_DISPATCH("attention_forward", attention_forward(q, k, v, heads, key_mask), &q, &k, &v,
                     &key_mask);
  AttentionResult r{Tensor::empty({d.b, d.i, d.d}), Tensor::empty({d.b, d.heads, d.i, d.j})};
  count_gemm(d.b * d.heads * d.i, d.j, d.dk);  // Q·Kᵀ
  count_gemm(d.b * d.heads * d.i, d.dk, d.j);  // P·V
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  // Pairs of (batch, head), about i·j·(2·dk + 20) flops each.
  const int64_t pairs = d.b * d.heads;
  const double cost = static_cast<double>(d.i) * d.j * (2 * d.dk + 20);
  parallel_for_chunks(pairs, grain_for(pairs, cost), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> masked;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / d.heads, h = bh % d.heads;
      CStridedMap qh(q.f32() + b * d.i * d.d + h * d.dk, d.i, d.dk, Eigen::OuterStride<>(d.d));
      CStridedMap kh(k.f32() + b * d.j * d.d + h * d.dk, d.j, d.dk, Eigen::OuterStride<>(d.d));
      CStridedMap vh(v.f32() + b * d.j * d.d + h * d.dk, d.j, d.dk, Eigen::OuterStride<>(d.d));
      StridedMap oh(r.out.f32() + b * d.i * d.d + h * d.dk, d.i, d.dk, Eigen::OuterStride<>(d.d));
      MapRM p(r.probs.f32() + (b * d.heads + h) * d.i * d.j, d.i, d.j);
      p.noalias() = (qh * kh.transpose()) * scale;
      // The masked keys of this batch row (padding: usually a run at the end).
      masked.clear();
      if (key_mask.defined())
        for (int64_t col = 0; col < d.j; ++col)
          if (key_mask.f32()[b * d.j + col] == 0.0f) masked.push_back(col);
      const bool any = static_cast<int64_t>(masked.size()) < d.j;
      if (!any) p.setZero();  // every key masked (by the mask: NaN scores stay NaN)
      // Four rows at a time: mask, max and exp a row at a time, then the four
      // denominators together (kernels/ops/exp.h: each in double, in column order).
      for (int64_t row0 = 0; any && row0 < d.i; row0 += 4) {
        const int64_t rows = std::min<int64_t>(4, d.i - row0);
        for (int64_t row = row0; row < row0 + rows; ++row) {
          float* pr = p.data() + row * d.j;
          for (int64_t col : masked) pr[col] = neg_inf;
          // The max in four running maxima: the same value in any order (a NaN score
          // never enters std::max(m, NaN); a zero max's sign changes no x − max).
          float mx4[4] = {neg_inf, neg_inf, neg_inf, neg_inf};
          int64_t col = 0;
          for (; col + 4 <= d.j; col += 4)
            for (int l = 0; l < 4; ++l) mx4[l] = std::max(mx4[l], pr[col + l]);
          float mx = std::max(std::max(mx4[0], mx4[1]), std::max(mx4[2], mx4[3]));
          for (; col < d.j; ++col) mx = std::max(mx, pr[col]);
          exp_shifted(pr, mx, pr, d.j);  // exp in float, std::exp's bits; masked: +0
        }
        double sums[4];
        row_sums_in_order(p.data() + row0 * d.j, rows, d.j, sums);
        for (int64_t r = 0; r < rows; ++r) p.row(row0 + r) *= static_cast<float>(1.0 / sums[r]);
      }
      oh.noalias() = p * vh;
    }
  });
  return r;
}

void attention_backward(Tensor& d_q, Tensor& d_k, Tensor& d_v, const Tensor& d_out, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& probs, int heads) {
  Dims d = attention_dims(q, k, v, heads, "attention_backward");
  check_same_shape(d_out, q, "attention_backward: d_out");
  check_shape(probs, {d.b, d.heads, d.i, d.j}, "attention_backward: probs");
  if (d_q.defined()) check_same_shape(d_q, q, "attention_backward: d_q");
  if (d_k.defined()) check_same_shape(d_k, k, "attention_backward: d_k");
  if (d_v.defined()) check_same_shape(d_v, v, "attention_backward: d_v");
  MARE_CUDA_DISPATCH("attention_backward",
                     attention_backward(d_q, d_k, d_v, d_out, q, k, v, probs, heads), &d_q, &d_k,
                     &d_v, &d_out, &q, &k, &v, &probs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  const int64_t pairs = d.b * d.heads;
  const double cost = static_cast<double>(d.i) * d.j * (4 * d.dk + 6);
  count_gemm(pairs * d.i, d.j, d.dk);                     // d_P = d_O·Vᵀ
  if (d_v.defined()) count_gemm(pairs * d.j, d.dk, d.i);  // Pᵀ·d_O
  if (d_q.defined()) count_gemm(pairs * d.i, d.dk, d.j);  // d_S·K
  if (d_k.defined()) count_gemm(pairs * d.j, d.dk, d.i);  // d_Sᵀ·Q
  parallel_for_chunks(pairs, grain_for(pairs, cost), [&](int64_t begin, int64_t end) {
    MatRM dp(d.i, d.j);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / d.heads, h = bh % d.heads;
      auto off_q = b * d.i * d.d + h * d.dk, off_k = b * d.j * d.d + h * d.dk;
      Eigen::OuterStride<> st(d.d);
      CStridedMap qh(q.f32() + off_q, d.i, d.dk, st), kh(k.f32() + off_k, d.j, d.dk, st),
          vh(v.f32() + off_k, d.j, d.dk, st), goh(d_out.f32() + off_q, d.i, d.dk, st);
      CMapRM p(probs.f32() + (b * d.heads + h) * d.i * d.j, d.i, d.j);
      if (d_v.defined())
        StridedMap(d_v.f32() + off_k, d.j, d.dk, st).noalias() += p.transpose() * goh;
      dp.noalias() = goh * vh.transpose();
      // d_S = P ⊙ (d_P − rowsum(d_P ⊙ P)), reusing dp's storage.
      for (int64_t row = 0; row < d.i; ++row) {
        float dot = p.row(row).dot(dp.row(row));
        dp.row(row) = p.row(row).cwiseProduct((dp.row(row).array() - dot).matrix());
      }
      if (d_q.defined())
        StridedMap(d_q.f32() + off_q, d.i, d.dk, st).noalias() += (dp * kh) * scale;
      if (d_k.defined())
        StridedMap(d_k.f32() + off_k, d.j, d.dk, st).noalias() += (dp.transpose() * qh) * scale;
    }
  });
}

}  // namespace mare
