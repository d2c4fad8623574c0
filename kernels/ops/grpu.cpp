// The GRPU cell on the CPU (equations in kernels/ops/grpu.h; dissertation
// eqs. 4.5–4.9, 4.13, 4.16, 4.18 and appendix A). A step is one pass over
// fixed chunks of rows (for_cell_rows: 25 rows of the thesis's batch of 100)
// forward, and two backward: each chunk joins its rows' inputs, multiplies
// them by the weights (one product of its rows, detail::gemm_serial) and runs
// the gates, the ALU and the update on them, so the two threads synchronise
// once per pass instead of once per product and row loop; the backward's
// second pass forms the weights' gradients in fixed blocks of columns. The
// chunks depend on the shapes alone, so the bytes are the same at any thread
// count.
// The product's gradient uses prefix and suffix products, so a zero factor
// gives no NaN.
#include "kernels/ops/grpu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

NeutralOne parse_neutral_one(const std::string& name) {
  if (name == "code") return NeutralOne::code;
  if (name == "text") return NeutralOne::text;
  throw std::invalid_argument("neutral_one=" + name + ": expected code or text");
}

const char* to_string(NeutralOne form) {
  return form == NeutralOne::code ? "code" : "text";
}

namespace {

constexpr const char* kOp = "grpu_cell";

struct Dims {
  int64_t b, ic, h, k, s;
};

Dims check_inputs(const Tensor& x_c, const Tensor& h_prev, const Tensor& w_gates,
                  const Tensor& w_cand, const Tensor& mask, const GrpuConfig& cfg) {
  for (const Tensor* t : {&x_c, &h_prev, &w_gates, &w_cand}) check_defined(*t, kOp);
  check_rank(x_c, 2, "grpu_cell x_c");
  check_rank(h_prev, 2, "grpu_cell h_prev");
  Dims d{x_c.dim(0), x_c.dim(1), 0, cfg.fields(), h_prev.dim(1)};
  d.h = d.s - d.k;
  if (d.h < 0)
    throw ShapeError("grpu_cell: state " + h_prev.shape().str() + " is smaller than the " +
                     std::to_string(d.k) + " machine fields");
  check_shape(h_prev, {d.b, d.s}, "grpu_cell h_prev");
  check_shape(w_gates, {d.ic + d.h, 2 * d.s}, "grpu_cell w_gates");
  check_shape(w_cand, {d.ic + d.h, d.h}, "grpu_cell w_cand");
  if (mask.defined()) check_shape(mask, {d.b}, "grpu_cell mask");
  return d;
}

// Work of one step of the cell per batch row: both products and the
// transcendentals (for_cell_rows' grain).
double row_work(const Dims& d) {
  return 2.0 * static_cast<double>(d.ic + d.h) * (2.0 * d.s + d.h) +
         (2.0 * d.s + d.h) * kTranscendental;
}

}  // namespace

