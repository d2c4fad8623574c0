// The recurrent cells on the tape (models/functions.h): one fused op per step.
// The forward results are shared by the closure (one allocation per step, no
// copy of the saved activations).
#include <memory>

#include "kernels/ops/grpu.h"
#include "kernels/ops/recurrent.h"
#include "models/functions.h"

namespace mare::ag {

Var grpu_cell(const Var& x_c, const Tensor& x_vm, const Var& h_prev, const Var& w_gates,
              const Var& b_gates, const Var& w_cand, const Var& b_cand, const Tensor& mask,
              const GrpuConfig& cfg) {
  auto fwd = std::make_shared<GrpuCellResult>(
      grpu_cell_forward(x_c->value, x_vm, h_prev->value, w_gates->value, b_gates->value,
                        w_cand->value, b_cand->value, mask, cfg));
  return record(fwd->h, {x_c, h_prev, w_gates, b_gates, w_cand, b_cand}, [=](Node& self) {
    Tensor dx = grad_of(x_c), dh = grad_of(h_prev), dwg = grad_of(w_gates), dbg = grad_of(b_gates),
           dwc = grad_of(w_cand), dbc = grad_of(b_cand);
    grpu_cell_backward(dx, dh, dwg, dbg, dwc, dbc, self.grad, x_c->value, h_prev->value,
                       w_gates->value, w_cand->value, mask, *fwd, cfg);
  });
}

Var gru_cell(const Var& x, const Var& h_prev, const Var& w_gates, const Var& b_gates,
             const Var& w_cand, const Var& b_cand, const Tensor& mask) {
  auto fwd = std::make_shared<GrpuCellResult>(gru_cell_forward(
      x->value, h_prev->value, w_gates->value, b_gates->value, w_cand->value, b_cand->value, mask));
  return record(fwd->h, {x, h_prev, w_gates, b_gates, w_cand, b_cand}, [=](Node& self) {
    Tensor dx = grad_of(x), dh = grad_of(h_prev), dwg = grad_of(w_gates), dbg = grad_of(b_gates),
           dwc = grad_of(w_cand), dbc = grad_of(b_cand);
    gru_cell_backward(dx, dh, dwg, dbg, dwc, dbc, self.grad, x->value, h_prev->value,
                      w_gates->value, w_cand->value, mask, *fwd);
  });
}

LstmState lstm_cell(const Var& x, const Var& h_prev, const Var& c_prev, const Var& w, const Var& b,
                    const Tensor& mask) {
  auto fwd = std::make_shared<LstmCellResult>(
      lstm_cell_forward(x->value, h_prev->value, c_prev->value, w->value, b->value, mask));
  std::vector<Var> out =
      record_multi({fwd->h, fwd->c}, {x, h_prev, c_prev, w, b}, [=](const std::vector<Tensor>& g) {
        Tensor dx = grad_of(x), dh = grad_of(h_prev), dc = grad_of(c_prev), dw = grad_of(w),
               db = grad_of(b);
        // The kernel takes an undefined d_c (c_t unused) but needs d_h.
        Tensor d_h = g[0].defined() ? g[0] : Tensor::zeros_like(fwd->h);
        lstm_cell_backward(dx, dh, dc, dw, db, d_h, g[1], x->value, h_prev->value, c_prev->value,
                           w->value, mask, *fwd);
      });
  return {out[0], out[1]};
}

}  // namespace mare::ag
