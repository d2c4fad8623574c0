// Tensor: the one data type of the kernel layer.
//
// A Tensor is a contiguous, row-major block of float32 (or int32, for indices)
// with up to 4 dimensions, living on one Device. Copies are shallow (the storage
// is shared); `clone()` and `to(device)` make deep, explicit copies. CPU storage
// is 64-byte aligned. Every shape check throws mare::ShapeError with a message
// that prints both shapes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
  float* f32() {
    if (!storage_ || dtype_ != DType::f32) [[unlikely]]
      access_error(DType::f32);
    return static_cast<float*>(storage_->ptr);
  }
  const float* f32() const { return const_cast<Tensor*>(this)->f32(); }
  int32_t* i32() {
    if (!storage_ || dtype_ != DType::i32) [[unlikely]]
      access_error(DType::i32);
    return static_cast<int32_t*>(storage_->ptr);
  }
  const int32_t* i32() const { return const_cast<Tensor*>(this)->i32(); }

  // Same storage, new shape with the same element count.
  Tensor reshape(const Shape& shape) const;
  // Deep copies.
  Tensor clone() const;
  Tensor to(Device device) const;
  void copy_from(const Tensor& src);  // shapes and dtypes must match; any devices
  void fill(float value);
  void zero();
  std::vector<float> to_vector() const;  // copies to host
  std::vector<int32_t> to_index_vector() const;
  float item() const;  // the single element of a 1-element tensor

 private:
  [[noreturn]] void access_error(DType wanted) const;
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

// Is the CUDA backend compiled in, and is a device present?
bool cuda_compiled();
bool cuda_available();

}  // namespace mare
