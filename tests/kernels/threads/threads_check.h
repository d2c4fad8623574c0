// What the thread tests share: run a computation at 1, 2, 3 and 7 threads and
// compare the bytes of what it returns.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/parallel.h"
#include "kernels/tensor.h"

namespace mare::test {

inline const std::vector<int>& thread_counts() {
  static const std::vector<int> k = {1, 2, 3, 7};
  return k;
}

// Restores the thread count and the work scale when it goes out of scope.
class ThreadScope {
 public:
  explicit ThreadScope(double scale = 1.0) : threads_(threads()), scale_(work_scale()) {
    set_work_scale(scale);
  }
  ~ThreadScope() {
    set_threads(threads_);
    set_work_scale(scale_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int threads_;
  double scale_;
};

// Index of the first byte where a and b differ (or the shorter size), -1 if equal.
inline int64_t first_difference(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return 0;
  if (!a.defined()) return -1;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return 0;
  const auto* x = static_cast<const unsigned char*>(static_cast<const void*>(a.f32()));
  const auto* y = static_cast<const unsigned char*>(static_cast<const void*>(b.f32()));
  if (a.dtype() == DType::i32) {
    x = static_cast<const unsigned char*>(static_cast<const void*>(a.i32()));
    y = static_cast<const unsigned char*>(static_cast<const void*>(b.i32()));
  }
  for (size_t i = 0; i < a.nbytes(); ++i)
    if (x[i] != y[i]) return static_cast<int64_t>(i / 4);
  return -1;
}

// Runs `run` at every thread count; every tensor it returns must have the bytes
// of the 1-thread run.
inline ::testing::AssertionResult same_bytes_at_every_thread_count(
    const std::string& what, const std::function<std::vector<Tensor>()>& run) {
  std::vector<Tensor> ref;
  for (int k : thread_counts()) {
    set_threads(k);
    std::vector<Tensor> got = run();
    if (k == thread_counts().front()) {
      ref = got;
      continue;
    }
    if (got.size() != ref.size())
      return ::testing::AssertionFailure() << what << ": " << got.size() << " tensors at " << k
                                           << " threads, " << ref.size() << " at 1";
    for (size_t i = 0; i < got.size(); ++i) {
      int64_t at = first_difference(ref[i], got[i]);
      if (at >= 0)
        return ::testing::AssertionFailure()
               << what << ": tensor " << i << " " << ref[i].shape().str() << " differs at " << k
               << " threads from 1 thread, first at element " << at;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mare::test
