// Every op's forward and backward give the same bytes at 1, 2, 3 and 7 threads:
// the op table's cases with the work thresholds scaled down (so that their
// small shapes are cut into many chunks), and the big ops at shapes where the
// production thresholds split them. Cut into those chunks, every case also
// matches its one-piece computation up to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/kernels/op_table.h"
#include "tests/kernels/threads/threads_check.h"

namespace mare::test {
namespace {

// One case: forward, then backward with a fixed cotangent into zero gradients.
// A fresh case each time (cases may hold state, e.g. batch norm's running statistics).
std::vector<Tensor> run_case(size_t index) {
  std::vector<OpCase> cases = all_op_cases();
  const OpCase& c = cases.at(index);
  std::vector<Tensor> outs = c.forward(c.inputs);
  std::vector<Tensor> g;
  for (size_t k = 0; k < outs.size(); ++k) g.push_back(random_tensor(outs[k].shape(), 1000 + k));
  std::vector<Tensor> d(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.differentiable[i]) d[i] = Tensor::zeros_like(c.inputs[i]);
  c.backward(c.inputs, g, d);
  std::vector<Tensor> all = outs;
  for (const Tensor& t : d)
    if (t.defined()) all.push_back(t);
  for (const Tensor& t : c.inputs) all.push_back(t);  // ops must not write their inputs differently
  return all;
}

class OpTableThreads : public ::testing::TestWithParam<size_t> {};

TEST_P(OpTableThreads, SameBytesAtEveryThreadCount) {
  ThreadScope scope(1e-9);  // every threshold reached: as many chunks as allowed
  const size_t i = GetParam();
  EXPECT_TRUE(
      same_bytes_at_every_thread_count(all_op_cases()[i].name, [i] { return run_case(i); }));
}

INSTANTIATE_TEST_SUITE_P(Cases, OpTableThreads, ::testing::Range<size_t>(0, all_op_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string s = std::to_string(info.param) + "_";
                           // A copy: all_op_cases() returns a temporary vector.
                           const std::string name = all_op_cases()[info.param].name;
                           for (char ch : name)
                             s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

// Cut into as many chunks as allowed, on 2 threads, an op computes what it does
// in one piece on one thread, up to rounding (a reduction's partial sums, a
// product's blocks): a chunk that read or wrote another chunk's rows would not.
TEST_P(OpTableThreads, ChunkedMatchesOnePiece) {
  const size_t i = GetParam();
  std::vector<Tensor> whole, chunked;
  {
    ThreadScope scope(1.0);
    set_threads(1);
    whole = run_case(i);
  }
  {
    ThreadScope scope(1e-9);
    set_threads(2);
    chunked = run_case(i);
  }
  ASSERT_EQ(whole.size(), chunked.size());
  for (size_t t = 0; t < whole.size(); ++t) {
    if (!whole[t].defined()) continue;
    ASSERT_EQ(whole[t].shape(), chunked[t].shape()) << all_op_cases()[i].name << " tensor " << t;
    if (whole[t].dtype() != DType::f32) {
      EXPECT_EQ(first_difference(whole[t], chunked[t]), -1)
          << all_op_cases()[i].name << " tensor " << t;
      continue;
    }
    const float* a = whole[t].f32();
    const float* b = chunked[t].f32();
    for (int64_t e = 0; e < whole[t].numel(); ++e) {
      const bool both_nan = std::isnan(a[e]) && std::isnan(b[e]);
      if (!both_nan && !(std::fabs(a[e] - b[e]) <= 1e-5f * std::max(1.0f, std::fabs(a[e])))) {
        ADD_FAILURE() << all_op_cases()[i].name << ": tensor " << t << " " << whole[t].shape().str()
                      << " element " << e << ": " << a[e] << " in one piece, " << b[e]
                      << " in chunks";
        break;
      }
    }
  }
}

Tensor rnd(const Shape& s, uint64_t seed) {
  return random_tensor(s, seed);
}

// ------------------------------------------- large shapes, production thresholds
TEST(LargeOpThreads, Matmul) {
  ThreadScope scope;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // [M, K]·[K, N] with M > N (row blocks) and M < N (column blocks).
      for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{301, 203, 97}, {67, 251, 389}}) {
        Tensor a = rnd(ta ? Shape{k, m} : Shape{m, k}, 1),
               b = rnd(tb ? Shape{n, k} : Shape{k, n}, 2);
        Tensor g = rnd({m, n}, 3);
        EXPECT_TRUE(same_bytes_at_every_thread_count(
            "matmul " + std::to_string(ta) + std::to_string(tb) + " " + std::to_string(m), [&] {
              Tensor out = matmul_forward(a, b, ta, tb);
              Tensor da = Tensor::zeros_like(a), db = Tensor::zeros_like(b);
              matmul_backward(da, db, g, a, b, ta, tb);
              return std::vector<Tensor>{out, da, db};
            }));
      }
    }
}

TEST(LargeOpThreads, BatchedMatmulAndAttention) {
  ThreadScope scope;
  Tensor a = rnd({5, 97, 64}, 1), b = rnd({5, 64, 83}, 2), g = rnd({5, 97, 83}, 3);
  EXPECT_TRUE(same_bytes_at_every_thread_count("batched_matmul", [&] {
    Tensor out = batched_matmul_forward(a, b);
    Tensor da = Tensor::zeros_like(a), db = Tensor::zeros_like(b);
    batched_matmul_backward(da, db, g, a, b);
    return std::vector<Tensor>{out, da, db};
  }));
  Tensor q = rnd({3, 61, 48}, 4), k = rnd({3, 61, 48}, 5), v = rnd({3, 61, 48}, 6);
  Tensor mask = Tensor::full({3, 61}, 1.0f);
  for (int j = 50; j < 61; ++j) mask.f32()[2 * 61 + j] = 0.0f;
  Tensor go = rnd({3, 61, 48}, 7);
  EXPECT_TRUE(same_bytes_at_every_thread_count("attention", [&] {
    AttentionResult r = attention_forward(q, k, v, 4, mask);
    Tensor dq = Tensor::zeros_like(q), dk = Tensor::zeros_like(k), dv = Tensor::zeros_like(v);
    attention_backward(dq, dk, dv, go, q, k, v, r.probs, 4);
    return std::vector<Tensor>{r.out, r.probs, dq, dk, dv};
  }));
}

// An error raised inside a chunk reaches the caller, and it is the first bad
// position's at every thread count (the pool rethrows the lowest chunk's).
TEST(LargeOpThreads, ErrorsNameTheFirstBadPosition) {
  ThreadScope scope(1e-9);
  Tensor table = rnd({50, 16}, 1);
  std::vector<int32_t> ids(4000, 3);
  ids[1234] = 77;
  ids[3900] = -1;
  Tensor t = Tensor::from_indices(ids, {4000});
  for (int k : thread_counts()) {
    set_threads(k);
    try {
      embedding_forward(table, t);
      ADD_FAILURE() << "no error at " << k << " threads";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("id 77 at position 1234"), std::string::npos)
          << k << " threads: " << e.what();
    }
  }
}

