// The kernel rule the tape relies on (README, "Ops"): backward skips undefined
// gradient tensors. ag::grad_of gives an undefined tensor for every input that
// needs no gradient (data, masks, frozen weights), so for every case of the op
// table (tests/kernels/op_table.h) and every differentiable input alone, a
// backward given only that gradient must produce exactly (bit for bit) what it
// produces with all of them, and a backward given none must do nothing and
// not throw.
#include <gtest/gtest.h>

#include <map>

#include "tests/kernels/op_table.h"

namespace mare::test {
namespace {

// Ops whose backward needs every gradient tensor, with the reason: the tape
// gives their inputs scratch zeros instead (models/functions.cpp).
const std::map<std::string, std::string>& needs_every_gradient() {
  static const std::map<std::string, std::string> ops = {
      {"concat", "each piece's extent along the axis places the later pieces"},
  };
  return ops;
}

class SkipsUndefinedGradients : public ::testing::TestWithParam<OpCase> {};

}  // namespace

// Readable parameter names (test_op_table.cpp, not linked here, has the same).
void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.name;
}

namespace {

std::vector<Tensor> cotangents(const OpCase& c) {
  std::vector<Tensor> g;
  for (const Tensor& out : c.forward(c.inputs)) g.push_back(random_tensor(out.shape(), 3000));
  return g;
}

TEST_P(SkipsUndefinedGradients, EachGradientAloneAndNone) {
  const OpCase& c = GetParam();
  const std::vector<Tensor> g = cotangents(c);
  std::vector<Tensor> full(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.differentiable[i]) full[i] = Tensor::zeros_like(c.inputs[i]);
  c.backward(c.inputs, g, full);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.differentiable[i]) continue;
    std::vector<Tensor> alone(c.inputs.size());
    alone[i] = Tensor::zeros_like(c.inputs[i]);
    ASSERT_NO_THROW(c.backward(c.inputs, g, alone)) << "only input " << i << " defined";
    EXPECT_EQ(alone[i].to_vector(), full[i].to_vector()) << "gradient of input " << i << " alone";
  }
  std::vector<Tensor> none(c.inputs.size());
  EXPECT_NO_THROW(c.backward(c.inputs, g, none));
  for (const Tensor& t : none) EXPECT_FALSE(t.defined());
}

// The exception list names ops that exist, and refuses undefined gradients
// with an exception rather than ignoring them.
TEST(SkipsUndefinedGradientsExceptions, ThrowInsteadOfSkipping) {
  std::map<std::string, int> seen;
  for (const OpCase& c : all_op_cases()) {
    if (!needs_every_gradient().count(c.op)) continue;
    ++seen[c.op];
    std::vector<Tensor> none(c.inputs.size());
    EXPECT_ANY_THROW(c.backward(c.inputs, cotangents(c), none)) << c.name;
  }
  for (const auto& [op, reason] : needs_every_gradient())
    EXPECT_GT(seen[op], 0) << op << " is listed as an exception but has no op-table case";
}

std::string case_name(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s;
  for (char ch : info.param.name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

std::vector<OpCase> cases_that_skip() {
  std::vector<OpCase> cs;
  for (OpCase& c : all_op_cases())
    if (!needs_every_gradient().count(c.op)) cs.push_back(std::move(c));
  return cs;
}

INSTANTIATE_TEST_SUITE_P(OpTable, SkipsUndefinedGradients, ::testing::ValuesIn(cases_that_skip()),
                         case_name);

}  // namespace
}  // namespace mare::test
