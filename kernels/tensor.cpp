// Tensor and Shape implementation (host side). The CUDA backend provides the
// device allocation and copies when it is compiled in (MARE_WITH_CUDA).
#include "kernels/tensor.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "kernels/memory_budget.h"
#include "kernels/parallel.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare {

const char* to_string(Device d) {
  return d == Device::cpu ? "cpu" : "cuda";
}
const char* to_string(DType t) {
  return t == DType::f32 ? "f32" : "i32";
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw std::invalid_argument("unknown device '" + name + "' (expected cpu or cuda)");
}

std::vector<std::string> device_names() {
  return {to_string(Device::cpu), to_string(Device::cuda)};
}

// ---------------------------------------------------------------- Shape
Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    throw ShapeError("a tensor has at most 4 dimensions, got " + std::to_string(dims.size()));
  rank_ = static_cast<int>(dims.size());
  for (int i = 0; i < rank_; ++i) {
    if (dims[i] < 0) throw ShapeError("negative extent in shape");
    dims_[i] = dims[i];
  }
}

int64_t Shape::operator[](int i) const {
  int j = i < 0 ? i + rank_ : i;
  if (j < 0 || j >= rank_)
    throw ShapeError("dimension " + std::to_string(i) + " out of range for shape " + str());
  return dims_[j];
}

int64_t& Shape::operator[](int i) {
  int j = i < 0 ? i + rank_ : i;
  if (j < 0 || j >= rank_)
    throw ShapeError("dimension " + std::to_string(i) + " out of range for shape " + str());
  return dims_[j];
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::ostringstream s;
  s << '[';
  for (int i = 0; i < rank_; ++i) s << (i ? ", " : "") << dims_[i];
  s << ']';
  return s.str();
}

// ---------------------------------------------------------------- Storage

namespace {
// glibc serves every block above 128 KiB-32 MiB with a fresh mmap and unmaps it
// on free, so a training step that allocates the same large activations again
// and again pays page faults and kernel zeroing on every one of them (a third
// of a relation model's CPU time). Keeping large blocks in the heap makes the
// next step reuse them. Trimming is off too: with a 1 GiB trim threshold, NTCRE
// at the CDR shape (several GiB of activations) gave its heap back after every
// step and faulted it in again (~10^6 minor faults, a quarter of its CPU time).
// A process's heap therefore stays at its peak until it exits.
void keep_large_blocks_in_the_heap() {
#ifdef __GLIBC__
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, -1);  // never give the top of the heap back
    return true;
  }();
  (void)done;
#endif
}
}  // namespace

namespace {
std::atomic<size_t> g_live_bytes{0};  // CPU tensor storage alive now (the memory budget's)
// DispatchCounts' host-side counts (kernels/tensor.h), on either device.
std::atomic<int64_t> g_host_reads{0}, g_host_tensors{0}, g_allocations{0}, g_allocated_bytes{0};
}  // namespace

Storage::Storage(size_t nbytes, Device dev) : bytes(nbytes), device(dev) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_allocated_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  if (dev == Device::cpu) {
    require_memory(static_cast<double>(nbytes), static_cast<double>(g_live_bytes.load()),
                   "a tensor",
                   "ask for smaller sizes (a smaller --batch, --eval-batch, --mem, --seq, "
                   "model width or max_tokens)");
    keep_large_blocks_in_the_heap();
    size_t rounded = std::max<size_t>(64, (nbytes + 63) / 64 * 64);
    ptr = std::aligned_alloc(64, rounded);
    if (!ptr) throw std::bad_alloc();
    g_live_bytes.fetch_add(nbytes);
  } else {
#ifdef MARE_WITH_CUDA
    ptr = cuda::device_alloc(nbytes);
#else
    throw std::runtime_error("this build of mare has no CUDA backend (configure with MARE_CUDA)");
#endif
  }
}

Storage::~Storage() {
  if (device == Device::cpu) {
    std::free(ptr);
    g_live_bytes.fetch_sub(bytes);
  } else {
#ifdef MARE_WITH_CUDA
    cuda::device_free(ptr, bytes);
#endif
  }
}

