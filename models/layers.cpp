#include "models/layers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <stdexcept>

#include "kernels/ops.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/functions_re.h"

namespace mare::nn {

namespace {

// Constant tensors that a forward pass asks for again and again (the position
// signal of every block and halting step): made once per shape and device (on
// the device: grid_ids and a gather), then handed out again while unwritten
// (Tensor::mark_unwritten; an entry something wrote into is made anew). Least
// recently used entries go beyond kConstantCacheBytes. Before, each call built
// them on the host (a [32, 398, 300] signal: 3.8 M sines and cosines) and
// uploaded them: most of a GPU iteration's time at the thesis's sizes went
// there, the GPU waiting.
class ConstantCache {
 public:
  using Key = std::array<int64_t, 6>;
  // The lock is not held while `build` runs: a builder may ask the cache for
  // another entry (the position signal asks for its table).
  template <class Build>
  Tensor get(const Key& key, Build&& build) {
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.tensor.unwritten()) {
        it->second.last_use = ++clock_;
        return it->second.tensor;
      }
    }
    Tensor t = build();
    if (t.nbytes() > kConstantCacheBytes) return t;
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {  // a stale entry (written into), or another thread's
      bytes_ -= it->second.tensor.nbytes();
      entries_.erase(it);
    }
    while (bytes_ + t.nbytes() > kConstantCacheBytes && !entries_.empty()) {
      auto oldest = entries_.begin();
      for (auto e = entries_.begin(); e != entries_.end(); ++e)
        if (e->second.last_use < oldest->second.last_use) oldest = e;
      bytes_ -= oldest->second.tensor.nbytes();
      entries_.erase(oldest);
    }
    t.mark_unwritten();
    entries_[key] = Entry{t, ++clock_};
    bytes_ += t.nbytes();
    return t;
  }

 private:
  static constexpr size_t kConstantCacheBytes = size_t(256) << 20;
  struct Entry {
    Tensor tensor;
    uint64_t last_use = 0;
  };
  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  size_t bytes_ = 0;
  uint64_t clock_ = 0;
};

ConstantCache& constants() {
  static ConstantCache cache;
  return cache;
}

enum ConstantKind : int64_t { kPositionSignal = 2, kPositionTable = 3 };

// The signal's rows of one sequence, [rows, D]. Row r is token r; its position i is r
// for the plain signal (t = 0: bran, Vaswani et al.'s positions from 0) and r + 1 for
// the position-iteration signal P_t (t ≥ 1: thesis eq. 3-6 counts i ∈ [1, I], t ∈ [1, T]).
Tensor position_rows(int64_t rows, int64_t D, int64_t t) {
  std::vector<float> one(static_cast<size_t>(rows * D));
  const int64_t first = t >= 1 ? 1 : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < D; ++j) {
      const double freq =
          std::pow(10000.0, -static_cast<double>(j - j % 2) / static_cast<double>(D));
      const double i = static_cast<double>(r + first);
      double v = j % 2 == 0 ? std::sin(i * freq) : std::cos(i * freq);
      if (t >= 1) v += j % 2 == 0 ? std::sin(t * freq) : std::cos(t * freq);
      one[r * D + j] = static_cast<float>(v);
    }
  return Tensor::from_vector(one, {rows, D});
}

// The table of position_rows on `device` for at least T positions: built for
// 512 positions (or T, when longer) once per (D, t, device); a longer T builds
// a longer one. Row i does not depend on how many rows the table has.
Tensor position_table(int64_t T, int64_t D, int64_t t, Device device) {
  static std::mutex mutex;
  static std::map<std::array<int64_t, 3>, int64_t> rows_built;
  int64_t rows = 0;
  {
    std::lock_guard lock(mutex);
    int64_t& built = rows_built[{D, t, static_cast<int64_t>(device)}];
    built = std::max({built, T, int64_t{512}});
    rows = built;
  }
  return constants().get({kPositionTable, rows, D, t, 0, static_cast<int64_t>(device)},
                         [&] { return position_rows(rows, D, t).to(device); });
}

// x [B, T, ..] with each token's row times its mask [B, T] (0 at padding).
ag::Var masked(const ag::Var& x, const Tensor& mask) {
  return ag::scale_rows(x, ag::constant(mask.reshape({mask.numel()})));
}

}  // namespace

