// The optimiser kernels (kernels/ops/optim.h): the CPU against naive
// references written from the equations, and bit for bit against the original
// scalar loops of models/optim.cpp (which the GRPU reproduction was run with);
// the GPU against the CPU, bit for bit (skipped with a message without a GPU).
// They are not differentiable ops, so the op table does not list them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/gpu_required.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare {
namespace {

Tensor random_tensor(const Shape& shape, uint32_t stream, float lo = -2.0f, float hi = 2.0f) {
  Tensor t = Tensor::empty(shape);
  fill_uniform(t, 7, stream, lo, hi);
  return t;
}

// Bitwise equality of two float vectors (EXPECT_EQ on floats would also accept
// 0.0 == -0.0 and refuse NaN == NaN).
void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    ASSERT_EQ(x, y) << what << " differs at " << i << ": " << a[i] << " vs " << b[i];
  }
}

// ------------------------------------------------------------------ CPU
TEST(OptimKernels, L2GradAddIsTwiceLambdaW) {
  Tensor w = random_tensor({3, 5}, 1), g = random_tensor({3, 5}, 2);
  const std::vector<float> w0 = w.to_vector(), g0 = g.to_vector();
  l2_grad_add(g, w, 0.3f);
  const std::vector<float> got = g.to_vector();
  for (size_t i = 0; i < got.size(); ++i) {
    // The equation in double: g + 2λw (λw would miss by 0.3·|w| here).
    EXPECT_NEAR(got[i], g0[i] + 2.0 * 0.3 * w0[i], 1e-6) << i;
    // The original loop's expression, bit for bit.
    EXPECT_EQ(got[i], g0[i] + 2.0f * 0.3f * w0[i]) << i;
  }
  EXPECT_EQ(w.to_vector(), w0);  // w is read only
}

TEST(OptimKernels, ScaleInplace) {
  Tensor x = random_tensor({4, 3, 2}, 3);
  const std::vector<float> x0 = x.to_vector();
  scale_inplace(x, 0.37f);
  const std::vector<float> got = x.to_vector();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], x0[i] * 0.37f) << i;
}

TEST(OptimKernels, SumSquaresMatchesNaiveSum) {
  for (int64_t n : {0, 1, 255, 256, 257, 5000, 70001}) {
    Tensor x = n == 0 ? Tensor::zeros({0}) : random_tensor({n}, 4);
    double naive = 0.0;
    for (float v : x.to_vector()) naive += static_cast<double>(v) * v;
    EXPECT_NEAR(sum_squares(x), naive, 1e-12 * std::max(1.0, naive)) << "n = " << n;
  }
}

// The documented order: chunks of kSumSquaresChunk, level after level. 70 001
// elements make 274 chunks, then 2, then 1: three levels.
TEST(OptimKernels, SumSquaresFollowsTheFixedTree) {
  static_assert(kSumSquaresChunk == 256, "the hand-written tree below assumes 256");
  const int64_t n = 70001;
  Tensor x = random_tensor({n}, 5);
  const std::vector<float> v = x.to_vector();
  std::vector<double> l0;
  for (int64_t b = 0; b < n; b += 256) {
    double s = 0.0;
    for (int64_t i = b; i < std::min(n, b + 256); ++i) s += static_cast<double>(v[i]) * v[i];
    l0.push_back(s);
  }
  ASSERT_EQ(l0.size(), 274u);
  double a = 0.0, b = 0.0;
  for (size_t i = 0; i < 256; ++i) a += l0[i];
  for (size_t i = 256; i < l0.size(); ++i) b += l0[i];
  const double expected = 0.0 + a + b;
  EXPECT_EQ(sum_squares(x), expected);
}

TEST(OptimKernels, SumSquaresOverSeveralTensorsInOrder) {
  Tensor a = random_tensor({300}, 6), b = random_tensor({2, 7}, 7);
  std::vector<Tensor> xs = {a, Tensor(), b, Tensor::zeros({0, 3})};
  EXPECT_EQ(sum_squares(xs), 0.0 + sum_squares(a) + sum_squares(b));
  EXPECT_EQ(sum_squares(std::vector<Tensor>{}), 0.0);
  EXPECT_EQ(sum_squares(Tensor::full({3}, 2.0f)), 12.0);
}

// The loop of models/optim.cpp before the kernels existed, verbatim but for
// the names: adam_update must reproduce it bit for bit.
void original_adam(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
                   std::vector<float>& v, float lr, float beta1, float beta2, float eps,
                   int64_t t) {
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t));
  const double c2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t));
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    double mhat = m[i] / c1, vhat = v[i] / c2;
    w[i] -= static_cast<float>(lr * mhat / (std::sqrt(vhat) + eps));
  }
}

