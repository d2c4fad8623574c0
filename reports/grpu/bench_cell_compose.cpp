// Timing behind the design choice of reports/grpu/README.md: one GRU step of
// the GRPU's size (the grpu_cell op with no machine fields, H + K = 102) as the
// fused op vs composed from the autograd ops (concat, matmul, bias_add,
// sigmoid, split, mul, tanh, add, scale), forward and backward over 52 steps.
// Not part of the build; compile it against a build directory B (the include
// folders of B/_deps too, for Random123) with
//   g++ -std=c++20 -O3 -march=native -DNDEBUG -DEIGEN_DONT_PARALLELIZE -I. -IB -IB/kernels
//       -I/usr/include/eigen3 reports/grpu/bench_cell_compose.cpp
//       B/models/libmare_models.a B/kernels/libmare_kernels.a -o /tmp/compose
// and run `/tmp/compose BATCH` (10, 32, 100).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "kernels/ops/recurrent.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/grpu.h"
using namespace mare;
int main(int argc, char** argv) {
  const int64_t B = argc > 1 ? atoi(argv[1]) : 10, I = 1, H = 102, T = 52, reps = 40;
  Tensor x = Tensor::empty({B, I});
  fill_uniform(x, 1, 1, -1, 1);
  auto wg = ag::leaf(Tensor::empty({I + H, 2 * H})), bg = ag::leaf(Tensor::zeros({2 * H}));
  auto wc = ag::leaf(Tensor::empty({I + H, H})), bc = ag::leaf(Tensor::zeros({H}));
  fill_uniform(wg->value, 1, 2, -0.1, 0.1);
  fill_uniform(wc->value, 1, 3, -0.1, 0.1);
  auto run = [&](bool fused) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      ag::Var h = ag::constant(Tensor::zeros({B, H}));
      ag::Var xc = ag::constant(x);
      for (int64_t t = 0; t < T; ++t) {
        if (fused) {
          GrpuConfig cfg;
          cfg.machine = false;
          h = ag::grpu_cell(xc, Tensor(), h, wg, bg, wc, bc, Tensor(), cfg);
        } else {
          ag::Var a = ag::concat({xc, h}, 1);
          ag::Var g = ag::sigmoid(ag::bias_add(ag::matmul(a, wg), bg));
          auto ru = ag::split(g, {H, H}, 1);
          ag::Var a2 = ag::concat({xc, ag::mul(ru[0], h)}, 1);
          ag::Var c = ag::tanh(ag::bias_add(ag::matmul(a2, wc), bc));
          h = ag::add(h, ag::mul(ru[1], ag::add(c, ag::scale(h, -1.0f))));
        }
      }
      ag::backward(ag::mse(ag::reshape(h, {B * H}), ag::constant(Tensor::zeros({B * H}))));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
           (reps * T) * 1e6;
  };
  run(true);
  run(false);
  double f = run(true), c = run(false);
  std::printf("B=%ld H=%ld: fused %.1f us/step, composed %.1f us/step (fwd+bwd)\n", B, H, f, c);
}
