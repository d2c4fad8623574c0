// One forward and backward of every relation model on a hand-built batch: the
// loss and every parameter's gradient have the same bytes at 1, 2, 3 and 7
// threads (the trainer-level test in test_model_threads.cpp names the run; this
// one names the parameter).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/threads/threads_check.h"
#include "tests/models/re_model_checks.h"

namespace mare::test {
namespace {

class RelationGradientThreads : public ::testing::TestWithParam<std::string> {};

TEST_P(RelationGradientThreads, LossAndGradientsSameBytes) {
  ThreadScope scope(1e-9);
  const bool has_ner = GetParam().rfind("cnn", 0) != 0;  // cnn has no NER head
  for (ReTask task : {ReTask::relations, ReTask::entities}) {
    if (task == ReTask::entities && !has_ner) continue;
    std::vector<std::string> names;
    std::vector<std::vector<Tensor>> runs;
    for (int k : thread_counts()) {
      set_threads(k);
      auto m = build(GetParam());
      ReBatch b = tiny_batch();
      m->parameters().zero_grad();
      ag::Var loss = task_loss(*m, b, task);
      ag::backward(loss);
      std::vector<Tensor> got{loss->value.clone()};
      names = {"loss"};
      for (const ag::Var& p : m->parameters().all()) {
        got.push_back(p->grad.defined() ? p->grad.clone() : Tensor());
        names.push_back(p->name);
      }
      for (auto& [key, t] : m->buffers()) {
        got.push_back(t.clone());
        names.push_back(key);
      }
      runs.push_back(got);
    }
    for (size_t r = 1; r < runs.size(); ++r)
      for (size_t i = 0; i < runs[0].size(); ++i)
        EXPECT_EQ(first_difference(runs[0][i], runs[r][i]), -1)
            << GetParam() << (task == ReTask::entities ? " ner" : " relations") << ": " << names[i]
            << " differs at " << thread_counts()[r] << " threads";
  }
}

const std::string kTiny = "+d=16+heads=2";
INSTANTIATE_TEST_SUITE_P(
    Models, RelationGradientThreads,
    ::testing::Values("cnn+d=16+pos_dim=4+char_dim=4+char_filters=8+filters=16",
                      "bran+iterations=2" + kTiny, "UTRE-CPD+max_steps=2" + kTiny,
                      "NTCRE-CPD+max_steps=2+slots=4+read_heads=2" + kTiny),
    [](const ::testing::TestParamInfo<std::string>& i) {
      std::string s = i.param.substr(0, i.param.find('+'));
      for (char& c : s)
        if (c == '-') c = '_';
      return s;
    });

}  // namespace
}  // namespace mare::test