TEST(OptimKernels, AdamUpdateMatchesTheOriginalLoopBitForBit) {
  const Shape shape{17, 9};
  Tensor w = random_tensor(shape, 8), m = Tensor::zeros(shape), v = Tensor::zeros(shape);
  std::vector<float> rw = w.to_vector(), rm = m.to_vector(), rv = v.to_vector();
  for (int64_t t = 1; t <= 25; ++t) {
    Tensor g = random_tensor(shape, 100 + static_cast<uint32_t>(t), -3.0f, 3.0f);
    adam_update(w, g, m, v, 1e-2f, 0.9f, 0.999f, 1e-8f, t);
    original_adam(rw, g.to_vector(), rm, rv, 1e-2f, 0.9f, 0.999f, 1e-8f, t);
    expect_same_bits(w.to_vector(), rw, "w at step " + std::to_string(t));
    expect_same_bits(m.to_vector(), rm, "m at step " + std::to_string(t));
    expect_same_bits(v.to_vector(), rv, "v at step " + std::to_string(t));
  }
}

// Several blocks of the vectorised update (256 elements), a scalar tail, chunks
// on the kernel threads, and gradients of 0, ±huge (v overflows to inf), NaN
// and denormals: still the original loop's bits.
TEST(OptimKernels, AdamUpdateMatchesTheOriginalLoopInBlocksAndSpecialValues) {
  const Shape shape{5003};
  Tensor w = random_tensor(shape, 9), m = Tensor::zeros(shape), v = Tensor::zeros(shape);
  std::vector<float> rw = w.to_vector(), rm = m.to_vector(), rv = v.to_vector();
  for (int64_t t = 1; t <= 6; ++t) {
    Tensor g = random_tensor(shape, 200 + static_cast<uint32_t>(t), -3.0f, 3.0f);
    if (t == 3) {
      g.f32()[5] = 0.0f;
      g.f32()[260] = 1e30f;
      g.f32()[261] = -1e30f;
      g.f32()[700] = std::nanf("");
      g.f32()[5002] = 1e-40f;
    }
    adam_update(w, g, m, v, 1e-2f, 0.9f, 0.999f, 1e-8f, t);
    original_adam(rw, g.to_vector(), rm, rv, 1e-2f, 0.9f, 0.999f, 1e-8f, t);
    expect_same_bits(w.to_vector(), rw, "w at step " + std::to_string(t));
    expect_same_bits(m.to_vector(), rm, "m at step " + std::to_string(t));
    expect_same_bits(v.to_vector(), rv, "v at step " + std::to_string(t));
  }
}

// The equations in double, independently of the float rounding.
TEST(OptimKernels, AdamUpdateMatchesTheEquations) {
  const float b1 = 0.8f, b2 = 0.99f, lr = 0.05f, eps = 1e-3f;
  Tensor w = random_tensor({6}, 9), m = random_tensor({6}, 10, -0.1f, 0.1f);
  Tensor v = random_tensor({6}, 11, 0.0f, 0.1f), g = random_tensor({6}, 12);
  const std::vector<float> w0 = w.to_vector(), m0 = m.to_vector(), v0 = v.to_vector(),
                           g0 = g.to_vector();
  adam_update(w, g, m, v, lr, b1, b2, eps, 3);
  for (int i = 0; i < 6; ++i) {
    double mi = b1 * double(m0[i]) + (1 - double(b1)) * g0[i];
    double vi = b2 * double(v0[i]) + (1 - double(b2)) * g0[i] * g0[i];
    double mhat = mi / (1 - std::pow(double(b1), 3)), vhat = vi / (1 - std::pow(double(b2), 3));
    EXPECT_NEAR(m.to_vector()[i], mi, 1e-6);
    EXPECT_NEAR(v.to_vector()[i], vi, 1e-6);
    EXPECT_NEAR(w.to_vector()[i], w0[i] - lr * mhat / (std::sqrt(vhat) + eps), 1e-5);
  }
}

TEST(OptimKernels, RefuseBadArguments) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2}),
         idx = Tensor::zeros({2, 3}, Device::cpu, DType::i32);
  EXPECT_THROW(l2_grad_add(a, b, 0.1f), ShapeError);
  EXPECT_THROW(l2_grad_add(a, idx, 0.1f), std::invalid_argument);
  Tensor undefined;
  EXPECT_THROW(l2_grad_add(undefined, a, 0.1f), std::invalid_argument);
  EXPECT_THROW(scale_inplace(idx, 2.0f), std::invalid_argument);
  EXPECT_THROW(sum_squares(idx), std::invalid_argument);
  EXPECT_THROW(sum_squares(undefined), std::invalid_argument);
  Tensor m = Tensor::zeros({2, 3}), v = Tensor::zeros({2, 3});
  EXPECT_THROW(adam_update(a, b, m, v, 0.1f, 0.9f, 0.999f, 1e-8f, 1), ShapeError);
  EXPECT_THROW(adam_update(a, a, m, v, 0.1f, 0.9f, 0.999f, 1e-8f, 0), std::invalid_argument);
}

