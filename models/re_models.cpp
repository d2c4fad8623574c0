// The relation-extraction models: cnn (SPEC §4.1), bran (§4.2) and utre (§4.3,
// with §4.4's halting). bran and utre share one encoder: a stack of
// self-attention blocks whose token mixer is a module (multi-head attention
// here; NTCRE swaps in the memory controller) and whose weights are either one
// set per block (bran) or shared over iterations (utre).
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "kernels/ops.h"
#include "models/functions.h"
#include "models/functions_re.h"
#include "models/memory_mixer.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace mare {

namespace {

using nn::Context;

// Dropout sites (Philox streams kStreamDropoutBase + site).
enum Site : uint32_t {
  kSiteInput = 0,
  kSiteMixer = 1,
  kSiteTransition = 2,
  kSiteHead = 3,
  kSiteTail = 4,
  kSiteCnn = 5
};

// Rows of [B·T] flattened: the [B, T] mask as [B·T].
Tensor flat(const Tensor& mask) {
  return mask.reshape({mask.numel()});
}

// ---- the shared pieces of bran and utre -----------------------------------

struct EncoderConfig {
  int64_t d = 300;
  int heads = 4;
  int iterations = 3;  // bran: blocks; utre: iterations (T_max with cpd)
  int max_steps = 3;
  float dropout = 0.15f;
  bool shared = false;    // utre: one block for every iteration
  bool ngram = false;     // utre: character n-gram input
  bool inverted = false;  // utre: the inverted-residual transition
  bool cpd = false;       // utre: dynamic halting
  nn::Norm::Kind norm = nn::Norm::Kind::layer;
  bool input_norm = false;  // utre: BatchNorm on the input
  bool head_norm = false;   // utre: BatchNorm after the heads' W0
  // The token embeddings' factor before the position signal. √d (bran's default) draws
  // the tables with standard deviation 1/√d, so that the scaled embeddings have unit
  // variance like the signal; at 1 (utre and ntcre, whose input BatchNorm sets the scale)
  // they are drawn from U(−0.05, 0.05).
  float embed_scale = 1.0f;
  bool biaffine_zero = false;    // the bi-affine's L starts at zero
  bool transition_zero = false;  // the inverted residual's last norm starts with γ = 0
  bool outer_norm = false;       // ntcre: H = Norm(A + Transition(A)) (thesis eq. 3-13)
  float halt_eps = 0.01f;
  float ponder_weight = 1e-5f;
};

// One transformer block: A = Norm(X + Mixer(X)), H = A + Transition(A); in ntcre
// H = Norm(A + Transition(A)) (eq. 3-13: out_norm).
struct Block {
  std::unique_ptr<nn::TokenMixer> mixer;
  nn::Norm norm;
  std::unique_ptr<nn::Transition> transition;
  nn::Norm out_norm;  // ntcre only
};

// Builds a block's token mixer (ParameterSet, Buffers, parameter name prefix, d).
using MixerFactory = std::function<std::unique_ptr<nn::TokenMixer>(ParameterSet&, nn::Buffers&,
                                                                   const std::string&, int64_t)>;

class AttentionRe : public ReModel {
 public:
  AttentionRe(const std::string& base, const EncoderConfig& c, const ReModelConfig& data,
              uint64_t seed, const MixerFactory& mixer = {})
      : ReModel(seed), base_(base), c_(c), data_(data) {
    const int64_t d = c.d;
    const ReVocabSizes& v = data.sizes;
    const Init table = c.embed_scale != 1.0f ? Init::uniform_unit : Init::uniform_small;
    words_ = nn::Embedding(params_, "embed.word", v.words, d, data.word_init, table);
    if (data.entity_tag_input)
      tags_ = nn::Embedding(params_, "embed.entity_tag", v.entity_tags, d, {}, table);
    if (c.ngram) {
      grams_ = nn::Embedding(params_, "embed.ngram", v.ngrams, d);
      gram_conv_w_ = params_.add("ngram.conv.w", {3, d, d}, Init::glorot_uniform);
      gram_conv_b_ = params_.add("ngram.conv.b", {d}, Init::zeros);
      gram_out_ = nn::Linear(params_, "ngram.out", d, d);
    }
    if (c.ngram && v.pos_tags > 0)
      pos_ = nn::Embedding(params_, "embed.pos_tag", v.pos_tags, d, {}, table);
    if (c.input_norm) input_norm_ = nn::Norm(params_, buffers_, "input.norm", d, c.norm);
    const int blocks = c.shared ? 1 : c.iterations;
    // A shared block's batch norms: one set of running statistics per iteration (nn::Norm).
    const int stats = c.shared ? std::max(c.iterations, c.max_steps) : 1;
    for (int b = 0; b < blocks; ++b) {
      const std::string n = "block" + std::to_string(b);
      Block blk;
      blk.mixer = mixer
                      ? mixer(params_, buffers_, n + ".mixer", d)
                      : std::make_unique<nn::SelfAttention>(params_, n + ".attention", d, c.heads);
      blk.norm = nn::Norm(params_, buffers_, n + ".norm", d, c.norm, stats);
      if (c.inverted)
        blk.transition = std::make_unique<nn::InvertedResidual>(
            params_, buffers_, n + ".transition", d, c.norm, c.transition_zero, stats);
      else
        blk.transition = std::make_unique<nn::ConvTransition>(params_, n + ".transition", d);
      if (c.outer_norm)
        blk.out_norm = nn::Norm(params_, buffers_, n + ".out_norm", d, c.norm, stats);
      blocks_.push_back(std::move(blk));
    }
    if (c.cpd) {
      halt_ = nn::Linear(params_, "halting", d, 1);
      halt_.bias()->value.fill(1.0f);  // the Universal Transformer's initial bias
    }
    head0_ = nn::Linear(params_, "head.w0", d, d);
    head1_ = nn::Linear(params_, "head.w1", d, d);
    tail0_ = nn::Linear(params_, "tail.w0", d, d);
    tail1_ = nn::Linear(params_, "tail.w1", d, d);
    if (c.head_norm) {
      head_norm_ = nn::Norm(params_, buffers_, "head.norm", d, c.norm);
      tail_norm_ = nn::Norm(params_, buffers_, "tail.norm", d, c.norm);
    }
    biaffine_ = nn::Biaffine(params_, "biaffine", d, v.relations, c.biaffine_zero);
    ner_ = nn::Linear(params_, "ner", d, v.ner_tags);
    drop_in_ = nn::Dropout(kSiteInput, c.dropout);
    drop_mix_ = nn::Dropout(kSiteMixer, c.dropout);
    drop_tr_ = nn::Dropout(kSiteTransition, c.dropout);
    drop_head_ = nn::Dropout(kSiteHead, c.dropout);
    drop_tail_ = nn::Dropout(kSiteTail, c.dropout);
  }

