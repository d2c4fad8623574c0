// Tensor: the one data type of the kernel layer.
//
// A Tensor is a contiguous, row-major block of float32 (or int32, for indices)
// with up to 4 dimensions, living on one Device. Copies are shallow (the storage
// is shared); `clone()` and `to(device)` make deep, explicit copies. CPU storage
// is 64-byte aligned. Every shape check throws mare::ShapeError with a message
// that prints both shapes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace mare {

enum class Device { cpu, cuda };
enum class DType { f32, i32 };

const char* to_string(Device d);
const char* to_string(DType t);
Device parse_device(const std::string& name);  // "cpu" | "cuda"
std::vector<std::string> device_names();       // "cpu", "cuda": what --device takes

struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Up to 4 extents. Negative indices count from the back: dim(-1) is the last.
class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const;
  int64_t& operator[](int i);
  int64_t numel() const {  // inline: kernels call it in their loops
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3, 5]"
  std::vector<int64_t> vec() const { return {dims_.begin(), dims_.begin() + rank_}; }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Owning block of device or host memory.
struct Storage {
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device = Device::cpu;

  // What the host knows of a GPU storage's contents without reading the device
  // (each read is a synchronisation). Set when Tensor::to filled it from host
  // memory, or when the kernel that wrote it vouches for a range; dropped at the
  // first mutable access (a non-const f32()/i32(), copy_from, fill). host_knows
  // is set whenever any of it is (and by Tensor::mark_unwritten), on either device.
  // Atomic: CPU kernels take pointers from several threads, and one of them clears.
  std::atomic<bool> host_knows{false};
  std::shared_ptr<const Storage> host_copy;  // the same bytes on the host (small uploads)
  // A CPU storage the host filled from its own data (from_vector, from_indices, a copy
  // of such a tensor or of a GPU tensor): reading it is no read of computed data.
  bool host_filled = false;
  bool index_range_known = false;  // int32 contents lie in [index_lo, index_hi]
  int32_t index_lo = 0, index_hi = -1;
  void forget() {
    if (!host_knows.exchange(false)) return;
    host_copy.reset();
    index_range_known = false;
    host_filled = false;
  }
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  static Tensor empty(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, float value, Device device = Device::cpu);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);
  static Tensor from_indices(const std::vector<int32_t>& values, const Shape& shape);
  static Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.device(), t.dtype()); }
  static Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.device(), t.dtype()); }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * 4; }

  // Raw element pointers. f32()/i32() check the dtype; host access to a CUDA
  // tensor's memory is the caller's business (the CUDA backend uses these too).
  // Inline (kernels call them per element); the checks' error path is out of line.
  // A mutable pointer drops what the host knew of the contents (Storage).
  float* f32() { return data<float, DType::f32>(); }
  const float* f32() const { return data<float, DType::f32>(); }
  int32_t* i32() { return data<int32_t, DType::i32>(); }
  const int32_t* i32() const { return data<int32_t, DType::i32>(); }

  // The smallest and largest element of an int32 tensor when the host knows
  // them without reading the device: a GPU tensor uploaded from host memory
  // (Tensor::to computes them there) or vouched for by the kernel that wrote
  // it, and not written since. False otherwise (and for every CPU tensor).
  bool known_index_range(int32_t& lo, int32_t& hi) const;
  // True when to(Device::cpu) needs no read of the device: a CPU tensor, an empty
  // one, or a GPU tensor uploaded from host memory (up to 1 MiB) and not written
  // since, whose bytes the host kept. A check of index data can then run on the host.
  bool host_has_bytes() const;
  // The kernel that just wrote this int32 GPU tensor vouches that every
  // element lies in [lo, hi] (e.g. an argmax over an axis of extent hi + 1).
  void vouch_index_range(int32_t lo, int32_t hi);
  // For a cache that hands out the same tensor again: mark_unwritten() now,
  // unwritten() later is true while nothing has taken a mutable pointer to the
  // storage (or copied or filled into it) since, on either device.
  void mark_unwritten();
  bool unwritten() const { return storage_ && storage_->host_knows.load(); }

  // Same storage, new shape with the same element count.
  Tensor reshape(const Shape& shape) const;
  // Deep copies.
  Tensor clone() const;
  Tensor to(Device device) const;
  // This tensor (shallow) when it is on `device` already, else to(device).
  Tensor on(Device device) const;
  void copy_from(const Tensor& src);  // shapes and dtypes must match; any devices
  void fill(float value);
  void zero();
  std::vector<float> to_vector() const;  // copies to host
  std::vector<int32_t> to_index_vector() const;
  float item() const;  // the single element of a 1-element tensor
  // The single elements of several 1-element float tensors, with at most one wait for
  // the device: GPU tensors are gathered into one device buffer first (a training step
  // reads its losses this way). An undefined tensor gives NaN.
  static std::vector<float> items(std::initializer_list<Tensor> ts);

 private:
  [[noreturn]] void access_error(DType wanted) const;
  // Counts a read of this tensor's contents by the host (DispatchCounts::host_reads)
  // unless the host knows them: a CPU tensor it filled, a GPU tensor with a host copy.
  void note_host_read() const;
  bool host_knows_contents() const;
  Tensor copy_to(Device device) const;  // to() without counting a read
  template <class T, DType D>
  T* data() {
    if (!storage_ || dtype_ != D) [[unlikely]]
      access_error(D);
    if (storage_->host_knows.load(std::memory_order_relaxed)) [[unlikely]]
      storage_->forget();
    return static_cast<T*>(storage_->ptr);
  }
  template <class T, DType D>
  const T* data() const {
    if (!storage_ || dtype_ != D) [[unlikely]]
      access_error(D);
    return static_cast<const T*>(storage_->ptr);
  }
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Device device_ = Device::cpu;
  DType dtype_ = DType::f32;
};

