// conv1d and depthwise conv1d ("same" padding over the sequence axis, layout
// [B, I, C], odd kernel size K) on the GPU, mirroring kernels/ops/conv.cpp.
//
// conv1d is im2col + one cuBLAS GEMM. Row r = b·I + i of the column matrix
// cols [B·I, K·Cin] holds the K input rows position i sees, zeros past the
// ends:  cols[r, k·Cin + c] = x[b, i + k − K/2, c].  The weight [K, Cin, Cout]
// is already the matrix [K·Cin, Cout], so
//   out   = cols · w (+ bias),
//   d_w  += colsᵀ · d_out,
//   dcols = d_out · wᵀ, and d_x[b, s, c] += Σ_k dcols[b·I + s − k + K/2, k·Cin + c]
// (col2im, a gather: one thread per d_x element adds its taps in k order, as
// the CPU adds tap by tap). With K = 1, cols is x itself and d_x takes the GEMM
// directly (beta = 1).
//
// depthwise conv1d is direct: one thread per output element loops over the
// taps. Reductions over the B·I rows (d_bias, depthwise d_w) are the two passes
// of kernels/cuda/column_sums.cuh in float, as the CPU sums them; depthwise d_w's
// pass 1 is its own kernel (a product per row), over the same chunks.
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

// ------------------------------------------------------------------ kernels
// File-local (internal linkage): other family files define kernels of the same names.
namespace {

// cols [B·len, K·cin]: cols[r, k·cin + c] = x[b, i + k − K/2, c] or 0 past the ends.
// A row launch over [rows, cin] (row_launch).
__global__ void im2col_kernel(const float* __restrict__ x, float* __restrict__ cols, int64_t rows,
                              int64_t len, int64_t cin, int64_t kernel) {
  const int64_t width = kernel * cin;
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const int64_t n = r / len, i = r % len;
    float* out = cols + r * width;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t src = i + k - kernel / 2;
      const bool inside = src >= 0 && src < len;
      const float* in = x + (n * len + (inside ? src : 0)) * cin;
      for (int64_t c = launch_col_begin(); c < cin; c += launch_col_step())
        out[k * cin + c] = inside ? in[c] : 0.0f;
    }
  }
}

// d_x[b, s, c] += Σ_k dcols[b·len + i, k·cin + c] over the taps with i = s − k + K/2 in range.
// A row launch over [rows, cin].
__global__ void col2im_add_kernel(const float* __restrict__ dcols, float* __restrict__ d_x,
                                  int64_t rows, int64_t len, int64_t cin, int64_t kernel) {
  const int64_t width = kernel * cin;
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const int64_t n = r / len, s = r % len;
    for (int64_t c = launch_col_begin(); c < cin; c += launch_col_step()) {
      float acc = d_x[r * cin + c];
      for (int64_t k = 0; k < kernel; ++k) {
        const int64_t i = s - k + kernel / 2;
        if (i < 0 || i >= len) continue;
        acc += dcols[(n * len + i) * width + k * cin + c];
      }
      d_x[r * cin + c] = acc;
    }
  }
}

// out [rows, cols] += bias [cols] on every row (a row launch).
__global__ void add_bias_rows_kernel(float* __restrict__ out, const float* __restrict__ bias,
                                     int64_t rows, int64_t cols) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step())
    for (int64_t j = launch_col_begin(); j < cols; j += launch_col_step())
      out[r * cols + j] += bias[j];
}

// out[b, i, c] = bias[c] + Σ_k x[b, i + k − K/2, c] · w[k, c]   (a row launch over [rows, c])
__global__ void depthwise_forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, float* __restrict__ out,
                                         int64_t rows, int64_t len, int64_t c, int64_t kernel) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const int64_t n = r / len, i = r % len;
    for (int64_t j = launch_col_begin(); j < c; j += launch_col_step()) {
      float o = bias ? bias[j] : 0.0f;
      for (int64_t k = 0; k < kernel; ++k) {
        const int64_t src = i + k - kernel / 2;
        if (src < 0 || src >= len) continue;
        o += x[(n * len + src) * c + j] * w[k * c + j];
      }
      out[r * c + j] = o;
    }
  }
}