  std::string describe() const override {
    std::ostringstream s;
    s << base_ << ": d " << c_.d << ", heads " << c_.heads << ", "
      << (c_.shared ? "iterations " : "blocks ") << c_.iterations
      << (c_.cpd ? ", halting (T_max " + std::to_string(c_.max_steps) + ")" : "") << ", transition "
      << (c_.inverted ? "inverted residual" : "C1-C5-C1") << ", norm "
      << (c_.norm == nn::Norm::Kind::batch ? "batch" : "layer") << (c_.ngram ? ", n-grams" : "")
      << ", dropout " << c_.dropout;
    return s.str();
  }

  ReOutput forward(const ReBatch& given, ReTask task, Context& ctx) override {
    ReBatch copy;
    const ReBatch& batch = staged(given, task, copy);
    const int64_t B = batch.B, T = batch.T, d = c_.d;
    const Device dev = batch.mask.device();
    ag::Var x = words_(batch.words);
    if (data_.entity_tag_input) x = ag::add(x, tags_(batch.entity_tags));
    if (c_.ngram) x = ag::add(x, ngram_vectors(batch));
    if (c_.ngram && batch.pos_tags.defined() && data_.sizes.pos_tags > 0)
      x = ag::add(x, pos_(batch.pos_tags));
    if (c_.embed_scale != 1.0f) x = ag::scale(x, c_.embed_scale);
    if (!c_.shared) x = ag::add(x, ag::constant(nn::position_signal(B, T, d, 0, dev)));
    if (c_.input_norm) x = input_norm_(x, batch.mask, ctx);
    x = drop_in_(x, ctx);

    ReOutput out;
    ag::Var h = encode(x, batch, ctx, out);

    if (task == ReTask::entities) {
      out.ner_logits = ag::reshape(ner_(h), {B * T, data_.sizes.ner_tags});
      return out;
    }
    ag::Var e_head = project(h, head0_, head1_, head_norm_, batch.mask, ctx);
    ag::Var e_tail = project(h, tail0_, tail1_, tail_norm_, batch.mask, ctx);
    e_head = drop_head_(e_head, ctx);
    e_tail = drop_tail_(e_tail, ctx);
    out.pair_logits =
        biaffine_(e_head, e_tail, batch.staged.at(kPairSetOffsets), batch.staged.at(kPairSetRows));
    return out;
  }

