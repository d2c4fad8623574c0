// NTCRE's token mixer (SPEC §4.5, thesis §3.3): multi-head self-attention
// followed by a DNC memory controller, every token owning one memory [N, W]
// that lives across the iterations of one forward pass.
//
// Per call (one iteration t), with X the block input [B, T, d]:
//   A   = Norm(X + MHA(X))                                   (eq. 3-15)
//   ν   = W_ν A,  ξ = W_ξ A  (one interface per token, [B·T, |ξ|])
//   one memory step of SPEC §3 (steps 1–11) on the tokens' memories
//   out = MCAM = ν + W_r [r_1; …; r_R]                        (eq. 3-17)
// The encoder's block (models/re_models.cpp) then applies
// A' = Norm(X + MCAM) and H = A' + Transition(A'). Two differences from SPEC
// §4.5 step 5 follow from reusing utre's block: the attention's Norm lives
// inside this mixer (the block has one Norm of its own, used for A'), and the
// block adds the transition without an outer Norm (eq. 3-13 writes
// H = Norm(A' + Transition(A')); with +transition the inverted residual ends
// in a Norm of its own).
//
// Memories [B·T, N, W] and the rest of the DNC state (usage, write and read
// weights, precedence, links) are zero at begin() and persist across calls.
// A token whose `running` entry is 0 (halted) or whose mask entry is 0
// (padding) keeps its whole state unchanged in that call. Previous reads are
// not fed back into the controller (SPEC §4.5 step 4).
#pragma once

#include <cstdint>
#include <string>

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

  const MemoryConfig& config() const { return c_; }
  int64_t interface_width() const;
  // Valid after a call; reset by begin().
  const MemoryState& state() const { return s_; }

 private:
  MemoryConfig c_;
  MultiHeadAttention mha_;
  Norm norm_;
  Linear nu_, xi_, read_out_;
  Dropout drop_;
  int64_t B_ = 0, T_ = 0;
  MemoryState s_;
  bool started_ = false;  // the state holds this pass's values (else zeros are made on use)
};

}  // namespace mare::nn
