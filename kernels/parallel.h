// The CPU kernels' thread pool: results that do not depend on the thread count.
//
// Work is cut into chunks whose boundaries depend only on the problem (n and a
// grain computed from the shapes), never on how many threads run them. Every
// chunk writes its own outputs, or a partial result that the caller combines in
// chunk order afterwards, so 1, 2, 3 or 7 threads give the same bytes: which
// thread runs a chunk, and when, changes nothing. With K threads each thread
// first runs the chunks of its own contiguous K-th of the range, then helps
// with the others' (consecutive kernels over the same rows then tend to find
// them in the same core's cache).
//
// The pool is persistent (std::thread workers that sleep between jobs). The
// thread count comes from set_threads(K), else the environment variable
// MARE_THREADS, else std::thread::hardware_concurrency(). A parallel_for_chunks
// called from inside a chunk (or while another thread's job holds the pool)
// runs its chunks inline, in order. Eigen stays single-threaded
// (EIGEN_DONT_PARALLELIZE): parallelism is ours, by blocks of the output.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace mare {

// The most kernel threads a process takes (--threads, MARE_THREADS): far more threads
// than cores only wait on each other (4096 took minutes for a step of seconds).
inline constexpr int kMaxThreads = 256;

// Threads the kernels use (>= 1).
int threads();
// Sets the thread count (K >= 1; throws std::invalid_argument otherwise). Not
// to be called from inside a parallel_for_chunks.
void set_threads(int k);
// MARE_THREADS if set (a positive integer; anything else throws, naming the
// variable), else the hardware's thread count (at least 1).
int default_threads();

// Number of chunks of [0, n) for a grain (>= 1): ceil(n / grain).
inline int64_t chunk_count(int64_t n, int64_t grain) {
  return n <= 0 ? 0 : (n + grain - 1) / grain;
}

// Calls fn(begin, end) once for each chunk [i·grain, min(n, (i+1)·grain)),
// i = 0 .. chunk_count(n, grain) − 1, on up to threads() threads, and returns
// when all have run. Chunk i's begin is i·grain, so a chunk knows its index.
// An exception thrown by a chunk stops the chunks not yet started and is
// rethrown here (the one of the lowest chunk index among those that threw).
void parallel_for_chunks(int64_t n, int64_t grain,
                         const std::function<void(int64_t begin, int64_t end)>& fn);

// A grain for n items of `cost` work each (any unit, e.g. flops): chunks of at
// least `min_work`·work_scale() and at most `max_chunks` of them. Depends only
// on its arguments and the work scale, never on the thread count.
int64_t grain_for(int64_t n, double cost, double min_work = 32768.0, int64_t max_chunks = 64);

// Multiplies every "large enough to split" threshold (grain_for's min_work, and
// the kernels' own limits through split_work()). 1 in production; the thread
// tests set it tiny so that the op table's small shapes are cut into many
// chunks. Not to be changed while a parallel_for_chunks runs.
void set_work_scale(double scale);
double work_scale();
// True when `work` reaches `threshold`·work_scale().
bool split_work(double work, double threshold);

// Sums per-chunk partial results in chunk order: parts[i] is chunk i's. The
// helper for reductions (norm statistics, weight gradients over a batch).
template <class T>
T sum_in_order(const std::vector<T>& parts) {
  T s{};
  for (const T& p : parts) s += p;
  return s;
}

}  // namespace mare
