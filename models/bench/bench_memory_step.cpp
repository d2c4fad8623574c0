// Where NTCRE's extra time goes (Google Benchmark; SPEC §10 "memory step"):
// the pieces of one NTCRE block's token mixer, each run for 3 calls (the
// iterations of one forward pass) forward and backward (an MSE loss against a
// fixed target), at the thesis Table 4.15 shapes: batch 32, T 96 (SemEval) or
// 398 (CDR), d 300 (paper) or 32 (default), N 4, W = d, R 2 (thesis Table 4.1).
//
//   mixer/attention       utre's mixer: multi-head self-attention
//   mixer/controller      NTCRE's mixer (nn::MemoryController): attention, Norm,
//                         the ν/ξ projections, the memory step, W_r
//   mixer/controller_halting  the same with half the tokens halted after the
//                         first call (NTCRE-CPD: frozen memories are blended)
//   mixer/controller_composed  NTCRE's mixer with the composed memory step
//   parts/projections     Norm + ν + ξ + W_r alone (the controller's linear layers)
//   parts/projections_one_gemm  the same with ν and ξ as one GEMM, split after
//   parts/memory_step     the memory step alone (interface split, SPEC §3 steps
//                         1–11) on a given interface vector, state carried over
//                         the calls, through the composed ops of models/functions_memory.h
//   parts/memory_step_fused   the same through the fused op (kernels/memory/fused_step.h)
//
// controller − attention is NTCRE's extra cost per block; projections and
// memory_step (or memory_step_fused, what the controller runs on the CPU) split it. Names:
// <group>/<piece>/<paper|default>/<semeval|cdr>.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kernels/memory/interface.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/functions_memory.h"
#include "models/functions_memory_step.h"
#include "models/memory_mixer.h"

