// GRU and LSTM cells on the CPU (equations in kernels/ops/recurrent.h). The
// GRU is the GRPU cell without machine fields. The LSTM's step, like the
// GRPU's, is one pass over fixed chunks of the batch's rows forward (the joined
// input, one product for the four gates of the chunk's rows, Eigen's
// vectorised logistic and tanh, the cell and the output) and two backward (the
// per-row pass and the product into d_x and d_h_prev; then the weight's and
// the bias's gradients in fixed blocks of columns): the same bytes at any
// thread count.
#include "kernels/ops/recurrent.h"

#include "kernels/ops/common.h"

namespace mare {
using namespace detail;

namespace {
GrpuConfig plain_gru() {
  GrpuConfig cfg;
  cfg.machine = false;
  return cfg;
}
// One step's work per batch row: the product and the five transcendentals.
double lstm_row_work(int64_t I, int64_t H) {
  return 2.0 * static_cast<double>(I + H) * 4.0 * H + 5.0 * H * kTranscendental;
}
}  // namespace

GrpuCellResult gru_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& w_gates,
                                const Tensor& b_gates, const Tensor& w_cand, const Tensor& b_cand,
                                const Tensor& mask) {
  // grpu_cell_forward validates the arguments and dispatches to the GPU.
  return grpu_cell_forward(x, Tensor(), h_prev, w_gates, b_gates, w_cand, b_cand, mask,
                           plain_gru());
}

void gru_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_w_gates, Tensor& d_b_gates,
                       Tensor& d_w_cand, Tensor& d_b_cand, const Tensor& d_h, const Tensor& x,
                       const Tensor& h_prev, const Tensor& w_gates, const Tensor& w_cand,
                       const Tensor& mask, const GrpuCellResult& fwd) {
  // grpu_cell_backward validates the arguments and dispatches to the GPU.
  grpu_cell_backward(d_x, d_h_prev, d_w_gates, d_b_gates, d_w_cand, d_b_cand, d_h, x, h_prev,
                     w_gates, w_cand, mask, fwd, plain_gru());
}

LstmCellResult lstm_cell_forward(const Tensor& x, const Tensor& h_prev, const Tensor& c_prev,
                                 const Tensor& w, const Tensor& b, const Tensor& mask) {
  for (const Tensor* t : {&x, &h_prev, &c_prev, &w, &b}) check_defined(*t, "lstm_cell");
  check_rank(x, 2, "lstm_cell x");
  check_rank(h_prev, 2, "lstm_cell h_prev");
  const int64_t B = x.dim(0), I = x.dim(1), H = h_prev.dim(1);
  check_shape(h_prev, {B, H}, "lstm_cell h_prev");
  check_shape(c_prev, {B, H}, "lstm_cell c_prev");
  check_shape(w, {I + H, 4 * H}, "lstm_cell w");
  check_shape(b, {4 * H}, "lstm_cell b");
  if (mask.defined()) check_shape(mask, {B}, "lstm_cell mask");
  MARE_CUDA_DISPATCH("lstm_cell_forward", lstm_cell_forward(x, h_prev, c_prev, w, b, mask), &x,
                     &h_prev, &c_prev, &w, &b, &mask);

  LstmCellResult out{Tensor::empty({B, H}), Tensor::empty({B, H}), Tensor::empty({B, 4 * H}),
                     Tensor::empty({B, H})};
  float* g = out.gates.f32();
  const float* pb = b.f32();
  const float* hp = h_prev.f32();
  const float* cp = c_prev.f32();
  const int64_t w_in = I + H;
  for_cell_rows(B, lstm_row_work(I, H), [&](int64_t b0, int64_t b1) {
    const int64_t n = b1 - b0;
    std::vector<float> a(static_cast<size_t>(n * w_in)), c(static_cast<size_t>(n * H));
    join_rows(a.data(), x.f32(), I, hp, H, H, nullptr, 0, b0, b1);
    gemm_serial(g + b0 * 4 * H, a.data(), w.f32(), n, w_in, 4 * H, false, false, false);
    ArrayMap gates(g + b0 * 4 * H, 4 * H, n);  // column r − b0: row r (i, f, g, o)
    gates.colwise() += CVecMap(pb, 4 * H);
    gates.topRows(2 * H) = gates.topRows(2 * H).logistic();
    gates.middleRows(2 * H, H) = gates.middleRows(2 * H, H).tanh();
    gates.bottomRows(H) = gates.bottomRows(H).logistic();
    for (int64_t r = b0; r < b1; ++r) {
      const float* gr = g + r * 4 * H;
      for (int64_t j = 0; j < H; ++j)
        c[(r - b0) * H + j] = gr[H + j] * cp[r * H + j] + gr[j] * gr[2 * H + j];
    }
    ArrayMap(out.tanh_c.f32() + b0 * H, H, n) = CArrayMap(c.data(), H, n).tanh();
    for (int64_t r = b0; r < b1; ++r) {
      const float* gr = g + r * 4 * H;
      const bool active = !mask.defined() || mask.f32()[r] != 0.0f;
      for (int64_t j = 0; j < H; ++j) {
        const float tc = out.tanh_c.f32()[r * H + j];
        out.c.f32()[r * H + j] = active ? c[(r - b0) * H + j] : cp[r * H + j];
        out.h.f32()[r * H + j] = active ? gr[3 * H + j] * tc : hp[r * H + j];
      }
    }
  });
  return out;
}

