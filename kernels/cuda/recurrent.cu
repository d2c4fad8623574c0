// The recurrent cells on the GPU: the GRPU cell (kernels/ops/grpu.h, SPEC §4.6),
// the GRU cell (the GRPU cell without machine fields) and the LSTM cell
// (kernels/ops/recurrent.h). Each launcher mirrors its CPU reference
// (kernels/ops/grpu.cpp, kernels/ops/recurrent.cpp) step by step and saves the
// same tensors in the result structs.
//
// Design:
// - The products with the weights are cuBLAS SGEMMs through `gemm_rm`, a
//   row-major wrapper (row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so the
//   operands are swapped). The joined input a = [x, h] is never built: its two
//   column blocks multiply the matching row blocks of W, i.e.
//   a·W = x·W[:I] + h·W[I:] (the second GEMM accumulates with beta = 1), and the
//   gradients follow the same split: d_W[:I] += xᵀ·d_z, d_W[I:] += hᵀ·d_z,
//   d_x += d_z·W[:I]ᵀ, d_h += d_z·W[I:]ᵀ, all with beta = 1 straight into the
//   gradient tensors. The controller part h^c of the GRPU state is read in place
//   as the first H columns of h_prev (leading dimension S).
// - Elementwise kernels, one thread per output element (grid-stride loops), do
//   the gates, the candidate, the update and their derivatives. The GRPU's
//   machine (at most four fields, coupled through the sum, the product and the
//   conditional) is one thread per batch row looping over its fields in the CPU
//   code's order; the product's gradient uses prefix and suffix products as on
//   the CPU, so a zero factor gives no NaN.
// - Bias gradients are column sums in a fixed order: one thread per column
//   looping over the batch rows in order. No floating-point atomics anywhere.
// - Rows whose mask is 0 keep their state in forward and pass d_h (and d_c)
//   straight to d_h_prev (d_c_prev) in backward; their pre-activation gradients
//   are written as 0, so the GEMMs add nothing for them.
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace mare::cuda {

namespace {

// GrpuConfig in the form the kernels take (plain values).
struct Alu {
  int h = 0, k = 0, s = 0;  // controller size, machine fields, state size h + k
  int iv = 0;               // machine inputs per row (columns of x_vm)
  int prod_field = -1, cond_field = -1;
  bool neutral_code = true;  // NeutralOne::code
  float clip = 500.0f, cond_eps = 1e-6f;
};

// ------------------------------------------------------------------ kernels
__device__ __forceinline__ float sigmoid(float z) {
  return 1.0f / (1.0f + expf(-z));
}

__device__ __forceinline__ bool row_active(const float* mask, int b) {
  return mask == nullptr || mask[b] != 0.0f;
}

#define MARE_GRID_STRIDE(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

// x: [rows, cols] ← σ(x + bias[col]).
__global__ void sigmoid_bias_kernel(float* __restrict__ x, const float* __restrict__ bias, int rows,
                                    int cols) {
  MARE_GRID_STRIDE(idx, int64_t(rows) * cols) {
    int j = static_cast<int>(idx % cols);
    x[idx] = sigmoid(x[idx] + bias[j]);
  }
}

// rh: [B, H] = r^c ⊙ h^c, with r^c the first H gate columns (gates: [B, 2S])
// and h^c the first H state columns (h_prev: [B, S]).
__global__ void reset_hidden_kernel(float* __restrict__ rh, const float* __restrict__ h_prev,
                                    const float* __restrict__ gates, int B, int H, int S) {
  MARE_GRID_STRIDE(idx, int64_t(B) * H) {
    int b = static_cast<int>(idx / H), j = static_cast<int>(idx % H);
    rh[idx] = h_prev[int64_t(b) * S + j] * gates[int64_t(b) * 2 * S + j];
  }
}

// The ALU (eq. 4.8), one thread per row: args p = h^vm_{t−1} with p[read] = x_vm[0],
// machine m (pre-clip) and the machine part of the candidate (after the clip).
// h_prev: [B, S], x_vm: [B, iv], gates: [B, 2S], args, machine: [B, K], cand: [B, S].
__global__ void grpu_machine_forward_kernel(float* __restrict__ args, float* __restrict__ machine,
                                            float* __restrict__ cand,
                                            const float* __restrict__ h_prev,
                                            const float* __restrict__ x_vm,
                                            const float* __restrict__ gates, int B, Alu alu) {
  const int H = alu.h, K = alu.k, S = alu.s;
  MARE_GRID_STRIDE(row, B) {
    const int b = static_cast<int>(row);
    const float* r = gates + int64_t(b) * 2 * S + H;  // r^vm
    const float* xv = x_vm + int64_t(b) * alu.iv;
    float p[kGrpuMaxFields], m[kGrpuMaxFields];
    for (int k = 0; k < K; ++k) p[k] = h_prev[int64_t(b) * S + H + k];
    p[0] = xv[0];  // read runs first
    m[0] = xv[0];
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += grpu_neutral_zero(p[k], r[k]);
    m[1] = sum;  // the sum field
    if (alu.prod_field >= 0) {
      float prod = 1.0f;
      for (int k = 0; k < K; ++k) prod *= grpu_neutral_one(p[k], r[k], alu.neutral_code);
      m[alu.prod_field] = prod;
    }
    if (alu.cond_field >= 0) {
      float dist = fabsf(xv[1] - 1.0f);
      m[alu.cond_field] = 1.0f - dist / (dist + alu.cond_eps);
    }
    for (int k = 0; k < K; ++k) {
      args[int64_t(b) * K + k] = p[k];
      machine[int64_t(b) * K + k] = m[k];
      cand[int64_t(b) * S + H + k] = fminf(fmaxf(m[k], -alu.clip), alu.clip);
    }
  }
}

// One element (b, j) of [B, S]: the controller candidate tanh(zc + b_cand) for
// j < H (the machine part of cand is already there), the final update gate u
// (the conditional, eq. 4.19, on the non-cond machine fields) and
// h = (1 − u) h_prev + u h̃ on active rows, h_prev on masked ones (eq. 4.9).
// zc: [B, H], b_cand: [H], gates: [B, 2S], h_prev, cand, u, h: [B, S], mask: [B] or null.
__global__ void grpu_update_kernel(float* __restrict__ h, float* __restrict__ u,
                                   float* __restrict__ cand, const float* __restrict__ zc,
                                   const float* __restrict__ b_cand,
                                   const float* __restrict__ gates,
                                   const float* __restrict__ h_prev, const float* __restrict__ mask,
                                   int B, Alu alu) {
  const int H = alu.h, S = alu.s;
  MARE_GRID_STRIDE(idx, int64_t(B) * S) {
    const int b = static_cast<int>(idx / S), j = static_cast<int>(idx % S);
    const float* gb = gates + int64_t(b) * 2 * S;
    float c;
    if (j < H) {
      c = tanhf(zc[int64_t(b) * H + j] + b_cand[j]);
      cand[idx] = c;
    } else {
      c = cand[idx];
    }
    float uj = gb[S + j];
    if (alu.cond_field >= 0 && j >= H && j - H != alu.cond_field) {
      const int cf = H + alu.cond_field;
      uj = grpu_cond_gate(gb[S + j], gb[S + cf], cand[int64_t(b) * S + cf]);
    }
    u[idx] = uj;
    const float prev = h_prev[idx];
    h[idx] = row_active(mask, b) ? (1.0f - uj) * prev + uj * c : prev;
  }
}

// Backward through the update for the controller fields j < H, one element of [B, H]:
// d_h_prev += (1 − u) d_h (d_h on masked rows), the update-gate gradient into
// d_z[S + j], the tanh gradient into d_zc, and d_z[j] = 0 (the reset gradient,
// added later from the candidate GEMM). d_z: [B, 2S], d_zc: [B, H], d_h_prev may be null.
__global__ void grpu_controller_backward_kernel(
    float* __restrict__ d_z, float* __restrict__ d_zc, float* __restrict__ d_h_prev,
    const float* __restrict__ d_h, const float* __restrict__ h_prev, const float* __restrict__ u,
    const float* __restrict__ cand, const float* __restrict__ mask, int B, int H, int S) {
  MARE_GRID_STRIDE(idx, int64_t(B) * H) {
    const int b = static_cast<int>(idx / H), j = static_cast<int>(idx % H);
    const int64_t e = int64_t(b) * S + j;  // element of [B, S]
    float* dzb = d_z + int64_t(b) * 2 * S;
    const float dh = d_h[e];
    dzb[j] = 0.0f;
    if (!row_active(mask, b)) {
      if (d_h_prev) d_h_prev[e] += dh;
      dzb[S + j] = 0.0f;
      d_zc[idx] = 0.0f;
      continue;
    }
    const float uj = u[e], c = cand[e];
    if (d_h_prev) d_h_prev[e] += (1.0f - uj) * dh;
    dzb[S + j] = dh * (c - h_prev[e]);  // d_u0 = d_u: the conditional gates machine fields only
    const float d_cand = dh * uj;
    d_zc[idx] = d_cand * (1.0f - c * c);
  }
}

// Backward through the update, the conditional and the ALU for the machine
// fields, one thread per row: writes d_z[S + H + k] (update gates, before the
// sigmoid factor), d_z[H + k] (r^vm) and accumulates d_h_prev[H + k] (the update
// and the arguments that were previous fields; p[0] is data).
__global__ void grpu_machine_backward_kernel(
    float* __restrict__ d_z, float* __restrict__ d_h_prev, const float* __restrict__ d_h,
    const float* __restrict__ h_prev, const float* __restrict__ gates, const float* __restrict__ u,
    const float* __restrict__ cand, const float* __restrict__ machine,
    const float* __restrict__ args, const float* __restrict__ mask, int B, Alu alu) {
  const int H = alu.h, K = alu.k, S = alu.s;
  MARE_GRID_STRIDE(row, B) {
    const int b = static_cast<int>(row);
    const int64_t o = int64_t(b) * S + H;  // first machine element of the row in [B, S]
    float* dzb = d_z + int64_t(b) * 2 * S;
    if (!row_active(mask, b)) {
      for (int k = 0; k < K; ++k) {
        if (d_h_prev) d_h_prev[o + k] += d_h[o + k];
        dzb[H + k] = 0.0f;
        dzb[S + H + k] = 0.0f;
      }
      continue;
    }
    const float* gb = gates + int64_t(b) * 2 * S;
    // h = (1 − u) h_prev + u h̃
    float d_u[kGrpuMaxFields], d_cand[kGrpuMaxFields], d_u0[kGrpuMaxFields];
    for (int k = 0; k < K; ++k) {
      const float dh = d_h[o + k], uk = u[o + k];
      if (d_h_prev) d_h_prev[o + k] += (1.0f - uk) * dh;
      d_u[k] = dh * (cand[o + k] - h_prev[o + k]);
      d_cand[k] = dh * uk;
      d_u0[k] = d_u[k];
    }
    // The conditional: u_k = u0_k · (1 + u0_c (h̃_c − 1)); h̃_c depends on data only.
    if (alu.cond_field >= 0) {
      const int c = alu.cond_field;
      const float uc = gb[S + H + c], hc = cand[o + c];
      const float f = 1.0f + uc * (hc - 1.0f);
      for (int k = 0; k < K; ++k) {
        if (k == c) continue;
        d_u0[k] = d_u[k] * f;
        d_u0[c] += d_u[k] * gb[S + H + k] * (hc - 1.0f);
      }
    }
    for (int k = 0; k < K; ++k) dzb[S + H + k] = d_u0[k];  // sigmoid factor applied later
    // The ALU: gradient into r^vm and into the arguments.
    const float* r = gb + H;
    const float* p = args + int64_t(b) * K;
    const float* m = machine + int64_t(b) * K;
    float d_m[kGrpuMaxFields], d_p[kGrpuMaxFields], d_r[kGrpuMaxFields];
    for (int k = 0; k < K; ++k) {
      d_m[k] = (m[k] >= -alu.clip && m[k] <= alu.clip) ? d_cand[k] : 0.0f;
      d_p[k] = 0.0f;
      d_r[k] = 0.0f;
    }
    const float ds = d_m[1];  // the sum field
    for (int k = 0; k < K; ++k) {
      d_p[k] += ds * r[k];
      d_r[k] += ds * p[k];
    }
    if (alu.prod_field >= 0)
      grpu_prod_backward(d_m[alu.prod_field], p, r, K, alu.neutral_code, d_p, d_r);
    // p[0] is the machine input (data); the other arguments are the previous fields.
    if (d_h_prev)
      for (int k = 1; k < K; ++k) d_h_prev[o + k] += d_p[k];
    for (int k = 0; k < K; ++k) dzb[H + k] = d_r[k];
  }
}

// One element (b, j) of d_z [B, 2S]: for the reset entries of the controller
// (j < H) add the candidate path, d_z += dv · h^c with dv the gradient of
// r^c ⊙ h^c ([B, H]), and d_h_prev += dv · r^c; then every entry takes the
// sigmoid factor g (1 − g).
__global__ void grpu_gate_backward_kernel(float* __restrict__ d_z, float* __restrict__ d_h_prev,
                                          const float* __restrict__ dv,
                                          const float* __restrict__ h_prev,
                                          const float* __restrict__ gates, int B, int H, int S) {
  MARE_GRID_STRIDE(idx, int64_t(B) * 2 * S) {
    const int b = static_cast<int>(idx / (2 * S)), j = static_cast<int>(idx % (2 * S));
    const float g = gates[idx];
    float dz = d_z[idx];
    if (j < H) {
      const float d = dv[int64_t(b) * H + j];
      dz += d * h_prev[int64_t(b) * S + j];
      if (d_h_prev) d_h_prev[int64_t(b) * S + j] += d * g;
    }
    d_z[idx] = dz * (g * (1.0f - g));
  }
}

// LSTM forward, one element (b, j) of [B, H]: the four gates i, f, g, o of column
// j get their activations in place (gates: [B, 4H], pre-activations on entry),
// then c = f c_prev + i g, tanh(c), and h = o tanh(c) on active rows.
__global__ void lstm_forward_kernel(float* __restrict__ h, float* __restrict__ c,
                                    float* __restrict__ tanh_c, float* __restrict__ gates,
                                    const float* __restrict__ bias,
                                    const float* __restrict__ h_prev,
                                    const float* __restrict__ c_prev,
                                    const float* __restrict__ mask, int B, int H) {
  MARE_GRID_STRIDE(idx, int64_t(B) * H) {
    const int b = static_cast<int>(idx / H), j = static_cast<int>(idx % H);
    float* gr = gates + int64_t(b) * 4 * H;
    const float i = sigmoid(gr[j] + bias[j]);
    const float f = sigmoid(gr[H + j] + bias[H + j]);
    const float g = tanhf(gr[2 * H + j] + bias[2 * H + j]);
    const float o = sigmoid(gr[3 * H + j] + bias[3 * H + j]);
    gr[j] = i;
    gr[H + j] = f;
    gr[2 * H + j] = g;
    gr[3 * H + j] = o;
    const float cv = f * c_prev[idx] + i * g;
    const float tc = tanhf(cv);
    tanh_c[idx] = tc;
    const bool active = row_active(mask, b);
    c[idx] = active ? cv : c_prev[idx];
    h[idx] = active ? o * tc : h_prev[idx];
  }
}

// LSTM backward, one element (b, j) of [B, H]: the four pre-activation
// gradients of column j into d_z [B, 4H] (0 on masked rows), d_c_prev += dc · f;
// masked rows pass d_h and d_c straight through. d_c, d_h_prev, d_c_prev may be null.
__global__ void lstm_backward_kernel(float* __restrict__ d_z, float* __restrict__ d_h_prev,
                                     float* __restrict__ d_c_prev, const float* __restrict__ d_h,
                                     const float* __restrict__ d_c, const float* __restrict__ gates,
                                     const float* __restrict__ tanh_c,
                                     const float* __restrict__ c_prev,
                                     const float* __restrict__ mask, int B, int H) {
  MARE_GRID_STRIDE(idx, int64_t(B) * H) {
    const int b = static_cast<int>(idx / H), j = static_cast<int>(idx % H);
    float* dz = d_z + int64_t(b) * 4 * H;
    if (!row_active(mask, b)) {
      if (d_h_prev) d_h_prev[idx] += d_h[idx];
      if (d_c_prev && d_c) d_c_prev[idx] += d_c[idx];
      dz[j] = dz[H + j] = dz[2 * H + j] = dz[3 * H + j] = 0.0f;
      continue;
    }
    const float* gr = gates + int64_t(b) * 4 * H;
    const float i = gr[j], f = gr[H + j], g = gr[2 * H + j], o = gr[3 * H + j];
    const float tc = tanh_c[idx];
    const float dhv = d_h[idx];
    const float dcv = (d_c ? d_c[idx] : 0.0f) + dhv * o * (1.0f - tc * tc);
    if (d_c_prev) d_c_prev[idx] += dcv * f;
    dz[j] = dcv * g * i * (1.0f - i);
    dz[H + j] = dcv * c_prev[idx] * f * (1.0f - f);
    dz[2 * H + j] = dcv * i * (1.0f - g * g);
    dz[3 * H + j] = dhv * tc * o * (1.0f - o);
  }
}

// Bias gradient: d_bias[j] += Σ_b d_z[b, j], one thread per column, rows in order.
// accumulate_in_place: d_bias[j] += d_z[0, j], += d_z[1, j], ... (the GRPU's CPU
// loop); otherwise the column is summed first and then added (the LSTM's
// colwise().sum()).
__global__ void column_sum_add_kernel(float* __restrict__ d_bias, const float* __restrict__ d_z,
                                      int rows, int cols, bool accumulate_in_place) {
  MARE_GRID_STRIDE(col, cols) {
    float acc = accumulate_in_place ? d_bias[col] : 0.0f;
    for (int b = 0; b < rows; ++b) acc += d_z[int64_t(b) * cols + col];
    d_bias[col] = accumulate_in_place ? acc : d_bias[col] + acc;
  }
}

#undef MARE_GRID_STRIDE

// ------------------------------------------------------------------ launchers

// gemm_row_major (common.cuh) on one matrix triple.
void gemm_rm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
             const float* b, int ldb, float beta, float* c, int ldc) {
  gemm_row_major(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

Alu alu_of(const GrpuConfig& cfg, int64_t h) {
  Alu alu;
  alu.h = to_int(h, "grpu_cell controller size");
  alu.k = static_cast<int>(cfg.fields());
  alu.s = alu.h + alu.k;
  alu.iv = static_cast<int>(cfg.machine_inputs());
  alu.prod_field = static_cast<int>(cfg.prod_field());
  alu.cond_field = static_cast<int>(cfg.cond_field());
  alu.neutral_code = cfg.neutral_one == NeutralOne::code;
  alu.clip = cfg.clip;
  alu.cond_eps = cfg.cond_eps;
  if (alu.k > kGrpuMaxFields)
    throw std::invalid_argument("grpu_cell: more than four machine fields");
  return alu;
}

// The cell's sizes (batch, input, state) and its ALU, checked to fit the kernels' int indices.
struct GrpuSizes {
  int B, Ic, S;
  Alu alu;
};
GrpuSizes grpu_sizes(const Tensor& x_c, const Tensor& h_prev, const GrpuConfig& cfg) {
  const int B = to_int(x_c.dim(0), "grpu_cell batch"), Ic = to_int(x_c.dim(1), "grpu_cell x_c");
  const int S = to_int(h_prev.dim(1), "grpu_cell state");
  const Alu alu = alu_of(cfg, S - cfg.fields());
  to_int(int64_t(B) * 2 * S, "grpu_cell gates");
  to_int(int64_t(Ic + alu.h) * 2 * S, "grpu_cell w_gates");
  return {B, Ic, S, alu};
}

}  // namespace

GrpuCellResult grpu_cell_forward(const Tensor& x_c, const Tensor& x_vm, const Tensor& h_prev,
                                 const Tensor& w_gates, const Tensor& b_gates, const Tensor& w_cand,
                                 const Tensor& b_cand, const Tensor& mask, const GrpuConfig& cfg) {
  require_cuda({&x_c, &x_vm, &h_prev, &w_gates, &b_gates, &w_cand, &b_cand, &mask},
               "grpu_cell_forward");
  const auto [B, Ic, S, alu] = grpu_sizes(x_c, h_prev, cfg);
  const int H = alu.h, K = alu.k;

  GrpuCellResult out;
  out.h = Tensor::empty({B, S}, Device::cuda);
  out.gates = Tensor::empty({B, 2 * S}, Device::cuda);
  out.cand = Tensor::empty({B, S}, Device::cuda);
  out.machine = Tensor::empty({B, K}, Device::cuda);
  out.args = Tensor::empty({B, K}, Device::cuda);
  out.u = Tensor::empty({B, S}, Device::cuda);
  if (B == 0 || S == 0) return out;

  const float* x = ptr_or_null(x_c);
  const float* hp = h_prev.f32();
  const float* wg = w_gates.f32();
  const float* wc = w_cand.f32();
  float* g = out.gates.f32();

  // Gates (eqs. 4.5, 4.6): [x_c, h^c] · W_g = x_c · W_g[:Ic] + h^c · W_g[Ic:].
  gemm_rm(false, false, B, 2 * S, Ic, 1.0f, x, Ic, wg, 2 * S, 0.0f, g, 2 * S);
  gemm_rm(false, false, B, 2 * S, H, 1.0f, hp, S, wg + int64_t(Ic) * 2 * S, 2 * S, 1.0f, g, 2 * S);
  launch("sigmoid_bias_kernel", int64_t(B) * 2 * S, sigmoid_bias_kernel, g, b_gates.f32(), B,
         2 * S);

  // Controller candidate pre-activation (eq. 4.7): [x_c, r^c ⊙ h^c] · W_c.
  Workspace zc(size_t(B) * H * sizeof(float)), rh(size_t(B) * H * sizeof(float));
  if (H > 0) {
    launch("reset_hidden_kernel", int64_t(B) * H, reset_hidden_kernel, rh.as<float>(), hp, g, B, H,
           S);
    gemm_rm(false, false, B, H, Ic, 1.0f, x, Ic, wc, H, 0.0f, zc.as<float>(), H);
    gemm_rm(false, false, B, H, H, 1.0f, rh.as<float>(), H, wc + int64_t(Ic) * H, H, 1.0f,
            zc.as<float>(), H);
  }

  // The ALU (eq. 4.8), then the candidate, the conditional and the update (eqs. 4.7, 4.19, 4.9).
  if (K > 0) {
    launch("grpu_machine_forward_kernel", B, grpu_machine_forward_kernel, out.args.f32(),
           out.machine.f32(), out.cand.f32(), hp, x_vm.f32(), g, B, alu);
  }
  launch("grpu_update_kernel", int64_t(B) * S, grpu_update_kernel, out.h.f32(), out.u.f32(),
         out.cand.f32(), zc.as<float>(), ptr_or_null(b_cand), g, hp, ptr_or_null(mask), B, alu);
  return out;
}

void grpu_cell_backward(Tensor& d_x_c, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                        Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x_c,
                        const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                        const Tensor& mask, const GrpuCellResult& fwd, const GrpuConfig& cfg) {
  require_cuda(
      {&d_x_c, &d_h_prev, &d_w_gates, &d_b_gates, &d_w_cand, &d_b_cand, &d_h, &x_c, &h_prev,
       &w_gates, &w_cand, &mask, &fwd.gates, &fwd.cand, &fwd.machine, &fwd.args, &fwd.u},
      "grpu_cell_backward");
  const auto [B, Ic, S, alu] = grpu_sizes(x_c, h_prev, cfg);
  const int H = alu.h, K = alu.k;
  if (B == 0 || S == 0) return;

  const float* x = ptr_or_null(x_c);
  const float* hp = h_prev.f32();
  const float* g = fwd.gates.f32();
  float* dhp = ptr_or_null(d_h_prev);
  float* dx = Ic > 0 ? ptr_or_null(d_x_c) : nullptr;

  // Through the update, the conditional and the ALU: d_z [B, 2S] (before the
  // sigmoid factor; the controller's reset entries still 0) and d_zc [B, H]
  // (through the tanh).
  Workspace d_z(size_t(B) * 2 * S * sizeof(float));
  Workspace d_zc(size_t(B) * H * sizeof(float));
  Workspace rh(size_t(B) * H * sizeof(float)), dv(size_t(B) * H * sizeof(float));
  float* dz = d_z.as<float>();
  if (H > 0) {
    launch("grpu_controller_backward_kernel", int64_t(B) * H, grpu_controller_backward_kernel, dz,
           d_zc.as<float>(), dhp, d_h.f32(), hp, fwd.u.f32(), fwd.cand.f32(), ptr_or_null(mask), B,
           H, S);
  }
  if (K > 0) {
    launch("grpu_machine_backward_kernel", B, grpu_machine_backward_kernel, dz, dhp, d_h.f32(), hp,
           g, fwd.u.f32(), fwd.cand.f32(), fwd.machine.f32(), fwd.args.f32(), ptr_or_null(mask), B,
           alu);
  }

  // Back through the candidate GEMM: a2 = [x_c, r^c ⊙ h^c].
  if (H > 0) {
    const float* wc = w_cand.f32();
    if (d_w_cand.defined()) {
      launch("reset_hidden_kernel", int64_t(B) * H, reset_hidden_kernel, rh.as<float>(), hp, g, B,
             H, S);
      float* dwc = d_w_cand.f32();
      gemm_rm(true, false, Ic, H, B, 1.0f, x, Ic, d_zc.as<float>(), H, 1.0f, dwc, H);
      gemm_rm(true, false, H, H, B, 1.0f, rh.as<float>(), H, d_zc.as<float>(), H, 1.0f,
              dwc + int64_t(Ic) * H, H);
    }
    if (d_b_cand.defined()) {
      launch("column_sum_add_kernel", H, column_sum_add_kernel, d_b_cand.f32(), d_zc.as<float>(), B,
             H, true);
    }
    if (dx) gemm_rm(false, true, B, Ic, H, 1.0f, d_zc.as<float>(), H, wc, H, 1.0f, dx, Ic);
    // dv: the gradient of r^c ⊙ h^c, [B, H].
    gemm_rm(false, true, B, H, H, 1.0f, d_zc.as<float>(), H, wc + int64_t(Ic) * H, H, 0.0f,
            dv.as<float>(), H);
  }
  launch("grpu_gate_backward_kernel", int64_t(B) * 2 * S, grpu_gate_backward_kernel, dz, dhp,
         dv.as<float>(), hp, g, B, H, S);

  // Back through the gate GEMM: a = [x_c, h^c].
  const float* wg = w_gates.f32();
  if (d_w_gates.defined()) {
    float* dwg = d_w_gates.f32();
    gemm_rm(true, false, Ic, 2 * S, B, 1.0f, x, Ic, dz, 2 * S, 1.0f, dwg, 2 * S);
    gemm_rm(true, false, H, 2 * S, B, 1.0f, hp, S, dz, 2 * S, 1.0f, dwg + int64_t(Ic) * 2 * S,
            2 * S);
  }
  if (d_b_gates.defined()) {
    launch("column_sum_add_kernel", 2 * S, column_sum_add_kernel, d_b_gates.f32(), dz, B, 2 * S,
           true);
  }
  if (dx) gemm_rm(false, true, B, Ic, 2 * S, 1.0f, dz, 2 * S, wg, 2 * S, 1.0f, dx, Ic);
  if (dhp)
    gemm_rm(false, true, B, H, 2 * S, 1.0f, dz, 2 * S, wg + int64_t(Ic) * 2 * S, 2 * S, 1.0f, dhp,
            S);
}

GrpuCellResult gru_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& w_gates,
                                const Tensor& b_gates, const Tensor& w_cand, const Tensor& b_cand,
                                const Tensor& mask) {
  GrpuConfig cfg;
  cfg.machine = false;
  return cuda::grpu_cell_forward(x, Tensor(), h_prev, w_gates, b_gates, w_cand, b_cand, mask, cfg);
}

void gru_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                       Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x,
                       const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                       const Tensor& mask, const GrpuCellResult& fwd) {
  GrpuConfig cfg;
  cfg.machine = false;
  cuda::grpu_cell_backward(d_x, d_h_prev, d_w_gates, d_b_gates, d_w_cand, d_b_cand, d_h, x, h_prev,
                           w_gates, w_cand, mask, fwd, cfg);
}