 private:
  // What stage() derives from a batch: the n-gram masks, the bi-affine's pair sets.
  static constexpr const char* kGramReal = "ngram.real";
  static constexpr const char* kGramHas = "ngram.has_gram";
  static constexpr const char* kGramSource = "ngram.source";
  static constexpr const char* kPairSetOffsets = "biaffine.set_offsets";
  static constexpr const char* kPairSetRows = "biaffine.set_rows";

 public:
  void stage(ReBatch& batch, ReTask task) const override {
    const Device dev = batch.mask.device();
    if (needs_gram_masks(batch)) {
      GramMasks g = gram_masks(batch);
      batch.staged[kGramReal] = g.real.to(dev);
      batch.staged[kGramHas] = g.has_gram.to(dev);
      batch.staged[kGramSource] = g.source.to(dev);
    }
    if (needs_pair_sets(batch, task)) {
      auto [offsets, rows] = biaffine_.pair_sets(batch.head_offsets, batch.head_rows,
                                                 batch.tail_offsets, batch.tail_rows, batch.T);
      batch.staged[kPairSetOffsets] = offsets.to(dev);
      batch.staged[kPairSetRows] = rows.to(dev);
    }
  }

 private:
  bool needs_gram_masks(const ReBatch& b) const {
    return c_.ngram && !b.staged.contains(kGramReal);
  }
  static bool needs_pair_sets(const ReBatch& b, ReTask task) {
    return task == ReTask::relations && !b.staged.contains(kPairSetOffsets);
  }
  // `given` when the trainer staged it, else `copy` (a shallow copy of it) staged here:
  // the same numbers either way, the host work inside the step.
  const ReBatch& staged(const ReBatch& given, ReTask task, ReBatch& copy) const {
    if (!needs_gram_masks(given) && !needs_pair_sets(given, task)) return given;
    copy = given;
    stage(copy, task);
    return copy;
  }

  // A token's gram list is padded with id 0 to the batch's longest. real: 1 for a gram
  // slot, 0 for padding ([B·T·G]); has_gram: 1 for a token with a gram ([B·T]); source:
  // the slot the max reads for each slot, its own if it is a gram, else the token's first
  // gram's (i32 [B·T·G]): the same maximum as over the grams alone, and max's backward
  // reaches that gram through the copy. On the host, from the ids (a batch's small
  // upload keeps its host copy).
  struct GramMasks {
    Tensor real, has_gram, source;
  };
  static GramMasks gram_masks(const ReBatch& batch) {
    const int64_t BT = batch.B * batch.T, G = batch.ngrams.dim(1);
    const Tensor ids = batch.ngrams.to(Device::cpu);
    std::vector<float> real(static_cast<size_t>(BT * G)), has_gram(static_cast<size_t>(BT));
    std::vector<int32_t> source(static_cast<size_t>(BT * G));
    for (int64_t r = 0; r < BT; ++r) {
      int64_t first = -1;
      for (int64_t k = 0; k < G; ++k)
        if (ids.i32()[r * G + k] != 0) {
          real[r * G + k] = 1.0f;
          if (first < 0) first = k;
        }
      has_gram[r] = first >= 0 ? 1.0f : 0.0f;
      for (int64_t k = 0; k < G; ++k)
        source[r * G + k] =
            static_cast<int32_t>(real[r * G + k] != 0.0f || first < 0 ? r * G + k : r * G + first);
    }
    return {Tensor::from_vector(real, {BT * G}), Tensor::from_vector(has_gram, {BT}),
            Tensor::from_indices(source, {BT * G})};
  }

