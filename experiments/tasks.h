// Classification tasks on feature vectors, generated from a seed (Philox
// stream kStreamData), for the models of the `Classifier` interface.
//   xor: points uniform in [−1, 1]², the band |x| < 0.1 or |y| < 0.1 left empty
//        so that the classes are separable with a margin; class 1 when x and y
//        have the same sign. 512 training and 256 test points.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kernels/tensor.h"

namespace mare {

struct ClassificationData {
  Tensor x;  // [N, F]
  Tensor y;  // i32 [N]
};

struct ClassificationTask {
  std::string name;
  int64_t features = 0;
  int64_t classes = 0;
  ClassificationData train, test;
};

struct TaskInfo {
  std::string_view name;
  std::string_view kind;
  std::string_view summary;
};
std::span<const TaskInfo> task_registry();

ClassificationTask make_classification_task(const std::string& name, uint64_t seed);

}  // namespace mare