GrpuCellResult grpu_cell_forward(const Tensor& x_c, const Tensor& x_vm, const Tensor& h_prev,
                                 const Tensor& w_gates, const Tensor& b_gates, const Tensor& w_cand,
                                 const Tensor& b_cand, const Tensor& mask, const GrpuConfig& cfg) {
  Dims d = check_inputs(x_c, h_prev, w_gates, w_cand, mask, cfg);
  if (d.k > 0) {
    check_defined(x_vm, "grpu_cell x_vm");
    check_shape(x_vm, {d.b, cfg.machine_inputs()}, "grpu_cell x_vm");
  }
  check_shape(b_gates, {2 * d.s}, "grpu_cell b_gates");
  check_shape(b_cand, {d.h}, "grpu_cell b_cand");
  MARE_CUDA_DISPATCH(
      "grpu_cell_forward",
      grpu_cell_forward(x_c, x_vm, h_prev, w_gates, b_gates, w_cand, b_cand, mask, cfg), &x_c,
      &x_vm, &h_prev, &w_gates, &b_gates, &w_cand, &b_cand, &mask);
  const int64_t S = d.s, H = d.h, K = d.k;
  const float* hp = h_prev.f32();

  GrpuCellResult out;
  out.h = Tensor::empty({d.b, S});
  out.gates = Tensor::empty({d.b, 2 * S});
  out.cand = Tensor::empty({d.b, S});
  out.machine = Tensor::empty({d.b, K});
  out.args = Tensor::empty({d.b, K});
  out.u = Tensor::empty({d.b, S});

  float* g = out.gates.f32();
  float* cand = out.cand.f32();
  float* mach = out.machine.f32();
  float* args = out.args.f32();
  float* u = out.u.f32();
  float* h = out.h.f32();
  const float* bg = b_gates.f32();
  const float* bc = b_cand.f32();
  const float* xv = K > 0 ? x_vm.f32() : nullptr;
  const int64_t iv = cfg.machine_inputs(), w = d.ic + H;
  for_cell_rows(d.b, row_work(d), [&](int64_t b0, int64_t b1) {
    const int64_t n = b1 - b0;
    std::vector<float> a(static_cast<size_t>(n * w)), zc(static_cast<size_t>(n * H));
    // Gates (eqs. 4.5, 4.6).
    join_rows(a.data(), x_c.f32(), d.ic, hp, S, H, nullptr, 0, b0, b1);
    gemm_serial(g + b0 * 2 * S, a.data(), w_gates.f32(), n, w, 2 * S, false, false, false);
    ArrayMap gates(g + b0 * 2 * S, 2 * S, n);  // column b − b0: row b
    gates.colwise() += CVecMap(bg, 2 * S);
    gates = gates.logistic();

    // Controller candidate (eq. 4.7): r^c are the first H reset entries.
    join_rows(a.data(), x_c.f32(), d.ic, hp, S, H, g, 2 * S, b0, b1);
    gemm_serial(zc.data(), a.data(), w_cand.f32(), n, w, H, false, false, false);
    ArrayMap z(zc.data(), H, n);
    z.colwise() += CVecMap(bc, H);
    StridedArrayMap(cand + b0 * S, H, n, Eigen::OuterStride<>(S)) = z.tanh();

    // The ALU (eq. 4.8), the conditional (eq. 4.19) and the update (eq. 4.9).
    for (int64_t b = b0; b < b1; ++b) {
      const float* r = g + b * 2 * S + H;  // r^vm
      const float* u0 = g + b * 2 * S + S;
      float* m = mach + b * K;
      float* p = args + b * K;
      if (K > 0) {
        for (int64_t k = 0; k < K; ++k) p[k] = hp[b * S + H + k];
        p[0] = xv[b * iv];  // read runs first
        m[0] = xv[b * iv];
        float sum = 0.0f;
        for (int64_t k = 0; k < K; ++k) sum += grpu_neutral_zero(p[k], r[k]);
        m[cfg.sum_field()] = sum;
        if (cfg.prod) {
          float prod = 1.0f;
          for (int64_t k = 0; k < K; ++k) prod *= grpu_neutral_one(p[k], r[k], cfg.neutral_one);
          m[cfg.prod_field()] = prod;
        }
        if (cfg.cond) {
          float dist = std::fabs(xv[b * iv + 1] - 1.0f);
          m[cfg.cond_field()] = 1.0f - dist / (dist + cfg.cond_eps);
        }
        for (int64_t k = 0; k < K; ++k)
          cand[b * S + H + k] = std::fmin(std::fmax(m[k], -cfg.clip), cfg.clip);
      }
      for (int64_t j = 0; j < S; ++j) u[b * S + j] = u0[j];
      if (cfg.cond) {
        const int64_t c = cfg.cond_field();
        float hc = cand[b * S + H + c];
        for (int64_t k = 0; k < K; ++k)
          if (k != c) u[b * S + H + k] = grpu_cond_gate(u0[H + k], u0[H + c], hc);
      }
      bool active = !mask.defined() || mask.f32()[b] != 0.0f;
      for (int64_t j = 0; j < S; ++j) {
        float prev = hp[b * S + j];
        h[b * S + j] =
            active ? (1.0f - u[b * S + j]) * prev + u[b * S + j] * cand[b * S + j] : prev;
      }
    }
  });
  return out;
}

