// Runs every case of the op table (tests/kernels/op_cases.cpp): forward vs the
// double reference, backward vs central differences in double, accumulation,
// NaN/Inf. Also checks that every op of op_registry() has at least one case.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/gpu_required.h"
#include "tests/kernels/op_table.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::test {
namespace {

// Worst violation of |got − ref| ≤ atol + rtol·|ref|, with a readable report.
::testing::AssertionResult all_close(const VecD& got, const VecD& ref, Tol tol,
                                     const std::string& what) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " values, reference has " << ref.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]))
      return ::testing::AssertionFailure() << what << "[" << i << "] is not finite: " << got[i];
    double err = std::fabs(got[i] - ref[i]), bound = tol.atol + tol.rtol * std::fabs(ref[i]);
    if (!(err <= bound))
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", reference "
                                           << ref[i] << ", error " << err << " > " << bound;
  }
  return ::testing::AssertionSuccess();
}

std::vector<VecD> to_doubles(const std::vector<Tensor>& ts) {
  std::vector<VecD> v;
  for (const Tensor& t : ts) v.push_back(to_double(t));
  return v;
}

// L(x) = Σ_k Σ_i g_k[i] · ref_k(x)[i]
double contract(const std::vector<VecD>& outs, const std::vector<VecD>& g) {
  double s = 0.0;
  for (size_t k = 0; k < outs.size(); ++k)
    for (size_t i = 0; i < outs[k].size(); ++i) s += g[k][i] * outs[k][i];
  return s;
}

class OpTable : public ::testing::TestWithParam<OpCase> {};

}  // namespace

// Readable parameter names in failure messages.
void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.name;
}

namespace {

TEST_P(OpTable, ForwardMatchesReference) {
  const OpCase& c = GetParam();
  std::vector<Tensor> outs = c.forward(c.inputs);
  std::vector<VecD> ref = c.reference(to_doubles(c.inputs));
  ASSERT_EQ(outs.size(), ref.size());
  for (size_t k = 0; k < outs.size(); ++k)
    EXPECT_TRUE(
        all_close(to_double(outs[k]), ref[k], c.forward_tol, "output " + std::to_string(k)));
}

TEST_P(OpTable, BackwardMatchesCentralDifferences) {
  const OpCase& c = GetParam();
  std::vector<Tensor> outs = c.forward(c.inputs);
  // A fixed random cotangent per output.
  std::vector<Tensor> g;
  for (size_t k = 0; k < outs.size(); ++k) g.push_back(random_tensor(outs[k].shape(), 1000 + k));
  std::vector<Tensor> d(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.differentiable[i]) d[i] = Tensor::zeros_like(c.inputs[i]);
  c.backward(c.inputs, g, d);

  std::vector<VecD> x = to_doubles(c.inputs), gd = to_doubles(g);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.differentiable[i]) continue;
    VecD numeric(x[i].size());
    for (size_t e = 0; e < x[i].size(); ++e) {
      double keep = x[i][e];
      x[i][e] = keep + c.fd_step;
      double up = contract(c.reference(x), gd);
      x[i][e] = keep - c.fd_step;
      double down = contract(c.reference(x), gd);
      x[i][e] = keep;
      numeric[e] = (up - down) / (2 * c.fd_step);
    }
    EXPECT_TRUE(
        all_close(to_double(d[i]), numeric, c.grad_tol, "gradient of input " + std::to_string(i)));
  }
}

TEST_P(OpTable, BackwardAccumulates) {
  const OpCase& c = GetParam();
  std::vector<Tensor> outs = c.forward(c.inputs);
  std::vector<Tensor> g;
  for (size_t k = 0; k < outs.size(); ++k) g.push_back(random_tensor(outs[k].shape(), 2000 + k));
  std::vector<Tensor> fresh(c.inputs.size()), primed(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.differentiable[i]) {
      fresh[i] = Tensor::zeros_like(c.inputs[i]);
      primed[i] = Tensor::full(c.inputs[i].shape(), 1.0f);
    }
  c.backward(c.inputs, g, fresh);
  c.backward(c.inputs, g, primed);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.differentiable[i]) continue;
    VecD expect = to_double(fresh[i]);
    for (double& v : expect) v += 1.0;
    EXPECT_TRUE(all_close(to_double(primed[i]), expect, {1e-6, 1e-6},
                          "accumulated gradient of input " + std::to_string(i)));
  }
}

