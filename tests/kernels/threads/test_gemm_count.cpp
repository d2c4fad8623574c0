// The GEMM flop counter (kernels/ops/gemm_count.h): exact 2·m·n·k per product
// for every GEMM-like kernel, nothing while off, and the same count at 1, 2, 3
// and 7 threads with the thresholds scaled down (many blocks per product).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "kernels/ops/gemm_count.h"
#include "kernels/ops/grpu.h"
#include "kernels/ops/recurrent.h"
#include "kernels/random.h"
#include "tests/kernels/threads/threads_check.h"

namespace mare::test {
namespace {

Tensor rnd(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s);
  fill_uniform(t, seed, 1, -1, 1);
  return t;
}

// Counts the flops of `run` with counting on, restoring the previous state.
template <class F>
uint64_t count(F&& run) {
  const bool was = gemm_counting();
  reset_gemm_flops();
  set_gemm_counting(true);
  run();
  set_gemm_counting(was);
  const uint64_t n = gemm_flops();
  reset_gemm_flops();
  return n;
}

TEST(GemmCount, MatmulForwardAndBackward) {
  const int64_t m = 37, k = 19, n = 23;
  Tensor a = rnd({m, k}, 1), b = rnd({k, n}, 2), g = rnd({m, n}, 3);
  EXPECT_EQ(count([&] { matmul_forward(a, b); }), uint64_t(2 * m * n * k));
  Tensor da = Tensor::zeros({m, k}), db = Tensor::zeros({k, n}), none;
  EXPECT_EQ(count([&] { matmul_backward(da, db, g, a, b); }), uint64_t(2 * 2 * m * n * k));
  EXPECT_EQ(count([&] { matmul_backward(da, none, g, a, b); }), uint64_t(2 * m * n * k));
  // Transposed operands: the same product.
  Tensor at = rnd({k, m}, 4), bt = rnd({n, k}, 5);
  EXPECT_EQ(count([&] { matmul_forward(at, bt, true, true); }), uint64_t(2 * m * n * k));
}

TEST(GemmCount, OffCountsNothing) {
  set_gemm_counting(false);
  reset_gemm_flops();
  matmul_forward(rnd({8, 8}, 1), rnd({8, 8}, 2));
  EXPECT_EQ(gemm_flops(), 0u);
}

TEST(GemmCount, BatchedMatmul) {
  const int64_t B = 5, m = 7, k = 11, n = 13;
  Tensor a = rnd({B, m, k}, 1), b = rnd({B, k, n}, 2), g = rnd({B, m, n}, 3);
  EXPECT_EQ(count([&] { batched_matmul_forward(a, b); }), uint64_t(2 * B * m * n * k));
  Tensor da = Tensor::zeros({B, m, k}), db = Tensor::zeros({B, k, n});
  EXPECT_EQ(count([&] { batched_matmul_backward(da, db, g, a, b); }), uint64_t(4 * B * m * n * k));
}

TEST(GemmCount, Attention) {
  const int64_t B = 3, I = 9, J = 9, D = 12;
  const int heads = 3;
  Tensor q = rnd({B, I, D}, 1), k = rnd({B, J, D}, 2), v = rnd({B, J, D}, 3);
  Tensor g = rnd({B, I, D}, 4);
  // QKᵀ and PV: 2 · 2·B·I·J·D (heads split D).
  EXPECT_EQ(count([&] { attention_forward(q, k, v, heads); }), uint64_t(4 * B * I * J * D));
  AttentionResult r = attention_forward(q, k, v, heads);
  Tensor dq = Tensor::zeros_like(q), dk = Tensor::zeros_like(k), dv = Tensor::zeros_like(v);
  EXPECT_EQ(count([&] { attention_backward(dq, dk, dv, g, q, k, v, r.probs, heads); }),
            uint64_t(8 * B * I * J * D));
}

TEST(GemmCount, Conv1dCountsEveryTapsRows) {
  const int64_t B = 2, L = 6, cin = 4, cout = 5, K = 3;
  Tensor x = rnd({B, L, cin}, 1), w = rnd({K, cin, cout}, 2), bias = rnd({cout}, 3);
  Tensor g = rnd({B, L, cout}, 4);
  // Taps -1, 0, +1 of "same" padding multiply 5, 6 and 5 rows.
  const uint64_t rows = B * (5 + 6 + 5);
  EXPECT_EQ(count([&] { conv1d_forward(x, w, bias); }), 2 * rows * cin * cout);
  Tensor dx = Tensor::zeros_like(x), dw = Tensor::zeros_like(w), db = Tensor::zeros_like(bias);
  EXPECT_EQ(count([&] { conv1d_backward(dx, dw, db, g, x, w); }), 4 * rows * cin * cout);
}

TEST(GemmCount, LstmCell) {
  const int64_t B = 4, I = 3, H = 5;
  Tensor x = rnd({B, I}, 1), h = rnd({B, H}, 2), c = rnd({B, H}, 3);
  Tensor w = rnd({I + H, 4 * H}, 4), b = rnd({4 * H}, 5);
  EXPECT_EQ(count([&] { lstm_cell_forward(x, h, c, w, b, Tensor()); }),
            uint64_t(2 * B * (I + H) * 4 * H));
}

TEST(GemmCount, SameCountAtEveryThreadCount) {
  ThreadScope scope(1e-9);  // every product cut into many blocks
  const int64_t m = 96, k = 40, n = 72;
  Tensor a = rnd({m, k}, 1), b = rnd({k, n}, 2), g = rnd({m, n}, 3);
  Tensor q = rnd({4, 16, 24}, 4), kk = rnd({4, 16, 24}, 5), v = rnd({4, 16, 24}, 6);
  std::vector<uint64_t> counts;
  for (int t : thread_counts()) {
    set_threads(t);
    counts.push_back(count([&] {
      matmul_forward(a, b);
      Tensor da = Tensor::zeros({m, k}), db = Tensor::zeros({k, n});
      matmul_backward(da, db, g, a, b);
      attention_forward(q, kk, v, 2);
    }));
  }
  for (size_t i = 1; i < counts.size(); ++i) EXPECT_EQ(counts[i], counts[0]);
  EXPECT_EQ(counts[0], uint64_t(3 * 2 * m * n * k + 4 * 4 * 16 * 16 * 24));
}

}  // namespace
}  // namespace mare::test