Tensor position_signal(int64_t B, int64_t T, int64_t D, int64_t t, Device device) {
  return constants().get({kPositionSignal, B, T, D, t, static_cast<int64_t>(device)}, [&] {
    // Every sequence's rows gathered from the table: the same floats as
    // position_signal_uncached, with no host work beyond a new table's rows.
    const Tensor ids = grid_ids(B, T, false, device).reshape({B * T});
    return embedding_forward(position_table(T, D, t, device), ids).reshape({B, T, D});
  });
}

Tensor position_signal_uncached(int64_t B, int64_t T, int64_t D, int64_t t, Device device) {
  const Tensor one = position_rows(T, D, t);
  Tensor all = Tensor::empty({B, T, D});
  for (int64_t b = 0; b < B; ++b) std::copy(one.f32(), one.f32() + T * D, all.f32() + b * T * D);
  return all.to(device);
}

// ---- Linear, Embedding, Dropout -------------------------------------------

Linear::Linear(ParameterSet& ps, const std::string& name, int64_t in, int64_t out, bool bias)
    : in_(in), out_(out) {
  w_ = ps.add(name + ".w", {in, out}, Init::glorot_uniform);
  if (bias) b_ = ps.add(name + ".b", {out}, Init::zeros);
}

ag::Var Linear::operator()(const ag::Var& x) const {
  const Shape s = x->value.shape();
  const int64_t rows = s.numel() / in_;
  ag::Var y = ag::matmul(ag::reshape(x, {rows, in_}), w_);
  if (b_) y = ag::bias_add(y, b_);
  std::vector<int64_t> dims = s.vec();
  dims.back() = out_;
  return ag::reshape(y, Shape(std::span<const int64_t>(dims)));
}

Embedding::Embedding(ParameterSet& ps, const std::string& name, int64_t vocab, int64_t dim,
                     const Tensor& init, Init random)
    : dim_(dim) {
  table_ = ps.add(name + ".table", {vocab, dim}, random);
  Tensor host = table_->value.to(Device::cpu);
  if (init.defined()) {
    if (init.dim(0) != vocab || init.dim(1) != dim)
      throw std::invalid_argument(name + ": pretrained embeddings of shape " + init.shape().str() +
                                  ", expected [" + std::to_string(vocab) + ", " +
                                  std::to_string(dim) + "]");
    host = init.to(Device::cpu).clone();
  }
  for (int64_t j = 0; j < dim; ++j) host.f32()[j] = 0.0f;  // <pad>
  table_->value.copy_from(host);
}

ag::Var Embedding::operator()(const Tensor& ids) const {
  return ag::embedding(table_, ids);
}

ag::Var Dropout::operator()(const ag::Var& x, Context& ctx) const {
  if (!ctx.training || p_ == 0.0f) return x;
  const uint64_t use = ctx.site_uses[site_]++;
  // 2^32 draws per use: more than any tensor here holds.
  const uint64_t offset = ((ctx.step << 12) + use) << 32;
  return ag::dropout(x, p_, true, ctx.seed, kStreamDropoutBase + site_, offset);
}

// ---- Norm -----------------------------------------------------------------

Norm::Kind parse_norm(const std::string& name) {
  if (name == "batch") return Norm::Kind::batch;
  if (name == "layer") return Norm::Kind::layer;
  throw std::invalid_argument("norm=" + name + ": expected batch or layer");
}

Norm::Norm(ParameterSet& ps, Buffers& buffers, const std::string& name, int64_t dim, Kind kind,
           int iterations)
    : kind_(kind) {
  if (iterations < 1)
    throw std::invalid_argument(name + ": iterations must be ≥ 1, got " +
                                std::to_string(iterations));
  gamma_ = ps.add(name + ".gamma", {dim}, Init::ones);
  beta_ = ps.add(name + ".beta", {dim}, Init::zeros);
  if (kind == Kind::batch) {
    buffers_ = &buffers;
    for (int t = 0; t < iterations; ++t) {
      const std::string suffix = t == 0 ? "" : ".t" + std::to_string(t);
      mean_keys_.push_back(name + ".running_mean" + suffix);
      var_keys_.push_back(name + ".running_var" + suffix);
      buffers[mean_keys_.back()] = Tensor::zeros({dim}, ps.device());
      buffers[var_keys_.back()] = Tensor::full({dim}, 1.0f, ps.device());
    }
  }
}

Tensor count_indicator(const Tensor& c) {
  const Tensor one = Tensor::full(c.shape(), 1.0f, c.device());
  return add_forward(one,
                     scale_forward(relu_forward(add_forward(one, scale_forward(c, -1.0f))), -1.0f));
}