// A parameter list for adam_step: shapes from one element to several levels
// of the norm's tree (> 65 536 elements), an empty tensor, and more tensors
// than one launch of the GPU's multi-tensor kernels takes (40); tensor 3 has no gradient.
struct StepList {
  std::vector<Tensor> w, g, m, v;
};
StepList step_list(uint32_t seed) {
  StepList l;
  std::vector<Shape> shapes = {{1}, {70001}, {0}, {3, 257}, {256}};
  for (int k = 0; k < 90; ++k) shapes.push_back(Shape{1 + (k * 37) % 300});
  uint32_t stream = seed;
  for (const Shape& s : shapes) {
    l.w.push_back(random_tensor(s, ++stream));
    l.g.push_back(random_tensor(s, ++stream, -0.5f, 0.5f));
    l.m.push_back(random_tensor(s, ++stream, -0.1f, 0.1f));
    l.v.push_back(random_tensor(s, ++stream, 0.0f, 0.1f));
  }
  l.g[3] = Tensor();  // no gradient: left alone, L2 or not
  return l;
}
StepList to_device(const StepList& l, Device d) {
  StepList o;
  for (const Tensor& t : l.w) o.w.push_back(t.to(d));
  for (const Tensor& t : l.g) o.g.push_back(t.defined() ? t.to(d) : Tensor());
  for (const Tensor& t : l.m) o.m.push_back(t.to(d));
  for (const Tensor& t : l.v) o.v.push_back(t.to(d));
  return o;
}
void expect_same_lists(const StepList& a, const StepList& b, const std::string& what) {
  for (size_t k = 0; k < a.w.size(); ++k) {
    const std::string at = what + ", tensor " + std::to_string(k);
    expect_same_bits(a.w[k].to_vector(), b.w[k].to_vector(), at + " w");
    expect_same_bits(a.m[k].to_vector(), b.m[k].to_vector(), at + " m");
    expect_same_bits(a.v[k].to_vector(), b.v[k].to_vector(), at + " v");
    ASSERT_EQ(a.g[k].defined(), b.g[k].defined()) << at;
    if (a.g[k].defined()) expect_same_bits(a.g[k].to_vector(), b.g[k].to_vector(), at + " g");
  }
}
// The configurations: clipping that scales, clipping that does not, none, L2.
std::vector<AdamStepConfig> step_configs() {
  return {{.lr = 1e-2f, .l2 = 0.0f, .clip_norm = 1.0f, .step = 1},
          {.lr = 1e-3f, .l2 = 0.0f, .clip_norm = 1e6f, .step = 4},
          {.lr = 1e-3f, .l2 = 0.0f, .clip_norm = 0.0f, .step = 2},
          {.lr = 5e-3f, .l2 = 1e-3f, .clip_norm = 3.0f, .step = 7}};
}

// adam_step is the one-by-one composition of models/optim.h, bit for bit, and
// one dispatch whatever the number of tensors.
TEST(OptimKernels, AdamStepIsTheCompositionOfTheKernels) {
  for (const AdamStepConfig& c : step_configs()) {
    const bool l2 = c.l2 > 0;
    StepList fused = step_list(500), plain = to_device(fused, Device::cpu);
    const DispatchCounts before = dispatch_counts();
    const Tensor norm = adam_step(fused.w, fused.g, fused.m, fused.v, c);
    EXPECT_EQ((dispatch_counts() - before).ops, 1);
    if (l2)
      for (size_t k = 0; k < plain.w.size(); ++k)
        if (plain.g[k].defined()) l2_grad_add(plain.g[k], plain.w[k], c.l2);
    const double total = sum_squares(plain.g), n = std::sqrt(total);
    if (c.clip_norm > 0 && n > c.clip_norm)
      for (Tensor& g : plain.g)
        if (g.defined()) scale_inplace(g, static_cast<float>(double(c.clip_norm) / n));
    for (size_t k = 0; k < plain.w.size(); ++k)
      if (plain.g[k].defined())
        adam_update(plain.w[k], plain.g[k], plain.m[k], plain.v[k], c.lr, c.beta1, c.beta2, c.eps,
                    c.step);
    EXPECT_EQ(norm.item(), static_cast<float>(n));
    expect_same_lists(fused, plain, "clip " + std::to_string(c.clip_norm));
  }
}