bool cuda_compiled() {
#ifdef MARE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_available() {
#ifdef MARE_WITH_CUDA
  return cuda::device_present();
#else
  return false;
#endif
}

std::string device_unavailable(Device device) {
  if (device != Device::cuda) return "";
  if (!cuda_compiled())
    return "this build has no CUDA backend (configure with -DMARE_CUDA=ON on a machine with nvcc)";
#ifdef MARE_WITH_CUDA
  if (!cuda::device_present()) return "no CUDA device (" + cuda::no_device_reason() + ")";
  if (std::string why = cuda::device_choice_problem(); !why.empty()) return why;
#endif
  return "";
}

// Host fills and copies of large blocks run in chunks of 64 KiB on the kernel
// threads (kernels/parallel.h): zeroing gradients and first-touching fresh
// activations is a good part of a training step. Bytes are bytes: the result
// does not depend on the chunks.
constexpr size_t kChunkBytes = size_t{1} << 16;
constexpr size_t kSplitBytes = size_t{1} << 19;

static void copy_bytes(void* dst, Device dd, const void* src, Device sd, size_t n) {
  if (n == 0) return;
  if (dd == Device::cpu && sd == Device::cpu) {
    if (n < kSplitBytes) {
      std::memcpy(dst, src, n);
      return;
    }
    parallel_for_chunks(static_cast<int64_t>(n), kChunkBytes, [&](int64_t b, int64_t e) {
      std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
    });
    return;
  }
#ifdef MARE_WITH_CUDA
  cuda::copy_bytes(dst, dd, src, sd, n);
#else
  throw std::runtime_error("this build of mare has no CUDA backend (configure with MARE_CUDA)");
#endif
}

// ---------------------------------------------------------------- counters
namespace {
std::atomic<int64_t> g_ops{0}, g_device_reads{0}, g_uploads{0};
std::atomic<bool> g_tally_on{false};
std::mutex g_tally_mutex;
std::map<std::string, int64_t>& tally() {
  static std::map<std::string, int64_t> t;
  return t;
}
}  // namespace

void set_op_tally(bool on) {
  g_tally_on.store(on, std::memory_order_relaxed);
}
std::map<std::string, int64_t> op_tally() {
  std::lock_guard lock(g_tally_mutex);
  return tally();
}

DispatchCounts dispatch_counts() {
  constexpr auto r = std::memory_order_relaxed;
  return {g_ops.load(r),
          g_device_reads.load(r),
          g_uploads.load(r),
          g_host_reads.load(r),
          g_host_tensors.load(r),
          g_allocations.load(r),
          g_allocated_bytes.load(r)};
}
namespace detail {
void count_op(const char* op) {
  g_ops.fetch_add(1, std::memory_order_relaxed);
  if (!g_tally_on.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(g_tally_mutex);
  ++tally()[op];
}
void count_device_read() {
  g_device_reads.fetch_add(1, std::memory_order_relaxed);
}
void count_upload() {
  g_uploads.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

// ---------------------------------------------------------------- Tensor
Tensor Tensor::empty(const Shape& shape, Device device, DType dtype) {
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * 4, device);
  t.shape_ = shape;
  t.device_ = device;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, Device device, DType dtype) {
  Tensor t = empty(shape, device, dtype);
  t.zero();
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, device);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError("from_vector: " + std::to_string(values.size()) +
                     " values do not fill shape " + shape.str());
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.f32());
  t.storage_->host_filled = true;
  t.storage_->host_knows = true;
  g_host_tensors.fetch_add(1, std::memory_order_relaxed);
  return t;
}

Tensor Tensor::from_indices(const std::vector<int32_t>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError("from_indices: " + std::to_string(values.size()) +
                     " values do not fill shape " + shape.str());
  Tensor t = empty(shape, Device::cpu, DType::i32);
  std::copy(values.begin(), values.end(), t.i32());
  t.storage_->host_filled = true;
  t.storage_->host_knows = true;
  g_host_tensors.fetch_add(1, std::memory_order_relaxed);
  return t;
}

void Tensor::access_error(DType wanted) const {
  const char* what = wanted == DType::f32 ? "f32()" : "i32()";
  check_defined(*this, what);
  check_dtype(*this, wanted, what);
  throw std::logic_error(std::string(what) + ": unreachable");
}

