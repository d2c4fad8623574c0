// Layers: small modules that own named parameters in a ParameterSet and run
// through the tape (models/functions.h). Shapes follow the kernels: token
// sequences are [B, T, D] (batch, position, feature); a [B, T] mask holds 1 for
// real tokens and 0 for padding.
//
// Every layer registers its parameters under "<name>.<part>" at construction,
// in a fixed order, so the same seed gives the same initial weights. Dropout
// sites draw from their own Philox stream (kStreamDropoutBase + site) at a
// counter offset that depends on the training step and on how often the site
// was used in this forward pass, so masks never repeat and are reproducible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tensor.h"
#include "models/autograd.h"
#include "models/parameters.h"

namespace mare::nn {

struct MemoryRecording;  // models/memory_mixer.h

// What one forward pass needs besides its inputs.
struct Context {
  bool training = false;
  uint64_t seed = 0;                       // the run's seed (dropout masks)
  uint64_t step = 0;                       // the training step (dropout masks differ per step)
  std::map<uint32_t, uint64_t> site_uses;  // dropout site -> uses in this pass
  // The iteration (0-based) of the weight-shared block being run (utre, ntcre): a Norm
  // with one set of running statistics per iteration uses set `iteration`.
  int iteration = 0;
  // When set, memory mixers append the state they leave (models/memory_mixer.h).
  MemoryRecording* memory_recording = nullptr;
  // A static step: no host decision on data the step computes, so that the step makes
  // no read of the device and runs the same work every time (what a CUDA graph of the
  // step needs). The halting loop runs all t_max iterations under device masks and the
  // memory mixers count their stepping tokens on the device; the numbers are the
  // dynamic step's, bit for bit (tests/models: StaticStep), at t_max iterations' work.
  bool static_step = false;
  // Inside a static step's halting loop: [1] on the device, 1 while some real token
  // runs in this iteration (the dynamic loop would run it), else 0. An iteration
  // without one changes nothing: batch norms take no statistics from it and a memory
  // counts no call of its gate regulariser.
  Tensor live;
};

// Counts held as [1] tensors on the device, exact while below 2^24: min(c, 1) and
// max(c, 1) of a count c ∈ {0, 1, 2, …}, as 1 − relu(1 − c) and c + relu(1 − c).
Tensor count_indicator(const Tensor& c);
Tensor count_at_least_one(const Tensor& c);

// Non-trainable state that must survive a checkpoint (batch-norm statistics).
using Buffers = std::map<std::string, Tensor>;

class Linear {
 public:
  Linear() = default;
  Linear(ParameterSet& ps, const std::string& name, int64_t in, int64_t out, bool bias = true);
  // x: [.., in] -> [.., out]
  ag::Var operator()(const ag::Var& x) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  ag::Var bias() const { return b_; }

 private:
  ag::Var w_, b_;
  int64_t in_ = 0, out_ = 0;
};

class Embedding {
 public:
  Embedding() = default;
  // `init`, when defined ([vocab, dim] on the CPU), replaces the initial values
  // (word2vec); otherwise they are drawn by `random`. Row 0 (padding) is set to zero
  // either way.
  Embedding(ParameterSet& ps, const std::string& name, int64_t vocab, int64_t dim,
            const Tensor& init = {}, Init random = Init::uniform_small);
  ag::Var operator()(const Tensor& ids) const;  // ids i32 [..] -> [.., dim]
  int64_t dim() const { return dim_; }

 private:
  ag::Var table_;
  int64_t dim_ = 0;
};

class Dropout {
 public:
  Dropout() = default;
  Dropout(uint32_t site, float p) : site_(site), p_(p) {}
  ag::Var operator()(const ag::Var& x, Context& ctx) const;
  float rate() const { return p_; }