TEST(OptimKernels, AdamStepRefusesBadArguments) {
  StepList l = step_list(600);
  AdamStepConfig c;
  c.step = 0;
  EXPECT_THROW(adam_step(l.w, l.g, l.m, l.v, c), std::invalid_argument);
  c.step = 1;
  l.m.pop_back();
  EXPECT_THROW(adam_step(l.w, l.g, l.m, l.v, c), std::invalid_argument);
}

// ------------------------------------------------------------------ GPU
class OptimKernelsCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    MARE_NEEDS_GPU();
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(true);
#endif
  }
  void TearDown() override {
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(false);
#endif
  }
};

TEST_F(OptimKernelsCuda, L2AndScaleMatchTheCpu) {
  Tensor w = random_tensor({33, 65}, 20), g = random_tensor({33, 65}, 21);
  Tensor gw = w.to(Device::cuda), gg = g.to(Device::cuda);
  l2_grad_add(g, w, 0.125f);
  l2_grad_add(gg, gw, 0.125f);
  EXPECT_EQ(gg.device(), Device::cuda);
  expect_same_bits(gg.to_vector(), g.to_vector(), "l2_grad_add");
  scale_inplace(g, 0.3f);
  scale_inplace(gg, 0.3f);
  expect_same_bits(gg.to_vector(), g.to_vector(), "scale_inplace");
  Tensor cpu = Tensor::zeros({33, 65});
  EXPECT_THROW(l2_grad_add(gg, cpu, 0.1f), std::invalid_argument);  // mixed devices
}

TEST_F(OptimKernelsCuda, SumSquaresMatchesTheCpuExactly) {
  // One level, several levels, and a multi-tensor list with an undefined entry.
  for (int64_t n : {1, 256, 257, 70001, 1 << 20}) {
    Tensor x = random_tensor({n}, 22);
    EXPECT_EQ(sum_squares(x.to(Device::cuda)), sum_squares(x)) << "n = " << n;
  }
  Tensor a = random_tensor({300}, 23), b = random_tensor({2, 7}, 24);
  std::vector<Tensor> cpu = {a, Tensor(), b, Tensor::zeros({0})};
  std::vector<Tensor> gpu = {a.to(Device::cuda), Tensor(), b.to(Device::cuda),
                             Tensor::zeros({0}, Device::cuda)};
  EXPECT_EQ(sum_squares(gpu), sum_squares(cpu));
  std::vector<Tensor> mixed = {a, b.to(Device::cuda)};
  EXPECT_THROW(sum_squares(mixed), std::invalid_argument);
}

TEST_F(OptimKernelsCuda, AdamUpdateMatchesTheCpuBitForBit) {
  const Shape shape{129, 33};
  Tensor w = random_tensor(shape, 25), m = Tensor::zeros(shape), v = Tensor::zeros(shape);
  Tensor gw = w.to(Device::cuda), gm = m.to(Device::cuda), gv = v.to(Device::cuda);
  for (int64_t t = 1; t <= 10; ++t) {
    Tensor g = random_tensor(shape, 200 + static_cast<uint32_t>(t), -3.0f, 3.0f);
    adam_update(w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, t);
    adam_update(gw, g.to(Device::cuda), gm, gv, 1e-3f, 0.9f, 0.999f, 1e-8f, t);
  }
  expect_same_bits(gw.to_vector(), w.to_vector(), "w");
  expect_same_bits(gm.to_vector(), m.to_vector(), "m");
  expect_same_bits(gv.to_vector(), v.to_vector(), "v");
}

// The multi-tensor kernels give the CPU's bits, with no read of the device:
// the norm, the clipping decision and the scale stay there.
TEST_F(OptimKernelsCuda, AdamStepMatchesTheCpuBitForBit) {
  for (const AdamStepConfig& c : step_configs()) {
    StepList cpu = step_list(700), gpu = to_device(cpu, Device::cuda);
    const Tensor nc = adam_step(cpu.w, cpu.g, cpu.m, cpu.v, c);
    const DispatchCounts before = dispatch_counts();
    const Tensor ng = adam_step(gpu.w, gpu.g, gpu.m, gpu.v, c);
    const DispatchCounts used = dispatch_counts() - before;
    EXPECT_EQ(used.ops, 1);
    EXPECT_EQ(used.device_reads, 0);
    EXPECT_EQ(ng.device(), Device::cuda);
    EXPECT_EQ(ng.item(), nc.item());
    expect_same_lists(gpu, cpu, "clip " + std::to_string(c.clip_norm));
  }
}

}  // namespace
}  // namespace mare
