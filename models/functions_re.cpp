#include "models/functions_re.h"

#include "kernels/ops.h"

namespace mare::ag {

Var batch_norm_masked(const Var& x, const Var& gamma, const Var& beta, Tensor& running_mean,
                      Tensor& running_var, const Tensor& row_mask, bool training, float momentum,
                      float eps) {
  NormResult r = batch_norm_forward(x->value, gamma->value, beta->value, running_mean, running_var,
                                    training, momentum, eps, row_mask);
  return record(r.out, {x, gamma, beta}, [x, gamma, beta, r, training, row_mask](Node& s) {
    Tensor dx = grad_of(x), dg = grad_of(gamma), db = grad_of(beta);
    batch_norm_backward(dx, dg, db, s.grad, x->value, gamma->value, r.mean, r.rstd, training,
                        row_mask);
  });
}

Halting halting(const Var& h, const Tensor& mask, int t_max, float eps) {
  HaltingResult r = halting_forward(h->value, mask, t_max, eps);
  std::vector<Var> out =
      record_multi({r.p, r.ponder}, {h}, [h, r, mask](const std::vector<Tensor>& grads) {
        Tensor dh = grad_of(h);
        halting_backward(dh, grads[0], grads[1], h->value, r, mask);
      });
  return {out[0], out[1], r.steps, r.remainder, r.halted};
}

}  // namespace mare::ag
