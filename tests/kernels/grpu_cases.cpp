// Op-table cases of the recurrent cells (SPEC §4.6): grpu_cell (every ALU
// variant: read+sum, prod with both neutral-one forms, cond, the clip, masked
// rows, a controller without input), gru_cell and lstm_cell. The references
// below are plain double-precision loops written from the dissertation's
// equations (4.5–4.9, 4.13, 4.16, 4.18 and appendix A), not from the kernel.
#include <cmath>

#include "kernels/ops/grpu.h"
#include "kernels/ops/recurrent.h"
#include "tests/kernels/op_table.h"

namespace mare::test {

namespace {

using Ts = std::vector<Tensor>;
using Vs = std::vector<VecD>;

double sig(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// in = {x_c [B, Ic], x_vm [B, Iv], h_prev [B, S], w_g [Ic+H, 2S], b_g [2S], w_c [Ic+H, H], b_c [H]}
VecD ref_grpu(const Vs& in, const VecD& mask, int64_t B, int64_t ic, int64_t H,
              const GrpuConfig& cfg) {
  const int64_t K = cfg.fields(), S = H + K, iv = cfg.machine_inputs();
  const VecD &x = in[0], &xv = in[1], &hp = in[2], &wg = in[3], &bg = in[4], &wc = in[5],
             &bc = in[6];
  VecD h(B * S);
  for (int64_t b = 0; b < B; ++b) {
    VecD a(ic + H);
    for (int64_t j = 0; j < ic; ++j) a[j] = x[b * ic + j];
    for (int64_t j = 0; j < H; ++j) a[ic + j] = hp[b * S + j];
    VecD gate(2 * S);
    for (int64_t o = 0; o < 2 * S; ++o) {
      double z = bg[o];
      for (int64_t j = 0; j < ic + H; ++j) z += a[j] * wg[j * 2 * S + o];
      gate[o] = sig(z);
    }
    VecD a2(a);
    for (int64_t j = 0; j < H; ++j) a2[ic + j] = gate[j] * hp[b * S + j];
    VecD cand(S), u(gate.begin() + S, gate.end());
    for (int64_t o = 0; o < H; ++o) {
      double z = bc[o];
      for (int64_t j = 0; j < ic + H; ++j) z += a2[j] * wc[j * H + o];
      cand[o] = std::tanh(z);
    }
    if (K > 0) {
      VecD p(K);
      for (int64_t k = 0; k < K; ++k) p[k] = hp[b * S + H + k];
      p[0] = xv[b * iv];
      VecD m(K);
      m[0] = xv[b * iv];
      double sum = 0.0, prod = 1.0;
      for (int64_t k = 0; k < K; ++k) {
        double r = gate[H + k];
        sum += p[k] * r;
        prod *= cfg.neutral_one == NeutralOne::code ? 1 - r + 2 * p[k] * r - p[k] * r * r
                                                    : 1 - r + p[k] * r * r;
      }
      m[1] = sum;
      if (cfg.prod) m[2] = prod;
      if (cfg.cond) {
        double dist = std::fabs(xv[b * iv + 1] - 1.0);
        m[K - 1] = 1.0 - dist / (dist + cfg.cond_eps);
      }
      for (int64_t k = 0; k < K; ++k)
        cand[H + k] = std::min<double>(std::max<double>(m[k], -cfg.clip), cfg.clip);
      if (cfg.cond)
        for (int64_t k = 0; k < K - 1; ++k)
          u[H + k] = u[H + k] * (1.0 + u[H + K - 1] * (cand[H + K - 1] - 1.0));
    }
    bool active = mask.empty() || mask[b] != 0.0;
    for (int64_t j = 0; j < S; ++j)
      h[b * S + j] = active ? (1 - u[j]) * hp[b * S + j] + u[j] * cand[j] : hp[b * S + j];
  }
  return h;
}

OpCase grpu_case(const std::string& variant, int64_t B, int64_t ic, int64_t H, GrpuConfig cfg,
                 std::vector<float> mask_values, uint64_t seed) {
  const int64_t K = cfg.fields(), S = H + K, iv = cfg.machine_inputs();
  Tensor mask = mask_values.empty() ? Tensor() : Tensor::from_vector(mask_values, {B});
  Tensor x_vm = random_tensor({B, std::max<int64_t>(iv, 1)}, seed + 1, 0.0f, 1.0f);
  if (iv == 0) x_vm = Tensor::zeros({B, 1});
  if (cfg.cond)  // the control column takes the task's values −1, 0, 1
    for (int64_t b = 0; b < B; ++b) x_vm.f32()[b * iv + 1] = static_cast<float>(b % 3) - 1.0f;
  OpCase c;
  c.name = "grpu_cell/" + variant;
  c.op = "grpu_cell";
  c.inputs = {random_tensor({B, ic}, seed),     x_vm,
              random_tensor({B, S}, seed + 2),  random_tensor({ic + H, 2 * S}, seed + 3),
              random_tensor({2 * S}, seed + 4), random_tensor({ic + H, H}, seed + 5),
              random_tensor({H}, seed + 6)};
  c.differentiable = {true, false, true, true, true, true, true};
  auto vm = [cfg](const Tensor& t) { return cfg.machine ? t : Tensor(); };
  c.forward = [=](const Ts& in) {
    return Ts{
        grpu_cell_forward(in[0], vm(in[1]), in[2], in[3], in[4], in[5], in[6], on_dev(mask), cfg)
            .h};
  };
  c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
    GrpuCellResult f =
        grpu_cell_forward(in[0], vm(in[1]), in[2], in[3], in[4], in[5], in[6], on_dev(mask), cfg);
    grpu_cell_backward(d[0], d[2], d[3], d[4], d[5], d[6], g[0], in[0], in[2], in[3], in[5],
                       on_dev(mask), f, cfg);
  };
  VecD mref(mask_values.begin(), mask_values.end());
  c.reference = [=](const Vs& in) { return Vs{ref_grpu(in, mref, B, ic, H, cfg)}; };
  // Float GEMMs and products of up to K factors against a double reference.
  c.grad_tol = {5e-5, 5e-4};
  return c;
}

VecD ref_lstm(const Vs& in, const VecD& mask, int64_t B, int64_t I, int64_t H, bool want_c) {
  const VecD &x = in[0], &hp = in[1], &cp = in[2], &w = in[3], &bias = in[4];
  VecD h(B * H), c(B * H);
  for (int64_t b = 0; b < B; ++b) {
    bool active = mask.empty() || mask[b] != 0.0;
    for (int64_t j = 0; j < H; ++j) {
      double z[4];
      for (int q = 0; q < 4; ++q) {
        int64_t o = q * H + j;
        z[q] = bias[o];
        for (int64_t e = 0; e < I; ++e) z[q] += x[b * I + e] * w[e * 4 * H + o];
        for (int64_t e = 0; e < H; ++e) z[q] += hp[b * H + e] * w[(I + e) * 4 * H + o];
      }
      double cv = sig(z[1]) * cp[b * H + j] + sig(z[0]) * std::tanh(z[2]);
      c[b * H + j] = active ? cv : cp[b * H + j];
      h[b * H + j] = active ? sig(z[3]) * std::tanh(cv) : hp[b * H + j];
    }
  }
  return want_c ? c : h;
}

}  // namespace

std::vector<OpCase> grpu_op_cases() {
  std::vector<OpCase> cs;
  GrpuConfig sum_only;  // read + sum, the first addition runs
  cs.push_back(grpu_case("k2/read_sum", 3, 1, 4, sum_only, {}, 301));
  GrpuConfig prod_code;
  prod_code.prod = true;
  cs.push_back(grpu_case("k3/prod/code/masked", 4, 2, 3, prod_code, {1, 0, 1, 1}, 311));
  GrpuConfig prod_text = prod_code;
  prod_text.neutral_one = NeutralOne::text;
  cs.push_back(grpu_case("k3/prod/text", 3, 1, 5, prod_text, {}, 321));
  GrpuConfig cond = prod_code;
  cond.cond = true;  // the conditional task: no controller input, (value, control) to the machine
  cs.push_back(grpu_case("k4/prod_cond/no_controller_input", 5, 0, 3, cond, {1, 1, 0, 1, 1}, 331));
  GrpuConfig clipped = prod_code;
  clipped.clip = 0.3f;  // some ALU outputs beyond the clip: their gradient stops there
  cs.push_back(grpu_case("k3/prod/clip0.3", 4, 1, 3, clipped, {}, 341));

  {  // gru_cell: the reference is the GRPU reference with no machine fields
    const int64_t B = 3, I = 2, H = 5;
    GrpuConfig none;
    none.machine = false;
    Tensor mask = Tensor::from_vector({1, 1, 0}, {B});
    OpCase c;
    c.name = "gru_cell/b3/i2/h5/masked";
    c.op = "gru_cell";
    c.inputs = {random_tensor({B, I}, 351),         random_tensor({B, H}, 352),
                random_tensor({I + H, 2 * H}, 353), random_tensor({2 * H}, 354),
                random_tensor({I + H, H}, 355),     random_tensor({H}, 356)};
    c.differentiable = {true, true, true, true, true, true};
    c.forward = [=](const Ts& in) {
      return Ts{gru_cell_forward(in[0], in[1], in[2], in[3], in[4], in[5], on_dev(mask)).h};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      GrpuCellResult f = gru_cell_forward(in[0], in[1], in[2], in[3], in[4], in[5], on_dev(mask));
      gru_cell_backward(d[0], d[1], d[2], d[3], d[4], d[5], g[0], in[0], in[1], in[2], in[4],
                        on_dev(mask), f);
    };
    c.reference = [=](const Vs& in) {
      Vs full = {in[0], VecD(B, 0.0), in[1], in[2], in[3], in[4], in[5]};
      return Vs{ref_grpu(full, {1, 1, 0}, B, I, H, none)};
    };
    c.grad_tol = {5e-5, 5e-4};  // as the GRPU cases
    cs.push_back(c);
  }
  {  // lstm_cell: outputs h and c, gradient arriving at both
    const int64_t B = 4, I = 3, H = 2;
    Tensor mask = Tensor::from_vector({1, 0, 1, 1}, {B});
    OpCase c;
    c.name = "lstm_cell/b4/i3/h2/masked";
    c.op = "lstm_cell";
    c.inputs = {random_tensor({B, I}, 361), random_tensor({B, H}, 362), random_tensor({B, H}, 363),
                random_tensor({I + H, 4 * H}, 364), random_tensor({4 * H}, 365)};
    c.differentiable = {true, true, true, true, true};
    c.forward = [=](const Ts& in) {
      LstmCellResult r = lstm_cell_forward(in[0], in[1], in[2], in[3], in[4], on_dev(mask));
      return Ts{r.h, r.c};
    };
    c.backward = [=](const Ts& in, const Ts& g, Ts& d) {
      LstmCellResult r = lstm_cell_forward(in[0], in[1], in[2], in[3], in[4], on_dev(mask));
      lstm_cell_backward(d[0], d[1], d[2], d[3], d[4], g[0], g[1], in[0], in[1], in[2], in[3],
                         on_dev(mask), r);
    };
    VecD mref = {1, 0, 1, 1};
    c.reference = [=](const Vs& in) {
      return Vs{ref_lstm(in, mref, B, I, H, false), ref_lstm(in, mref, B, I, H, true)};
    };
    c.grad_tol = {5e-5, 5e-4};  // float GEMM against a double reference
    cs.push_back(c);
  }
  return cs;
}

}  // namespace mare::test
