// The data types of the sequence tasks (the GRPU and its baselines, SPEC §4.6).
#pragma once

#include <string>

#include "kernels/tensor.h"

namespace mare {

struct SequenceBatch {
  Tensor values;    // [T, B] the numbers
  Tensor controls;  // [T, B] the markers −1, 0, 1
  Tensor mask;      // [T, B] 1 while t < the row's length, then 0 (rows are padded at the end)
};

// What a sequence task asks of a model.
struct SequenceTaskShape {
  std::string target = "sum";  // the GRPU's output field: "sum" or "prod"
  bool conditional = false;    // everything to the machine; `cond` gates execution
  float clip = 500.0f;         // the GRPU machine state's clip
};

}  // namespace mare
