// Elementwise ops on the GPU: bias add, add, mul, scale, row selection and
// scaling, the activations and dropout (kernels/ops/elementwise.cpp is the
// reference).
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
// bias_add's d_bias is the one reduction: a column sum over all leading rows,
// kernels/cuda/column_sums.cuh's two passes in double (as the CPU sums it).
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/philox.cuh"

namespace mare::cuda {

namespace {

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

// out[i] = a[i] / b[i]   (IEEE division: nvcc's default, no fast-math)
__global__ void div_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __fdiv_rn(a[i], b[i]);
}

// d_a[i] += d_out[i] / b[i];  d_b[i] += −(d_out[i] · out[i]) / b[i]  (either may be null)
__global__ void div_grad_kernel(float* __restrict__ d_a, float* __restrict__ d_b,
                                const float* __restrict__ d_out, const float* __restrict__ out,
                                const float* __restrict__ b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (d_a) d_a[i] = __fadd_rn(d_a[i], __fdiv_rn(d_out[i], b[i]));
    if (d_b) d_b[i] = __fadd_rn(d_b[i], __fdiv_rn(-__fmul_rn(d_out[i], out[i]), b[i]));
  }
}

// out[r, j] = keep[r] != 0 ? a[r, j] : b[r, j]   (rows × w, a row launch)
__global__ void select_rows_kernel(const float* __restrict__ keep, const float* __restrict__ a,
                                   const float* __restrict__ b, float* __restrict__ out,
                                   int64_t rows, int64_t w) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const float* src = (keep[r] != 0.0f ? a : b) + r * w;
    for (int64_t j = launch_col_begin(); j < w; j += launch_col_step()) out[r * w + j] = src[j];
  }
}

// d_a[r, j] += d_out[r, j] where keep[r] != 0, d_b[r, j] += d_out[r, j] elsewhere (either
// may be null: that side takes nothing)
__global__ void select_rows_grad_kernel(const float* __restrict__ keep,
                                        const float* __restrict__ d_out, float* __restrict__ d_a,
                                        float* __restrict__ d_b, int64_t rows, int64_t w) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    float* dst = keep[r] != 0.0f ? d_a : d_b;
    if (dst == nullptr) continue;
    for (int64_t j = launch_col_begin(); j < w; j += launch_col_step())
      dst[r * w + j] = __fadd_rn(dst[r * w + j], d_out[r * w + j]);
  }
}

// out[r, j] = x[r, j] · s[r]   (rows × w, a row launch)
__global__ void scale_rows_kernel(const float* __restrict__ x, const float* __restrict__ s,
                                  float* __restrict__ out, int64_t rows, int64_t w) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const float sr = s[r];
    for (int64_t j = launch_col_begin(); j < w; j += launch_col_step())
      out[r * w + j] = __fmul_rn(x[r * w + j], sr);
  }
}

// d_x[r, j] += d_out[r, j] · s[r]   (a row launch)
__global__ void scale_rows_grad_x_kernel(float* __restrict__ d_x, const float* __restrict__ d_out,
                                         const float* __restrict__ s, int64_t rows, int64_t w) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const float sr = s[r];
    for (int64_t j = launch_col_begin(); j < w; j += launch_col_step())
      d_x[r * w + j] = __fadd_rn(d_x[r * w + j], __fmul_rn(d_out[r * w + j], sr));
  }
}

// d_s[r] += Σ_j d_out[r, j] · x[r, j]: one warp a row, lane l adding j = l, l + 32, … in
// float, then a fixed xor butterfly (the same bits run after run; the CPU adds j in
// order, so the two agree to rounding)
__global__ void scale_rows_grad_s_kernel(float* __restrict__ d_s, const float* __restrict__ d_out,
                                         const float* __restrict__ x, int64_t rows, int64_t w) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32; r < rows; r += warps) {
    float sum = 0.0f;
    for (int64_t j = lane; j < w; j += 32)
      sum = __fadd_rn(sum, __fmul_rn(d_out[r * w + j], x[r * w + j]));
    sum = warp_sum(sum);
    if (lane == 0) d_s[r] = __fadd_rn(d_s[r], sum);
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
  launch("map_kernel", n, map_kernel<F>, x.f32(), out.f32(), n, f);
  return out;
}

