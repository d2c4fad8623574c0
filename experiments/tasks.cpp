#include "experiments/tasks.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "kernels/random.h"

namespace mare {

namespace {

constexpr std::array kTasks = {
    TaskInfo{"xor", "classification",
             "2-D points, class = same sign of x and y, margin 0.1 (512 train / 256 test)"},
    // sequence tasks of the GRPU (experiments/grpu_tasks.h, SPEC §4.6)
    TaskInfo{"addition", "sequence",
             "50–55 (value U[0,1], control) pairs, target = sum of the two marked values"},
    TaskInfo{"multiplication", "sequence",
             "50–55 (value U[0.5,1.5], control) pairs, target = product of the two marked"},
    TaskInfo{"conditional", "sequence",
             "addition with everything to the GRPU machine, `cond` gating on control = 1"},
};

ClassificationData xor_points(PhiloxStream& rng, int64_t n) {
  ClassificationData d{Tensor::empty({n, 2}), Tensor::empty({n}, Device::cpu, DType::i32)};
  for (int64_t i = 0; i < n; ++i) {
    float a, b;
    do {
      a = rng.uniform(-1.0f, 1.0f);
      b = rng.uniform(-1.0f, 1.0f);
    } while (std::fabs(a) < 0.1f || std::fabs(b) < 0.1f);
    d.x.f32()[2 * i] = a;
    d.x.f32()[2 * i + 1] = b;
    d.y.i32()[i] = (a > 0) == (b > 0) ? 1 : 0;
  }
  return d;
}

}  // namespace

std::span<const TaskInfo> task_registry() {
  return kTasks;
}

ClassificationTask make_classification_task(const std::string& name, uint64_t seed) {
  if (name == "xor") {
    PhiloxStream rng(seed, kStreamData);
    ClassificationTask t{"xor", 2, 2, {}, {}};
    t.train = xor_points(rng, 512);
    t.test = xor_points(rng, 256);
    return t;
  }
  std::string known;
  for (const TaskInfo& t : kTasks) known += (known.empty() ? "" : ", ") + std::string(t.name);
  throw std::invalid_argument("unknown task '" + name + "' (known: " + known + ")");
}

}  // namespace mare
