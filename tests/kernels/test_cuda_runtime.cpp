// The CUDA runtime: copies, fills, the caching allocator, poisoned allocations,
// device errors, and the device Philox against the host one, bit for bit.
// Without a GPU (or without the CUDA backend) every GPU test here skips with the
// reason (tests/gpu_required.h), or fails under MARE_REQUIRE_GPU=1; what can be
// checked without a GPU (how a missing GPU is reported) is checked in both builds.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "tests/gpu_required.h"
#include "tests/kernels/op_table.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::test {
namespace {

// ------------------------------------------------------------- GPU skips
// What MARE_NEEDS_GPU() reports, intercepted instead of ending this test.
std::vector<::testing::TestPartResult> needs_gpu_outcome() {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    [] { MARE_NEEDS_GPU(); }();
  }
  std::vector<::testing::TestPartResult> out;
  for (int i = 0; i < results.size(); ++i) out.push_back(results.GetTestPartResult(i));
  return out;
}

// Sets (or, for nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(GpuSkips, SkipSaysWhyAndRequireGpuTurnsItIntoAFailure) {
  const std::string why = gpu_unavailable_reason();
  if (cuda_available()) {
    EXPECT_EQ(why, "");
    EXPECT_EQ(needs_gpu_outcome().size(), 0u) << "a usable GPU must neither skip nor fail";
    return;
  }
  ASSERT_FALSE(why.empty());
#ifdef MARE_WITH_CUDA
  // The runtime's own error name (cudaErrorNoDevice, cudaErrorInsufficientDriver, ...),
  // or its "no device" answer: never a generic "no CUDA device found".
  EXPECT_TRUE(why.rfind("cudaError", 0) == 0 || why == "no CUDA device visible") << why;
#else
  EXPECT_NE(why.find("no CUDA backend"), std::string::npos) << why;
#endif
  {
    ScopedEnv unset("MARE_REQUIRE_GPU", nullptr);
    const std::vector<::testing::TestPartResult> r = needs_gpu_outcome();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].skipped());
    EXPECT_NE(std::string(r[0].message()).find(why), std::string::npos) << r[0].message();
  }
  {
    ScopedEnv require("MARE_REQUIRE_GPU", "1");
    const std::vector<::testing::TestPartResult> r = needs_gpu_outcome();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].fatally_failed());
    const std::string m = r[0].message();
    EXPECT_NE(m.find("MARE_REQUIRE_GPU=1"), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
  {
    ScopedEnv other("MARE_REQUIRE_GPU", "0");  // only "1" requires a GPU
    const std::vector<::testing::TestPartResult> r = needs_gpu_outcome();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].skipped());
  }
}

TEST(CudaRuntime, BuildFlagMatchesCompiledBackend) {
#ifdef MARE_WITH_CUDA
  EXPECT_TRUE(cuda_compiled());
#else
  EXPECT_FALSE(cuda_compiled());
  EXPECT_FALSE(cuda_available());
#endif
}

TEST(CudaRuntime, MissingGpuIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present: nothing to refuse";
  try {
    Tensor::zeros({2, 3}, Device::cuda);
    FAIL() << "expected an error for a CUDA tensor without a GPU";
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_TRUE(m.find("CUDA") != std::string::npos || m.find("cuda") != std::string::npos) << m;
  }
}

TEST(CudaRuntime, CopiesRoundTripBothDtypes) {
  MARE_NEEDS_GPU();
  Tensor x = random_tensor({3, 5, 7}, 1);
  EXPECT_EQ(x.to(Device::cuda).to(Device::cpu).to_vector(), x.to_vector());
  Tensor ids = Tensor::from_indices({4, -1, 7, 0, 2147483647}, {5});
  EXPECT_EQ(ids.to(Device::cuda).to_index_vector(), ids.to_index_vector());
  Tensor g = x.to(Device::cuda), h = Tensor::empty(x.shape(), Device::cuda);
  h.copy_from(g);  // device to device
  EXPECT_EQ(h.to_vector(), x.to_vector());
  Tensor f = Tensor::full({1000}, -2.5f, Device::cuda);
  for (float v : f.to_vector()) ASSERT_EQ(v, -2.5f);
  f.zero();
  for (float v : f.to_vector()) ASSERT_EQ(v, 0.0f);
  EXPECT_EQ(Tensor::zeros({0, 4}, Device::cuda).to_vector().size(), 0u);
}