 private:
  uint32_t site_ = 0;
  float p_ = 0.0f;
};

// Normalisation over the feature axis of [B, T, D] tokens: BatchNorm with
// statistics over the non-padded tokens (running averages for evaluation), or
// LayerNorm per token. Padded tokens come out as zeros.
//
// A BatchNorm inside a block whose weights are shared over the iterations (utre,
// ntcre) normalises each iteration's tokens with that iteration's batch statistics
// in training, and these differ from iteration to iteration. With `iterations` > 1 it
// keeps one set of running averages per iteration (Context::iteration picks it; γ and
// β stay shared), so that evaluation normalises iteration t as training did (recurrent
// batch norm, Cooijmans et al. 2016). One shared set averages the iterations'
// statistics and normalises every iteration with that mean. Buffers:
// <name>.running_mean / .running_var for iteration 0, <name>.running_mean.t<k> /
// .running_var.t<k> for iteration k ≥ 1.
class Norm {
 public:
  enum class Kind { batch, layer };
  Norm() = default;
  Norm(ParameterSet& ps, Buffers& buffers, const std::string& name, int64_t dim, Kind kind,
       int iterations = 1);
  ag::Var operator()(const ag::Var& x, const Tensor& mask, const Context& ctx);
  Kind kind() const { return kind_; }
  bool has_value() const { return gamma_ != nullptr; }
  // γ = 0: the output starts at β (0), whatever the input.
  void zero_scale() { gamma_->value.fill(0.0f); }

 private:
  ag::Var gamma_, beta_;
  // The running statistics live in the model's Buffers (read through it on every
  // call, so that moving the buffers to another device moves them here too).
  Buffers* buffers_ = nullptr;
  std::vector<std::string> mean_keys_, var_keys_;  // per iteration
  Kind kind_ = Kind::batch;
};
Norm::Kind parse_norm(const std::string& name);  // "batch" | "layer"

// Multi-head self-attention with a key padding mask: out = W_o · Attn(W_q x, W_k x, W_v x).
class MultiHeadAttention {
 public:
  MultiHeadAttention() = default;
  MultiHeadAttention(ParameterSet& ps, const std::string& name, int64_t dim, int heads);
  ag::Var operator()(const ag::Var& x, const Tensor& mask) const;

 private:
  Linear q_, k_, v_, o_;
  int heads_ = 1;
};

// What a transformer block mixes its tokens with (SPEC §4.3, §4.5): multi-head
// self-attention in bran and utre; in ntcre the memory controller, whose
// per-token memories persist over the iterations of one forward pass. A model
// calls begin() once per forward pass, then the mixer once per iteration with
// the tokens that still run (halting): [B, T, D] -> [B, T, D].
class TokenMixer {
 public:
  virtual ~TokenMixer() = default;
  virtual void begin(int64_t B, int64_t T, Context& ctx) {}
  // mask: [B, T] real tokens; running: [B·T] 1 for tokens not halted yet.
  virtual ag::Var operator()(const ag::Var& x, const Tensor& mask, const Tensor& running,
                             Context& ctx) = 0;
  // A term the mixer adds to the loss for the forward pass since begin(), or null.
  virtual ag::Var aux_loss() const { return nullptr; }
};

class SelfAttention : public TokenMixer {
 public:
  SelfAttention(ParameterSet& ps, const std::string& name, int64_t dim, int heads)
      : mha_(ps, name, dim, heads) {}
  ag::Var operator()(const ag::Var& x, const Tensor& mask, const Tensor&, Context&) override {
    return mha_(x, mask);
  }

 private:
  MultiHeadAttention mha_;
};

// A residual branch over tokens: [B, T, D] -> [B, T, D].
class Transition {
 public:
  virtual ~Transition() = default;
  virtual ag::Var operator()(const ag::Var& x, const Tensor& mask, Context& ctx) = 0;
};

// BRAN's C1 -> ReLU -> C5 -> ReLU -> C1 (d -> 4d -> 4d -> d), padding zeroed
// before each convolution so no padded position leaks into a real one.
class ConvTransition : public Transition {
 public:
  ConvTransition(ParameterSet& ps, const std::string& name, int64_t dim, int64_t width = 5);
  ag::Var operator()(const ag::Var& x, const Tensor& mask, Context& ctx) override;