void grpu_cell_backward(Tensor& d_x_c, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                        Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x_c,
                        const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                        const Tensor& mask, const GrpuCellResult& fwd, const GrpuConfig& cfg) {
  Dims d = check_inputs(x_c, h_prev, w_gates, w_cand, mask, cfg);
  check_shape(d_h, {d.b, d.s}, "grpu_cell d_h");
  check_shape(fwd.gates, {d.b, 2 * d.s}, "grpu_cell fwd.gates");
  for (const Tensor* t : {&fwd.cand, &fwd.u}) check_shape(*t, {d.b, d.s}, "grpu_cell fwd");
  for (const Tensor* t : {&fwd.machine, &fwd.args}) check_shape(*t, {d.b, d.k}, "grpu_cell fwd");
  if (d_x_c.defined()) check_same_shape(d_x_c, x_c, "grpu_cell d_x_c");
  if (d_h_prev.defined()) check_same_shape(d_h_prev, h_prev, "grpu_cell d_h_prev");
  if (d_w_gates.defined()) check_same_shape(d_w_gates, w_gates, "grpu_cell d_w_gates");
  if (d_b_gates.defined()) check_shape(d_b_gates, {2 * d.s}, "grpu_cell d_b_gates");
  if (d_w_cand.defined()) check_same_shape(d_w_cand, w_cand, "grpu_cell d_w_cand");
  if (d_b_cand.defined()) check_shape(d_b_cand, {d.h}, "grpu_cell d_b_cand");
  MARE_CUDA_DISPATCH("grpu_cell_backward",
                     grpu_cell_backward(d_x_c, d_h_prev, d_w_gates, d_b_gates, d_w_cand, d_b_cand,
                                        d_h, x_c, h_prev, w_gates, w_cand, mask, fwd, cfg),
                     &d_x_c, &d_h_prev, &d_w_gates, &d_b_gates, &d_w_cand, &d_b_cand, &d_h, &x_c,
                     &h_prev, &w_gates, &w_cand, &mask, &fwd.gates, &fwd.cand, &fwd.machine,
                     &fwd.args, &fwd.u);
  const int64_t S = d.s, H = d.h, K = d.k;
  const float* hp = h_prev.f32();
  const float* g = fwd.gates.f32();
  const float* cand = fwd.cand.f32();
  const float* mach = fwd.machine.f32();
  const float* args = fwd.args.f32();
  const float* u = fwd.u.f32();
  const float* dh = d_h.f32();
  float* dhp = d_h_prev.defined() ? d_h_prev.f32() : nullptr;

  const int64_t w = d.ic + H;
  float* dx = d_x_c.defined() ? d_x_c.f32() : nullptr;
  MatRM d_z = MatRM::Zero(d.b, 2 * S);  // through the sigmoids
  MatRM d_zc(d.b, H);                   // through the tanh
  // The products' inputs, kept for the weights' gradients (only when wanted).
  MatRM a(d_w_gates.defined() ? d.b : 0, w), a2(d_w_cand.defined() ? d.b : 0, w);
  for_cell_rows(d.b, row_work(d), [&](int64_t b0, int64_t b1) {
    std::vector<float> d_u(S), d_cand(S), d_u0(S), d_m(K), d_p(K), d_r(K);
    for (int64_t b = b0; b < b1; ++b) {
      bool active = !mask.defined() || mask.f32()[b] != 0.0f;
      const float* dhb = dh + b * S;
      if (!active) {
        if (dhp)
          for (int64_t j = 0; j < S; ++j) dhp[b * S + j] += dhb[j];
        for (int64_t j = 0; j < H; ++j) d_zc(b, j) = 0.0f;
        continue;
      }
      const float* gb = g + b * 2 * S;
      const float* ub = u + b * S;
      const float* cb = cand + b * S;
      // h = (1 − u) h_prev + u h̃
      for (int64_t j = 0; j < S; ++j) {
        if (dhp) dhp[b * S + j] += (1.0f - ub[j]) * dhb[j];
        d_u[j] = dhb[j] * (cb[j] - hp[b * S + j]);
        d_cand[j] = dhb[j] * ub[j];
      }
      // The conditional: u_k = u0_k · (1 + u0_c (h̃_c − 1)); h̃_c depends on data only.
      float* dzb = d_z.data() + b * 2 * S;
      d_u0 = d_u;
      if (cfg.cond) {
        const int64_t c = cfg.cond_field();
        float uc = gb[S + H + c], hc = cb[H + c];
        float f = 1.0f + uc * (hc - 1.0f);
        for (int64_t k = 0; k < K; ++k) {
          if (k == c) continue;
          d_u0[H + k] = d_u[H + k] * f;
          d_u0[H + c] += d_u[H + k] * gb[S + H + k] * (hc - 1.0f);
        }
      }
      for (int64_t j = 0; j < S; ++j) dzb[S + j] = d_u0[j];  // sigmoid factor applied below
      // The ALU: gradient into r^vm and into the fields of h^vm_{t−1} that were arguments.
      if (K > 0) {
        const float* r = gb + H;
        const float* p = args + b * K;
        const float* m = mach + b * K;
        for (int64_t k = 0; k < K; ++k)
          d_m[k] = (m[k] >= -cfg.clip && m[k] <= cfg.clip) ? d_cand[H + k] : 0.0f;
        std::fill(d_p.begin(), d_p.end(), 0.0f);
        std::fill(d_r.begin(), d_r.end(), 0.0f);
        float ds = d_m[cfg.sum_field()];
        for (int64_t k = 0; k < K; ++k) {
          d_p[k] += ds * r[k];
          d_r[k] += ds * p[k];
        }
        if (cfg.prod)
          grpu_prod_backward(d_m[cfg.prod_field()], p, r, static_cast<int>(K),
                             cfg.neutral_one == NeutralOne::code, d_p.data(), d_r.data());
        // p[0] is the machine input (data); the other arguments are the previous fields.
        if (dhp)
          for (int64_t k = 1; k < K; ++k) dhp[b * S + H + k] += d_p[k];
        for (int64_t k = 0; k < K; ++k) dzb[H + k] = d_r[k];
      }
      // Controller candidate: tanh.
      for (int64_t j = 0; j < H; ++j) d_zc(b, j) = d_cand[j] * (1.0f - cb[j] * cb[j]);
    }
    const int64_t n = b1 - b0;
    std::vector<float> d_a(static_cast<size_t>(n * w));
    // Back through the candidate GEMM: a2 = [x_c, r^c ⊙ h^c].
    if (d_w_cand.defined())
      join_rows(a2.data() + b0 * w, x_c.f32(), d.ic, hp, S, H, g, 2 * S, b0, b1);
    gemm_serial(d_a.data(), d_zc.data() + b0 * H, w_cand.f32(), n, H, w, false, true, false);
    for (int64_t b = b0; b < b1; ++b) {
      const float* dab = d_a.data() + (b - b0) * w;
      if (dx)
        for (int64_t j = 0; j < d.ic; ++j) dx[b * d.ic + j] += dab[j];
      const float* gb = g + b * 2 * S;
      float* dzb = d_z.data() + b * 2 * S;
      for (int64_t j = 0; j < H; ++j) {
        float dv = dab[d.ic + j];  // gradient of r^c_j · h^c_j
        dzb[j] += dv * hp[b * S + j];
        if (dhp) dhp[b * S + j] += dv * gb[j];
      }
      for (int64_t j = 0; j < 2 * S; ++j) dzb[j] *= gb[j] * (1.0f - gb[j]);
    }
    // Back through the gate GEMM: a = [x_c, h^c].
    if (d_w_gates.defined())
      join_rows(a.data() + b0 * w, x_c.f32(), d.ic, hp, S, H, nullptr, 0, b0, b1);
    if (dx || dhp) {
      gemm_serial(d_a.data(), d_z.data() + b0 * 2 * S, w_gates.f32(), n, 2 * S, w, false, true,
                  false);
      for (int64_t b = b0; b < b1; ++b) {
        const float* dab = d_a.data() + (b - b0) * w;
        if (dx)
          for (int64_t j = 0; j < d.ic; ++j) dx[b * d.ic + j] += dab[j];
        if (dhp)
          for (int64_t j = 0; j < H; ++j) dhp[b * S + j] += dab[d.ic + j];
      }
    }
  });

  // The weights' gradients, a2ᵀ·d_zc and aᵀ·d_z, and the biases' column sums.
  add_cell_gradients({{a2.data(), d_zc.data(), d_w_cand.defined() ? d_w_cand.f32() : nullptr,
                       d_b_cand.defined() ? d_b_cand.f32() : nullptr, H},
                      {a.data(), d_z.data(), d_w_gates.defined() ? d_w_gates.f32() : nullptr,
                       d_b_gates.defined() ? d_b_gates.f32() : nullptr, 2 * S}},
                     d.b, w);
}

}  // namespace mare