std::string case_name(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s;
  for (char ch : info.param.name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Cpu, OpTable, ::testing::ValuesIn(all_op_cases()), case_name);

// ------------------------------------------------------------- CUDA column
// Every case again with its inputs on the GPU, against the CPU run of the same
// closures (the CPU column above ties the CPU to the double reference).
// Fresh GPU allocations are poisoned with NaN bytes, so an output element a
// kernel forgets to write fails the finiteness check.

Tol cuda_tolerance(const OpCase& c) {
  if (c.cuda_tol) return *c.cuda_tol;
  for (const OpInfo& op : op_registry())
    if (op.name == c.op && op.family == "elementwise") return {1e-6, 1e-5};
  return {1e-5, 1e-4};
}

// Runs a block with the table on the GPU and poisoned allocations.
class OnGpu {
 public:
  OnGpu() {
    set_table_device(Device::cuda);
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(true);
#endif
  }
  ~OnGpu() {
    set_table_device(Device::cpu);
#ifdef MARE_WITH_CUDA
    cuda::set_poison_allocations(false);
#endif
  }
};

std::vector<Tensor> to_device(const std::vector<Tensor>& ts, Device d) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.to(d) : Tensor());
  return out;
}

class OpTableCuda : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    MARE_NEEDS_GPU();  // skips with the reason, or fails under MARE_REQUIRE_GPU=1
  }
};

TEST_P(OpTableCuda, ForwardMatchesCpu) {
  const OpCase& c = GetParam();
  std::vector<Tensor> cpu = c.forward(c.inputs);
  std::vector<Tensor> gpu;
  {
    OnGpu scope;
    gpu = c.forward(to_device(c.inputs, Device::cuda));
  }
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t k = 0; k < gpu.size(); ++k) {
    EXPECT_EQ(gpu[k].device(), Device::cuda) << "output " << k << " is not on the GPU";
    EXPECT_EQ(gpu[k].shape(), cpu[k].shape()) << "output " << k;
    EXPECT_TRUE(all_close(to_double(gpu[k]), to_double(cpu[k]), cuda_tolerance(c),
                          "GPU output " + std::to_string(k)));
  }
}

