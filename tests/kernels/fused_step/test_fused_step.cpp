// The fused memory step (kernels/memory/fused_step.h):
//   - forward and backward agree with the composed ops (models/functions_memory.h)
//     for every allocation variant, from a zero state and from a used one;
//   - its double-precision instantiation matches central differences;
//   - nn::MemoryController gives the same outputs and parameter gradients with
//     the fused step as with the composed ops, over three calls with halting;
//   - on the GPU (kernels/cuda/memory_step.cu), forward and backward agree with
//     the CPU op for every variant and several shapes (N from 1 to 33, W from 1
//     to 300, a word wider than a warp, memories beyond one block), with
//     undefined gradients among the inputs, fresh GPU memory NaN-poisoned (an
//     element the kernels forget fails), and run twice to the same bits.
//     Without a GPU these skip with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/memory/fused_step.h"
#include "kernels/memory/interface.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/functions_memory.h"
#include "models/functions_memory_step.h"
#include "models/memory_mixer.h"
#include "tests/gpu_required.h"

namespace mare {
namespace {

constexpr int64_t M = 5, N = 4, W = 6, R = 2;

Tensor uniform(const Shape& s, uint32_t stream, float lo, float hi) {
  Tensor t = Tensor::empty(s);
  fill_uniform(t, 21, stream, lo, hi);
  return t;
}

// A state as after some steps: weights that sum to at most 1, links with a zero diagonal.
MemoryStepState used_state(uint32_t stream) {
  MemoryStepState s;
  s.memory = uniform({M, N, W}, stream, -1.0f, 1.0f);
  s.usage = uniform({M, N}, stream + 1, 0.0f, 1.0f);
  s.write_weights = uniform({M, N}, stream + 2, 0.0f, 0.25f);
  s.read_weights = uniform({M, R, N}, stream + 3, 0.0f, 0.25f);
  s.precedence = uniform({M, N}, stream + 4, 0.0f, 0.25f);
  s.links = uniform({M, N, N}, stream + 5, 0.0f, 0.25f);
  for (int64_t b = 0; b < M; ++b)
    for (int64_t i = 0; i < N; ++i) s.links.f32()[(b * N + i) * N + i] = 0.0f;
  // One memory with an exact tie and a zero in its usage.
  s.usage.f32()[0] = 0.5f;
  s.usage.f32()[1] = 0.5f;
  s.usage.f32()[2] = 0.0f;
  return s;
}

MemoryStepState zero_state() {
  return {Tensor::zeros({M, N, W}), Tensor::zeros({M, N}), Tensor::zeros({M, N}),
          Tensor::zeros({M, R, N}), Tensor::zeros({M, N}), Tensor::zeros({M, N, N})};
}

struct Outputs {
  std::vector<ag::Var>
      vars;  // memory, usage, write_weights, read_weights, precedence, links, reads
};

Outputs composed(const ag::Var& xi, const std::vector<ag::Var>& p, AllocationVariant v) {
  const ag::MemoryInterface in = ag::interface_split(xi, R, W);
  const ag::Var psi = ag::retention(in.free_gates, p[3]);
  const ag::Var u = ag::usage(p[1], p[2], psi);
  const ag::Var alloc = ag::allocation(u, v);
  const ag::Var cw =
      ag::reshape(ag::content_weighting(p[0], in.write_key, in.write_strength), {M, N});
  const ag::Var ww = ag::write_weighting(alloc, cw, in.allocation_gate, in.write_gate);
  const ag::Var mem = ag::memory_update(p[0], ww, in.erase, in.write_vector);
  const ag::Var links = ag::link_update(p[5], p[4], ww);
  const ag::Var prec = ag::precedence_update(p[4], ww);
  const ag::LinkWeightVars lw = ag::link_weights(links, p[3]);
  const ag::Var cr = ag::content_weighting(mem, in.read_keys, in.read_strengths);
  const ag::Var wr = ag::read_weights(in.read_modes, lw.backward, cr, lw.forward);
  return {{mem, u, ww, wr, prec, links, ag::read_vectors(mem, wr)}};
}

Outputs fused(const ag::Var& xi, const std::vector<ag::Var>& p, AllocationVariant v) {
  const ag::MemoryStepVars s = ag::memory_step(xi, p[0], p[1], p[2], p[3], p[4], p[5], R, v);
  return {
      {s.memory, s.usage, s.write_weights, s.read_weights, s.precedence, s.links, s.read_vectors}};
}

struct StepRun {
  std::vector<Tensor> values, grads;  // grads: xi, then the state (write_weights: none)
};

// Σ_k <G_k, output_k> with fixed random G_k, backward, gradients of every input.
template <class Step>
StepRun run(Step step, const MemoryStepState& s, AllocationVariant v) {
  const ag::Var xi = ag::leaf(uniform({M, interface_width(R, W)}, 40, -2.0f, 2.0f));
  std::vector<ag::Var> p = {ag::leaf(s.memory.clone()),        ag::leaf(s.usage.clone()),
                            ag::leaf(s.write_weights.clone()), ag::leaf(s.read_weights.clone()),
                            ag::leaf(s.precedence.clone()),    ag::leaf(s.links.clone())};
  const Outputs o = step(xi, p, v);
  ag::Var loss;
  StepRun r;
  for (size_t k = 0; k < o.vars.size(); ++k) {
    r.values.push_back(o.vars[k]->value.clone());
    const Tensor g = uniform(o.vars[k]->value.shape(), 50 + static_cast<uint32_t>(k), -1.0f, 1.0f);
    const ag::Var term = ag::mse(o.vars[k], ag::constant(g));
    loss = loss ? ag::add(loss, term) : term;
  }
  ag::backward(loss);
  r.grads.push_back(xi->grad.clone());
  for (const ag::Var& x : p) r.grads.push_back(x->grad.defined() ? x->grad.clone() : Tensor());
  return r;
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.f32()[i], b.f32()[i], tol * (1.0 + std::fabs(b.f32()[i])))
        << what << " element " << i;
}

// Every variant the registry lists (allocation_variants(): a hand-written list
// here once left `network` out).
TEST(FusedMemoryStep, MatchesTheComposedOpsForEveryVariant) {
  EXPECT_EQ(allocation_variants().size(), 6u);
  for (const AllocationVariant v : allocation_variants())
    for (const bool used : {false, true}) {
      const MemoryStepState s = used ? used_state(1) : zero_state();
      const StepRun a = run(fused, s, v), b = run(composed, s, v);
      const std::string what = std::string(to_string(v)) + (used ? " used" : " zero");
      for (size_t k = 0; k < a.values.size(); ++k)
        expect_close(a.values[k], b.values[k], 1e-5, what + " output " + std::to_string(k));
      for (size_t k = 0; k < a.grads.size(); ++k)
        expect_close(a.grads[k], b.grads[k], 1e-4, what + " gradient " + std::to_string(k));
      EXPECT_FALSE(a.grads[3].defined()) << "no gradient into the previous write weights";
    }
}

TEST(FusedMemoryStep, RefusesBadShapes) {
  const MemoryStepState s = zero_state();
  EXPECT_THROW(memory_step_forward(Tensor::zeros({M, 7}), s, R, AllocationVariant::sorted),
               std::invalid_argument);
  MemoryStepState bad = s;
  bad.links = Tensor::zeros({M, N, N + 1});
  EXPECT_THROW(memory_step_forward(Tensor::zeros({M, interface_width(R, W)}), bad, R,
                                   AllocationVariant::sorted),
               std::invalid_argument);
}

TEST(FusedMemoryStep, DoubleGradientMatchesCentralDifferences) {
  const MemoryStepDims d{3, 4, 5, 2};
  const int64_t X = interface_width(d.R, d.W);
  PhiloxStream rng(5, 2);
  auto draw = [&](double lo, double hi) { return lo + (hi - lo) * rng.uniform(); };
  std::vector<double> xi(d.M * X);
  for (double& x : xi) x = draw(-1.5, 1.5);
  // State: memory, usage, write_weights, read_weights, precedence, links.
  const int64_t sizes[] = {d.N * d.W, d.N, d.N, d.R * d.N, d.N, d.N * d.N};
  std::vector<double> prev;
  for (int k = 0; k < 6; ++k)
    for (int64_t i = 0; i < d.M * sizes[k]; ++i)
      prev.push_back(k == 0 ? draw(-1, 1) : k == 1 ? draw(0.05, 0.95) : draw(0.0, 0.2));
  std::vector<double> out;
  memory_step_forward_f64(d, xi, prev, out);
  std::vector<double> g(out.size());
  for (double& x : g) x = draw(-1, 1);
  auto loss = [&](const std::vector<double>& x, const std::vector<double>& p) {
    std::vector<double> o;
    memory_step_forward_f64(d, x, p, o);
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += g[i] * o[i];
    return s;
  };
  std::vector<double> d_xi, d_prev;
  memory_step_backward_f64(d, xi, prev, g, d_xi, d_prev);
  const double h = 1e-6;
  for (size_t i = 0; i < xi.size(); ++i) {
    std::vector<double> a = xi, b = xi;
    a[i] += h;
    b[i] -= h;
    const double num = (loss(a, prev) - loss(b, prev)) / (2 * h);
    ASSERT_NEAR(d_xi[i], num, 1e-6 * (1 + std::fabs(num))) << "xi " << i;
  }
  const int64_t ww_begin = d.M * (sizes[0] + sizes[1]), ww_end = ww_begin + d.M * sizes[2];
  for (size_t i = 0; i < prev.size(); ++i) {
    if (static_cast<int64_t>(i) >= ww_begin && static_cast<int64_t>(i) < ww_end) {
      EXPECT_EQ(d_prev[i], 0.0) << "no gradient into the previous write weights";
      continue;
    }
    std::vector<double> a = prev, b = prev;
    a[i] += h;
    b[i] -= h;
    const double num = (loss(xi, a) - loss(xi, b)) / (2 * h);
    ASSERT_NEAR(d_prev[i], num, 1e-6 * (1 + std::fabs(num))) << "state " << i;
  }
}

TEST(FusedMemoryStep, ControllerGivesTheSameOutputsAndGradients) {
  auto pass = [](bool fused) {
    ParameterSet ps(3);
    nn::Buffers buffers;
    nn::MemoryConfig mc;
    mc.dim = 8;
    mc.heads = 2;
    mc.slots = 4;
    mc.read_heads = 2;
    mc.step = fused ? nn::MemoryConfig::Step::fused : nn::MemoryConfig::Step::composed;
    nn::MemoryController mix(ps, buffers, "mix", mc);
    const int64_t B = 2, T = 3;
    Tensor x0 = Tensor::empty({B, T, 8});
    fill_uniform(x0, 4, 1, -1.0f, 1.0f);
    const Tensor mask = Tensor::from_vector({1, 1, 1, 1, 1, 0}, {B, T});
    nn::Context ctx;
    ctx.training = true;
    mix.begin(B, T, ctx);
    ag::Var x = ag::leaf(x0), h = x;
    for (int c = 0; c < 3; ++c) {
      Tensor run = Tensor::full({B * T}, 1.0f);
      if (c == 2) run.f32()[0] = 0.0f;
      h = mix(h, mask, run, ctx);
    }
    ag::backward(ag::mse(h, ag::constant(Tensor::zeros({B, T, 8}))));
    std::vector<Tensor> r{h->value.clone(), x->grad.clone()};
    for (const ag::Var& p : ps.all()) r.push_back(p->grad.defined() ? p->grad.clone() : Tensor());
    return r;
  };
  const std::vector<Tensor> a = pass(true), b = pass(false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    expect_close(a[k], b[k], 1e-4, "tensor " + std::to_string(k));
}

// ---- the GPU against the CPU ------------------------------------------------

struct Shape4 {
  int64_t M, N, W, R;
};

Tensor drawn(const Shape& s, uint32_t stream, float lo, float hi) {
  Tensor t = Tensor::empty(s);
  fill_uniform(t, 77, stream, lo, hi);
  return t;
}

// A used state of the given shape (weights summing to at most 1, zero link
// diagonals, one memory with a tie and a zero usage).
MemoryStepState state_of(const Shape4& d, uint32_t stream) {
  const float w = 1.0f / static_cast<float>(d.N);
  MemoryStepState s{
      drawn({d.M, d.N, d.W}, stream, -1.0f, 1.0f), drawn({d.M, d.N}, stream + 1, 0.0f, 1.0f),
      drawn({d.M, d.N}, stream + 2, 0.0f, w),      drawn({d.M, d.R, d.N}, stream + 3, 0.0f, w),
      drawn({d.M, d.N}, stream + 4, 0.0f, w),      drawn({d.M, d.N, d.N}, stream + 5, 0.0f, w)};
  for (int64_t b = 0; b < d.M; ++b)
    for (int64_t i = 0; i < d.N; ++i) s.links.f32()[(b * d.N + i) * d.N + i] = 0.0f;
  if (d.N >= 3) {
    s.usage.f32()[0] = 0.5f;
    s.usage.f32()[1] = 0.5f;
    s.usage.f32()[2] = 0.0f;
  }
  return s;
}

MemoryStepState to(const MemoryStepState& s, Device dev) {
  auto t = [dev](const Tensor& x) { return x.defined() ? x.to(dev) : Tensor(); };
  return {t(s.memory),       t(s.usage),      t(s.write_weights),
          t(s.read_weights), t(s.precedence), t(s.links)};
}

std::vector<Tensor> tensors_of(const MemoryStepState& s) {
  return {s.memory, s.usage, s.write_weights, s.read_weights, s.precedence, s.links};
}

// One forward and backward on `dev`: the new state, the read vectors, the
// allocation, then the gradients of ξ and of the previous state (write weights:
// none), every tensor copied to the CPU. `partial`: the gradients of the usage
// and read vectors and of the previous usage and links are left undefined.
std::vector<Tensor> step_on(Device dev, const Shape4& d, AllocationVariant v, bool partial) {
  const Tensor xi = drawn({d.M, interface_width(d.R, d.W)}, 3, -2.0f, 2.0f).to(dev);
  const MemoryStepState prev = to(state_of(d, 10), dev);
  const MemoryStepResult out = memory_step_forward(xi, prev, d.R, v);
  MemoryStepState g{
      drawn({d.M, d.N, d.W}, 20, -1.0f, 1.0f), drawn({d.M, d.N}, 21, -1.0f, 1.0f),
      drawn({d.M, d.N}, 22, -1.0f, 1.0f),      drawn({d.M, d.R, d.N}, 23, -1.0f, 1.0f),
      drawn({d.M, d.N}, 24, -1.0f, 1.0f),      drawn({d.M, d.N, d.N}, 25, -1.0f, 1.0f)};
  Tensor g_reads = drawn({d.M, d.R, d.W}, 26, -1.0f, 1.0f);
  if (partial) {
    g.usage = Tensor();
    g_reads = Tensor();
  }
  g = to(g, dev);
  if (g_reads.defined()) g_reads = g_reads.to(dev);
  // Gradients start from nonzero values: the backward accumulates.
  Tensor d_xi = drawn(xi.shape(), 30, -0.5f, 0.5f).to(dev);
  MemoryStepState d_prev =
      to({drawn({d.M, d.N, d.W}, 31, -0.5f, 0.5f), drawn({d.M, d.N}, 32, -0.5f, 0.5f), Tensor(),
          drawn({d.M, d.R, d.N}, 33, -0.5f, 0.5f), drawn({d.M, d.N}, 34, -0.5f, 0.5f),
          drawn({d.M, d.N, d.N}, 35, -0.5f, 0.5f)},
         dev);
  if (partial) {
    d_prev.usage = Tensor();
    d_prev.links = Tensor();
  }
  memory_step_backward(d_xi, d_prev, g, g_reads, xi, prev, out, d.R, v);
  std::vector<Tensor> r = tensors_of(out.state);
  r.push_back(out.read_vectors);
  r.push_back(out.allocation);
  r.push_back(d_xi);
  for (const Tensor& t : tensors_of(d_prev)) r.push_back(t);
  for (Tensor& t : r)
    if (t.defined()) t = t.to(Device::cpu);
  return r;
}

const Shape4 kGpuShapes[] = {
    {5, 4, 6, 2},      // the CPU tests' shape
    {9, 1, 1, 1},      // one slot, one column
    {37, 16, 45, 3},   // a word wider than a warp, not a multiple of 32
    {3, 33, 70, 1},    // more slots than lanes
    {130, 4, 300, 2},  // the paper's N, W, R; memories beyond one block
};

TEST(FusedMemoryStepCuda, MatchesTheCpuForEveryVariantAndShape) {
  MARE_NEEDS_GPU();
  test::PoisonedGpuAllocations poison;
  for (const Shape4& d : kGpuShapes)
    for (const AllocationVariant v : allocation_variants())
      for (const bool partial : {false, true}) {
        const std::vector<Tensor> cpu = step_on(Device::cpu, d, v, partial);
        const std::vector<Tensor> gpu = step_on(Device::cuda, d, v, partial);
        ASSERT_EQ(cpu.size(), gpu.size());
        const std::string what = "M " + std::to_string(d.M) + " N " + std::to_string(d.N) + " W " +
                                 std::to_string(d.W) + " R " + std::to_string(d.R) + " " +
                                 std::string(to_string(v)) + (partial ? " partial" : " full");
        // One tensor at a time: a failure ends that tensor's check only, so one run
        // names every (shape, variant, tensor) that disagrees.
        for (size_t k = 0; k < cpu.size(); ++k) {
          const std::string tensor = what + " tensor " + std::to_string(k);
          if (gpu[k].defined()) {
            bool finite = true;
            for (float x : gpu[k].to_vector()) finite = finite && std::isfinite(x);
            EXPECT_TRUE(finite) << tensor << ": an unwritten element";
            if (!finite) continue;
          }
          // Outputs (0–7) to 1e-5, gradients (8–) to 1e-4, relative to 1 + |cpu|.
          expect_close(gpu[k], cpu[k], k < 8 ? 1e-5 : 1e-4, tensor);
        }
      }
}

// The same helper on the CPU: every shape and variant the GPU test takes, with
// and without the undefined gradients, twice to the same bits.
TEST(FusedMemoryStep, EveryGpuTestShapeRunsTwiceToTheSameBitsOnTheCpu) {
  for (const Shape4& d : kGpuShapes)
    for (const AllocationVariant v : allocation_variants())
      for (const bool partial : {false, true}) {
        const std::vector<Tensor> a = step_on(Device::cpu, d, v, partial);
        const std::vector<Tensor> b = step_on(Device::cpu, d, v, partial);
        ASSERT_EQ(a.size(), 15u);  // 6 state, reads, allocation, d_xi, 6 d_prev
        EXPECT_EQ(a[10].defined(), !partial) << "d_prev usage";
        for (size_t k = 0; k < a.size(); ++k) {
          if (!a[k].defined()) continue;
          for (float x : a[k].to_vector()) ASSERT_TRUE(std::isfinite(x)) << "tensor " << k;
          ASSERT_EQ(a[k].to_vector(), b[k].to_vector()) << "tensor " << k;
        }
      }
}

TEST(FusedMemoryStepCuda, ASecondRunGivesTheSameBits) {
  MARE_NEEDS_GPU();
  const Shape4 d{37, 16, 45, 3};
  const std::vector<Tensor> a = step_on(Device::cuda, d, AllocationVariant::sorted, false);
  const std::vector<Tensor> b = step_on(Device::cuda, d, AllocationVariant::sorted, false);
  for (size_t k = 0; k < a.size(); ++k) {
    if (!a[k].defined()) continue;
    EXPECT_EQ(a[k].to_vector(), b[k].to_vector()) << "tensor " << k;
  }
}

TEST(FusedMemoryStepCuda, RefusesMixedDevices) {
  MARE_NEEDS_GPU();
  const Shape4 d{2, 4, 6, 2};
  const Tensor xi = Tensor::zeros({d.M, interface_width(d.R, d.W)}, Device::cuda);
  MemoryStepState s = to(state_of(d, 1), Device::cuda);
  s.links = s.links.to(Device::cpu);
  EXPECT_THROW(memory_step_forward(xi, s, d.R, AllocationVariant::sorted), std::invalid_argument);
}

}  // namespace
}  // namespace mare
