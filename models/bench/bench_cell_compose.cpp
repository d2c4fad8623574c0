// The timing behind the GRPU's fused cell (reports/grpu/README.md, "why one op"):
// one GRU step of the GRPU's size (the grpu_cell op with no machine fields,
// H + K = 102) as the fused op against the same step composed from the
// autograd ops (concat, matmul, bias_add, sigmoid, split, mul, tanh, add,
// scale), forward and backward over a 52-step sequence (the addition task's
// longest), per batch size 10, 32 and 100 (the dissertation's).
//
//   cell/fused/<batch>      ag::grpu_cell, one node a step
//   cell/composed/<batch>   the composition, 14 nodes a step
//
// The reported time is per sequence (52 steps, forward and backward); the
// counter s_per_step divides it by the steps. Google Benchmark: --benchmark_format=json.
#include <benchmark/benchmark.h>

#include "kernels/random.h"
#include "models/functions.h"
#include "models/grpu.h"

namespace {

using namespace mare;

constexpr int64_t kInputs = 1, kHidden = 102, kSteps = 52;

void run_sequence(benchmark::State& state, bool fused) {
  const int64_t B = state.range(0), I = kInputs, H = kHidden;
  Tensor x = Tensor::empty({B, I});
  fill_uniform(x, 1, 1, -1, 1);
  auto wg = ag::leaf(Tensor::empty({I + H, 2 * H})), bg = ag::leaf(Tensor::zeros({2 * H}));
  auto wc = ag::leaf(Tensor::empty({I + H, H})), bc = ag::leaf(Tensor::zeros({H}));
  fill_uniform(wg->value, 1, 2, -0.1f, 0.1f);
  fill_uniform(wc->value, 1, 3, -0.1f, 0.1f);
  for (auto _ : state) {
    ag::Var h = ag::constant(Tensor::zeros({B, H}));
    const ag::Var xc = ag::constant(x);
    for (int64_t t = 0; t < kSteps; ++t) {
      if (fused) {
        GrpuConfig cfg;
        cfg.machine = false;
        h = ag::grpu_cell(xc, Tensor(), h, wg, bg, wc, bc, Tensor(), cfg);
      } else {
        const ag::Var a = ag::concat({xc, h}, 1);
        const ag::Var g = ag::sigmoid(ag::bias_add(ag::matmul(a, wg), bg));
        const auto ru = ag::split(g, {H, H}, 1);
        const ag::Var a2 = ag::concat({xc, ag::mul(ru[0], h)}, 1);
        const ag::Var c = ag::tanh(ag::bias_add(ag::matmul(a2, wc), bc));
        h = ag::add(h, ag::mul(ru[1], ag::add(c, ag::scale(h, -1.0f))));
      }
    }
    ag::backward(ag::mse(ag::reshape(h, {B * H}), ag::constant(Tensor::zeros({B * H}))));
    benchmark::DoNotOptimize(wg->grad.f32());
  }
  // Seconds a step: the elapsed time over (iterations x steps).
  state.counters["s_per_step"] = benchmark::Counter(
      static_cast<double>(kSteps),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void fused(benchmark::State& state) {
  run_sequence(state, true);
}
void composed(benchmark::State& state) {
  run_sequence(state, false);
}

}  // namespace

BENCHMARK(fused)->Name("cell/fused")->Arg(10)->Arg(32)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(composed)
    ->Name("cell/composed")
    ->Arg(10)
    ->Arg(32)
    ->Arg(100)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
