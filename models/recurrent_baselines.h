// The GRPU's baselines with the same sequence interface (SPEC §4.6): `gru`,
// `bigru` (the dissertation's published reference, Table 5.1 row 1) and
// `lstm`. Each step reads x_t = (value, control); the prediction is a linear
// layer on the final state (bigru: on [forward state after the last step,
// backward state after the first step]). Fused cells per step
// (kernels/ops/recurrent.h); padded steps keep the state.
//
// Switches: hidden=H (100). Initialisation: Glorot-uniform weights over the
// concatenated [input, state] rows, zero biases (the LSTM's forget bias 1).
#pragma once

#include "models/registry.h"

namespace mare {

class RecurrentBaseline : public SequenceModel {
 public:
  RecurrentBaseline(const ModelSpec& spec, uint64_t seed);
  ag::Var forward(const SequenceBatch& batch) override;
  std::string describe() const override;

 private:
  ag::Var run_gru(const SequenceBatch& batch, const std::string& prefix, bool reverse);
  ag::Var run_lstm(const SequenceBatch& batch);
  std::string kind_;  // gru | bigru | lstm
  int64_t hidden_;
};

// Parameter counts: a GRU cell with I inputs and H units, (I + H)·3H + 3H; an
// LSTM cell, (I + H)·4H + 4H (output layers not included).
int64_t gru_cell_parameter_count(int64_t hidden, int64_t inputs);
int64_t lstm_cell_parameter_count(int64_t hidden, int64_t inputs);

}  // namespace mare