#ifdef MARE_WITH_CUDA
// Tensor::items gathers GPU scalars on the device and waits for it once, whatever
// their number; CPU scalars and undefined tensors mix in.
TEST(CudaRuntime, ItemsWaitsForTheDeviceOnce) {
  MARE_NEEDS_GPU();
  Tensor a = Tensor::full({1}, 1.25f).to(Device::cuda), b = Tensor::zeros({1}, Device::cuda),
         c = Tensor::full({1}, -3.0f, Device::cuda);
  scale_inplace(b, 0.0f);  // written on the device: no host copy to read instead
  const DispatchCounts before = dispatch_counts();
  const std::vector<float> v = Tensor::items({a, Tensor(), b, Tensor::full({1}, 7.0f), c});
  EXPECT_EQ((dispatch_counts() - before).device_reads, 1);
  EXPECT_EQ(v[0], 1.25f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_EQ(v[3], 7.0f);
  EXPECT_EQ(v[4], -3.0f);
}

TEST(CudaRuntime, SteadyStateReusesCachedBlocks) {
  MARE_NEEDS_GPU();
  Tensor x = random_tensor({64, 33}, 2).to(Device::cuda);
  for (int i = 0; i < 3; ++i) relu_forward(sigmoid_forward(x));  // warm the cache
  cuda::synchronize();
  uint64_t before = cuda::allocator_stats().driver_allocations;
  for (int i = 0; i < 50; ++i) relu_forward(sigmoid_forward(x));
  cuda::synchronize();
  EXPECT_EQ(cuda::allocator_stats().driver_allocations, before)
      << "ops in steady state must not call cudaMalloc";
  EXPECT_GT(cuda::allocator_stats().cache_hits, 0u);
}

TEST(CudaRuntime, PoisonedAllocationsAreNaN) {
  MARE_NEEDS_GPU();
  cuda::set_poison_allocations(true);
  Tensor t = Tensor::empty({17, 3}, Device::cuda);
  cuda::set_poison_allocations(false);
  for (float v : t.to_vector()) ASSERT_TRUE(std::isnan(v));
}

TEST(CudaRuntime, BadDeviceIndexNamesTheDevice) {
  MARE_NEEDS_GPU();
  try {
    cuda::set_device(cuda::device_count() + 3);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  cuda::DeviceInfo info = cuda::device_info(cuda::current_device());
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.compute_major, 7);
  EXPECT_GT(info.total_memory, 0u);
}
#endif

TEST(CudaRuntime, MixedDevicesAreRefusedByName) {
  MARE_NEEDS_GPU();
  Tensor a = random_tensor({4, 4}, 3), b = random_tensor({4, 4}, 4).to(Device::cuda);
  try {
    add_forward(a, b);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("add_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("different devices"), std::string::npos) << e.what();
  }
}

// Ids uploaded from host memory are checked on the host (their range was taken
// there), with no read of the device; ids the host does not know (written on
// the GPU) still get the device scan, and the CPU's error.
TEST(CudaRuntime, UploadedIdsAreCheckedWithoutReadingTheDevice) {
  MARE_NEEDS_GPU();
  Tensor table = random_tensor({7, 5}, 8).to(Device::cuda);
  Tensor ids = Tensor::from_indices({3, 0, 6, 3}, {4}).to(Device::cuda);
  int32_t lo = -1, hi = -1;
  ASSERT_TRUE(ids.known_index_range(lo, hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 6);
  DispatchCounts before = dispatch_counts();
  Tensor out = embedding_forward(table, ids);
  Tensor d_table = Tensor::zeros({7, 5}, Device::cuda);
  embedding_backward(d_table, out, ids);
  EXPECT_EQ((dispatch_counts() - before).device_reads, 0);
  // Small uploads read back from the host's copy: no device read either.
  before = dispatch_counts();
  EXPECT_EQ(ids.to_index_vector(), (std::vector<int32_t>{3, 0, 6, 3}));
  EXPECT_EQ((dispatch_counts() - before).device_reads, 0);
  // A mutable access forgets the range: the device scans again (and finds the bad id).
  Tensor written = ids;  // the same storage
  written.copy_from(Tensor::from_indices({3, 3, 9, 3}, {4}));
  EXPECT_FALSE(ids.known_index_range(lo, hi));
  before = dispatch_counts();
  EXPECT_THROW(embedding_forward(table, ids), std::out_of_range);
  EXPECT_GT((dispatch_counts() - before).device_reads, 0);
  EXPECT_EQ(ids.to_index_vector(), (std::vector<int32_t>{3, 3, 9, 3}));
  // An argmax is vouched for by the kernel that wrote it.
  MaxResult r = max_forward(random_tensor({3, 4, 2}, 9).to(Device::cuda), 1);
  ASSERT_TRUE(r.argmax.known_index_range(lo, hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 3);
}

// The same for the cross-entropy's targets and the log-sum-exp's index sets, forward
// and backward: uploaded from host memory, they are checked from what the host sent
// (targets by their range, sets from the host's copy of the offsets and the rows, or
// of the offsets and the rows' range when the rows are too large to copy); written on
// the GPU, they take the device scan and one counted read, with the CPU's message
// either way.
TEST(CudaRuntime, UploadedTargetsAndIndexSetsAreCheckedWithoutReadingTheDevice) {
  MARE_NEEDS_GPU();
  auto written_on_the_gpu = [](const Tensor& host) {
    Tensor t = Tensor::empty(host.shape(), Device::cuda, host.dtype());
    t.copy_from(host);  // a copy into the tensor: the host knows nothing of it
    return t;
  };
  auto reads = [](const std::function<void()>& f) {
    const DispatchCounts before = dispatch_counts();
    f();
    return (dispatch_counts() - before).device_reads;
  };
  const Tensor logits = random_tensor({3, 4}, 9).to(Device::cuda);
  const Tensor targets = Tensor::from_indices({0, -1, 3}, {3}), one = Tensor::full({1}, 1.0f);
  for (const bool uploaded : {true, false}) {
    const Tensor t = uploaded ? targets.to(Device::cuda) : written_on_the_gpu(targets);
    CrossEntropyResult r;
    EXPECT_EQ(reads([&] { r = cross_entropy_forward(logits, t); }), uploaded ? 0 : 1);
    Tensor d_logits = Tensor::zeros({3, 4}, Device::cuda);
    EXPECT_EQ(reads([&] { cross_entropy_backward(d_logits, one.to(Device::cuda), r.probs, t); }),
              uploaded ? 0 : 1);
  }
  const Tensor x = random_tensor({3, 2}, 10).to(Device::cuda);
  const Tensor offsets = Tensor::from_indices({0, 1, 3}, {3}),
               rows = Tensor::from_indices({0, 2, 1}, {3});
  for (const bool uploaded : {true, false}) {
    const Tensor o = uploaded ? offsets.to(Device::cuda) : written_on_the_gpu(offsets);
    const Tensor r = uploaded ? rows.to(Device::cuda) : written_on_the_gpu(rows);
    Tensor out;
    EXPECT_EQ(reads([&] { out = logsumexp_sets_forward(x, o, r); }), uploaded ? 0 : 1);
    Tensor d_x = Tensor::zeros({3, 2}, Device::cuda);
    EXPECT_EQ(
        reads([&] {
          logsumexp_sets_backward(d_x, Tensor::full({2, 2}, 1.0f, Device::cuda), x, out, o, r);
        }),
        uploaded ? 0 : 1);
  }
  // Rows beyond the host copy's 1 MiB: their range decides, with no read.
  const int64_t n = 300000;
  std::vector<int32_t> many(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) many[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
  const Tensor big = Tensor::from_indices(many, {n}).to(Device::cuda);
  ASSERT_FALSE(big.host_has_bytes());
  const Tensor big_offsets = Tensor::from_indices({0, static_cast<int32_t>(n)}, {2});
  EXPECT_EQ(reads([&] { logsumexp_sets_forward(x, big_offsets.to(Device::cuda), big); }), 0);
  // The CPU's messages on both paths.
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(nothing thrown)";
  };
  const Tensor bad_targets = Tensor::from_indices({0, 4, 1}, {3});
  const std::string target_error =
      message([&] { cross_entropy_forward(logits.to(Device::cpu), bad_targets); });
  EXPECT_NE(target_error, "(nothing thrown)");
  EXPECT_EQ(message([&] { cross_entropy_forward(logits, bad_targets.to(Device::cuda)); }),
            target_error);
  EXPECT_EQ(message([&] { cross_entropy_forward(logits, written_on_the_gpu(bad_targets)); }),
            target_error);
  const std::vector<std::pair<Tensor, Tensor>> bad_sets = {
      {Tensor::from_indices({1, 1, 3}, {3}), rows},      // start
      {Tensor::from_indices({0, 2, 2}, {3}), rows},      // empty set
      {Tensor::from_indices({0, 1, 2}, {3}), rows},      // end
      {offsets, Tensor::from_indices({0, 3, 1}, {3})}};  // row outside
  for (const auto& [o, r] : bad_sets) {
    const std::string cpu = message([&] { logsumexp_sets_forward(x.to(Device::cpu), o, r); });
    EXPECT_NE(cpu, "(nothing thrown)");
    EXPECT_EQ(message([&] { logsumexp_sets_forward(x, o.to(Device::cuda), r.to(Device::cuda)); }),
              cpu);
    EXPECT_EQ(
        message([&] { logsumexp_sets_forward(x, written_on_the_gpu(o), written_on_the_gpu(r)); }),
        cpu);
  }
}

// The embedding's backward over long runs of one id (the padding id of a
// batch): the pieces of the GPU's sum add up to the CPU's sequential sum.
TEST(CudaRuntime, EmbeddingBackwardOverLongRunsMatchesTheCpu) {
  MARE_NEEDS_GPU();
  std::vector<int32_t> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 7 == 0 ? static_cast<int32_t>(i % 11) : 0;
  Tensor ids = Tensor::from_indices(v, {5000});
  Tensor d_out = random_tensor({5000, 9}, 12);
  Tensor d_table = random_tensor({11, 9}, 13), d_gpu = d_table.to(Device::cuda);
  embedding_backward(d_table, d_out, ids);
  embedding_backward(d_gpu, d_out.to(Device::cuda), ids.to(Device::cuda));
  const std::vector<float> c = d_table.to_vector(), g = d_gpu.to_vector();
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], g[i], 1e-4 * (1 + std::fabs(c[i]))) << i;
  // The same bytes on every run.
  Tensor again = random_tensor({11, 9}, 13).to(Device::cuda);
  embedding_backward(again, d_out.to(Device::cuda), ids.to(Device::cuda));
  EXPECT_EQ(again.to_vector(), g);
}

// Index arguments are validated on the GPU too, with the CPU's exception and message.
TEST(CudaRuntime, BadIndicesOnTheGpuRaiseTheCpuErrors) {
  MARE_NEEDS_GPU();
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::out_of_range& e) {
      return e.what();
    }
    return "(no std::out_of_range thrown)";
  };
  Tensor table = random_tensor({7, 5}, 8), ids = Tensor::from_indices({3, 7}, {2});
  EXPECT_EQ(message([&] { embedding_forward(table.to(Device::cuda), ids.to(Device::cuda)); }),
            message([&] { embedding_forward(table, ids); }));
  Tensor d_table = Tensor::zeros({7, 5}), d_rows = random_tensor({2, 5}, 11);
  Tensor d_table_gpu = d_table.to(Device::cuda);
  EXPECT_EQ(message([&] {
              embedding_backward(d_table_gpu, d_rows.to(Device::cuda), ids.to(Device::cuda));
            }),
            message([&] { embedding_backward(d_table, d_rows, ids); }));
  Tensor d_x = Tensor::zeros({2, 3}), d_max = random_tensor({2}, 12);
  Tensor argmax = Tensor::from_indices({1, 3}, {2}), d_x_gpu = d_x.to(Device::cuda);
  EXPECT_EQ(
      message([&] { max_backward(d_x_gpu, d_max.to(Device::cuda), argmax.to(Device::cuda), 1); }),
      message([&] { max_backward(d_x, d_max, argmax, 1); }));
  Tensor logits = random_tensor({3, 4}, 9), targets = Tensor::from_indices({0, 4, 1}, {3});
  EXPECT_EQ(
      message([&] { cross_entropy_forward(logits.to(Device::cuda), targets.to(Device::cuda)); }),
      message([&] { cross_entropy_forward(logits, targets); }));
  Tensor x = random_tensor({3, 2}, 10);
  Tensor offsets = Tensor::from_indices({0, 1, 2}, {3}), rows = Tensor::from_indices({0, 3}, {2});
  EXPECT_EQ(message([&] {
              logsumexp_sets_forward(x.to(Device::cuda), offsets.to(Device::cuda),
                                     rows.to(Device::cuda));
            }),
            message([&] { logsumexp_sets_forward(x, offsets, rows); }));
}