template <class G>
void accumulate_unary(Tensor& d_x, const Tensor& d_out, const Tensor& saved, const char* op, G g) {
  if (!d_x.defined()) return;
  require_cuda({&d_x, &d_out, &saved}, op);
  int64_t n = d_out.numel();
  if (n == 0) return;
  launch("accumulate_kernel", n, accumulate_kernel<G>, d_x.f32(), d_out.f32(), saved.f32(), n, g);
}

void accumulate(Tensor& d_x, const Tensor& d_out, float s) {
  if (!d_x.defined()) return;
  int64_t n = d_out.numel();
  if (n == 0) return;
  launch("accumulate_scaled_kernel", n, accumulate_scaled_kernel, d_x.f32(), d_out.f32(), n, s);
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
  add_column_sums<double>(d_bias.f32(), d_out.f32(), d_out.numel() / c, c);
}

Tensor add_forward(const Tensor& a, const Tensor& b) {
  require_cuda({&a, &b}, "add_forward");
  Tensor out = Tensor::empty(a.shape(), Device::cuda);
  int64_t n = a.numel();
  if (n == 0) return out;
  launch("add_kernel", n, add_kernel, a.f32(), b.f32(), out.f32(), n);
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
  launch("mul_kernel", n, mul_kernel, a.f32(), b.f32(), out.f32(), n);
  return out;
}

void mul_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& a, const Tensor& b) {
  require_cuda({&d_a, &d_b, &d_out, &a, &b}, "mul_backward");
  int64_t n = d_out.numel();
  if (n == 0) return;
  if (d_a.defined()) {
    launch("mul_grad_kernel", n, mul_grad_kernel, d_a.f32(), d_out.f32(), b.f32(), n);
  }
  if (d_b.defined()) {
    launch("mul_grad_kernel", n, mul_grad_kernel, d_b.f32(), d_out.f32(), a.f32(), n);
  }
}

Tensor div_forward(const Tensor& a, const Tensor& b) {
  require_cuda({&a, &b}, "div_forward");
  Tensor out = Tensor::empty(a.shape(), Device::cuda);
  const int64_t n = a.numel();
  if (n == 0) return out;
  launch("div_kernel", n, div_kernel, a.f32(), b.f32(), out.f32(), n);
  return out;
}

void div_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& out,
                  const Tensor& b) {
  require_cuda({&d_a, &d_b, &d_out, &out, &b}, "div_backward");
  const int64_t n = d_out.numel();
  if (n == 0 || (!d_a.defined() && !d_b.defined())) return;
  launch("div_grad_kernel", n, div_grad_kernel, ptr_or_null(d_a), ptr_or_null(d_b), d_out.f32(),
         out.f32(), b.f32(), n);
}

Tensor select_rows_forward(const Tensor& keep, const Tensor& a, const Tensor& b) {
  require_cuda({&keep, &a, &b}, "select_rows_forward");
  Tensor out = Tensor::empty(a.shape(), Device::cuda);
  const int64_t rows = keep.numel();
  if (out.numel() == 0) return out;
  const int64_t w = out.numel() / rows;
  const RowLaunch l = row_launch(rows, w);
  select_rows_kernel<<<l.grid, l.block, 0, stream()>>>(keep.f32(), a.f32(), b.f32(), out.f32(),
                                                       rows, w);
  MARE_LAUNCH_CHECK("select_rows_kernel");
  return out;
}

void select_rows_backward(Tensor& d_a, Tensor& d_b, const Tensor& d_out, const Tensor& keep) {
  require_cuda({&d_a, &d_b, &d_out, &keep}, "select_rows_backward");
  const int64_t rows = keep.numel();
  if (d_out.numel() == 0 || (!d_a.defined() && !d_b.defined())) return;
  const int64_t w = d_out.numel() / rows;
  const RowLaunch l = row_launch(rows, w);
  select_rows_grad_kernel<<<l.grid, l.block, 0, stream()>>>(
      keep.f32(), d_out.f32(), ptr_or_null(d_a), ptr_or_null(d_b), rows, w);
  MARE_LAUNCH_CHECK("select_rows_grad_kernel");
}