// Checks that throw ShapeError naming `what` and both shapes.
void check_shape(const Tensor& t, const Shape& expected, const char* what);
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);
void check_rank(const Tensor& t, int rank, const char* what);
void check_dtype(const Tensor& t, DType dtype, const char* what);
void check_same_device(const Tensor& a, const Tensor& b, const char* what);
void check_defined(const Tensor& t, const char* what);

// What one piece of work cost in traffic between the host and the device,
// counted process-wide by the dispatch layer on either device: op dispatches
// (MARE_CUDA_DISPATCH; on the GPU each is at least one kernel launch), reads of
// GPU memory by the host (each one waits for the stream) and uploads of host
// memory. Take two snapshots and subtract (mare bench iteration does, per step).
//
// The rest is counted on both devices, so that the CPU can test what a GPU step would
// cost: host_reads, the host asking for contents it does not know (to/on(Device::cpu),
// to_vector, item, items of a tensor an op computed; on the GPU each is a device read);
// host_tensors, tensors filled from host vectors (from_vector, from_indices: on the
// GPU, each one a step uses is an upload); allocations and allocated_bytes, tensor
// storages made (on the GPU served by the caching allocator: a step that makes the same
// sequence as the one before finds every block in its cache, and a CUDA graph's pool
// could hold them).
struct DispatchCounts {
  int64_t ops = 0, device_reads = 0, uploads = 0;
  int64_t host_reads = 0, host_tensors = 0, allocations = 0, allocated_bytes = 0;
  DispatchCounts operator-(const DispatchCounts& o) const {
    return {ops - o.ops,
            device_reads - o.device_reads,
            uploads - o.uploads,
            host_reads - o.host_reads,
            host_tensors - o.host_tensors,
            allocations - o.allocations,
            allocated_bytes - o.allocated_bytes};
  }
};
DispatchCounts dispatch_counts();
// The op dispatches by op name ("mul_forward": 12, ...), counted while the tally is on
// (off by default: the counts above cost one atomic add a dispatch, the tally a lock).
// mare bench iteration --by-op turns it on and prints a step's dispatches per op.
void set_op_tally(bool on);
std::map<std::string, int64_t> op_tally();
namespace detail {
// `op`: the op's name, a string literal (kept by address until it is tallied).
void count_op(const char* op);
void count_device_read();
void count_upload();
}  // namespace detail

// Is the CUDA backend compiled in, and is a device present?
bool cuda_compiled();
bool cuda_available();
// Why `device` cannot run here, in words for an error message ("" when it can):
// "this build has no CUDA backend (…)", "no CUDA device (the driver's reason)" or what is
// wrong with the device MARE_CUDA_DEVICE names ("CUDA device 3 does not exist (1 visible)").
// Every command that takes --device refuses with it (`<command>: --device cuda: <why>`).
std::string device_unavailable(Device device);

}  // namespace mare