  // Character n-grams (from the batch's staged masks): embed every gram, conv1d (kernel 3) over a
  // token's grams, max over them, then a linear layer (SPEC §4.3). Padded slots are masked as
  // everywhere (SPEC §4.2): they enter the convolution as zeros (as beyond the ends of
  // a "same" convolution; the <pad> row gets no gradient) and take no part in the max.
  // A token without grams (a padding token) gets 0.
  ag::Var ngram_vectors(const ReBatch& batch) {
    const int64_t BT = batch.B * batch.T, G = batch.ngrams.dim(1), d = c_.d;
    const Tensor &real = batch.staged.at(kGramReal), &has_gram = batch.staged.at(kGramHas),
                 &source = batch.staged.at(kGramSource);
    ag::Var e = ag::reshape(grams_(batch.ngrams), {BT * G, d});
    e = ag::reshape(ag::scale_rows(e, ag::constant(real)), {BT, G, d});
    ag::Var conv = ag::reshape(ag::conv1d(e, gram_conv_w_, gram_conv_b_), {BT * G, d});
    ag::Var pooled = ag::max(ag::reshape(ag::embedding(conv, source), {BT, G, d}), 1);  // [B·T, d]
    pooled = ag::scale_rows(pooled, ag::constant(has_gram));
    return ag::reshape(gram_out_(pooled), {batch.B, batch.T, d});
  }

  const Block& block(int t) const { return blocks_[c_.shared ? 0 : t]; }

  // X + Mixer(X) -> Norm -> + Transition (-> Norm in ntcre), at iteration t (0-based)
  ag::Var apply_block(int t, const ag::Var& x, const ReBatch& batch, const Tensor& running,
                      Context& ctx) {
    Block& b = blocks_[c_.shared ? 0 : t];
    ctx.iteration = t;  // the shared block's norms: iteration t's running statistics
    ag::Var mixed = (*b.mixer)(x, batch.mask, running, ctx);
    ag::Var a = b.norm(ag::add(x, drop_mix_(mixed, ctx)), batch.mask, ctx);
    ag::Var h = ag::add(a, drop_tr_((*b.transition)(a, batch.mask, ctx), ctx));
    return b.out_norm.has_value() ? b.out_norm(h, batch.mask, ctx) : h;
  }

  // The mixers' loss terms of this forward pass (the memory's gate regulariser), or null.
  ag::Var mixer_losses() const {
    ag::Var sum;
    for (const Block& b : blocks_)
      if (ag::Var l = b.mixer->aux_loss()) sum = sum ? ag::add(sum, l) : l;
    return sum;
  }

  ag::Var encode(ag::Var h, const ReBatch& batch, Context& ctx, ReOutput& out) {
    const int64_t B = batch.B, T = batch.T, d = c_.d, N = B * T;
    const Device dev = batch.mask.device();
    for (Block& b : blocks_) b.mixer->begin(B, T, ctx);
    const Tensor token_mask = flat(batch.mask);
    if (!c_.cpd) {
      for (int t = 0; t < c_.iterations; ++t) {
        ag::Var x =
            c_.shared ? ag::add(h, ag::constant(nn::position_signal(B, T, d, t + 1, dev))) : h;
        h = apply_block(t, x, batch, token_mask, ctx);
      }
      ctx.iteration = 0;
      out.aux_loss = mixer_losses();
      return h;
    }
    // Dynamic halting (SPEC §4.4): h_t from X_t = H_{t−1} + P_t, before the block.
    std::vector<ag::Var> probs, states;
    if (ctx.static_step)
      halting_loop_on_device(h, batch, token_mask, ctx, probs, states);
    else
      halting_loop_on_host(h, batch, token_mask, ctx, probs, states);
    ctx.iteration = 0;
    ag::Halting w = ag::halting(ag::concat(probs, 0), token_mask, c_.max_steps, c_.halt_eps);
    // Ĥ = Σ_t p_t H_t
    const int64_t K = static_cast<int64_t>(states.size());
    std::vector<int64_t> ones(static_cast<size_t>(K), 1);
    std::vector<ag::Var> p_rows = ag::split(w.p, ones, 0);
    ag::Var acc;
    for (int64_t k = 0; k < K; ++k) {
      ag::Var term = ag::scale_rows(ag::reshape(states[k], {N, d}), ag::reshape(p_rows[k], {N}));
      acc = acc ? ag::add(acc, term) : term;
    }
    out.aux_loss = ag::scale(w.ponder, c_.ponder_weight);
    if (ag::Var l = mixer_losses()) out.aux_loss = ag::add(out.aux_loss, l);
    out.halting_steps = w.steps;
    out.token_mask = token_mask;
    return ag::reshape(acc, {B, T, d});
  }

