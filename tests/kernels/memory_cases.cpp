// Op-table cases of the memory op family (filled in with that family).
#include "tests/kernels/op_table.h"

namespace mare::test {

std::vector<OpCase> memory_op_cases() { return {}; }

}  // namespace mare::test