LstmCellResult lstm_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& c_prev,
                                 const Tensor& w, const Tensor& b, const Tensor& mask) {
  require_cuda({&x, &h_prev, &c_prev, &w, &b, &mask}, "lstm_cell_forward");
  const int B = to_int(x.dim(0), "lstm_cell batch"), I = to_int(x.dim(1), "lstm_cell x");
  const int H = to_int(h_prev.dim(1), "lstm_cell state");
  to_int(int64_t(B) * 4 * H, "lstm_cell gates");
  to_int(int64_t(I + H) * 4 * H, "lstm_cell w");
  LstmCellResult out{Tensor::empty({B, H}, Device::cuda), Tensor::empty({B, H}, Device::cuda),
                     Tensor::empty({B, 4 * H}, Device::cuda), Tensor::empty({B, H}, Device::cuda)};
  if (B == 0 || H == 0) return out;

  // [x, h_prev] · W = x · W[:I] + h_prev · W[I:].
  float* g = out.gates.f32();
  const float* pw = w.f32();
  gemm_rm(false, false, B, 4 * H, I, 1.0f, ptr_or_null(x), I, pw, 4 * H, 0.0f, g, 4 * H);
  gemm_rm(false, false, B, 4 * H, H, 1.0f, h_prev.f32(), H, pw + int64_t(I) * 4 * H, 4 * H, 1.0f, g,
          4 * H);
  launch("lstm_forward_kernel", int64_t(B) * H, lstm_forward_kernel, out.h.f32(), out.c.f32(),
         out.tanh_c.f32(), g, b.f32(), h_prev.f32(), c_prev.f32(), ptr_or_null(mask), B, H);
  return out;
}

