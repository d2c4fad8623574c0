// NTCRE's token mixer (SPEC §4.5, thesis §3.3): multi-head self-attention
// followed by a DNC memory controller, every token owning one memory [N, W]
// that lives across the iterations of one forward pass.
//
// Per call (one iteration t), with X the block input [B, T, d]:
//   A   = Norm(X + MHA(X))                                   (eq. 3-15)
//   ν   = W_ν A,  ξ = W_ξ A  (one interface per token, [B·T, |ξ|]; one GEMM
//         against [W_ν W_ξ], the two parameters concatenated per call)
//   one memory step of SPEC §3 (steps 1–11) on the tokens' memories (the
//         fused op of kernels/memory/fused_step.h, or the composed ops:
//         MemoryConfig::step)
//   out = MCAM = ν + W_r [r_1; …; r_R]                        (eq. 3-17)
// The encoder's block (models/re_models.cpp) then applies
// A' = Norm(X + MCAM) (eq. 3-14) and H = Norm(A' + Transition(A')) (eq. 3-13,
// the block's out_norm). The attention's Norm lives inside this mixer; the
// block's own Norm is the one of A'.
//
// The gate regulariser of thesis Table 4.2 (β₁ = 1e-5, "hard sigmoid"; SPEC §4.4
// reads it as β₁ · mean(z²) over the sigmoid gates' pre-activations z): per call,
// the mean of z² over the erase vector, free gates, allocation and write gate of
// the memories that step; aux_loss() is β₁ times its mean over the calls.
//
// Memories [B·T, N, W] and the rest of the DNC state (usage, write and read
// weights, precedence, links) are zero at begin() and persist across calls.
// A token whose `running` entry is 0 (halted) or whose mask entry is 0
// (padding) keeps its whole state unchanged in that call. Previous reads are
// not fed back into the controller (SPEC §4.5 step 4).
//
// With Context::memory_recording set, every call appends the DNC state it
// leaves (MemoryRecording, copied to the CPU): `mare inspect memory` reads it.
// Recording only reads values: outputs and gradients are the same with and
// without it, and when the pointer is null nothing is copied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/memory/allocation.h"
#include "models/layers.h"

namespace mare::nn {

struct MemoryConfig {
  int64_t dim = 300;       // d
  int heads = 4;           // attention heads
  int64_t slots = 4;       // N
  int64_t word = 0;        // W (0: d)
  int64_t read_heads = 2;  // R
  AllocationVariant alloc = AllocationVariant::sorted;
  Norm::Kind norm = Norm::Kind::batch;
  int iterations = 1;  // the attention Norm's sets of running statistics (nn::Norm)
  // The memory step: one fused op (kernels/memory/fused_step.h) or the
  // composed ops of models/functions_memory.h (the same equations; they agree
  // to rounding). automatic: fused on the CPU, composed on the GPU, where the
  // fused CUDA step (kernels/cuda/memory_step.cu) has not yet run on a GPU
  // (`memory_step=fused` asks for it there).
  enum class Step { automatic, fused, composed };
  Step step = Step::automatic;
  bool fused_on(Device device) const {
    return step == Step::fused || (step == Step::automatic && device == Device::cpu);
  }
  float gate_weight = 1e-5f;  // β₁ of the gate regulariser (thesis Table 4.2)
  float dropout = 0.0f;       // on the attention branch, before Norm(X + MHA(X))
  uint32_t dropout_site = 6;  // its Philox stream (kStreamDropoutBase + site)
};

// The DNC state of every token's memory after the latest call (all [B·T, ...]).
struct MemoryState {
  ag::Var memory;         // [M, N, W]
  ag::Var usage;          // [M, N]
  ag::Var write_weights;  // [M, N]
  ag::Var read_weights;   // [M, R, N]
  ag::Var precedence;     // [M, N]
  ag::Var links;          // [M, N, N]
  ag::Var read_vectors;   // [M, R, W] (the latest reads; not part of the recurrence)

  // Every memory at zero (SPEC §4.5: each document starts so), as constants on `device`.
  static MemoryState zeros(int64_t M, int64_t N, int64_t W, int64_t R, Device device);
};

// The state of every memory after each call of a controller (one call per
// iteration), on the CPU. Tensors are [M, ...] with M = B·T.
struct MemoryRecording {
  struct Step {
    std::string mixer;     // the controller's parameter prefix ("block0.mixer")
    int call = 0;          // 0-based call of that controller in this forward pass
    int64_t B = 0, T = 0;  // M = B·T memories
    Tensor run;            // [M] 1 where the memory stepped (token real and not halted)
    Tensor usage;          // [M, N]
    Tensor memory;         // [M, N, W]
    Tensor allocation;     // [M, N] this call's allocation weighting
    Tensor write_weights;  // [M, N]
    Tensor read_weights;   // [M, R, N]
    Tensor read_vectors;   // [M, R, W] this call's reads
    // A memory that did not step (run 0) keeps its state, and its allocation and reads
    // are those of its last step (zeros before its first): every field of a memory is
    // its own state's.
  };
  std::vector<Step> steps;  // in call order
};

class MemoryController : public TokenMixer {
 public:
  // Parameters: <name>.attention.{q,k,v,o}, <name>.norm, <name>.nu, <name>.xi,
  // <name>.read_out (W_r, no bias: ν carries one).
  MemoryController(ParameterSet& ps, Buffers& buffers, const std::string& name,
                   const MemoryConfig& config);
  void begin(int64_t B, int64_t T, Context& ctx) override;
  ag::Var operator()(const ag::Var& x, const Tensor& mask, const Tensor& running,
                     Context& ctx) override;
  // β₁ · mean over the calls since begin() of mean(z²) (the header's comment); null
  // before a call with a running memory.
  ag::Var aux_loss() const override;

  const MemoryConfig& config() const { return c_; }
  int64_t interface_width() const;
  // Valid after a call; reset by begin().
  const MemoryState& state() const { return s_; }

 private:
  // stepping: the memories that step, on the host, or (stepping_on_device defined, [1])
  // counted on the device by a static step.
  void add_gate_term(const ag::Var& xi, const Tensor& run, int64_t stepping,
                     const Tensor& stepping_on_device = {});
  void record(MemoryRecording& recording, const Tensor& run, const ag::Var& allocation, int64_t B,
              int64_t T) const;

  std::string name_;
  MemoryConfig c_;
  int calls_ = 0;  // calls since begin()
  MultiHeadAttention mha_;
  Norm norm_;
  Linear nu_, xi_, read_out_;
  ag::Var nu_w_, nu_b_, xi_w_, xi_b_;  // ν's and ξ's parameters, run as one GEMM
  Dropout drop_;
  int64_t B_ = 0, T_ = 0;
  MemoryState s_;
  ag::Var gate_sum_;             // Σ over calls of mean(z²)
  int gate_calls_ = 0;           // calls with at least one memory that stepped
  Tensor gate_calls_on_device_;  // the same count, [1] on the device, in a static step
  bool started_ = false;         // the state holds this pass's values (else zeros are made on use)
};

}  // namespace mare::nn