Tensor scale_rows_forward(const Tensor& x, const Tensor& s) {
  require_cuda({&x, &s}, "scale_rows_forward");
  Tensor out = Tensor::empty(x.shape(), Device::cuda);
  const int64_t rows = s.numel();
  if (out.numel() == 0) return out;
  const int64_t w = out.numel() / rows;
  const RowLaunch l = row_launch(rows, w);
  scale_rows_kernel<<<l.grid, l.block, 0, stream()>>>(x.f32(), s.f32(), out.f32(), rows, w);
  MARE_LAUNCH_CHECK("scale_rows_kernel");
  return out;
}

void scale_rows_backward(Tensor& d_x, Tensor& d_s, const Tensor& d_out, const Tensor& x,
                         const Tensor& s) {
  require_cuda({&d_x, &d_s, &d_out, &x, &s}, "scale_rows_backward");
  const int64_t rows = s.numel();
  if (d_out.numel() == 0) return;  // no element: every gradient gets + 0
  const int64_t w = d_out.numel() / rows;
  if (d_x.defined()) {
    const RowLaunch l = row_launch(rows, w);
    scale_rows_grad_x_kernel<<<l.grid, l.block, 0, stream()>>>(d_x.f32(), d_out.f32(), s.f32(),
                                                               rows, w);
    MARE_LAUNCH_CHECK("scale_rows_grad_x_kernel");
  }
  if (d_s.defined()) {
    // A warp a row: kThreads / 32 rows a block.
    scale_rows_grad_s_kernel<<<blocks_for(rows, kThreads / 32), kThreads, 0, stream()>>>(
        d_s.f32(), d_out.f32(), x.f32(), rows, w);
    MARE_LAUNCH_CHECK("scale_rows_grad_s_kernel");
  }
}

Tensor scale_forward(const Tensor& x, float s) {
  return map_unary(x, "scale_forward", ScaleOp{s});
}
void scale_backward(Tensor& d_x, const Tensor& d_out, float s) {
  require_cuda({&d_x, &d_out}, "scale_backward");
  accumulate(d_x, d_out, s);
}

// The launchers of a pointwise op: forward y = Op(x); backward d_x += Grad(d_out, saved),
// with `saved` the tensor the CPU op's backward takes (x, or y for sigmoid and tanh).
#define MARE_CUDA_POINTWISE(op, Op, Grad, saved)                              \
  Tensor op##_forward(const Tensor& x) {                                      \
    return map_unary(x, #op "_forward", Op{});                                \
  }                                                                           \
  void op##_backward(Tensor& d_x, const Tensor& d_out, const Tensor& saved) { \
    accumulate_unary(d_x, d_out, saved, #op "_backward", Grad{});             \
  }

MARE_CUDA_POINTWISE(relu, ReluOp, ReluGrad, x)
MARE_CUDA_POINTWISE(relu6, Relu6Op, Relu6Grad, x)
MARE_CUDA_POINTWISE(sigmoid, SigmoidOp, SigmoidGrad, out)
MARE_CUDA_POINTWISE(tanh, TanhOp, TanhGrad, out)
MARE_CUDA_POINTWISE(oneplus, OneplusOp, OneplusGrad, x)
MARE_CUDA_POINTWISE(hard_sigmoid, HardSigmoidOp, HardSigmoidGrad, x)
#undef MARE_CUDA_POINTWISE

DropoutResult dropout_forward(const Tensor& x, float p, uint64_t seed, uint32_t stream,
                              uint64_t offset) {
  require_cuda({&x}, "dropout_forward");
  DropoutResult r{Tensor::empty(x.shape(), Device::cuda), Tensor::empty(x.shape(), Device::cuda)};
  const float keep_scale = 1.0f / (1.0f - p);  // on the host, exactly as the CPU
  int64_t n = x.numel();
  if (n == 0) return r;
  launch("dropout_kernel", n, dropout_kernel, x.f32(), r.out.f32(), r.mask.f32(), n, p, keep_scale,
         seed, stream, offset);
  return r;
}

void dropout_backward(Tensor& d_x, const Tensor& d_out, const Tensor& mask) {
  accumulate_unary(d_x, d_out, mask, "dropout_backward", IdentityGrad{});
}

}  // namespace mare::cuda
