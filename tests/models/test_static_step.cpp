// The static step (nn::Context::static_step): a training step whose work does not depend
// on what it computes, as a CUDA graph of the step needs. It must give the dynamic
// step's numbers bit for bit (losses, gradients, parameters, batch-norm statistics),
// read nothing the step computed, and make the same allocations as the step before.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tensor.h"
#include "models/functions.h"
#include "models/optim.h"
#include "tests/gpu_required.h"
#include "tests/models/re_model_checks.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare {
namespace {

using test::build;
using test::tiny_batch;

// Halting's bias starts at 1 (p ≈ 0.73), so most tokens halt at the second or third
// step and t_max = 8 leaves the dynamic loop short: the static loop runs the iterations
// after it with no token running. NTCRE-CPD with batch norm at this size keeps some
// token running to t_max in these steps (it checks the partly halted iterations); with
// layer norm its loop stops early (the memories' and gate regulariser's dead calls).
// Dropout on, so its draws must line up too.
const std::string kHalting = "+d=8+heads=2+dropout=0.2+biaffine_init=glorot+max_steps=8";
constexpr int kMaxSteps = 8;
// host_tensors: what a step builds from an unstaged batch on the host (below).
struct Case {
  std::string name;
  bool stops_early;
  int host_tensors;
};
const std::vector<Case> kModels = {
    {"UTRE-CPD" + kHalting, true, 5},
    {"utre+cpd" + kHalting, true, 2},
    {"NTCRE-CPD" + kHalting, false, 5},
    {"NTCRE-CPD+memory_step=composed" + kHalting, false, 5},
    {"NTCRE-CPD+norm=layer" + kHalting, true, 5},
    {"NTCRE-CPD+norm=layer+memory_step=composed" + kHalting, true, 5}};

ReBatch staged_batch(const ReModel& m, Device device) {
  ReBatch b = to_device(tiny_batch(), device);
  m.stage(b, ReTask::relations);
  return b;
}

struct StepOutcome {
  std::vector<float> losses;  // task loss, aux loss
  Tensor halting_steps, token_mask;
  DispatchCounts used;
};

// The trainer's RE step (forward, loss, backward, Adam) with its counts; the losses are
// read after the counts, as the trainer would read them after a captured step.
StepOutcome train_step(ReModel& m, Adam& adam, const ReBatch& batch, uint64_t step,
                       bool static_step) {
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = 11;
  ctx.step = step;
  ctx.static_step = static_step;
  for (const ag::Var& p : m.parameters().all()) p->grad = Tensor();
  const DispatchCounts before = dispatch_counts();
  ReOutput out = m.forward(batch, ReTask::relations, ctx);
  ag::Var task = ag::cross_entropy(out.pair_logits, batch.labels);
  ag::Var loss = out.aux_loss ? ag::add(task, out.aux_loss) : task;
  ag::backward(loss);
  adam.step(1e-2f);
  StepOutcome r;
  r.used = dispatch_counts() - before;
  r.losses = Tensor::items({task->value, out.aux_loss ? out.aux_loss->value : Tensor()});
  r.halting_steps = out.halting_steps;
  r.token_mask = out.token_mask;
  return r;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  if (a.dtype() == DType::i32) return a.to_index_vector() == b.to_index_vector();
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  return std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)) == 0;
}

// The most iterations a real token took: where the dynamic loop stopped.
int longest_halting(const StepOutcome& r) {
  const std::vector<int32_t> steps = r.halting_steps.to_index_vector();
  const std::vector<float> mask = r.token_mask.to_vector();
  int most = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    if (mask[i] > 0) most = std::max(most, static_cast<int>(steps[i]));
  return most;
}