  // The loop reads the device once an iteration: whether every token has halted.
  // That read also gives the host the next iteration's running mask, which goes up
  // with its bytes known to the host (the memory mixer asks whether it is all ones).
  void halting_loop_on_host(ag::Var& h, const ReBatch& batch, const Tensor& token_mask,
                            Context& ctx, std::vector<ag::Var>& probs,
                            std::vector<ag::Var>& states) {
    const int64_t B = batch.B, T = batch.T, d = c_.d, N = B * T;
    const Device dev = batch.mask.device();
    Tensor halted = Tensor::zeros({N});  // on the host
    for (int t = 0; t < c_.max_steps; ++t) {
      ag::Var x = ag::add(h, ag::constant(nn::position_signal(B, T, d, t + 1, dev)));
      probs.push_back(ag::reshape(ag::sigmoid(halt_(x)), {1, N}));
      // Tokens that halted before this step keep their state: run = 1 − halted.
      const Tensor run_host = running_of(halted), run = run_host.on(dev);
      ag::Var next = apply_block(t, x, batch, run, ctx);
      // A running token takes its new state, a halted one keeps its old (SPEC §4.4);
      // while none has halted, that is the new state.
      const float* r = run_host.f32();
      h = std::all_of(r, r + N, [](float v) { return v == 1.0f; }) ? next
                                                                   : ag::select_rows(run, next, h);
      states.push_back(h);
      ag::Halting now = ag::halting(ag::constant(concat_forward(values_of(probs), 0)), token_mask,
                                    c_.max_steps, c_.halt_eps);
      halted = now.halted.on(Device::cpu);
      if (all_halted(halted, token_mask)) break;
    }
  }

  // The same loop with no read of the device (Context::static_step): all t_max
  // iterations, the running mask made on the device. An iteration after every token
  // halted keeps every state (select_rows with run = 0), its step gets weight p = 0
  // (the halting weights of the first K steps do not depend on later ones), and
  // ctx.live = 0 keeps its norms and memories from counting it; so every number is
  // the host loop's (+0 terms added where that loop stopped).
  void halting_loop_on_device(ag::Var& h, const ReBatch& batch, const Tensor& token_mask,
                              Context& ctx, std::vector<ag::Var>& probs,
                              std::vector<ag::Var>& states) {
    const int64_t B = batch.B, T = batch.T, d = c_.d, N = B * T;
    const Device dev = batch.mask.device();
    const Tensor ones = Tensor::full({N}, 1.0f, dev), mask_column = token_mask.reshape({N, 1});
    Tensor halted = Tensor::zeros({N}, dev);
    for (int t = 0; t < c_.max_steps; ++t) {
      ag::Var x = ag::add(h, ag::constant(nn::position_signal(B, T, d, t + 1, dev)));
      probs.push_back(ag::reshape(ag::sigmoid(halt_(x)), {1, N}));
      // run = 1 + (−1 · halted), as the host loop rounds it; live = [some real token runs].
      const Tensor run = add_forward(ones, scale_forward(halted, -1.0f));
      ctx.live = nn::count_indicator(matmul_forward(run.reshape({1, N}), mask_column));
      ag::Var next = apply_block(t, x, batch, run, ctx);
      h = ag::select_rows(run, next, h);
      states.push_back(h);
      halted = ag::halting(ag::constant(concat_forward(values_of(probs), 0)), token_mask,
                           c_.max_steps, c_.halt_eps)
                   .halted;
    }
    ctx.live = Tensor();
  }

  static std::vector<Tensor> values_of(const std::vector<ag::Var>& vs) {
    std::vector<Tensor> out;
    for (const ag::Var& v : vs) out.push_back(v->value);
    return out;
  }

  // halted: [N] on the host, 0 or 1; mask: [N] (a batch's: its host copy answers).
  static bool all_halted(const Tensor& halted, const Tensor& mask) {
    const Tensor m = mask.to(Device::cpu);
    for (int64_t i = 0; i < halted.numel(); ++i)
      if (m.f32()[i] > 0 && halted.f32()[i] == 0.0f) return false;
    return true;
  }

