// Elementwise ops on the GPU: bias add, add, mul, scale, the activations and
// dropout (kernels/ops/elementwise.cpp is the reference).
//
// Design: one thread per element in grid-stride loops. Each forward map and
// each backward accumulation is a functor applied by one generic kernel
// (map_kernel, accumulate_kernel), with the CPU's formula written line by line.
// The host is compiled in ISO mode, where GCC never fuses a multiply and an add;
// nvcc and ptxas would (also across an inlined expf), so every add or multiply
// that could be fused is spelled with explicitly rounded intrinsics
// (__fmul_rn, __fadd_rn, ...) and the results match the CPU to the ulp of the
// math library (expf, tanhf, log1pf).
// Dropout's mask comes from the device Philox (kernels/cuda/philox.cuh): element
// j keeps when philox_uniform(seed, stream, offset + j) >= p, the same bits as
// the host; the keep scale 1/(1 − p) is computed on the host as the CPU does.
// bias_add's d_bias is the one reduction: a column sum over all leading rows in
// two passes with a fixed order (no atomics): pass 1 sums each chunk of
// kRowChunk rows per column in double (one thread per chunk and column), pass 2
// adds the chunk sums of a column in chunk order (one thread per column).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/philox.cuh"

namespace mare::cuda {

namespace {

// Rows per chunk of the column reduction of bias_add_backward.
constexpr int64_t kRowChunk = 64;

// ------------------------------------------------------------------ functors
// Forward maps: out = f(x).
struct ScaleOp {
  float s;
  __device__ float operator()(float v) const { return __fmul_rn(s, v); }
};
struct ReluOp {
  __device__ float operator()(float v) const { return v > 0.0f ? v : 0.0f; }
};
struct Relu6Op {
  // std::min(std::max(v, 0), 6): max(a, b) = a < b ? b : a, min(a, b) = b < a ? b : a.
  __device__ float operator()(float v) const {
    float m = v < 0.0f ? 0.0f : v;
    return 6.0f < m ? 6.0f : m;
  }
};
struct SigmoidOp {
  // Stable on both tails: never exponentiates a large positive number. (The
  // explicit roundings keep ptxas from fusing the add with the last multiply
  // inside expf.)
  __device__ float operator()(float v) const {
    if (v >= 0.0f) return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-v)));
    float e = expf(v);
    return __fdiv_rn(e, __fadd_rn(1.0f, e));
  }
};
struct TanhOp {
  __device__ float operator()(float v) const { return tanhf(v); }
};
struct OneplusOp {
  // 1 + softplus(x) = 1 + max(x, 0) + log1p(e^-|x|)
  __device__ float operator()(float v) const {
    float m = v < 0.0f ? 0.0f : v;
    return __fadd_rn(__fadd_rn(1.0f, m), log1pf(expf(-fabsf(v))));
  }
};
struct HardSigmoidOp {
  // clip(0.2·x + 0.5, 0, 1)
  __device__ float operator()(float v) const {
    float y = __fadd_rn(__fmul_rn(0.2f, v), 0.5f);
    float m = y < 0.0f ? 0.0f : y;
    return 1.0f < m ? 1.0f : m;
  }
};

// Backward derivatives: d_x += d_out · g(saved), saved = x or out as on the CPU.
struct ReluGrad {
  __device__ float operator()(float v) const { return v > 0.0f ? 1.0f : 0.0f; }
};
struct Relu6Grad {
  __device__ float operator()(float v) const { return (v > 0.0f && v < 6.0f) ? 1.0f : 0.0f; }
};
struct SigmoidGrad {  // of out
  __device__ float operator()(float y) const { return __fmul_rn(y, __fsub_rn(1.0f, y)); }
};
struct TanhGrad {  // of out
  __device__ float operator()(float y) const { return __fsub_rn(1.0f, __fmul_rn(y, y)); }
};
struct OneplusGrad {  // σ(x), the same stable form as SigmoidOp
  __device__ float operator()(float v) const { return SigmoidOp{}(v); }
};
struct HardSigmoidGrad {
  __device__ float operator()(float v) const { return (v > -2.5f && v < 2.5f) ? 0.2f : 0.0f; }
};
struct IdentityGrad {  // dropout: saved is the mask
  __device__ float operator()(float m) const { return m; }
};

// ------------------------------------------------------------------ kernels
template <class F>
__global__ void map_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f(x[i]);
}

// d_x[i] += d_out[i] · g(saved[i])
template <class G>
__global__ void accumulate_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                                  const float* __restrict__ saved, int64_t n, G g) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    d_x[i] = __fadd_rn(d_x[i], __fmul_rn(d_out[i], g(saved[i])));
}

// d_x[i] += s · d_out[i]
__global__ void accumulate_scaled_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                                         int64_t n, float s) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    d_x[i] = __fadd_rn(d_x[i], __fmul_rn(s, d_out[i]));
}