TEST_P(OpTableCuda, BackwardMatchesCpu) {
  const OpCase& c = GetParam();
  std::vector<Tensor> outs = c.forward(c.inputs);
  std::vector<Tensor> g;
  for (size_t k = 0; k < outs.size(); ++k) g.push_back(random_tensor(outs[k].shape(), 3000 + k));
  // Gradients start at 1 on both devices: the GPU must accumulate too.
  std::vector<Tensor> d_cpu(c.inputs.size()), d_gpu(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.differentiable[i]) {
      d_cpu[i] = Tensor::full(c.inputs[i].shape(), 1.0f);
      d_gpu[i] = Tensor::full(c.inputs[i].shape(), 1.0f, Device::cuda);
    }
  c.backward(c.inputs, g, d_cpu);
  {
    OnGpu scope;
    c.backward(to_device(c.inputs, Device::cuda), to_device(g, Device::cuda), d_gpu);
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.differentiable[i]) continue;
    EXPECT_EQ(d_gpu[i].device(), Device::cuda);
    EXPECT_TRUE(all_close(to_double(d_gpu[i]), to_double(d_cpu[i]), cuda_tolerance(c),
                          "GPU gradient of input " + std::to_string(i)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, OpTableCuda, ::testing::ValuesIn(all_op_cases()), case_name);

TEST(OpTableCoverage, EveryRegisteredOpHasACase) {
  std::set<std::string> covered, names;
  for (const OpCase& c : all_op_cases()) {
    covered.insert(c.op);
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
  }
  for (const OpInfo& op : op_registry())
    EXPECT_TRUE(covered.count(std::string(op.name))) << "op " << op.name << " has no test case";
}

// ------------------------------------------------------------- golden values
// softmax(X W_Q (X W_K)ᵀ / √3) X W_V, computed independently.
TEST(AttentionGolden, OneHeadMatchesIndependentValues) {
  Tensor x = Tensor::from_vector(
      {0.2f, -0.1f, 0.5f, 0.3f, 0.5f, 0.2f, -0.3f, 0.1f, -0.1f, 0.4f, 0.2f, 0.6f}, {3, 4});
  Tensor wq = Tensor::from_vector(
      {0.1f, 0.4f, 0.2f, 0.3f, -0.2f, 0.5f, 0.6f, 0.1f, -0.3f, -0.1f, 0.3f, 0.4f}, {4, 3});
  Tensor wk = Tensor::from_vector(
      {0.2f, 0.1f, 0.3f, 0.5f, -0.3f, 0.2f, -0.1f, 0.4f, 0.2f, 0.3f, 0.2f, -0.1f}, {4, 3});
  Tensor wv = Tensor::from_vector(
      {0.1f, -0.2f, 0.5f, 0.3f, 0.4f, 0.2f, 0.2f, 0.3f, -0.1f, 0.5f, -0.1f, 0.3f}, {4, 3});
  Tensor q = matmul_forward(x, wq).reshape({1, 3, 3});
  Tensor k = matmul_forward(x, wk).reshape({1, 3, 3});
  Tensor v = matmul_forward(x, wv).reshape({1, 3, 3});
  std::vector<float> out = attention_forward(q, k, v, 1).out.to_vector();
  std::vector<double> expect = {0.26557387, 0.03529113, 0.21882081, 0.26270250, 0.03323728,
                                0.21844303, 0.26321592, 0.03319730, 0.22020056};
  ASSERT_EQ(out.size(), expect.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expect[i], 1e-6) << "element " << i;
}

// ------------------------------------------------------------- edge cases
TEST(SoftmaxEdges, LargeLogitsStayFinite) {
  Tensor x = Tensor::from_vector({1e4f, -1e4f, 0.0f, 3e4f, 3e4f, -3e4f}, {2, 3});
  for (float v : softmax_forward(x).to_vector()) EXPECT_TRUE(std::isfinite(v));
  for (float v : log_softmax_forward(x).to_vector()) EXPECT_TRUE(std::isfinite(v));
  std::vector<float> p = softmax_forward(x).to_vector();
  EXPECT_NEAR(p[0], 1.0, 1e-7);
  EXPECT_NEAR(p[3], 0.5, 1e-7);
  EXPECT_NEAR(p[4], 0.5, 1e-7);
}

TEST(SoftmaxEdges, FullyMaskedRowIsZeroNotNaN) {
  Tensor x = random_tensor({2, 4}, 5);
  Tensor mask = Tensor::from_vector({0, 0, 0, 0, 1, 1, 0, 1}, {2, 4});
  std::vector<float> p = softmax_forward(x, mask).to_vector();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(p[j], 0.0f);
  EXPECT_EQ(p[6], 0.0f);
  EXPECT_NEAR(p[4] + p[5] + p[7], 1.0, 1e-6);
  Tensor d = Tensor::zeros_like(x);
  softmax_backward(d, random_tensor({2, 4}, 6), softmax_forward(x, mask));
  for (float v : d.to_vector()) EXPECT_TRUE(std::isfinite(v));
}

TEST(AttentionEdges, AllKeysMaskedGivesZeros) {
  Tensor q = random_tensor({1, 2, 4}, 1), k = random_tensor({1, 3, 4}, 2),
         v = random_tensor({1, 3, 4}, 3);
  Tensor mask = Tensor::zeros({1, 3});
  for (float o : attention_forward(q, k, v, 2, mask).out.to_vector()) EXPECT_EQ(o, 0.0f);
}

TEST(BatchNorm, RunningStatisticsFollowMomentum) {
  Tensor x = Tensor::from_vector({1, 10, 3, 20, 5, 30}, {3, 2});
  Tensor g = Tensor::full({2}, 1.0f), b = Tensor::zeros({2});
  Tensor rm = Tensor::zeros({2}), rv = Tensor::full({2}, 1.0f);
  batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f);
  // channel 0: mean 3, unbiased var 4; channel 1: mean 20, unbiased var 100
  EXPECT_NEAR(rm.to_vector()[0], 0.3, 1e-6);
  EXPECT_NEAR(rm.to_vector()[1], 2.0, 1e-5);
  EXPECT_NEAR(rv.to_vector()[0], 0.9 + 0.4, 1e-6);
  EXPECT_NEAR(rv.to_vector()[1], 0.9 + 10.0, 1e-5);
  // eval leaves them alone
  batch_norm_forward(x, g, b, rm, rv, false);
  EXPECT_NEAR(rm.to_vector()[0], 0.3, 1e-6);
}

TEST(OpErrors, MessagesNameBothShapes) {
  Tensor a = Tensor::zeros({3, 4}), b = Tensor::zeros({5, 2});
  try {
    matmul_forward(a, b);
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[3, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 2]"), std::string::npos) << m;
  }
  EXPECT_THROW(add_forward(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})), ShapeError);
  EXPECT_THROW(conv1d_forward(Tensor::zeros({1, 4, 3}), Tensor::zeros({2, 3, 3})),
               std::invalid_argument);  // even kernel
  EXPECT_THROW(embedding_forward(Tensor::zeros({4, 2}), Tensor::from_indices({4}, {1})),
               std::out_of_range);
  EXPECT_THROW(cross_entropy_forward(Tensor::zeros({1, 3}), Tensor::from_indices({3}, {1})),
               std::out_of_range);
}

}  // namespace
}  // namespace mare::test