// Both steps side by side from the same seed, five steps of training: every loss,
// gradient, parameter and running statistic the same bytes after every step.
void expect_same_numbers(const Case& c, Device device) {
  const std::string& name = c.name;
  auto dynamic = build(name), fixed = build(name);
  dynamic->to(device);
  fixed->to(device);
  Adam adam_d(dynamic->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
  Adam adam_s(fixed->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
  // The dynamic step on the batch as it is, the static one on the batch staged.
  const ReBatch batch = to_device(tiny_batch(), device), staged = staged_batch(*fixed, device);
  int stopped_early = 0;
  for (uint64_t step = 0; step < 5; ++step) {
    const StepOutcome d = train_step(*dynamic, adam_d, batch, step, false);
    const StepOutcome s = train_step(*fixed, adam_s, staged, step, true);
    ASSERT_EQ(d.losses.size(), s.losses.size());
    for (size_t k = 0; k < d.losses.size(); ++k)
      EXPECT_EQ(std::memcmp(&d.losses[k], &s.losses[k], sizeof(float)), 0)
          << name << " step " << step << " loss " << k << ": " << d.losses[k] << " vs "
          << s.losses[k];
    ASSERT_TRUE(same_bytes(d.halting_steps, s.halting_steps)) << name << " step " << step;
    stopped_early += longest_halting(d) < kMaxSteps;
    const auto pd = dynamic->parameters().all(), ps = fixed->parameters().all();
    for (size_t k = 0; k < pd.size(); ++k) {
      EXPECT_TRUE(same_bytes(pd[k]->grad, ps[k]->grad))
          << name << " step " << step << ": gradient of " << pd[k]->name;
      EXPECT_TRUE(same_bytes(pd[k]->value, ps[k]->value))
          << name << " step " << step << ": " << pd[k]->name;
    }
    for (const auto& [key, value] : dynamic->buffers())
      EXPECT_TRUE(same_bytes(value, fixed->buffers().at(key)))
          << name << " step " << step << ": buffer " << key;
  }
  // The case this test is for: the dynamic loop stopped before t_max, so the static one
  // ran iterations with no token running.
  if (c.stops_early) EXPECT_GT(stopped_early, 0) << name;
}

TEST(StaticStep, GivesTheDynamicStepsNumbersBitForBit) {
  for (const Case& c : kModels) expect_same_numbers(c, Device::cpu);
}

// Once warmed up (the first steps fill the constants' cache), a static step reads
// nothing it computed, makes no tensor from host data when its batch was staged
// (ReModel::stage: the bi-affine's pair sets, the n-gram masks), and makes exactly the
// allocations of the step before; the dynamic step reads the halting decisions, once
// per iteration it runs, and on an unstaged batch the model stages inside the step.
TEST(StaticStep, ReadsNothingItComputedAndAllocatesAsTheStepBefore) {
  for (const auto& [name, stops_early, host_tensors] : kModels) {
    auto m = build(name);
    Adam adam(m->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
    const ReBatch batch = staged_batch(*m, Device::cpu);
    for (uint64_t step = 0; step < 2; ++step) train_step(*m, adam, batch, step, true);
    const StepOutcome a = train_step(*m, adam, batch, 2, true);
    const StepOutcome b = train_step(*m, adam, batch, 3, true);
    EXPECT_EQ(a.used.host_reads, 0) << name;
    EXPECT_EQ(b.used.host_reads, 0) << name;
    EXPECT_EQ(a.used.host_tensors, 0) << name;
    EXPECT_GT(a.used.allocations, 0) << name;
    EXPECT_EQ(a.used.allocations, b.used.allocations) << name;
    EXPECT_EQ(a.used.allocated_bytes, b.used.allocated_bytes) << name;
    EXPECT_EQ(a.used.ops, b.used.ops) << name;

    const StepOutcome unstaged = train_step(*m, adam, tiny_batch(), 4, true);
    EXPECT_EQ(unstaged.used.host_reads, 0) << name;
    EXPECT_EQ(unstaged.used.host_tensors, host_tensors) << name;
    const StepOutcome d = train_step(*m, adam, batch, 5, false);
    EXPECT_EQ(d.used.host_reads, longest_halting(d)) << name;
  }
}

// What lives from step to step (parameters, Adam's moments, batch norm's running
// statistics) is updated where it lies: a CUDA graph of the step reads and writes the
// addresses it was captured with.
TEST(StaticStep, KeepsItsStateWhereItLies) {
  auto m = build(kModels[2].name);  // NTCRE-CPD: memories, batch norm, halting
  Adam adam(m->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
  const ReBatch batch = staged_batch(*m, Device::cpu);
  train_step(*m, adam, batch, 0, true);  // Adam's moments are made at its first step
  auto addresses = [&] {
    std::vector<const void*> at;
    for (const ag::Var& p : m->parameters().all()) at.push_back(std::as_const(p->value).f32());
    for (const Tensor& t : adam.first_moments()) at.push_back(t.f32());
    for (const Tensor& t : adam.second_moments()) at.push_back(t.f32());
    for (const auto& [key, t] : m->buffers()) at.push_back(t.f32());
    return at;
  };
  const std::vector<const void*> before = addresses();
  const std::vector<float> stats_before = m->buffers().begin()->second.to_vector();
  train_step(*m, adam, batch, 1, true);
  EXPECT_EQ(addresses(), before);
  EXPECT_NE(m->buffers().begin()->second.to_vector(), stats_before);  // it did update them
}

// On the GPU: the same numbers as the dynamic step there and, on a staged batch once
// warmed up, no read of the device, no upload and no cudaMalloc. Skips without a GPU.
TEST(StaticStepCuda, SameNumbersNoDeviceReadNoDriverAllocation) {
  MARE_NEEDS_GPU();
#ifdef MARE_WITH_CUDA
  for (const Case& c : kModels) {
    expect_same_numbers(c, Device::cuda);
    const std::string& name = c.name;
    auto m = build(name);
    m->to(Device::cuda);
    Adam adam(m->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
    const ReBatch batch = staged_batch(*m, Device::cuda);
    for (uint64_t step = 0; step < 2; ++step) train_step(*m, adam, batch, step, true);
    const uint64_t mallocs = cuda::allocator_stats().driver_allocations;
    const StepOutcome a = train_step(*m, adam, batch, 2, true);
    EXPECT_EQ(a.used.device_reads, 0) << name;
    EXPECT_EQ(a.used.uploads, 0) << name;
    EXPECT_EQ(a.used.host_reads, 0) << name;
    EXPECT_EQ(cuda::allocator_stats().driver_allocations, mallocs) << name;
  }
#endif
}

}  // namespace
}  // namespace mare
