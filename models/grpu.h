// `grpu`: the Gated Recurrent Programmer Unit over a sequence (dissertation
// ch. 4, eqs. 4.5–4.9; SPEC §4.6). One fused cell op per step
// (kernels/ops/grpu.h) on the tape; the output is the target operation's
// machine field (sum or prod) after each row's last step.
//
// Inputs per step: the controller sees the control marker and the machine's
// `read` loads the value; in the conditional task the controller sees nothing
// and the machine receives (value, control), its `cond` field testing
// control = 1. The state starts at zero.
//
// Switches: hidden=H (100), +prod (a product field: read, sum, prod),
// neutral_one=code|text (code), +cond (forced on by the conditional task).
// Initialisation as TF 1.5's `_linear` in appendix A: Glorot-uniform weights
// over the concatenated [input, state] rows, zero biases.
#pragma once

#include "kernels/ops/grpu.h"
#include "models/functions.h"  // ag::grpu_cell, ag::column
#include "models/registry.h"

namespace mare {

class GrpuModel : public SequenceModel {
 public:
  GrpuModel(const ModelSpec& spec, const SequenceTaskShape& task, uint64_t seed);
  ag::Var forward(const SequenceBatch& batch) override;
  std::string describe() const override;
  const GrpuConfig& config() const { return cfg_; }
  int64_t hidden() const { return hidden_; }
  int64_t output_field() const { return output_field_; }  // index into the machine fields

 private:
  GrpuConfig cfg_;
  int64_t hidden_;
  int64_t controller_inputs_;  // 1 (control) or 0 (conditional task)
  int64_t output_field_;
};

// The number of parameters of a GRPU with H controller units, K machine fields
// and Ic controller inputs: (Ic + H)·2(H + K) + 2(H + K) + (Ic + H)·H + H.
int64_t grpu_parameter_count(int64_t hidden, int64_t fields, int64_t inputs);

}  // namespace mare