Tensor Tensor::reshape(const Shape& shape) const {
  check_defined(*this, "reshape");
  if (shape.numel() != numel())
    throw ShapeError("reshape: cannot view shape " + shape_.str() + " as " + shape.str());
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::clone() const {
  return copy_to(device_);
}

bool Tensor::host_knows_contents() const {
  if (!storage_ || numel() == 0) return true;
  return device_ == Device::cpu ? storage_->host_filled : storage_->host_copy != nullptr;
}

void Tensor::note_host_read() const {
  if (!host_knows_contents()) g_host_reads.fetch_add(1, std::memory_order_relaxed);
}

Tensor Tensor::on(Device device) const {
  if (device_ != device) return to(device);
  if (device == Device::cpu) note_host_read();
  return *this;
}

namespace {
// Uploads up to this size keep a host copy of their bytes, so that reading them
// back (the batch's offsets, positions and masks) needs no device read.
constexpr size_t kHostCopyBytes = size_t(1) << 20;
}  // namespace

Tensor Tensor::to(Device device) const {
  if (device == Device::cpu) {
    check_defined(*this, "to(device)");
    note_host_read();
  }
  return copy_to(device);
}

Tensor Tensor::copy_to(Device device) const {
  check_defined(*this, "to(device)");
  Tensor t = empty(shape_, device, dtype_);
  if (device == Device::cpu && (device_ != Device::cpu || storage_->host_filled)) {
    // What the host now holds it knows (a read of the copy is no read of computed data).
    t.storage_->host_filled = true;
    t.storage_->host_knows = true;
  }
  if (device_ != Device::cpu && device == Device::cpu && storage_->host_copy) {
    std::memcpy(t.storage_->ptr, storage_->host_copy->ptr, nbytes());  // no device read
    return t;
  }
  copy_bytes(t.storage_->ptr, device, storage_->ptr, device_, nbytes());
  if (device_ == Device::cpu && device != Device::cpu && numel() > 0) {
    // Uploaded from host memory: what the host knows of the bytes it sent.
    Storage& st = *t.storage_;
    if (dtype_ == DType::i32) {
      const auto [lo, hi] = std::minmax_element(i32(), i32() + numel());
      st.index_range_known = true;
      st.index_lo = *lo;
      st.index_hi = *hi;
    }
    if (nbytes() <= kHostCopyBytes) {
      auto copy = std::make_shared<Storage>(nbytes(), Device::cpu);
      std::memcpy(copy->ptr, storage_->ptr, nbytes());
      st.host_copy = std::move(copy);
    }
    st.host_knows = true;
  }
  return t;
}

bool Tensor::known_index_range(int32_t& lo, int32_t& hi) const {
  if (!storage_ || dtype_ != DType::i32 || !storage_->index_range_known) return false;
  lo = storage_->index_lo;
  hi = storage_->index_hi;
  return true;
}

bool Tensor::host_has_bytes() const {
  return storage_ && (device_ == Device::cpu || numel() == 0 || storage_->host_copy != nullptr);
}

void Tensor::vouch_index_range(int32_t lo, int32_t hi) {
  check_dtype(*this, DType::i32, "vouch_index_range");
  if (!storage_ || device_ == Device::cpu) return;  // the host reads CPU tensors directly
  storage_->index_range_known = true;
  storage_->index_lo = lo;
  storage_->index_hi = hi;
  storage_->host_knows = true;
}

void Tensor::mark_unwritten() {
  check_defined(*this, "mark_unwritten");
  storage_->host_knows = true;
}

void Tensor::copy_from(const Tensor& src) {
  check_same_shape(*this, src, "copy_from");
  check_dtype(src, dtype_, "copy_from");
  storage_->forget();
  copy_bytes(storage_->ptr, device_, src.storage_->ptr, src.device_, nbytes());
}

void Tensor::fill(float value) {
  check_defined(*this, "fill");
  storage_->forget();
  if (device_ == Device::cpu) {
    const int64_t n = numel();
    const int64_t grain = static_cast<int64_t>(kChunkBytes / 4);
    auto fill_range = [&](int64_t b, int64_t e) {
      if (dtype_ == DType::f32)
        std::fill_n(f32() + b, e - b, value);
      else
        std::fill_n(i32() + b, e - b, static_cast<int32_t>(value));
    };
    if (nbytes() < kSplitBytes)
      fill_range(0, n);
    else
      parallel_for_chunks(n, grain, fill_range);
    return;
  }
#ifdef MARE_WITH_CUDA
  if (dtype_ != DType::f32 && value != 0.0f)
    throw std::runtime_error("fill: only zero fills for int32 tensors on cuda");
  cuda::fill_f32(static_cast<float*>(storage_->ptr), numel(), value);
#endif
}

void Tensor::zero() {
  fill(0.0f);
}

std::vector<float> Tensor::to_vector() const {
  const Tensor h = on(Device::cpu);
  return {h.f32(), h.f32() + numel()};
}

std::vector<int32_t> Tensor::to_index_vector() const {
  const Tensor h = on(Device::cpu);
  return {h.i32(), h.i32() + numel()};
}

float Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("item(): tensor of shape " + shape_.str() + " is not 1 element");
  return to_vector()[0];
}