TEST(LargeOpThreads, ConvNormsSoftmaxAndMemory) {
  ThreadScope scope;
  Tensor x = rnd({6, 97, 64}, 1), w = rnd({5, 64, 48}, 2), bias = rnd({48}, 3),
         g = rnd({6, 97, 48}, 4);
  EXPECT_TRUE(same_bytes_at_every_thread_count("conv1d", [&] {
    Tensor y = conv1d_forward(x, w, bias);
    Tensor dx = Tensor::zeros_like(x), dw = Tensor::zeros_like(w), db = Tensor::zeros_like(bias);
    conv1d_backward(dx, dw, db, g, x, w);
    return std::vector<Tensor>{y, dx, dw, db};
  }));
  Tensor rows = rnd({1031, 96}, 5), gamma = rnd({96}, 6), beta = rnd({96}, 7),
         gr = rnd({1031, 96}, 8);
  EXPECT_TRUE(same_bytes_at_every_thread_count("norms and softmax", [&] {
    NormResult ln = layer_norm_forward(rows, gamma, beta);
    Tensor dx = Tensor::zeros_like(rows), dg = Tensor::zeros_like(gamma),
           db = Tensor::zeros_like(beta);
    layer_norm_backward(dx, dg, db, gr, rows, gamma, ln.mean, ln.rstd);
    Tensor rm = Tensor::zeros({96}), rv = Tensor::full({96}, 1.0f);
    NormResult bn = batch_norm_forward(rows, gamma, beta, rm, rv, true);
    Tensor bdx = Tensor::zeros_like(rows), bdg = Tensor::zeros_like(gamma),
           bdb = Tensor::zeros_like(beta);
    batch_norm_backward(bdx, bdg, bdb, gr, rows, gamma, bn.mean, bn.rstd, true);
    Tensor sm = softmax_forward(rows), lsm = log_softmax_forward(rows);
    Tensor dsm = Tensor::zeros_like(rows), dlsm = Tensor::zeros_like(rows);
    softmax_backward(dsm, gr, sm);
    log_softmax_backward(dlsm, gr, lsm);
    return std::vector<Tensor>{ln.out, dx,  dg,  db, bn.out, rm,  rv,
                               bdx,    bdg, bdb, sm, lsm,    dsm, dlsm};
  }));
  // Allocation over 2000 memories of 16 slots, every variant.
  Tensor usage = random_tensor({2000, 16}, 9, 0.0f, 1.0f), da = rnd({2000, 16}, 10);
  for (AllocationVariant v : allocation_variants())
    EXPECT_TRUE(same_bytes_at_every_thread_count(std::string(to_string(v)), [&] {
      Tensor a = allocation_forward(usage, v);
      Tensor du = Tensor::zeros_like(usage);
      allocation_backward(du, da, usage, v);
      return std::vector<Tensor>{a, du};
    }));
}

}  // namespace
}  // namespace mare::test