TEST(CudaRuntime, ZeroWidthLastAxisIsNotADivisionByZero) {
  Tensor x = Tensor::zeros({3, 0}), g = Tensor::zeros({0}), b = Tensor::zeros({0});
  EXPECT_EQ(softmax_forward(x).numel(), 0);
  EXPECT_EQ(bias_add_forward(x, b).numel(), 0);
  EXPECT_EQ(layer_norm_forward(x, g, b).out.numel(), 0);
}

TEST(CudaRuntime, ZeroWidthLastAxisIsNotADivisionByZeroOnTheGpu) {
  MARE_NEEDS_GPU();
  Tensor x = Tensor::zeros({3, 0}), g = Tensor::zeros({0}), b = Tensor::zeros({0});
  Tensor xd = x.to(Device::cuda);
  EXPECT_EQ(softmax_forward(xd).numel(), 0);
  EXPECT_EQ(layer_norm_forward(xd, g.to(Device::cuda), b.to(Device::cuda)).out.numel(), 0);
}

// ------------------------------------------------------------- Philox
// Same (seed, stream, offset) -> the same bits on both devices.
void expect_same_bits(const Tensor& cpu, const Tensor& gpu, const char* what) {
  std::vector<float> a = cpu.to_vector(), b = gpu.to_vector();
  ASSERT_EQ(a.size(), b.size());
  size_t differ = 0, first = a.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (first == a.size()) first = i;
      ++differ;
    }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << a.size()
                        << " values differ, first at " << first;
}