namespace {

using namespace mare;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 32, kSlots = 4, kReadHeads = 2;
constexpr int kCalls = 3;

Tensor random_tensor(const Shape& s, uint32_t stream, float scale = 1.0f) {
  Tensor t = Tensor::empty(s);
  PhiloxStream rng(11, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = scale * (2.0f * rng.uniform() - 1.0f);
  return t;
}

Tensor real_mask(int64_t B, int64_t T) {
  Tensor m = Tensor::zeros({B, T});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T - (b * 7) % (T / 10 + 1); ++i) m.f32()[b * T + i] = 1.0f;
  return m;
}

// Half the tokens (every other one) halted after the first call.
Tensor running(int64_t M, int call, bool halting) {
  Tensor r = Tensor::full({M}, 1.0f);
  if (halting && call > 0)
    for (int64_t i = 0; i < M; i += 2) r.f32()[i] = 0.0f;
  return r;
}

template <class Body>
void timed(benchmark::State& st, Body body) {
  body();  // warm-up: first-touch of buffers
  for (auto _ : st) body();
}

void BM_Attention(benchmark::State& st, int64_t d, int64_t T) {
  ParameterSet ps(1);
  nn::SelfAttention mix(ps, "att", d, 4);
  const Tensor mask = real_mask(kBatch, T), target = random_tensor({kBatch, T, d}, 2);
  const ag::Var x0 = ag::leaf(random_tensor({kBatch, T, d}, 1));
  timed(st, [&] {
    nn::Context ctx;
    ag::Var x = x0;
    for (int c = 0; c < kCalls; ++c) x = mix(x, mask, running(kBatch * T, c, false), ctx);
    ag::backward(ag::mse(x, ag::constant(target)));
  });
}

void BM_Controller(benchmark::State& st, int64_t d, int64_t T, bool halting, bool fused) {
  ParameterSet ps(1);
  nn::Buffers buffers;
  nn::MemoryConfig mc;
  mc.dim = d;
  mc.heads = 4;
  mc.slots = kSlots;
  mc.read_heads = kReadHeads;
  mc.step = fused ? nn::MemoryConfig::Step::fused : nn::MemoryConfig::Step::composed;
  nn::MemoryController mix(ps, buffers, "mix", mc);
  const Tensor mask = real_mask(kBatch, T), target = random_tensor({kBatch, T, d}, 2);
  const ag::Var x0 = ag::leaf(random_tensor({kBatch, T, d}, 1));
  timed(st, [&] {
    nn::Context ctx;
    ctx.training = true;
    mix.begin(kBatch, T, ctx);
    ag::Var x = x0;
    for (int c = 0; c < kCalls; ++c) x = mix(x, mask, running(kBatch * T, c, halting), ctx);
    ag::backward(ag::mse(x, ag::constant(target)));
  });
}

// fused_gemm: ν and ξ as one GEMM (d -> d + |ξ|) split afterwards, the
// "one interface projection instead of two" option.
void BM_Projections(benchmark::State& st, int64_t d, int64_t T, bool fused_gemm) {
  ParameterSet ps(1);
  nn::Buffers buffers;
  const int64_t W = d, width = interface_width(kReadHeads, W);
  nn::Norm norm(ps, buffers, "norm", d, nn::Norm::Kind::batch);
  nn::Linear nu(ps, "nu", d, d), xi(ps, "xi", d, width),
      read_out(ps, "read_out", kReadHeads * W, d, false), both(ps, "nu_xi", d, d + width);
  const Tensor mask = real_mask(kBatch, T), target = random_tensor({kBatch, T, d}, 2),
               target_xi = random_tensor({kBatch, T, width}, 3);
  const ag::Var x0 = ag::leaf(random_tensor({kBatch, T, d}, 1));
  const ag::Var reads = ag::leaf(random_tensor({kBatch, T, kReadHeads * W}, 4));
  timed(st, [&] {
    nn::Context ctx;
    ctx.training = true;
    ag::Var x = x0, loss;
    for (int c = 0; c < kCalls; ++c) {
      const ag::Var a = norm(x, mask, ctx);
      ag::Var n, z;
      if (fused_gemm) {
        const std::vector<ag::Var> parts = ag::split(both(a), {d, width}, 2);
        n = parts[0], z = parts[1];
      } else {
        n = nu(a), z = xi(a);
      }
      const ag::Var l = ag::mse(z, ag::constant(target_xi));
      loss = loss ? ag::add(loss, l) : l;
      x = ag::add(n, read_out(reads));
    }
    ag::backward(ag::add(loss, ag::mse(x, ag::constant(target))));
  });
}

// The memory step of nn::MemoryController on a given interface per call.
template <class Step>
void memory_bench(benchmark::State& st, int64_t d, int64_t T, Step step) {
  const int64_t M = kBatch * T, W = d, width = interface_width(kReadHeads, W);
  std::vector<ag::Var> xis;
  for (int c = 0; c < kCalls; ++c) xis.push_back(ag::leaf(random_tensor({M, width}, 10 + c)));
  const Tensor target = random_tensor({M, kReadHeads, W}, 20);
  timed(st, [&] {
    nn::MemoryState s = nn::MemoryState::zeros(M, kSlots, W, kReadHeads, Device::cpu);
    ag::Var loss;
    for (int c = 0; c < kCalls; ++c) {
      s = step(xis[c], s);
      const ag::Var l = ag::mse(s.read_vectors, ag::constant(target));
      loss = loss ? ag::add(loss, l) : l;
    }
    ag::backward(loss);
  });
}

nn::MemoryState composed_step(const ag::Var& xi, const nn::MemoryState& p) {
  const int64_t M = xi->value.dim(0), N = kSlots, R = kReadHeads;
  const int64_t W = p.memory->value.dim(2);
  const ag::MemoryInterface in = ag::interface_split(xi, R, W);
  const ag::Var psi = ag::retention(in.free_gates, p.read_weights);
  const ag::Var u = ag::usage(p.usage, p.write_weights, psi);
  const ag::Var alloc = ag::allocation(u, AllocationVariant::sorted);
  const ag::Var cw =
      ag::reshape(ag::content_weighting(p.memory, in.write_key, in.write_strength), {M, N});
  const ag::Var ww = ag::write_weighting(alloc, cw, in.allocation_gate, in.write_gate);
  const ag::Var mem = ag::memory_update(p.memory, ww, in.erase, in.write_vector);
  const ag::Var links = ag::link_update(p.links, p.precedence, ww);
  const ag::Var prec = ag::precedence_update(p.precedence, ww);
  const ag::LinkWeightVars lw = ag::link_weights(links, p.read_weights);
  const ag::Var cr = ag::content_weighting(mem, in.read_keys, in.read_strengths);
  const ag::Var wr = ag::read_weights(in.read_modes, lw.backward, cr, lw.forward);
  (void)R;
  return {mem, u, ww, wr, prec, links, ag::read_vectors(mem, wr)};
}

nn::MemoryState fused_step(const ag::Var& xi, const nn::MemoryState& p) {
  const ag::MemoryStepVars s =
      ag::memory_step(xi, p.memory, p.usage, p.write_weights, p.read_weights, p.precedence, p.links,
                      kReadHeads, AllocationVariant::sorted);
  return {s.memory,     s.usage, s.write_weights, s.read_weights,
          s.precedence, s.links, s.read_vectors};
}

void register_all() {
  struct Size {
    const char* name;
    int64_t d;
  };
  struct Shp {
    const char* name;
    int64_t T;
  };
  for (const Size size : {Size{"default", 32}, Size{"paper", 300}})
    for (const Shp shape : {Shp{"semeval", 96}, Shp{"cdr", 398}}) {
      const std::string tail = std::string("/") + size.name + "/" + shape.name;
      const int64_t d = size.d, T = shape.T;
      auto reg = [&](const std::string& name, auto fn) {
        benchmark::RegisterBenchmark(name.c_str(), fn)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(size.d > 100 ? 2 : 5);
      };
      reg("mixer/attention" + tail, [d, T](benchmark::State& st) { BM_Attention(st, d, T); });
      reg("mixer/controller" + tail,
          [d, T](benchmark::State& st) { BM_Controller(st, d, T, false, true); });
      reg("mixer/controller_halting" + tail,
          [d, T](benchmark::State& st) { BM_Controller(st, d, T, true, true); });
      reg("mixer/controller_composed" + tail,
          [d, T](benchmark::State& st) { BM_Controller(st, d, T, false, false); });
      reg("parts/projections" + tail,
          [d, T](benchmark::State& st) { BM_Projections(st, d, T, false); });
      reg("parts/projections_one_gemm" + tail,
          [d, T](benchmark::State& st) { BM_Projections(st, d, T, true); });
      reg("parts/memory_step" + tail,
          [d, T](benchmark::State& st) { memory_bench(st, d, T, composed_step); });
      reg("parts/memory_step_fused" + tail,
          [d, T](benchmark::State& st) { memory_bench(st, d, T, fused_step); });
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