  // 1 − halted on the host, as add(1, scale(halted, −1)) rounds it: exactly 1 or +0.
  static Tensor running_of(const Tensor& halted) {
    std::vector<float> run(static_cast<size_t>(halted.numel()));
    for (int64_t i = 0; i < halted.numel(); ++i) run[i] = 1.0f + -1.0f * halted.f32()[i];
    return Tensor::from_vector(run, halted.shape());
  }

  // E = W1 · ReLU(Norm?(W0 · H))
  static ag::Var project(const ag::Var& h, const nn::Linear& w0, const nn::Linear& w1,
                         nn::Norm& norm, const Tensor& mask, Context& ctx) {
    ag::Var z = w0(h);
    if (norm.has_value()) z = norm(z, mask, ctx);
    return w1(ag::relu(z));
  }

  std::string base_;
  EncoderConfig c_;
  ReModelConfig data_;
  nn::Embedding words_, tags_, grams_, pos_;
  ag::Var gram_conv_w_, gram_conv_b_;
  nn::Linear gram_out_;
  nn::Norm input_norm_, head_norm_, tail_norm_;
  std::vector<Block> blocks_;
  nn::Linear halt_, head0_, head1_, tail0_, tail1_, ner_;
  nn::Biaffine biaffine_;
  nn::Dropout drop_in_, drop_mix_, drop_tr_, drop_head_, drop_tail_;
};

// ---- cnn ------------------------------------------------------------------

struct CnnConfig {
  int64_t d = 300;            // word embedding
  int64_t pos_dim = 25;       // each of the two position embeddings
  int64_t char_dim = 25;      // character embedding
  int64_t char_filters = 50;  // char-CNN output
  int64_t filters = 300;      // m
  int64_t kernel = 3;         // k of both convolutions
  float dropout = 0.15f;
};

class CnnRe : public ReModel {
 public:
  CnnRe(const CnnConfig& c, const ReModelConfig& data, uint64_t seed)
      : ReModel(seed), c_(c), data_(data) {
    const ReVocabSizes& v = data.sizes;
    if (c.kernel % 2 == 0) throw std::invalid_argument("cnn: kernel must be odd");
    words_ = nn::Embedding(params_, "embed.word", v.words, c.d, data.word_init);
    if (data.entity_tag_input)
      tags_ = nn::Embedding(params_, "embed.entity_tag", v.entity_tags, c.d);
    positions_ = 2 * v.max_distance + 2;
    pos_head_ = nn::Embedding(params_, "embed.pos_head", positions_, c.pos_dim);
    pos_tail_ = nn::Embedding(params_, "embed.pos_tail", positions_, c.pos_dim);
    chars_ = nn::Embedding(params_, "embed.char", v.chars, c.char_dim);
    char_w_ =
        params_.add("char.conv.w", {c.kernel, c.char_dim, c.char_filters}, Init::glorot_uniform);
    char_b_ = params_.add("char.conv.b", {c.char_filters}, Init::zeros);
    const int64_t in = c.d + 2 * c.pos_dim + c.char_filters;
    conv_w_ = params_.add("conv.w", {c.kernel, in, c.filters}, Init::glorot_uniform);
    conv_b_ = params_.add("conv.b", {c.filters}, Init::zeros);
    out_ = nn::Linear(params_, "out", c.filters, v.relations);
    drop_ = nn::Dropout(kSiteCnn, c.dropout);
  }

  bool supports_ner() const override { return false; }

  std::string describe() const override {
    std::ostringstream s;
    s << "cnn: word " << c_.d << ", positions 2x" << c_.pos_dim << ", char-CNN " << c_.char_dim
      << "->" << c_.char_filters << ", " << c_.filters << " filters of width " << c_.kernel
      << ", dropout " << c_.dropout;
    return s.str();
  }