TEST(CudaPhilox, UniformNormalBernoulliBitIdentical) {
  MARE_NEEDS_GPU();
  // A seed above 2^32, an odd offset (draws that start mid-block) and an odd size.
  const uint64_t seed = 0x1234'5678'9abcULL, offset = 12345;
  const uint32_t stream = kStreamParamBase + 17;
  const Shape shape{313, 257};
  Tensor hu = Tensor::empty(shape), du = Tensor::empty(shape, Device::cuda);
  fill_uniform(hu, seed, stream, -0.3f, 0.7f, offset);
  fill_uniform(du, seed, stream, -0.3f, 0.7f, offset);
  expect_same_bits(hu, du, "fill_uniform");
  Tensor hn = Tensor::empty(shape), dn = Tensor::empty(shape, Device::cuda);
  fill_normal(hn, seed, stream, 0.1f, 0.02f, offset);
  fill_normal(dn, seed, stream, 0.1f, 0.02f, offset);
  expect_same_bits(hn, dn, "fill_normal");
  Tensor hb = Tensor::empty(shape), db = Tensor::empty(shape, Device::cuda);
  fill_bernoulli(hb, seed, stream, 0.35f, offset);
  fill_bernoulli(db, seed, stream, 0.35f, offset);
  expect_same_bits(hb, db, "fill_bernoulli");
}

TEST(CudaPhilox, DropoutMasksBitIdentical) {
  MARE_NEEDS_GPU();
  Tensor x = random_tensor({37, 129}, 5);
  DropoutResult h = dropout_forward(x, 0.3f, 77, kStreamDropoutBase + 2, 999);
  DropoutResult d = dropout_forward(x.to(Device::cuda), 0.3f, 77, kStreamDropoutBase + 2, 999);
  expect_same_bits(h.mask, d.mask, "dropout mask");
  expect_same_bits(h.out, d.out, "dropout output");
}

}  // namespace
}  // namespace mare::test
