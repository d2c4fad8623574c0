// The persistent thread pool behind parallel_for_chunks (see parallel.h).
//
// One job at a time: the caller publishes it (a generation counter), the
// workers and the caller claim chunk indices from one atomic counter, and the
// caller returns when every chunk has finished. A worker that wakes late (on a
// busy machine it may not get a core for milliseconds) finds nothing left to
// claim and holds nobody up: the job lives in a shared_ptr, so touching it late
// is safe. Chunks are claimed in any order by any thread; determinism comes
// from what a chunk computes, never from who runs it. Waiting spins briefly (a
// kernel is often followed by the next one within microseconds) and then
// sleeps on a condition variable.
//
// Home ranges: with K threads the chunks are cut into K contiguous ranges and
// thread t (the caller is 0, worker w is w + 1) claims from its own range
// first, then from the others' (one atomic cursor per range). Consecutive
// kernels over the same rows thus tend to run a row on the same core, where
// the previous kernel left it in that core's cache; a thread that wakes late
// loses its range to the others. Which thread runs a chunk still changes
// nothing in the results.
#include "kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace mare {

namespace {

// True on pool workers, and on a caller while its job runs: a nested
// parallel_for_chunks runs inline.
thread_local bool t_in_job = false;

// Spins up to about this long before sleeping.
constexpr auto kSpin = std::chrono::microseconds(50);

// One thread's home range of chunks [next, end): `next` is the next to claim.
struct alignas(64) Range {
  std::atomic<int64_t> next{0};
  int64_t end = 0;
};

struct Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, grain = 1, chunks = 0;
  int parts = 1;                     // home ranges (the pool's thread count)
  std::unique_ptr<Range[]> ranges;   // [parts]
  std::atomic<int64_t> finished{0};  // chunks run (or skipped after an exception)
  // The lowest chunk that threw: chunks above it are skipped, every chunk below
  // it still runs, so the exception rethrown is the lowest throwing chunk's at
  // any thread count.
  std::atomic<int64_t> first_error{std::numeric_limits<int64_t>::max()};
  std::mutex mutex;  // guards error; with done, the caller's sleep
  std::condition_variable done;
  std::exception_ptr error;

  // Cuts [0, chunks) into `k` home ranges.
  void set_ranges(int k) {
    parts = k;
    ranges = std::make_unique<Range[]>(k);
    for (int t = 0; t < k; ++t) {
      ranges[t].next.store(chunks * t / k, std::memory_order_relaxed);
      ranges[t].end = chunks * (t + 1) / k;
    }
  }

  // Claims chunks until none is left: those of range `self` first, then the others'.
  void work(int self) {
    for (int r = 0; r < parts; ++r) {
      Range& range = ranges[(self + r) % parts];
      for (;;) {
        const int64_t i = range.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= range.end) break;
        run_chunk(i);
      }
    }
  }

  void run_chunk(int64_t i) {
    if (i < first_error.load(std::memory_order_relaxed)) {
      const int64_t begin = i * grain, end = std::min(n, begin + grain);
      try {
        (*fn)(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first_error.load(std::memory_order_relaxed)) {
          first_error.store(i, std::memory_order_relaxed);
          error = std::current_exception();
        }
      }
    }
    if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      std::lock_guard<std::mutex> lock(mutex);
      done.notify_all();
    }
  }

  void wait() {
    auto until = std::chrono::steady_clock::now() + kSpin;
    while (finished.load(std::memory_order_acquire) != chunks) {
      if (std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(mutex);
      done.wait(lock, [this] { return finished.load(std::memory_order_acquire) == chunks; });
    }
  }
};

class Pool {
 public:
  ~Pool() { stop(); }