 private:
  ag::Var w1_, b1_, w2_, b2_, w3_, b3_;
};

// The inverted residual (MobileNetV2): C1 to 4d -> Norm -> ReLU6 -> depthwise
// conv 3 -> Norm -> ReLU6 -> C1 to d -> Norm. With zero_last, the last Norm's γ starts
// at zero (Goyal et al. 2017's zero-γ for the last norm of a residual branch): the block
// starts as A + 0, instead of adding a unit-variance branch to the residual stream.
class InvertedResidual : public Transition {
 public:
  // iterations: the norms' sets of running statistics (Norm).
  InvertedResidual(ParameterSet& ps, Buffers& buffers, const std::string& name, int64_t dim,
                   Norm::Kind norm, bool zero_last = false, int iterations = 1);
  ag::Var operator()(const ag::Var& x, const Tensor& mask, Context& ctx) override;

 private:
  ag::Var w1_, wd_, bd_, w3_;
  Norm n1_, n2_, n3_;
};

// BRAN's bi-affine pair scorer: Aff[b, i, l, j] = [h_i; 1] · L_l · [t_j; 1],
// pooled per pair by log-sum-exp over the head's and tail's mention tokens.
class Biaffine {
 public:
  Biaffine() = default;
  // L starts Glorot-uniform, or at zero with `zero_init` (Dozat and Manning's biaffine
  // classifiers: every class of a pair starts with the same score, where Glorot's L
  // gives differences of about ±10 at d 32).
  Biaffine(ParameterSet& ps, const std::string& name, int64_t dim, int64_t classes,
           bool zero_init = false);
  // head, tail: [B, T, D]; pair sets as in models/re_batch.h -> [P, classes]
  ag::Var operator()(const ag::Var& head, const ag::Var& tail, const Tensor& head_offsets,
                     const Tensor& head_rows, const Tensor& tail_offsets,
                     const Tensor& tail_rows) const;
  // The same from the log-sum-exp sets that pair_sets made.
  ag::Var operator()(const ag::Var& head, const ag::Var& tail, const Tensor& set_offsets,
                     const Tensor& set_rows) const;
  // One log-sum-exp set per (pair, class) over the rows (b, i, l, j) of the [B·T·C·T]
  // scores, i over the head's mention tokens and j over the tail's, from a batch of T
  // tokens' pair sets: {offsets i32 [P·C + 1], rows i32 [..]} on the host.
  std::pair<Tensor, Tensor> pair_sets(const Tensor& head_offsets, const Tensor& head_rows,
                                      const Tensor& tail_offsets, const Tensor& tail_rows,
                                      int64_t T) const;

 private:
  ag::Var l_;  // [(D + 1), classes · (D + 1)]: L[p, l, q]
  int64_t dim_ = 0, classes_ = 0;
};

// Constants of the encoders (device-generic: built with kernel ops).
// The sinusoidal position (and iteration) signal of SPEC §4.3, [B, T, D]:
// P[i, 2j] = sin(i / 10000^{2j/D}) (+ sin(t / 10000^{2j/D}) when t ≥ 1),
// P[i, 2j+1] = cos(...) (+ cos(...)). Token r of a sequence is position i = r for
// t = 0 (bran's plain signal) and i = r + 1 for t ≥ 1 (the position-iteration
// signal: thesis eq. 3-6 counts positions from 1). Built once per shape and device and
// handed out again (a read-only constant: a caller must not write into it;
// one that does gets a fresh one next time); _uncached builds it every call.
Tensor position_signal(int64_t B, int64_t T, int64_t D, int64_t t, Device device);
Tensor position_signal_uncached(int64_t B, int64_t T, int64_t D, int64_t t, Device device);

}  // namespace mare::nn