// out[r, j] = x[r, j] + bias[j]              x, out: [rows, c] (a row launch)
__global__ void bias_add_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                float* __restrict__ out, int64_t rows, int64_t c) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step())
    for (int64_t j = launch_col_begin(); j < c; j += launch_col_step())
      out[r * c + j] = x[r * c + j] + bias[j];
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

__global__ void mul_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] * b[i];
}

// d_a[i] += d_out[i] · other[i]   (mul's gradient of one factor)
__global__ void mul_grad_kernel(float* __restrict__ d, const float* __restrict__ d_out,
                                const float* __restrict__ other, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    d[i] = __fadd_rn(d[i], __fmul_rn(d_out[i], other[i]));
}

// Pass 1 of d_bias: partial[k, j] = Σ_{r in chunk k} d_out[r, j], rows in order.
//   d_out: [rows, c]; partial: [chunks, c] (double)
__global__ void column_chunk_sums_kernel(const float* __restrict__ d_out, int64_t rows, int64_t c,
                                         int64_t chunks, double* __restrict__ partial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < chunks * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t k = i / c, j = i % c;
    int64_t end = min(rows, (k + 1) * kRowChunk);
    double s = 0.0;
    for (int64_t r = k * kRowChunk; r < end; ++r) s += d_out[r * c + j];
    partial[i] = s;
  }
}

// Pass 2: d_bias[j] += Σ_k partial[k, j], chunks in order.
__global__ void column_finish_kernel(const double* __restrict__ partial, int64_t chunks, int64_t c,
                                     float* __restrict__ d_bias) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < c;
       j += int64_t(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[k * c + j];
    d_bias[j] += static_cast<float>(s);
  }
}

// mask[j] = u(seed, stream, offset + j) >= p ? keep_scale : 0;  out[j] = x[j] · mask[j]
__global__ void dropout_kernel(const float* __restrict__ x, float* __restrict__ out,
                               float* __restrict__ mask, int64_t n, float p, float keep_scale,
                               uint64_t seed, uint32_t stream, uint64_t offset) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    float m = philox_uniform(seed, stream, offset + j) >= p ? keep_scale : 0.0f;
    mask[j] = m;
    out[j] = x[j] * m;
  }
}

// ------------------------------------------------------------------ helpers
template <class F>
Tensor map_unary(const Tensor& x, const char* op, F f) {
  require_cuda({&x}, op);
  Tensor out = Tensor::empty(x.shape(), Device::cuda);
  int64_t n = x.numel();
  if (n == 0) return out;
  map_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(x.f32(), out.f32(), n, f);
  MARE_LAUNCH_CHECK("map_kernel");
  return out;
}

template <class G>
void accumulate_unary(Tensor& d_x, const Tensor& d_out, const Tensor& saved, const char* op, G g) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &saved}, op);
  int64_t n = d_out.numel();
  if (n == 0) return;
  accumulate_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(d_x.f32(), d_out.f32(), saved.f32(),
                                                              n, g);
  MARE_LAUNCH_CHECK("accumulate_kernel");
}

void accumulate(Tensor& d_x, const Tensor& d_out, float s) {
  if (!d_x.defined()) return;
  int64_t n = d_out.numel();
  if (n == 0) return;
  accumulate_scaled_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(d_x.f32(), d_out.f32(), n, s);
  MARE_LAUNCH_CHECK("accumulate_scaled_kernel");
}

}  // namespace

// ------------------------------------------------------------------ launchers
Tensor bias_add_forward(const Tensor& x, const Tensor& bias) {
  require_cuda({&x, &bias}, "bias_add_forward");
  Tensor out = Tensor::empty(x.shape(), Device::cuda);
  int64_t n = x.numel(), c = x.dim(-1);
  if (n == 0) return out;
  const RowLaunch l = row_launch(n / c, c);
  bias_add_kernel<<<l.grid, l.block, 0, stream()>>>(x.f32(), bias.f32(), out.f32(), n / c, c);
  MARE_LAUNCH_CHECK("bias_add_kernel");
  return out;
}

void bias_add_backward(Tensor& d_x, Tensor& d_bias, const Tensor& d_out) {
  require_cuda({&d_x, &d_bias, &d_out}, "bias_add_backward");
  accumulate(d_x, d_out, 1.0f);
  if (!d_bias.defined()) return;
  int64_t c = d_out.dim(-1);
  if (c == 0) return;
  int64_t rows = d_out.numel() / c;
  int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
  if (chunks == 0) return;  // no rows: d_bias gains nothing
  Workspace partial(static_cast<size_t>(chunks * c) * sizeof(double));
  column_chunk_sums_kernel<<<blocks_for(chunks * c), kThreads, 0, stream()>>>(
      d_out.f32(), rows, c, chunks, partial.as<double>());
  MARE_LAUNCH_CHECK("column_chunk_sums_kernel");
  column_finish_kernel<<<blocks_for(c), kThreads, 0, stream()>>>(partial.as<double>(), chunks, c,
                                                                 d_bias.f32());
  MARE_LAUNCH_CHECK("column_finish_kernel");
}