  // Starts `workers` threads (the caller is the K-th). Only with no job running.
  void resize(int workers) {
    stop();
    stopping_ = false;
    // The generation is read here, not in the new thread: a job published
    // before the thread first runs must still count as new to it.
    const uint64_t now = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < workers; ++i)
      threads_.emplace_back([this, now, i] { worker_loop(now, i + 1); });
  }

  int workers() const { return static_cast<int>(threads_.size()); }

  void run(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    job->work(0);
    job->wait();
    std::lock_guard<std::mutex> lock(mutex_);
    job_.reset();
  }

  std::mutex& job_mutex() { return job_mutex_; }

 private:
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  // self: this worker's home range (1 .. workers; the caller's is 0).
  void worker_loop(uint64_t seen, int self) {
    t_in_job = true;
    for (;;) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        seen = generation_.load(std::memory_order_acquire);
        if (stopping_) return;
        job = job_;
      }
      if (job) job->work(self);
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;      // guards job_, stopping_ and wake_
  std::mutex job_mutex_;  // one job (and one resize) at a time
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::shared_ptr<Job> job_;
  bool stopping_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

std::atomic<int> g_threads{0};  // 0: not yet read from the environment
int g_pool_threads = 1;         // the count the pool was built for (under job_mutex)

}  // namespace

int default_threads() {
  if (const char* env = std::getenv("MARE_THREADS")) {
    std::string s(env);
    char* end = nullptr;
    long k = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || k < 1 || k > kMaxThreads)
      throw std::invalid_argument("MARE_THREADS: expected a whole number from 1 to " +
                                  std::to_string(kMaxThreads) + ", got '" + s + "'");
    return static_cast<int>(k);
  }
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

int threads() {
  int k = g_threads.load(std::memory_order_relaxed);
  if (k == 0) {
    k = default_threads();
    int expected = 0;
    if (!g_threads.compare_exchange_strong(expected, k)) k = expected;
  }
  return k;
}

void set_threads(int k) {
  if (k < 1 || k > kMaxThreads)
    throw std::invalid_argument("set_threads: expected 1 to " + std::to_string(kMaxThreads) +
                                " threads, got " + std::to_string(k));
  if (t_in_job) throw std::logic_error("set_threads: called from inside a parallel_for_chunks");
  g_threads.store(k, std::memory_order_relaxed);
  // Start (or stop) the workers now rather than in the next kernel, so that a
  // benchmark switching thread counts does not time thread creation.
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.job_mutex());
  if (g_pool_threads != k || p.workers() != k - 1) {
    p.resize(k - 1);
    g_pool_threads = k;
  }
}

namespace {
std::atomic<double> g_work_scale{1.0};
}

void set_work_scale(double scale) {
  if (!(scale > 0.0))
    throw std::invalid_argument("set_work_scale: expected a positive scale, got " +
                                std::to_string(scale));
  g_work_scale.store(scale);
}
double work_scale() {
  return g_work_scale.load(std::memory_order_relaxed);
}
bool split_work(double work, double threshold) {
  return work >= threshold * work_scale();
}

int64_t grain_for(int64_t n, double cost, double min_work, int64_t max_chunks) {
  if (n <= 0) return 1;
  double per = std::max(cost, 1e-9);
  int64_t g = static_cast<int64_t>(std::ceil(min_work * work_scale() / per));
  g = std::max<int64_t>(g, (n + max_chunks - 1) / max_chunks);
  return std::clamp<int64_t>(g, 1, n);
}

void parallel_for_chunks(int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (grain < 1)
    throw std::invalid_argument("parallel_for_chunks: grain must be >= 1, got " +
                                std::to_string(grain));
  const int64_t chunks = chunk_count(n, grain);
  if (chunks == 0) return;
  const int k = threads();
  auto serial = [&] {
    for (int64_t i = 0; i < chunks; ++i) fn(i * grain, std::min(n, (i + 1) * grain));
  };
  if (k == 1 || chunks == 1 || t_in_job) return serial();
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.job_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) return serial();  // another thread's job holds the pool
  if (g_pool_threads != k || p.workers() != k - 1) {
    p.resize(k - 1);
    g_pool_threads = k;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->grain = grain;
  job->chunks = chunks;
  job->set_ranges(k);
  t_in_job = true;
  p.run(job);
  t_in_job = false;
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace mare