std::vector<float> Tensor::items(std::initializer_list<Tensor> ts) {
  std::vector<float> out(ts.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<std::pair<size_t, const Tensor*>> on_gpu;
  size_t i = 0;
  bool computed_on_cpu = false;  // one read, as the GPU's one gathered read
  for (const Tensor& t : ts) {
    if (t.defined()) {
      check_dtype(t, DType::f32, "items()");
      if (t.numel() != 1)
        throw ShapeError("items(): tensor of shape " + t.shape_.str() + " is not 1 element");
      if (t.device_ == Device::cpu) {
        out[i] = t.f32()[0];
        computed_on_cpu = computed_on_cpu || !t.host_knows_contents();
      } else {
        on_gpu.emplace_back(i, &t);
      }
    }
    ++i;
  }
  if (computed_on_cpu) g_host_reads.fetch_add(1, std::memory_order_relaxed);
  if (on_gpu.size() == 1) out[on_gpu[0].first] = on_gpu[0].second->item();
  if (on_gpu.size() <= 1) return out;
  Tensor gathered = empty({static_cast<int64_t>(on_gpu.size())}, Device::cuda);
  for (size_t k = 0; k < on_gpu.size(); ++k)  // device to device: no wait
    copy_bytes(static_cast<float*>(gathered.storage_->ptr) + k, Device::cuda,
               on_gpu[k].second->storage_->ptr, Device::cuda, sizeof(float));
  const std::vector<float> v = gathered.to_vector();
  for (size_t k = 0; k < on_gpu.size(); ++k) out[on_gpu[k].first] = v[k];
  return out;
}

// ---------------------------------------------------------------- checks
void check_defined(const Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(std::string(what) + ": tensor is undefined");
}

void check_shape(const Tensor& t, const Shape& expected, const char* what) {
  check_defined(t, what);
  if (t.shape() != expected)
    throw ShapeError(std::string(what) + ": got shape " + t.shape().str() + ", expected " +
                     expected.str());
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  check_defined(a, what);
  check_defined(b, what);
  if (a.shape() != b.shape())
    throw ShapeError(std::string(what) + ": shapes differ: " + a.shape().str() + " vs " +
                     b.shape().str());
}

void check_rank(const Tensor& t, int rank, const char* what) {
  check_defined(t, what);
  if (t.rank() != rank)
    throw ShapeError(std::string(what) + ": expected a " + std::to_string(rank) +
                     "-D tensor, got shape " + t.shape().str());
}

void check_dtype(const Tensor& t, DType dtype, const char* what) {
  if (t.dtype() != dtype)
    throw std::invalid_argument(std::string(what) + ": expected dtype " + to_string(dtype) +
                                ", got " + to_string(t.dtype()));
}

void check_same_device(const Tensor& a, const Tensor& b, const char* what) {
  if (a.device() != b.device())
    throw std::invalid_argument(std::string(what) + ": tensors on different devices (" +
                                to_string(a.device()) + " and " + to_string(b.device()) + ")");
}

}  // namespace mare