Tensor add_forward(const Tensor& a, const Tensor& b) {
  require_cuda({&a, &b}, "add_forward");
  Tensor out = Tensor::empty(a.shape(), Device::cuda);
  int64_t n = a.numel();
  if (n == 0) return out;
  add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(a.f32(), b.f32(), out.f32(), n);
  MARE_LAUNCH_CHECK("add_kernel");
  return out;
}

void add_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out) {
  require_cuda({&d_a, &d_b, &d_out}, "add_backward");
  accumulate(d_a, d_out, 1.0f);
  accumulate(d_b, d_out, 1.0f);
}

Tensor mul_forward(const Tensor& a, const Tensor& b) {
  require_cuda({&a, &b}, "mul_forward");
  Tensor out = Tensor::empty(a.shape(), Device::cuda);
  int64_t n = a.numel();
  if (n == 0) return out;
  mul_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(a.f32(), b.f32(), out.f32(), n);
  MARE_LAUNCH_CHECK("mul_kernel");
  return out;
}

void mul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a, const Tensor& b) {
  require_cuda({&d_a, &d_b, &d_out, &a, &b}, "mul_backward");
  int64_t n = d_out.numel();
  if (n == 0) return;
  if (d_a.defined()) {
    mul_grad_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(d_a.f32(), d_out.f32(), b.f32(), n);
    MARE_LAUNCH_CHECK("mul_grad_kernel");
  }
  if (d_b.defined()) {
    mul_grad_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(d_b.f32(), d_out.f32(), a.f32(), n);
    MARE_LAUNCH_CHECK("mul_grad_kernel");
  }
}

Tensor scale_forward(const Tensor& x, float s) {
  return map_unary(x, "scale_forward", ScaleOp{s});
}
void scale_backward(Tensor& d_x, const Tensor& d_out, float s) {
  require_cuda({&d_x, &d_out}, "scale_backward");
  accumulate(d_x, d_out, s);
}

Tensor relu_forward(const Tensor& x) {
  return map_unary(x, "relu_forward", ReluOp{});
}
void relu_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  accumulate_unary(d_x, d_out, x, "relu_backward", ReluGrad{});
}

Tensor relu6_forward(const Tensor& x) {
  return map_unary(x, "relu6_forward", Relu6Op{});
}
void relu6_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  accumulate_unary(d_x, d_out, x, "relu6_backward", Relu6Grad{});
}

Tensor sigmoid_forward(const Tensor& x) {
  return map_unary(x, "sigmoid_forward", SigmoidOp{});
}
void sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  accumulate_unary(d_x, d_out, out, "sigmoid_backward", SigmoidGrad{});
}

Tensor tanh_forward(const Tensor& x) {
  return map_unary(x, "tanh_forward", TanhOp{});
}
void tanh_backward(Tensor& d_x, const Tensor& d_out, const Tensor& out) {
  accumulate_unary(d_x, d_out, out, "tanh_backward", TanhGrad{});
}

Tensor oneplus_forward(const Tensor& x) {
  return map_unary(x, "oneplus_forward", OneplusOp{});
}
void oneplus_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  accumulate_unary(d_x, d_out, x, "oneplus_backward", OneplusGrad{});
}

Tensor hard_sigmoid_forward(const Tensor& x) {
  return map_unary(x, "hard_sigmoid_forward", HardSigmoidOp{});
}
void hard_sigmoid_backward(Tensor& d_x, const Tensor& d_out, const Tensor& x) {
  accumulate_unary(d_x, d_out, x, "hard_sigmoid_backward", HardSigmoidGrad{});
}

DropoutResult dropout_forward(const Tensor& x, float p, uint64_t seed, uint32_t stream,
                              uint64_t offset) {
  require_cuda({&x}, "dropout_forward");
  DropoutResult r{Tensor::empty(x.shape(), Device::cuda), Tensor::empty(x.shape(), Device::cuda)};
  const float keep_scale = 1.0f / (1.0f - p);  // on the host, exactly as the CPU
  int64_t n = x.numel();
  if (n == 0) return r;
  dropout_kernel<<<blocks_for(n), kThreads, 0, cuda::stream()>>>(
      x.f32(), r.out.f32(), r.mask.f32(), n, p, keep_scale, seed, stream, offset);
  MARE_LAUNCH_CHECK("dropout_kernel");
  return r;
}

void dropout_backward(Tensor& d_x, const Tensor& d_out, const Tensor& mask) {
  accumulate_unary(d_x, d_out, mask, "dropout_backward", IdentityGrad{});
}

}  // namespace mare::cuda
