// Op benchmarks (Google Benchmark): matmul, softmax, layer norm, conv1d and
// attention at the thesis's sizes (batch 32, sequence up to 512, d up to 300),
// forward and forward+backward. Counters: FLOP/s for products, bytes/s for
// memory-bound ops (bytes a single pass must read and write).
//   build/kernels/bench/bench_ops --benchmark_out=ops.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include "kernels/ops.h"
#include "kernels/random.h"

namespace {

using namespace mare;

Tensor rnd(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s);
  fill_uniform(t, seed, 1, -1, 1);
  return t;
}

void set_flops(benchmark::State& st, double flops_per_iter) {
  st.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iter * st.iterations(), benchmark::Counter::kIsRate);
}

// [B·I, d] × [d, d]: the projections of every layer.
void BM_Matmul(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  const bool backward = st.range(2);
  Tensor x = rnd({rows, d}, 1), w = rnd({d, d}, 2), g = rnd({rows, d}, 3);
  Tensor dx = Tensor::zeros({rows, d}), dw = Tensor::zeros({d, d});
  for (auto _ : st) {
    Tensor y = matmul_forward(x, w);
    if (backward) matmul_backward(dx, dw, g, x, w);
    benchmark::DoNotOptimize(y.f32());
  }
  set_flops(st, 2.0 * rows * d * d * (backward ? 3 : 1));
}
BENCHMARK(BM_Matmul)
    ->ArgsProduct({{64, 512}, {100, 300}, {0, 1}})
    ->ArgNames({"seq", "d", "bwd"})
    ->Unit(benchmark::kMillisecond);

void BM_Softmax(benchmark::State& st) {
  const int64_t rows = 32 * 4 * st.range(0), cols = st.range(0);
  Tensor x = rnd({rows, cols}, 4);
  for (auto _ : st) {
    Tensor y = softmax_forward(x);
    benchmark::DoNotOptimize(y.f32());
  }
  st.SetBytesProcessed(st.iterations() * rows * cols * 8);  // read x, write y
}
BENCHMARK(BM_Softmax)->Arg(64)->Arg(256)->Arg(512)->ArgName("seq")->Unit(benchmark::kMillisecond);

void BM_LayerNorm(benchmark::State& st) {
  const int64_t rows = 32 * st.range(0), d = st.range(1);
  Tensor x = rnd({rows, d}, 5), gamma = rnd({d}, 6), beta = rnd({d}, 7);
  for (auto _ : st) {
    NormResult r = layer_norm_forward(x, gamma, beta);
    benchmark::DoNotOptimize(r.out.f32());
  }
  st.SetBytesProcessed(st.iterations() * rows * d * 8);
}
BENCHMARK(BM_LayerNorm)
    ->ArgsProduct({{64, 512}, {100, 300}})
    ->ArgNames({"seq", "d"})
    ->Unit(benchmark::kMillisecond);

void BM_Conv1d(benchmark::State& st) {
  const int64_t b = 32, len = st.range(0), d = st.range(1), k = st.range(2);
  Tensor x = rnd({b, len, d}, 8), w = rnd({k, d, d}, 9), bias = rnd({d}, 10);
  for (auto _ : st) {
    Tensor y = conv1d_forward(x, w, bias);
    benchmark::DoNotOptimize(y.f32());
  }
  set_flops(st, 2.0 * b * len * d * d * k);
}
BENCHMARK(BM_Conv1d)
    ->ArgsProduct({{64, 256}, {100, 300}, {1, 5}})
    ->ArgNames({"seq", "d", "k"})
    ->Unit(benchmark::kMillisecond);

void BM_Attention(benchmark::State& st) {
  const int64_t b = 32, len = st.range(0), d = 300;
  const int heads = 4;
  const bool backward = st.range(1);
  Tensor q = rnd({b, len, d}, 11), k = rnd({b, len, d}, 12), v = rnd({b, len, d}, 13);
  Tensor g = rnd({b, len, d}, 14), dq = Tensor::zeros({b, len, d}), dk = Tensor::zeros({b, len, d}),
         dv = Tensor::zeros({b, len, d});
  for (auto _ : st) {
    AttentionResult r = attention_forward(q, k, v, heads);
    if (backward) attention_backward(dq, dk, dv, g, q, k, v, r.probs, heads);
    benchmark::DoNotOptimize(r.out.f32());
  }
  // QKᵀ and PV: 2 · 2·B·I²·d; backward adds four products of the same size.
  set_flops(st, 4.0 * b * len * len * d * (backward ? 3 : 1));
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{64, 256}, {0, 1}})
    ->ArgNames({"seq", "bwd"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