void lstm_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_c_prev, Tensor& d_w, Tensor& d_b,
                        const Tensor& d_h, const Tensor& d_c, const Tensor& x, const Tensor& h_prev,
                        const Tensor& c_prev, const Tensor& w, const Tensor& mask,
                        const LstmCellResult& fwd) {
  require_cuda({&d_x, &d_h_prev, &d_c_prev, &d_w, &d_b, &d_h, &d_c, &x, &h_prev, &c_prev, &w, &mask,
                &fwd.gates, &fwd.tanh_c},
               "lstm_cell_backward");
  const int B = to_int(x.dim(0), "lstm_cell batch"), I = to_int(x.dim(1), "lstm_cell x");
  const int H = to_int(h_prev.dim(1), "lstm_cell state");
  to_int(int64_t(B) * 4 * H, "lstm_cell gates");
  to_int(int64_t(I + H) * 4 * H, "lstm_cell w");
  if (B == 0 || H == 0) return;

  float* dhp = ptr_or_null(d_h_prev);
  Workspace d_z(size_t(B) * 4 * H * sizeof(float));
  float* dz = d_z.as<float>();
  launch("lstm_backward_kernel", int64_t(B) * H, lstm_backward_kernel, dz, dhp,
         ptr_or_null(d_c_prev), d_h.f32(), ptr_or_null(d_c), fwd.gates.f32(), fwd.tanh_c.f32(),
         c_prev.f32(), ptr_or_null(mask), B, H);

  const float* pw = w.f32();
  if (d_w.defined()) {
    float* dw = d_w.f32();
    gemm_rm(true, false, I, 4 * H, B, 1.0f, ptr_or_null(x), I, dz, 4 * H, 1.0f, dw, 4 * H);
    gemm_rm(true, false, H, 4 * H, B, 1.0f, h_prev.f32(), H, dz, 4 * H, 1.0f,
            dw + int64_t(I) * 4 * H, 4 * H);
  }
  if (d_b.defined()) {
    launch("column_sum_add_kernel", 4 * H, column_sum_add_kernel, d_b.f32(), dz, B, 4 * H, false);
  }
  if (d_x.defined() && I > 0)
    gemm_rm(false, true, B, I, 4 * H, 1.0f, dz, 4 * H, pw, 4 * H, 1.0f, d_x.f32(), I);
  if (dhp)
    gemm_rm(false, true, B, H, 4 * H, 1.0f, dz, 4 * H, pw + int64_t(I) * 4 * H, 4 * H, 1.0f, dhp,
            H);
}

}  // namespace mare::cuda