// d_x[b, s, c] += Σ_k d_out[b, s − k + K/2, c] · w[k, c]; k descending, so the
// output rows i = s − k + K/2 come in increasing order as on the CPU. A row launch over [rows, c].
__global__ void depthwise_backward_x_kernel(const float* __restrict__ g,
                                            const float* __restrict__ w, float* __restrict__ d_x,
                                            int64_t rows, int64_t len, int64_t c, int64_t kernel) {
  for (int64_t r = launch_row_begin(); r < rows; r += launch_row_step()) {
    const int64_t n = r / len, s = r % len;
    for (int64_t j = launch_col_begin(); j < c; j += launch_col_step()) {
      float acc = d_x[r * c + j];
      for (int64_t k = kernel - 1; k >= 0; --k) {
        const int64_t i = s - k + kernel / 2;
        if (i < 0 || i >= len) continue;
        acc += g[(n * len + i) * c + j] * w[k * c + j];
      }
      d_x[r * c + j] = acc;
    }
  }
}

// partial[chunk, k, c] = Σ over the chunk's rows r = b·len + i (in order) of
// d_out[r, c] · x[b, i + k − K/2, c], taps past the ends skipped.
__global__ void depthwise_backward_w_partial_kernel(const float* __restrict__ g,
                                                    const float* __restrict__ x,
                                                    float* __restrict__ partial, int64_t rows,
                                                    int64_t len, int64_t c, int64_t kernel,
                                                    int64_t chunks) {
  int64_t cols = kernel * c, total = chunks * cols;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t chunk = t / cols, kc = t % cols, k = kc / c, j = kc % c;
    int64_t shift = k - kernel / 2, end = min(rows, (chunk + 1) * kColumnChunkRows);
    float acc = 0.0f;
    // i: r's position in its sequence, stepped along instead of divided out for every row.
    int64_t i = (chunk * kColumnChunkRows) % len;
    for (int64_t r = chunk * kColumnChunkRows; r < end; ++r, i = i + 1 == len ? 0 : i + 1) {
      const int64_t src = i + shift;
      if (src < 0 || src >= len) continue;
      acc += g[r * c + j] * x[(r + shift) * c + j];
    }
    partial[t] = acc;
  }
}

}  // namespace

// ------------------------------------------------------------------ launchers
namespace {

// The column matrix of x [B, len, cin] for a kernel of size K, in `ws` (or x itself when K = 1).
const float* im2col(const Tensor& x, int64_t kernel, Workspace& ws) {
  if (kernel == 1) return x.f32();
  int64_t rows = x.dim(0) * x.dim(1), len = x.dim(1), cin = x.dim(2), total = rows * kernel * cin;
  if (total == 0) return ws.as<float>();
  const RowLaunch l = row_launch(rows, cin);
  im2col_kernel<<<l.grid, l.block, 0, stream()>>>(x.f32(), ws.as<float>(), rows, len, cin, kernel);
  MARE_LAUNCH_CHECK("im2col_kernel");
  return ws.as<float>();
}

size_t cols_bytes(const Tensor& x, int64_t kernel) {
  return kernel == 1 ? 0 : static_cast<size_t>(x.numel() * kernel) * sizeof(float);
}

}  // namespace

Tensor conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  require_cuda({&x, &w, &bias}, "conv1d_forward");
  int64_t b = x.dim(0), len = x.dim(1), cin = x.dim(2), kernel = w.dim(0), cout = w.dim(2);
  int64_t rows = b * len, width = kernel * cin;
  Tensor out = Tensor::empty({b, len, cout}, Device::cuda);
  if (out.numel() == 0) return out;
  Workspace ws(cols_bytes(x, kernel));
  const float* cols = im2col(x, kernel, ws);
  // out [rows, cout] = cols [rows, K·cin] · w [K·cin, cout]
  gemm_row_major(false, false, rows, cout, width, 1.0f, cols, width, 0, w.f32(), cout, 0, 0.0f,
                 out.f32(), cout, 0, 1);
  if (bias.defined()) {
    const RowLaunch l = row_launch(rows, cout);
    add_bias_rows_kernel<<<l.grid, l.block, 0, stream()>>>(out.f32(), bias.f32(), rows, cout);
    MARE_LAUNCH_CHECK("add_bias_rows_kernel");
  }
  return out;
}

void conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out, const Tensor& x,
                     const Tensor& w) {
  require_cuda({&d_x, &d_w, &d_bias, &d_out, &x, &w}, "conv1d_backward");
  check_rank(x, 3, "conv1d_backward: x");
  check_rank(w, 3, "conv1d_backward: w");
  int64_t b = x.dim(0), len = x.dim(1), cin = x.dim(2), kernel = w.dim(0), cout = w.dim(2);
  // Checked by the CPU entry point too; kept here because the GEMMs below would read past w.
  if (w.dim(1) != cin)
    throw ShapeError("conv1d_backward: w " + w.shape().str() + " does not match x " +
                     x.shape().str());
  int64_t rows = b * len, width = kernel * cin;
  if (d_w.defined()) {
    // d_w [K·cin, cout] += colsᵀ · d_out [rows, cout]
    Workspace ws(cols_bytes(x, kernel));
    const float* cols = im2col(x, kernel, ws);
    gemm_row_major(true, false, width, cout, rows, 1.0f, cols, width, 0, d_out.f32(), cout, 0, 1.0f,
                   d_w.f32(), cout, 0, 1);
  }
  if (d_x.defined()) {
    if (kernel == 1) {
      // d_x [rows, cin] += d_out [rows, cout] · w [cin, cout]ᵀ
      gemm_row_major(false, true, rows, cin, cout, 1.0f, d_out.f32(), cout, 0, w.f32(), cout, 0,
                     1.0f, d_x.f32(), cin, 0, 1);
    } else if (rows * cin > 0) {
      // dcols [rows, K·cin] = d_out · wᵀ, then the taps gathered into d_x.
      Workspace dcols(static_cast<size_t>(rows * width) * sizeof(float));
      gemm_row_major(false, true, rows, width, cout, 1.0f, d_out.f32(), cout, 0, w.f32(), cout, 0,
                     0.0f, dcols.as<float>(), width, 0, 1);
      const RowLaunch l = row_launch(rows, cin);
      col2im_add_kernel<<<l.grid, l.block, 0, stream()>>>(dcols.as<float>(), d_x.f32(), rows, len,
                                                          cin, kernel);
      MARE_LAUNCH_CHECK("col2im_add_kernel");
    }
  }
  if (d_bias.defined()) add_column_sums<float>(d_bias.f32(), d_out.f32(), rows, cout);
}

Tensor depthwise_conv1d_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  require_cuda({&x, &w, &bias}, "depthwise_conv1d_forward");
  int64_t b = x.dim(0), len = x.dim(1), c = x.dim(2), kernel = w.dim(0), rows = b * len;
  Tensor out = Tensor::empty({b, len, c}, Device::cuda);
  if (out.numel() == 0) return out;
  const RowLaunch l = row_launch(rows, c);
  depthwise_forward_kernel<<<l.grid, l.block, 0, stream()>>>(x.f32(), w.f32(), ptr_or_null(bias),
                                                             out.f32(), rows, len, c, kernel);
  MARE_LAUNCH_CHECK("depthwise_forward_kernel");
  return out;
}

void depthwise_conv1d_backward(Tensor& d_x, Tensor& d_w, Tensor& d_bias, const Tensor& d_out,
                               const Tensor& x, const Tensor& w) {
  require_cuda({&d_x, &d_w, &d_bias, &d_out, &x, &w}, "depthwise_conv1d_backward");
  check_rank(x, 3, "depthwise_conv1d_backward: x");
  check_rank(w, 2, "depthwise_conv1d_backward: w");
  int64_t b = x.dim(0), len = x.dim(1), c = x.dim(2), kernel = w.dim(0), rows = b * len;
  // Checked by the CPU entry point too; kept here because the kernels below would read past w.
  check_shape(w, {kernel, c}, "depthwise_conv1d_backward: w");
  if (rows * c == 0) return;  // nothing flows: every gradient gets + 0
  if (d_bias.defined()) add_column_sums<float>(d_bias.f32(), d_out.f32(), rows, c);
  if (d_x.defined()) {
    const RowLaunch l = row_launch(rows, c);
    depthwise_backward_x_kernel<<<l.grid, l.block, 0, stream()>>>(d_out.f32(), w.f32(), d_x.f32(),
                                                                  rows, len, c, kernel);
    MARE_LAUNCH_CHECK("depthwise_backward_x_kernel");
  }
  if (d_w.defined()) {
    int64_t chunks = column_chunks(rows), cols = kernel * c;
    Workspace partial(static_cast<size_t>(chunks * cols) * sizeof(float));
    launch("depthwise_backward_w_partial_kernel", chunks * cols,
           depthwise_backward_w_partial_kernel, d_out.f32(), x.f32(), partial.as<float>(), rows,
           len, c, kernel, chunks);
    launch("add_chunk_sums_kernel", cols, add_chunk_sums_kernel<float>, d_w.f32(),
           partial.as<float>(), chunks, cols);
  }
}

}  // namespace mare::cuda
