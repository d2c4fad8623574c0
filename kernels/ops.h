// Every op of the kernel layer, and the list of them that `mare list` prints
// and the op test table checks against (an op without a test case fails the
// suite).
#pragma once

#include <span>
#include <string_view>

#include "kernels/memory/access.h"
#include "kernels/memory/allocation.h"
#include "kernels/memory/interface.h"
#include "kernels/ops/attention.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/halting.h"
#include "kernels/ops/indexing.h"
#include "kernels/ops/linalg.h"
#include "kernels/ops/loss.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/softmax.h"

namespace mare {

struct OpInfo {
  std::string_view name;    // as in `<name>_forward` / `<name>_backward`
  std::string_view family;  // the file under kernels/ops/
  std::string_view summary;
};

std::span<const OpInfo> op_registry();

}  // namespace mare