void lstm_cell_backward(Tensor& d_x, Tensor& d_h_prev, Tensor& d_c_prev, Tensor& d_w, Tensor& d_b,
                        const Tensor& d_h, const Tensor& d_c, const Tensor& x, const Tensor& h_prev,
                        const Tensor& c_prev, const Tensor& w, const Tensor& mask,
                        const LstmCellResult& fwd) {
  check_rank(x, 2, "lstm_cell x");
  check_rank(h_prev, 2, "lstm_cell h_prev");
  const int64_t B = x.dim(0), I = x.dim(1), H = h_prev.dim(1);
  check_shape(h_prev, {B, H}, "lstm_cell h_prev");
  check_shape(d_h, {B, H}, "lstm_cell d_h");
  if (d_c.defined()) check_shape(d_c, {B, H}, "lstm_cell d_c");
  check_shape(w, {I + H, 4 * H}, "lstm_cell w");
  check_shape(c_prev, {B, H}, "lstm_cell c_prev");
  if (mask.defined()) check_shape(mask, {B}, "lstm_cell mask");
  check_shape(fwd.gates, {B, 4 * H}, "lstm_cell fwd.gates");
  check_shape(fwd.tanh_c, {B, H}, "lstm_cell fwd.tanh_c");
  if (d_x.defined()) check_same_shape(d_x, x, "lstm_cell d_x");
  if (d_h_prev.defined()) check_same_shape(d_h_prev, h_prev, "lstm_cell d_h_prev");
  if (d_c_prev.defined()) check_same_shape(d_c_prev, c_prev, "lstm_cell d_c_prev");
  if (d_w.defined()) check_same_shape(d_w, w, "lstm_cell d_w");
  if (d_b.defined()) check_shape(d_b, {4 * H}, "lstm_cell d_b");
  MARE_CUDA_DISPATCH("lstm_cell_backward",
                     lstm_cell_backward(d_x, d_h_prev, d_c_prev, d_w, d_b, d_h, d_c, x, h_prev,
                                        c_prev, w, mask, fwd),
                     &d_x, &d_h_prev, &d_c_prev, &d_w, &d_b, &d_h, &d_c, &x, &h_prev, &c_prev, &w,
                     &mask, &fwd.gates, &fwd.tanh_c);
  const float* g = fwd.gates.f32();
  const float* cp = c_prev.f32();
  const float* dh = d_h.f32();
  const float* dc = d_c.defined() ? d_c.f32() : nullptr;
  float* dhp = d_h_prev.defined() ? d_h_prev.f32() : nullptr;
  float* dcp = d_c_prev.defined() ? d_c_prev.f32() : nullptr;
  const int64_t w_in = I + H;
  float* dx = d_x.defined() ? d_x.f32() : nullptr;
  MatRM dz = MatRM::Zero(B, 4 * H);
  MatRM a(d_w.defined() ? B : 0, w_in);  // [x, h_prev], for the weight's gradient
  for_cell_rows(B, lstm_row_work(I, H), [&](int64_t b0, int64_t b1) {
    for (int64_t r = b0; r < b1; ++r) {
      bool active = !mask.defined() || mask.f32()[r] != 0.0f;
      if (!active) {
        for (int64_t j = 0; j < H; ++j) {
          if (dhp) dhp[r * H + j] += dh[r * H + j];
          if (dcp && dc) dcp[r * H + j] += dc[r * H + j];
        }
        continue;
      }
      const float* gr = g + r * 4 * H;
      for (int64_t j = 0; j < H; ++j) {
        float i = gr[j], f = gr[H + j], gg = gr[2 * H + j], o = gr[3 * H + j];
        float tc = fwd.tanh_c.f32()[r * H + j];
        float dhv = dh[r * H + j];
        float dcv = (dc ? dc[r * H + j] : 0.0f) + dhv * o * (1.0f - tc * tc);
        if (dcp) dcp[r * H + j] += dcv * f;
        dz(r, j) = dcv * gg * i * (1.0f - i);
        dz(r, H + j) = dcv * cp[r * H + j] * f * (1.0f - f);
        dz(r, 2 * H + j) = dcv * i * (1.0f - gg * gg);
        dz(r, 3 * H + j) = dhv * tc * o * (1.0f - o);
      }
    }
    if (d_w.defined())
      join_rows(a.data() + b0 * w_in, x.f32(), I, h_prev.f32(), H, H, nullptr, 0, b0, b1);
    if (dx || dhp) {
      const int64_t n = b1 - b0;
      std::vector<float> da(static_cast<size_t>(n * w_in));
      gemm_serial(da.data(), dz.data() + b0 * 4 * H, w.f32(), n, 4 * H, w_in, false, true, false);
      for (int64_t r = b0; r < b1; ++r) {
        const float* dar = da.data() + (r - b0) * w_in;
        if (dx)
          for (int64_t j = 0; j < I; ++j) dx[r * I + j] += dar[j];
        if (dhp)
          for (int64_t j = 0; j < H; ++j) dhp[r * H + j] += dar[I + j];
      }
    }
  });
  add_cell_gradients({{a.data(), dz.data(), d_w.defined() ? d_w.f32() : nullptr,
                       d_b.defined() ? d_b.f32() : nullptr, 4 * H}},
                     B, w_in);
}

}  // namespace mare