  ReOutput forward(const ReBatch& batch, ReTask task, Context& ctx) override {
    if (task != ReTask::relations) throw std::invalid_argument("cnn has no NER head");
    const int64_t B = batch.B, T = batch.T, P = batch.P;
    const Device dev = batch.mask.device();
    // Token features of every document once: word (+ entity tag) and char-CNN.
    ag::Var tok = words_(batch.words);
    if (data_.entity_tag_input) tok = ag::add(tok, tags_(batch.entity_tags));
    tok = ag::reshape(tok, {B * T, c_.d});
    ag::Var ch = chars_(batch.chars);                            // [B·T, K, char_dim]
    ag::Var chv = ag::max(ag::conv1d(ch, char_w_, char_b_), 1);  // [B·T, char_filters]
    ag::Var token = ag::concat({tok, chv}, 1);                   // [B·T, d + cf]
    // One sequence per pair: its document's tokens with positions relative to
    // the closest head and tail mentions.
    const Tensor doc = batch.pair_doc.to(Device::cpu), hp = batch.head_pos.to(Device::cpu),
                 tp = batch.tail_pos.to(Device::cpu), mask = batch.mask.to(Device::cpu);
    std::vector<int32_t> rows(P * T), rel_h(P * T), rel_t(P * T);
    std::vector<float> pmask(P * T);
    const int64_t md = data_.sizes.max_distance;
    auto rel = [md](int64_t i, int64_t at) {
      const int64_t r = std::clamp<int64_t>(i - at, -md, md);
      return static_cast<int32_t>(r + md + 1);  // 1 .. 2·md + 1; 0 = padding
    };
    for (int64_t p = 0; p < P; ++p) {
      const int64_t b = doc.i32()[p];
      for (int64_t i = 0; i < T; ++i) {
        const bool real = mask.f32()[b * T + i] > 0;
        rows[p * T + i] = static_cast<int32_t>(b * T + i);
        rel_h[p * T + i] = real ? rel(i, hp.i32()[p]) : 0;
        rel_t[p * T + i] = real ? rel(i, tp.i32()[p]) : 0;
        pmask[p * T + i] = real ? 1.0f : 0.0f;
      }
    }
    auto ids = [&](const std::vector<int32_t>& v) {
      return Tensor::from_indices(v, {P, T}).to(dev);
    };
    ag::Var seq = ag::concat(
        {ag::embedding(token, ids(rows)), pos_head_(ids(rel_h)), pos_tail_(ids(rel_t))}, 2);
    const ag::Var pair_mask = ag::constant(Tensor::from_vector(pmask, {P * T}).to(dev));
    seq = ag::scale_rows(seq, pair_mask);
    ag::Var conv = ag::relu(ag::conv1d(seq, conv_w_, conv_b_));
    // ReLU outputs are ≥ 0, so zeroing the padding keeps it out of the max.
    conv = ag::scale_rows(conv, pair_mask);
    ag::Var pooled = drop_(ag::max(conv, 1), ctx);  // [P, filters]
    ReOutput out;
    out.pair_logits = out_(pooled);
    return out;
  }

 private:
  CnnConfig c_;
  ReModelConfig data_;
  int64_t positions_ = 0;
  nn::Embedding words_, tags_, pos_head_, pos_tail_, chars_;
  ag::Var char_w_, char_b_, conv_w_, conv_b_;
  nn::Linear out_;
  nn::Dropout drop_;
};

}  // namespace

double mean_halting_steps(const Tensor& halting_steps, const Tensor& token_mask) {
  if (!halting_steps.defined()) return 0.0;
  const Tensor steps = halting_steps.to(Device::cpu), m = token_mask.to(Device::cpu);
  double total = 0, real = 0;
  for (int64_t i = 0; i < steps.numel(); ++i)
    if (m.f32()[i] > 0) total += steps.i32()[i], real += 1;
  return real > 0 ? total / real : 0.0;
}

