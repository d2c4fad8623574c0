// Op-table cases of the halting op (SPEC §4.4, kernels/ops/halting.h). The
// reference decides halting in double; the inputs keep every running sum at
// least 0.01 away from the threshold 1 − ε, so that the float kernel decides
// the same and central differences never cross a decision.
#include <cmath>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/kernels/op_table.h"

namespace mare::test {

namespace {

using Ts = std::vector<Tensor>;
using Vs = std::vector<VecD>;

// Outputs p [K, N], ponder [1], steps [N] (as floats), halted [N] from h [K, N].
Vs ref_halting(const VecD& h, const VecD& mask, int64_t k, int64_t n, int t_max, double eps) {
  VecD p(k * n, 0.0), ponder(1, 0.0), steps(n, 0.0), halted(n, 1.0);
  double total = 0.0;
  int real = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!mask.empty() && mask[i] == 0) continue;
    double s = 0.0;
    steps[i] = static_cast<double>(k);
    halted[i] = 0.0;
    for (int64_t t = 0; t < k; ++t) {
      double ht = h[t * n + i];
      if (t + 1 == t_max || s + ht >= 1.0 - eps) {
        p[t * n + i] = 1.0 - s;
        steps[i] = static_cast<double>(t + 1);
        halted[i] = 1.0;
        break;
      }
      p[t * n + i] = ht;
      s += ht;
    }
    total += steps[i] + (1.0 - s);
    ++real;
  }
  ponder[0] = real ? total / real : 0.0;
  return {p, ponder, steps, halted};
}

// Moves h so that no running sum S + h_t of a token lies within `gap` of the
// threshold (the op's decision would be fragile there).
Tensor away_from_threshold(Tensor h, float eps, float gap = 0.02f) {
  const int64_t k = h.dim(0), n = h.dim(1);
  const float threshold = 1.0f - eps;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int64_t t = 0; t < k; ++t) {
      float& ht = h.f32()[t * n + i];
      if (std::fabs(s + ht - threshold) < gap) ht = s + ht < threshold ? ht - gap : ht + gap;
      s += ht;
    }
  }
  return h;
}

OpCase halting_case(const std::string& name, Tensor h, Tensor mask, int t_max) {
  const float eps = 0.01f;
  const int64_t k = h.dim(0), n = h.dim(1);
  OpCase c;
  c.name = "halting/" + name;
  c.op = "halting";
  c.inputs = {h};
  c.differentiable = {true};
  // steps (i32) travel as floats so that the table compares them too.
  c.forward = [=](const Ts& in) {
    HaltingResult r = halting_forward(in[0], on_dev(mask), t_max, eps);
    std::vector<float> steps;
    for (int32_t s : r.steps.to_index_vector()) steps.push_back(static_cast<float>(s));
    return Ts{r.p, r.ponder, on_dev(Tensor::from_vector(steps, {n})), r.halted};
  };
  c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
    Tensor m = on_dev(mask);
    HaltingResult r = halting_forward(in[0], m, t_max, eps);
    halting_backward(d[0], g[0], g[1], in[0], r, m);
  };
  VecD mref = mask.defined() ? to_double(mask) : VecD{};
  c.reference = [=](const Vs& in) {
    return ref_halting(in[0], mref, k, n, t_max, static_cast<double>(eps));
  };
  return c;
}

}  // namespace

std::vector<OpCase> halting_op_cases() {
  std::vector<OpCase> cs;
  // K = t_max = 3, tokens (columns): halts at 1; reaches t_max; halts at 2;
  // padding; reaches t_max with 0.95; with 0.97; with 0.55.
  cs.push_back(halting_case("K3/tmax3/masked",
                            Tensor::from_vector({0.995f, 0.2f, 0.5f, 0.7f, 0.1f,  0.35f, 0.05f,  //
                                                 0.4f,   0.3f, 0.6f, 0.2f, 0.85f, 0.62f, 0.3f,   //
                                                 0.3f,   0.4f, 0.1f, 0.9f, 0.3f,  0.9f,  0.2f},
                                                {3, 7}),
                            Tensor::from_vector({1, 1, 1, 0, 1, 1, 1}, {7}), 3));
  // K = 2 < t_max = 4: halts at 2; running; halts at 1; running; running at 0.95.
  cs.push_back(halting_case("K2/tmax4/running",
                            Tensor::from_vector({0.3f, 0.2f, 0.999f, 0.6f, 0.45f,  //
                                                 0.8f, 0.25f, 0.5f, 0.1f, 0.5f},
                                                {2, 5}),
                            Tensor(), 4));
  // Many tokens (more than one GPU block and one reduction thread each), a
  // mix of halted, running and padded.
  {
    Tensor h = away_from_threshold(random_tensor({3, 300}, 61, 0.02f, 0.7f), 0.01f);
    Tensor mask = random_tensor({300}, 62, 0.0f, 1.0f);
    for (int64_t i = 0; i < 300; ++i) mask.f32()[i] = mask.f32()[i] < 0.2f ? 0.0f : 1.0f;
    cs.push_back(halting_case("K3/tmax5/300 tokens", h, mask, 5));
  }
  return cs;
}

}  // namespace mare::test