Tensor count_at_least_one(const Tensor& c) {
  const Tensor one = Tensor::full(c.shape(), 1.0f, c.device());
  return add_forward(c, relu_forward(add_forward(one, scale_forward(c, -1.0f))));
}

ag::Var Norm::operator()(const ag::Var& x, const Tensor& given_mask, const Context& ctx) {
  // In a static halting loop's iteration where no token runs, batch norm sees no row
  // (mask ⊙ live = 0): its running statistics stay as the dynamic loop leaves them.
  const Tensor mask =
      kind_ == Kind::batch && ctx.live.defined()
          ? matmul_forward(given_mask.reshape({given_mask.numel(), 1}), ctx.live.reshape({1, 1}))
                .reshape(given_mask.shape())
          : given_mask;
  if (kind_ == Kind::layer) return masked(ag::layer_norm(x, gamma_, beta_), mask);
  const size_t t = mean_keys_.size() > 1 ? static_cast<size_t>(ctx.iteration) : 0;
  if (t >= mean_keys_.size())
    throw std::logic_error(mean_keys_[0] + ": iteration " + std::to_string(ctx.iteration) +
                           " of a norm with " + std::to_string(mean_keys_.size()) +
                           " sets of running statistics");
  return ag::batch_norm_masked(x, gamma_, beta_, buffers_->at(mean_keys_[t]),
                               buffers_->at(var_keys_[t]), mask.reshape({mask.numel()}),
                               ctx.training);
}

// ---- attention ------------------------------------------------------------

MultiHeadAttention::MultiHeadAttention(ParameterSet& ps, const std::string& name, int64_t dim,
                                       int heads)
    : heads_(heads) {
  if (heads < 1 || dim % heads != 0)
    throw std::invalid_argument(name + ": d = " + std::to_string(dim) +
                                " is not divisible by heads = " + std::to_string(heads));
  q_ = Linear(ps, name + ".q", dim, dim, false);
  k_ = Linear(ps, name + ".k", dim, dim, false);
  v_ = Linear(ps, name + ".v", dim, dim, false);
  o_ = Linear(ps, name + ".o", dim, dim, false);
}

ag::Var MultiHeadAttention::operator()(const ag::Var& x, const Tensor& mask) const {
  return o_(ag::attention(q_(x), k_(x), v_(x), heads_, mask));
}

// ---- transitions ----------------------------------------------------------

ConvTransition::ConvTransition(ParameterSet& ps, const std::string& name, int64_t dim,
                               int64_t width) {
  w1_ = ps.add(name + ".c1a.w", {1, dim, 4 * dim}, Init::glorot_uniform);
  b1_ = ps.add(name + ".c1a.b", {4 * dim}, Init::zeros);
  w2_ = ps.add(name + ".c5.w", {width, 4 * dim, 4 * dim}, Init::glorot_uniform);
  b2_ = ps.add(name + ".c5.b", {4 * dim}, Init::zeros);
  w3_ = ps.add(name + ".c1b.w", {1, 4 * dim, dim}, Init::glorot_uniform);
  b3_ = ps.add(name + ".c1b.b", {dim}, Init::zeros);
}

ag::Var ConvTransition::operator()(const ag::Var& x, const Tensor& mask, Context&) {
  ag::Var h = ag::relu(ag::conv1d(x, w1_, b1_));
  h = ag::relu(ag::conv1d(masked(h, mask), w2_, b2_));
  return masked(ag::conv1d(h, w3_, b3_), mask);
}

InvertedResidual::InvertedResidual(ParameterSet& ps, Buffers& buffers, const std::string& name,
                                   int64_t dim, Norm::Kind norm, bool zero_last, int iterations) {
  w1_ = ps.add(name + ".expand.w", {1, dim, 4 * dim}, Init::glorot_uniform);
  n1_ = Norm(ps, buffers, name + ".norm1", 4 * dim, norm, iterations);
  wd_ = ps.add(name + ".depthwise.w", {3, 4 * dim}, Init::glorot_uniform);
  bd_ = ps.add(name + ".depthwise.b", {4 * dim}, Init::zeros);
  n2_ = Norm(ps, buffers, name + ".norm2", 4 * dim, norm, iterations);
  w3_ = ps.add(name + ".project.w", {1, 4 * dim, dim}, Init::glorot_uniform);
  n3_ = Norm(ps, buffers, name + ".norm3", dim, norm, iterations);
  if (zero_last) n3_.zero_scale();
}