std::unique_ptr<ReModel> build_re_model(const ModelSpec& spec, const ReModelConfig& config,
                                        uint64_t seed) {
  validate_model(spec.canonical());  // unknown switches, bad values and combinations
  if (config.sizes.relations < 2)
    throw std::invalid_argument("model " + spec.canonical() +
                                ": the data has fewer than two relation classes");
  if (spec.base == "cnn") {
    CnnConfig c;
    c.d = spec.get_int("d", c.d);
    c.pos_dim = spec.get_int("pos_dim", c.pos_dim);
    c.char_dim = spec.get_int("char_dim", c.char_dim);
    c.char_filters = spec.get_int("char_filters", c.char_filters);
    c.filters = spec.get_int("filters", c.filters);
    c.kernel = spec.get_int("kernel", c.kernel);
    c.dropout = static_cast<float>(spec.get_double("dropout", c.dropout));
    return std::make_unique<CnnRe>(c, config, seed);
  }
  EncoderConfig c;
  c.d = spec.get_int("d", c.d);
  c.heads = static_cast<int>(spec.get_int("heads", c.heads));
  c.iterations = static_cast<int>(spec.get_int("iterations", c.iterations));
  c.max_steps = static_cast<int>(spec.get_int("max_steps", c.iterations));
  c.dropout = static_cast<float>(spec.get_double("dropout", c.dropout));
  // L starts at zero unless +biaffine_init=glorot (reports/learning/findings.md: with Glorot's
  // L the classes' initial scores differ by about 11 and the loss starts at 5.5, chance 0.69)
  c.biaffine_zero =
      !spec.switches.count("biaffine_init") || spec.switches.at("biaffine_init") == "zeros";
  // bran adds the unit-amplitude position signal to its embeddings directly: √d keeps
  // the words from being drowned by it (reports/learning/findings.md: at 1 the words are 25
  // times smaller than the signal at d 32 and bran underfits)
  const std::string scale = spec.switches.count("embed_scale") ? spec.switches.at("embed_scale")
                            : spec.base == "bran"              ? "sqrt_d"
                                                               : "1";
  if (scale == "sqrt_d") c.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.d)));
  if (c.iterations < 1 || c.max_steps < 1)
    throw std::invalid_argument("model " + spec.canonical() +
                                ": iterations and max_steps must be ≥ 1");
  if (c.dropout < 0 || c.dropout >= 1)
    throw std::invalid_argument("model " + spec.canonical() + ": dropout must be in [0, 1)");
  if (spec.base == "bran") {
    c.norm = nn::Norm::Kind::layer;
    return std::make_unique<AttentionRe>("bran", c, config, seed);
  }
  if (spec.base == "utre" || spec.base == "ntcre") {
    // utre's encoder: one shared block, the switches of Table 4.6, batch norm by default.
    c.shared = true;
    c.ngram = spec.has("ngram");
    c.inverted = spec.has("transition");
    // +transition_init=zeros starts the inverted residual's last γ at zero: a probe of why
    // UTRE learns slower than BRAN (reports/learning/findings.md: it did not help)
    c.transition_zero =
        spec.switches.count("transition_init") && spec.switches.at("transition_init") == "zeros";
    c.cpd = spec.has("cpd");
    c.outer_norm = spec.base == "ntcre";
    c.norm = nn::parse_norm(spec.switches.count("norm") ? spec.switches.at("norm") : "batch");
    c.input_norm = true;
    c.head_norm = true;
    if (!c.cpd) c.max_steps = c.iterations;
  }
  if (spec.base == "utre") return std::make_unique<AttentionRe>("utre", c, config, seed);
  if (spec.base == "ntcre") {
    // utre's encoder whose mixer is attention then the memory controller (SPEC §4.5).
    nn::MemoryConfig m;
    m.dim = c.d;
    m.heads = c.heads;
    m.slots = spec.get_int("slots", m.slots);
    m.word = spec.get_int("word", c.d);
    m.read_heads = spec.get_int("read_heads", m.read_heads);
    m.alloc = parse_allocation_variant(spec.switches.count("alloc") ? spec.switches.at("alloc")
                                                                    : "sorted");
    const std::string step =
        spec.switches.count("memory_step") ? spec.switches.at("memory_step") : "auto";
    m.step = step == "fused"      ? nn::MemoryConfig::Step::fused
             : step == "composed" ? nn::MemoryConfig::Step::composed
                                  : nn::MemoryConfig::Step::automatic;
    m.norm = c.norm;
    m.iterations = c.max_steps;
    m.dropout = c.dropout;
    const MixerFactory mixer = [m](ParameterSet& ps, nn::Buffers& buffers, const std::string& name,
                                   int64_t) {
      return std::make_unique<nn::MemoryController>(ps, buffers, name, m);
    };
    const std::string base = "ntcre (memory N " + std::to_string(m.slots) + ", W " +
                             std::to_string(m.word) + ", R " + std::to_string(m.read_heads) +
                             ", allocation " + std::string(to_string(m.alloc)) + ")";
    return std::make_unique<AttentionRe>(base, c, config, seed, mixer);
  }
  throw std::invalid_argument("model '" + spec.base + "' is not a relation-extraction model");
}

}  // namespace mare
