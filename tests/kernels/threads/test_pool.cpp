// The thread pool: chunk boundaries depend only on n and the grain, every chunk
// runs exactly once at any thread count, nested calls run inline, and a chunk's
// exception reaches the caller (the lowest chunk index's, when several throw).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/ops/common.h"
#include "kernels/parallel.h"
#include "tests/kernels/threads/threads_check.h"

namespace mare::test {
namespace {

using Chunks = std::set<std::pair<int64_t, int64_t>>;

Chunks chunks_of(int64_t n, int64_t grain) {
  std::mutex m;
  Chunks seen;
  std::atomic<int64_t> calls{0};
  parallel_for_chunks(n, grain, [&](int64_t b, int64_t e) {
    ++calls;
    std::lock_guard<std::mutex> lock(m);
    seen.insert({b, e});
  });
  EXPECT_EQ(calls.load(), static_cast<int64_t>(seen.size())) << "a chunk ran twice";
  return seen;
}

TEST(ThreadPool, ChunksDependOnlyOnNAndGrain) {
  ThreadScope scope;
  for (auto [n, grain] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 3}, {1, 1}, {10, 3}, {10, 10}, {10, 100}, {1000, 7}, {64, 1}}) {
    Chunks expect;
    for (int64_t b = 0; b < n; b += grain) expect.insert({b, std::min(n, b + grain)});
    EXPECT_EQ(chunk_count(n, grain), static_cast<int64_t>(expect.size()));
    for (int k : thread_counts()) {
      set_threads(k);
      EXPECT_EQ(chunks_of(n, grain), expect) << "n " << n << " grain " << grain << " threads " << k;
    }
  }
}

TEST(ThreadPool, UsesSeveralThreadsAndNestedCallsRunInline) {
  ThreadScope scope;
  set_threads(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int64_t> inner_sum{0};
  parallel_for_chunks(64, 1, [&](int64_t b, int64_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    // Nested: runs on this thread, every chunk of it, in order.
    std::thread::id me = std::this_thread::get_id();
    int64_t expect_begin = 0;
    parallel_for_chunks(10, 3, [&](int64_t ib, int64_t ie) {
      EXPECT_EQ(std::this_thread::get_id(), me);
      EXPECT_EQ(ib, expect_begin);
      expect_begin = ie;
      inner_sum += (ie - ib) * (b + 1);
    });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  });
  EXPECT_EQ(inner_sum.load(), 10 * (64 * 65 / 2));
  // 64 chunks of 200 µs each: more than one thread takes part (the caller and a worker).
  EXPECT_GT(ids.size(), 1u);
  EXPECT_LE(ids.size(), 3u);
}

TEST(ThreadPool, ExceptionsPropagateFromTheLowestChunk) {
  ThreadScope scope;
  for (int k : thread_counts()) {
    set_threads(k);
    try {
      parallel_for_chunks(100, 1, [](int64_t b, int64_t) {
        if (b == 37 || b == 80) throw std::runtime_error("chunk " + std::to_string(b));
      });
      ADD_FAILURE() << "no exception at " << k << " threads";
    } catch (const std::runtime_error& e) {
      // Chunks are claimed in index order, so 37 always starts before 80 could stop it.
      EXPECT_STREQ(e.what(), "chunk 37") << k << " threads";
    }
    // The pool still works after an exception.
    std::atomic<int64_t> sum{0};
    parallel_for_chunks(100, 10, [&](int64_t b, int64_t e) { sum += e - b; });
    EXPECT_EQ(sum.load(), 100);
  }
}

TEST(ThreadPool, ConcurrentCallersFromOtherThreadsStillRunEveryChunk) {
  ThreadScope scope;
  set_threads(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r)
        parallel_for_chunks(100, 7, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4 * 50 * 100);
}

TEST(ThreadPool, SettingsAreChecked) {
  ThreadScope scope;
  EXPECT_THROW(set_threads(0), std::invalid_argument);
  EXPECT_THROW(parallel_for_chunks(10, 0, [](int64_t, int64_t) {}), std::invalid_argument);
  EXPECT_THROW(set_work_scale(0.0), std::invalid_argument);
  set_threads(5);
  EXPECT_EQ(threads(), 5);
  // set_threads from inside a chunk is refused (the pool is busy).
  EXPECT_THROW(parallel_for_chunks(4, 1, [](int64_t, int64_t) { set_threads(2); }),
               std::logic_error);
}

TEST(ThreadPool, DefaultComesFromMareThreads) {
  const char* old = std::getenv("MARE_THREADS");
  std::string keep = old ? old : "";
  ::setenv("MARE_THREADS", "3", 1);
  EXPECT_EQ(default_threads(), 3);
  for (const char* bad : {"0", "-2", "two", "3x", ""}) {
    ::setenv("MARE_THREADS", bad, 1);
    try {
      default_threads();
      ADD_FAILURE() << "MARE_THREADS='" << bad << "' accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("MARE_THREADS"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("MARE_THREADS");
  EXPECT_EQ(default_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (old) ::setenv("MARE_THREADS", keep.c_str(), 1);
}

TEST(ThreadPool, GrainDependsOnlyOnTheProblem) {
  ThreadScope scope;
  EXPECT_EQ(grain_for(1000, 1.0, 100.0, 64), 100);
  EXPECT_EQ(grain_for(1000, 1000.0, 100.0, 64), 16);  // at most 64 chunks
  EXPECT_EQ(grain_for(10, 1.0, 1e9, 64), 10);         // too small to split
  set_work_scale(0.01);
  EXPECT_EQ(grain_for(1000, 1.0, 100.0, 64), 16);
}

// A product's output blocks are whole 16-wide panels at every grain above 1
// (7 columns once ran [100, 101] x [101, 204] at a third of one Eigen call's
// rate), at most the extent; a grain of 1 (the thread tests) stays 1.
TEST(ThreadPool, ProductBlocksAreWholePanels) {
  EXPECT_EQ(detail::whole_panels(1, 204), 1);
  EXPECT_EQ(detail::whole_panels(2, 204), 16);
  EXPECT_EQ(detail::whole_panels(7, 204), 16);
  EXPECT_EQ(detail::whole_panels(16, 204), 16);
  EXPECT_EQ(detail::whole_panels(17, 204), 32);
  EXPECT_EQ(detail::whole_panels(10, 12), 12);
  EXPECT_EQ(detail::whole_panels(200, 204), 204);
}

}  // namespace
}  // namespace mare::test
