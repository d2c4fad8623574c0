// Op-table cases of the grpu op family (filled in with that family).
#include "tests/kernels/op_table.h"

namespace mare::test {

std::vector<OpCase> grpu_op_cases() { return {}; }

}  // namespace mare::test