ag::Var InvertedResidual::operator()(const ag::Var& x, const Tensor& mask, Context& ctx) {
  ag::Var h = ag::relu6(n1_(ag::conv1d(x, w1_), mask, ctx));
  h = ag::relu6(n2_(ag::depthwise_conv1d(h, wd_, bd_), mask, ctx));
  return n3_(ag::conv1d(h, w3_), mask, ctx);
}

// ---- bi-affine pair scorer ------------------------------------------------

Biaffine::Biaffine(ParameterSet& ps, const std::string& name, int64_t dim, int64_t classes,
                   bool zero_init)
    : dim_(dim), classes_(classes) {
  l_ = ps.add(name + ".L", {dim + 1, classes * (dim + 1)},
              zero_init ? Init::zeros : Init::glorot_uniform);
}

namespace {
// [B, T, D] -> [B, T, D + 1] with a trailing 1 on every token.
ag::Var append_one(const ag::Var& x) {
  const Shape s = x->value.shape();
  return ag::concat({x, ag::constant(Tensor::full({s[0], s[1], 1}, 1.0f, x->value.device()))}, 2);
}
}  // namespace

ag::Var Biaffine::operator()(const ag::Var& head, const ag::Var& tail, const Tensor& head_offsets,
                             const Tensor& head_rows, const Tensor& tail_offsets,
                             const Tensor& tail_rows) const {
  const auto [offsets, rows] =
      pair_sets(head_offsets, head_rows, tail_offsets, tail_rows, head->value.dim(1));
  const Device dev = head->value.device();
  return (*this)(head, tail, offsets.to(dev), rows.to(dev));
}

std::pair<Tensor, Tensor> Biaffine::pair_sets(const Tensor& head_offsets, const Tensor& head_rows,
                                              const Tensor& tail_offsets, const Tensor& tail_rows,
                                              int64_t T) const {
  const int64_t C = classes_;
  const Tensor ho = head_offsets.to(Device::cpu), hr = head_rows.to(Device::cpu);
  const Tensor to_ = tail_offsets.to(Device::cpu), tr = tail_rows.to(Device::cpu);
  const int64_t P = ho.numel() - 1;
  std::vector<int32_t> offsets{0}, rows;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t l = 0; l < C; ++l) {
      for (int32_t a = ho.i32()[p]; a < ho.i32()[p + 1]; ++a)
        for (int32_t c = to_.i32()[p]; c < to_.i32()[p + 1]; ++c) {
          const int64_t hi = hr.i32()[a], tj = tr.i32()[c];  // rows b·T + i, b·T + j
          const int64_t b = hi / T, i = hi % T, j = tj % T;
          rows.push_back(static_cast<int32_t>(((b * T + i) * C + l) * T + j));
        }
      offsets.push_back(static_cast<int32_t>(rows.size()));
    }
  return {Tensor::from_indices(offsets, {static_cast<int64_t>(offsets.size())}),
          Tensor::from_indices(rows, {static_cast<int64_t>(rows.size())})};
}

ag::Var Biaffine::operator()(const ag::Var& head, const ag::Var& tail, const Tensor& set_offsets,
                             const Tensor& set_rows) const {
  const int64_t B = head->value.dim(0), T = head->value.dim(1), D1 = dim_ + 1, C = classes_;
  const int64_t P = (set_offsets.numel() - 1) / C;
  if (set_offsets.numel() != P * C + 1)
    throw std::logic_error("biaffine: " + std::to_string(set_offsets.numel()) +
                           " set offsets are not P·C + 1 for C = " + std::to_string(C) +
                           " classes (sets staged for another model?)");
  ag::Var h1 = ag::reshape(append_one(head), {B * T, D1});
  ag::Var t1 = append_one(tail);
  // G[b, i, l, q] = Σ_p h[b, i, p] L[p, l, q]; Aff[b, (i, l), j] = Σ_q G[b, i, l, q] t[b, j, q].
  ag::Var g = ag::reshape(ag::matmul(h1, l_), {B, T * C, D1});
  ag::Var aff = ag::reshape(ag::batched_matmul(g, t1, false, true), {B * T * C * T, 1});
  // One log-sum-exp set per (pair, class): the rows (i, l, j) over the head's
  // mention tokens i and the tail's mention tokens j.
  return ag::reshape(ag::logsumexp_sets(aff, set_offsets, set_rows), {P, C});
}

}  // namespace mare::nn
