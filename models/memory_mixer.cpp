#include "models/memory_mixer.h"

#include <stdexcept>

#include "kernels/memory/interface.h"
#include "kernels/ops.h"
#include "models/functions.h"
#include "models/functions_memory.h"
#include "models/functions_memory_step.h"

namespace mare::nn {

namespace {

int64_t word_of(const MemoryConfig& c) {
  return c.word > 0 ? c.word : c.dim;
}

MemoryConfig checked(const std::string& name, MemoryConfig c) {
  if (c.word == 0) c.word = c.dim;
  if (c.dim < 1 || c.slots < 1 || c.word < 1 || c.read_heads < 1)
    throw std::invalid_argument(name + ": expected d, slots, word and read_heads ≥ 1 (got d " +
                                std::to_string(c.dim) + ", slots " + std::to_string(c.slots) +
                                ", word " + std::to_string(c.word) + ", read_heads " +
                                std::to_string(c.read_heads) + ")");
  return c;
}

// How many entries of running ⊙ mask are 1 (both hold 0s and 1s). Each is read on
// its own, so a batch's mask (uploaded: its host copy answers) and the halting
// loop's running mask (made on the host) cost no read of the device, where the
// product, made on the GPU, would.
int64_t count_ones(const Tensor& running, const Tensor& mask) {
  const Tensor r = running.to(Device::cpu), m = mask.to(Device::cpu);
  int64_t n = 0;
  for (int64_t i = 0; i < r.numel(); ++i) n += r.f32()[i] != 0.0f && m.f32()[i] != 0.0f;
  return n;
}

}  // namespace

MemoryState MemoryState::zeros(int64_t M, int64_t N, int64_t W, int64_t R, Device device) {
  auto zero = [device](const Shape& s) { return ag::constant(Tensor::zeros(s, device)); };
  MemoryState s;
  s.memory = zero({M, N, W});
  s.usage = zero({M, N});
  s.write_weights = zero({M, N});
  s.read_weights = zero({M, R, N});
  s.precedence = zero({M, N});
  s.links = zero({M, N, N});
  return s;
}

MemoryController::MemoryController(ParameterSet& ps, Buffers& buffers, const std::string& name,
                                   const MemoryConfig& config)
    : name_(name), c_(checked(name, config)) {
  const int64_t d = c_.dim;
  mha_ = MultiHeadAttention(ps, name + ".attention", d, c_.heads);
  norm_ = Norm(ps, buffers, name + ".norm", d, c_.norm, c_.iterations);
  nu_ = Linear(ps, name + ".nu", d, d);
  xi_ = Linear(ps, name + ".xi", d, interface_width());
  read_out_ = Linear(ps, name + ".read_out", c_.read_heads * c_.word, d, /*bias=*/false);
  nu_w_ = ps.get(name + ".nu.w");
  nu_b_ = ps.get(name + ".nu.b");
  xi_w_ = ps.get(name + ".xi.w");
  xi_b_ = ps.get(name + ".xi.b");
  drop_ = Dropout(c_.dropout_site, c_.dropout);
}

int64_t MemoryController::interface_width() const {
  return mare::interface_width(c_.read_heads, word_of(c_));
}

void MemoryController::begin(int64_t B, int64_t T, Context&) {
  B_ = B;
  T_ = T;
  s_ = {};
  started_ = false;
  calls_ = 0;
  gate_sum_ = nullptr;
  gate_calls_ = 0;
  gate_calls_on_device_ = Tensor();
}

ag::Var MemoryController::aux_loss() const {
  if (!gate_sum_ || c_.gate_weight == 0.0f) return nullptr;
  if (!gate_calls_on_device_.defined())
    return ag::scale(gate_sum_, c_.gate_weight / static_cast<float>(gate_calls_));
  // The same float division on the device (a sum of +0 terms when no call stepped).
  const Device dev = gate_calls_on_device_.device();
  const Tensor weight = div_forward(Tensor::full({1}, c_.gate_weight, dev),
                                    count_at_least_one(gate_calls_on_device_));
  return ag::mul(gate_sum_, ag::constant(weight));
}

namespace {

// One memory step (SPEC §3 steps 1–11) on every token's memory: the new state and the
// allocation weights. The fused kernel where it runs, else the step op by op.
struct SteppedMemory {
  MemoryState next;
  ag::Var allocation;
};

SteppedMemory step_memory(const ag::Var& xi, const MemoryState& p, const MemoryConfig& c,
                          Device dev, int64_t M, int64_t N) {
  const int64_t R = c.read_heads, W = word_of(c);
  ag::Var mem, u, ww, wr, prec, links, reads, alloc;
  if (c.fused_on(dev)) {
    const ag::MemoryStepVars st = ag::memory_step(
        xi, p.memory, p.usage, p.write_weights, p.read_weights, p.precedence, p.links, R, c.alloc);
    mem = st.memory, u = st.usage, ww = st.write_weights, wr = st.read_weights;
    prec = st.precedence, links = st.links, reads = st.read_vectors, alloc = st.allocation;
  } else {
    const ag::MemoryInterface in = ag::interface_split(xi, R, W);
    const ag::Var psi = ag::retention(in.free_gates, p.read_weights);
    u = ag::usage(p.usage, p.write_weights, psi);
    alloc = ag::allocation(u, c.alloc);
    const ag::Var cw =
        ag::reshape(ag::content_weighting(p.memory, in.write_key, in.write_strength), {M, N});
    ww = ag::write_weighting(alloc, cw, in.allocation_gate, in.write_gate);
    mem = ag::memory_update(p.memory, ww, in.erase, in.write_vector);
    links = ag::link_update(p.links, p.precedence, ww);
    prec = ag::precedence_update(p.precedence, ww);
    const ag::LinkWeightVars lw = ag::link_weights(links, p.read_weights);
    const ag::Var cr = ag::content_weighting(mem, in.read_keys, in.read_strengths);
    wr = ag::read_weights(in.read_modes, lw.backward, cr, lw.forward);
    reads = ag::read_vectors(mem, wr);
  }
  return {{mem, u, ww, wr, prec, links, reads}, alloc};
}

// Halted and padded tokens keep their state: each memory's row of the new state
// where run = 1, of the previous one where run = 0 (next·run + prev·(1 − run) with
// run ∈ {0, 1}, as one selection a state).
void keep_halted(MemoryState& next, const MemoryState& p, const Tensor& run) {
  next.memory = ag::select_rows(run, next.memory, p.memory);
  next.usage = ag::select_rows(run, next.usage, p.usage);
  next.write_weights = ag::select_rows(run, next.write_weights, p.write_weights);
  next.read_weights = ag::select_rows(run, next.read_weights, p.read_weights);
  next.precedence = ag::select_rows(run, next.precedence, p.precedence);
  next.links = ag::select_rows(run, next.links, p.links);
}

}  // namespace

ag::Var MemoryController::operator()(const ag::Var& x, const Tensor& mask, const Tensor& running,
                                     Context& ctx) {
  const int64_t B = x->value.dim(0), T = x->value.dim(1);
  const int64_t M = B * T, N = c_.slots, W = c_.word, R = c_.read_heads;
  if (B != B_ || T != T_)
    throw std::logic_error("MemoryController: input [" + std::to_string(B) + ", " +
                           std::to_string(T) + ", ..] but begin() was called for [" +
                           std::to_string(B_) + ", " + std::to_string(T_) +
                           ", ..]: call begin() once per forward pass");
  const Device dev = x->value.device();
  if (!started_) {
    s_ = MemoryState::zeros(M, N, W, R, dev);
    started_ = true;
  }

  // The controller reads A = Norm(X + MHA(X)) (eq. 3-15).
  const ag::Var a = norm_(ag::add(x, drop_(mha_(x, mask), ctx)), mask, ctx);
  // ν = W_ν A and ξ = W_ξ A as one GEMM against [W_ν W_ξ] (the same parameters,
  // concatenated per call), split afterwards: A is read once and the GEMM is
  // wider (bench_memory_step: the projections 18 % faster at the paper size).
  const int64_t d = c_.dim, X = interface_width();
  const ag::Var both =
      ag::bias_add(ag::matmul(ag::reshape(a, {M, d}), ag::concat({nu_w_, xi_w_}, 1)),
                   ag::concat({nu_b_, xi_b_}, 0));
  const std::vector<ag::Var> nu_xi = ag::split(both, {d, X}, 1);
  const ag::Var nu = ag::reshape(nu_xi[0], {B, T, d});
  const ag::Var& xi = nu_xi[1];

  const Tensor run = mul_forward(running, mask.reshape({M}));
  SteppedMemory stepped;
  if (ctx.live.defined()) {
    // A static step: the memories that step are counted on the device, every call
    // keeps the halted ones' state, and a call where none steps adds +0 to the gate
    // regulariser and no call to its count.
    if (ctx.training && c_.gate_weight != 0.0f) {
      const Tensor stepping =
          matmul_forward(run.reshape({1, M}), Tensor::full({M, 1}, 1.0f, dev)).reshape({1});
      add_gate_term(xi, run, 0, stepping);
      const Tensor live = ctx.live.reshape({1});
      gate_calls_on_device_ =
          gate_calls_on_device_.defined() ? add_forward(gate_calls_on_device_, live) : live.clone();
    }
    stepped = step_memory(xi, s_, c_, dev, M, N);
    keep_halted(stepped.next, s_, run);
  } else {
    const int64_t stepping = count_ones(running, mask);
    if (ctx.training && c_.gate_weight != 0.0f && stepping > 0) add_gate_term(xi, run, stepping);
    stepped = step_memory(xi, s_, c_, dev, M, N);
    if (stepping != M) keep_halted(stepped.next, s_, run);
  }
  s_ = stepped.next;
  if (ctx.memory_recording) record(*ctx.memory_recording, run, stepped.allocation, B, T);
  ++calls_;

  // MCAM = ν + W_r [r_1; …; r_R] (eq. 3-17).
  return ag::add(nu, read_out_(ag::reshape(s_.read_vectors, {B, T, R * W})));
}

// The gate regulariser's term (training only): mean(z²) over the sigmoid gates'
// pre-activations (erase [W], free gates [R], allocation and write gate) of the
// memories that step.
void MemoryController::add_gate_term(const ag::Var& xi, const Tensor& run, int64_t stepping,
                                     const Tensor& stepping_on_device) {
  const int64_t M = run.numel(), W = word_of(c_), R = c_.read_heads, X = interface_width();
  const InterfaceLayout at = InterfaceLayout::of(R, W);
  const std::vector<ag::Var> parts =
      ag::split(xi, {at.erase, W, W, R + 2, X - at.free_gates - (R + 2)}, 1);
  const ag::Var z = ag::concat({parts[1], parts[3]}, 1);  // [M, W + R + 2]
  const int64_t k = W + R + 2;
  // Σ over stepping rows and gates of z², as [1, M] · (z ⊙ z) · [k, 1].
  const ag::Var rows = ag::matmul(ag::constant(run.reshape({1, M})), ag::mul(z, z));
  const ag::Var total =
      ag::matmul(rows, ag::constant(Tensor::full({k, 1}, 1.0f, run.device())));  // [1, 1]
  ag::Var mean;
  if (!stepping_on_device.defined()) {
    mean = ag::scale(ag::reshape(total, {1}), 1.0f / static_cast<float>(stepping * k));
  } else {
    // 1 / (stepping · k) as the host's float division; 1 / 1 when none steps (total +0).
    const Tensor count = scale_forward(stepping_on_device, static_cast<float>(k));
    const Tensor inverse =
        div_forward(Tensor::full({1}, 1.0f, run.device()), count_at_least_one(count));
    mean = ag::mul(ag::reshape(total, {1}), ag::constant(inverse));
  }
  gate_sum_ = gate_sum_ ? ag::add(gate_sum_, mean) : mean;
  ++gate_calls_;
}

// This call's state on the host (mare inspect memory). A frozen memory's allocation and
// reads are those of its last step (this call's were computed from a state it does not
// take).
void MemoryController::record(MemoryRecording& recording, const Tensor& run,
                              const ag::Var& allocation, int64_t B, int64_t T) const {
  const int64_t M = B * T, N = c_.slots, W = word_of(c_), R = c_.read_heads;
  auto cpu = [](const ag::Var& v) { return v->value.to(Device::cpu).clone(); };
  MemoryRecording::Step r;
  r.mixer = name_;
  r.call = calls_;
  r.B = B;
  r.T = T;
  r.run = run.to(Device::cpu).clone();
  r.usage = cpu(s_.usage);
  r.memory = cpu(s_.memory);
  r.allocation = cpu(allocation);
  r.write_weights = cpu(s_.write_weights);
  r.read_weights = cpu(s_.read_weights);
  r.read_vectors = cpu(s_.read_vectors);
  const MemoryRecording::Step* last = nullptr;
  for (const MemoryRecording::Step& s : recording.steps)
    if (s.mixer == name_ && s.call == calls_ - 1 && s.B == B && s.T == T) last = &s;
  for (int64_t m = 0; m < M; ++m) {
    if (r.run.f32()[m] != 0.0f) continue;
    for (auto [field, width] : {std::pair{&MemoryRecording::Step::allocation, N},
                                std::pair{&MemoryRecording::Step::read_vectors, R * W}}) {
      float* row = (r.*field).f32() + m * width;
      for (int64_t k = 0; k < width; ++k) row[k] = last ? (last->*field).f32()[m * width + k] : 0;
    }
  }
  recording.steps.push_back(std::move(r));
}

}  // namespace mare::nn
