// One training iteration of the relation-extraction models (Google Benchmark;
// SPEC §10, thesis Table 4.15 and Figure 4.11): exactly the RE step of
// experiments/re_trainer.cpp — gradients reset, forward on a batch,
// cross-entropy on the pairs' logits plus the model's aux loss (the ponder
// cost), the loss read back (the trainer's divergence check), backward, and an
// Adam step with L2 1e-4 and global-norm clipping 3 (thesis Table 4.1) — on a
// synthetic batch (models/ may not read data files or include experiments/).
//
// The batch: 32 documents at the SemEval 2018 shape (T = 96 tokens) or the
// BioCreative CDR shape (T = 398), random word/n-gram/char/entity-tag ids from a
// fixed seed; every document has 90–100% of T real tokens (document 0 exactly
// T), 2 entity pairs per document whose entities have 1–2 mentions of 1–3
// tokens. Class weights off, gold entity tags an input, RE steps only (the
// trainer's NER steps are a different, cheaper head).
//
// Configurations: cnn, bran, utre (Table 4.6 row 1), UTRE (utre+ngram+transition)
// and UTRE-CPD, each at the paper size (d 300, heads 4) and at the default
// profile's small size (d 64, heads 4; cnn: d 64, filters 64). Names:
//   re_iteration/<model>/<paper|small>/<semeval|cdr>
// so `--benchmark_filter=/small/` or `=/paper/semeval` pick a group. The
// attention models at the paper size on the CDR shape take more than 20 s an
// iteration on a 2-core CPU: they are re_iteration_slow/<model>/paper/cdr, run
// one timed iteration, and only when a --benchmark_filter names them (without
// a filter the program runs everything else: `--benchmark_filter=.` runs all).
//
// Counters: items_per_second (items = real tokens of the batch per iteration),
// parameters, iter_{min,median,max}_s (the distribution of the timed
// iterations, Figure 4.11; `--benchmark_repetitions=N` gives Google Benchmark's
// own aggregates on top), mean_steps (UTRE-CPD: halting's mean iterations
// per real token over the timed iterations), first_iter_s (one untimed warm-up step before the
// loop: Adam's first update, first-touch of gradient buffers), and
// peak_rss_delta_MiB: the process's peak resident set during this benchmark
// minus its resident set when the benchmark started. Linux only: the peak
// (VmHWM) is reset by writing 5 to /proc/self/clear_refs and free heap pages are
// returned with malloc_trim first; memory that the allocator kept resident from
// an earlier benchmark and reuses is not counted. Where clear_refs cannot be
// written the counter is ru_maxrss's growth instead (zero unless this
// benchmark raised the process's all-time peak) and is named
// maxrss_growth_MiB.
//
//   build/models/bench/bench_re_iteration --benchmark_filter=/small/
//   build/models/bench/bench_re_iteration --benchmark_out=re_iteration.json
//       --benchmark_out_format=json
//
// `--device cuda` moves the model and the batch to the GPU (bench_device.h's
// flag and checks); each iteration then ends with a device synchronisation so
// the host clock covers the GPU work.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_device.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/optim.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace {

using namespace mare;
using namespace mare::bench;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSeed = 20181;
constexpr int64_t kBatch = 32;
constexpr int64_t kPairsPerDoc = 2;
constexpr int64_t kGrams = 8;  // n-gram slots per token
constexpr int64_t kChars = 12;

struct DataShape {
  const char* name;
  int64_t T;
  int64_t relations;  // with NULL
};
// SemEval 2018 task 7: six relations + NULL; CDR: CID + NULL (thesis Table 4.15's
// mean lengths).
constexpr DataShape kShapes[] = {{"semeval", 96, 7}, {"cdr", 398, 2}};

ReVocabSizes vocab(const DataShape& s) {
  ReVocabSizes v;
  v.words = 20000;
  v.ngrams = 5000;
  v.chars = 100;
  v.entity_tags = 6;  // pad, O, B/I of two entity types
  v.ner_tags = 5;
  v.relations = s.relations;
  v.max_distance = s.T;
  return v;
}

Tensor ids(const std::vector<int32_t>& v, const Shape& shape) {
  return Tensor::from_indices(v, shape).to(g_device);
}

// The synthetic batch (layout of models/re_batch.h), the same bytes every run.
ReBatch synthetic_batch(const DataShape& s, const ReVocabSizes& v) {
  PhiloxStream rng(kSeed, 7);
  auto below = [&](int64_t n) { return static_cast<int64_t>(rng.below(static_cast<uint32_t>(n))); };
  const int64_t B = kBatch, T = s.T, N = B * T;
  ReBatch b;
  b.B = B;
  b.T = T;
  std::vector<int32_t> words(N, 0), tags(N, 0), ner(N, -1), grams(N * kGrams, 0),
      chars(N * kChars, 0);
  std::vector<float> mask(N, 0.0f);
  std::vector<int64_t> len(B);
  for (int64_t d = 0; d < B; ++d) {
    len[d] = d == 0 ? T : T - below(T / 10 + 1);
    for (int64_t i = 0; i < len[d]; ++i) {
      const int64_t r = d * T + i;
      mask[r] = 1.0f;
      words[r] = static_cast<int32_t>(1 + below(v.words - 1));
      tags[r] = 1;  // O
      ner[r] = 0;
      const int64_t g = 3 + below(kGrams - 2), c = 2 + below(kChars - 1);
      for (int64_t k = 0; k < g; ++k)
        grams[r * kGrams + k] = static_cast<int32_t>(1 + below(v.ngrams - 1));
      for (int64_t k = 0; k < c; ++k)
        chars[r * kChars + k] = static_cast<int32_t>(1 + below(v.chars - 1));
    }
  }
  // Pairs: head of type 0, tail of type 1, each entity 1–2 mentions of 1–3 tokens.
  std::vector<int32_t> pair_doc, labels, head_off{0}, head_rows, tail_off{0}, tail_rows, head_pos,
      tail_pos;
  auto mention_set = [&](int64_t d, int type, std::vector<int32_t>& rows,
                         std::vector<int64_t>& starts) {
    const int64_t m = 1 + below(2);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t w = 1 + below(3), at = below(len[d] - w + 1);
      starts.push_back(at);
      for (int64_t i = at; i < at + w; ++i) {
        const int64_t r = d * T + i;
        rows.push_back(static_cast<int32_t>(r));
        tags[r] = static_cast<int32_t>(2 + 2 * type + (i == at ? 0 : 1));
        ner[r] = static_cast<int32_t>(1 + 2 * type + (i == at ? 0 : 1));
      }
    }
  };
  for (int64_t d = 0; d < B; ++d) {
    for (int64_t p = 0; p < kPairsPerDoc; ++p) {
      std::vector<int64_t> hs, ts;
      mention_set(d, 0, head_rows, hs);
      mention_set(d, 1, tail_rows, ts);
      head_off.push_back(static_cast<int32_t>(head_rows.size()));
      tail_off.push_back(static_cast<int32_t>(tail_rows.size()));
      // Closest head/tail mention starts, as the data loader picks them.
      int64_t bh = hs[0], bt = ts[0];
      for (int64_t h : hs)
        for (int64_t t : ts)
          if (std::abs(h - t) < std::abs(bh - bt)) bh = h, bt = t;
      pair_doc.push_back(static_cast<int32_t>(d));
      labels.push_back(static_cast<int32_t>(below(s.relations)));
      head_pos.push_back(static_cast<int32_t>(bh));
      tail_pos.push_back(static_cast<int32_t>(bt));
      b.distance.push_back(static_cast<int>(std::abs(bh - bt)));
      b.example_index.push_back(static_cast<int64_t>(b.example_index.size()));
    }
  }
  const int64_t P = static_cast<int64_t>(pair_doc.size());
  b.words = ids(words, {B, T});
  b.mask = Tensor::from_vector(mask, {B, T}).to(g_device);
  b.ngrams = ids(grams, {N, kGrams});
  b.chars = ids(chars, {N, kChars});
  b.entity_tags = ids(tags, {B, T});
  b.ner_targets = ids(ner, {N});
  b.P = P;
  b.pair_doc = ids(pair_doc, {P});
  b.labels = ids(labels, {P});
  b.head_offsets = ids(head_off, {P + 1});
  b.head_rows = ids(head_rows, {static_cast<int64_t>(head_rows.size())});
  b.tail_offsets = ids(tail_off, {P + 1});
  b.tail_rows = ids(tail_rows, {static_cast<int64_t>(tail_rows.size())});
  b.head_pos = ids(head_pos, {P});
  b.tail_pos = ids(tail_pos, {P});
  return b;
}

int64_t real_tokens(const ReBatch& b) {
  const Tensor m = b.mask.to(Device::cpu);
  int64_t n = 0;
  for (int64_t i = 0; i < m.numel(); ++i) n += m.f32()[i] > 0;
  return n;
}

// ---- resident memory (Linux /proc) -------------------------------------------

// A "VmXXX:  1234 kB" line of /proc/self/status in MiB, or −1.
double proc_status_mib(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::strtod(line.c_str() + key.size() + 1, nullptr) / 1024.0;
  return -1.0;
}

double maxrss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kB on Linux
}

struct PeakRss {
  bool reset = false;  // VmHWM was reset, so the peak is this benchmark's own
  double base = 0.0;
  void start() {
    malloc_trim(0);
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    reset = static_cast<bool>(f);
    base = reset ? proc_status_mib("VmRSS") : maxrss_mib();
    if (reset && base < 0) reset = false, base = maxrss_mib();
  }
  void report(benchmark::State& st) const {
    if (reset)
      st.counters["peak_rss_delta_MiB"] = proc_status_mib("VmHWM") - base;
    else
      st.counters["maxrss_growth_MiB"] = maxrss_mib() - base;
  }
};

// ---- the benchmark -----------------------------------------------------------

void sync_device() {
#ifdef MARE_WITH_CUDA
  if (g_device == Device::cuda) cuda::synchronize();
#endif
}

// The trainer's RE step (experiments/re_trainer.cpp), lr 5e-4. Returns the
// halting's mean iterations per real token (0 without halting).
double train_step(ReModel& model, Adam& adam, const ReBatch& batch, uint64_t step) {
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = kSeed;
  ctx.step = step;
  for (const ag::Var& p : model.parameters().all()) p->grad = Tensor();
  ReOutput out = model.forward(batch, ReTask::relations, ctx);
  ag::Var loss = ag::cross_entropy(out.pair_logits, batch.labels);
  if (out.aux_loss) loss = ag::add(loss, out.aux_loss);
  benchmark::DoNotOptimize(loss->value.item());
  ag::backward(loss);
  adam.step(5e-4f);
  sync_device();
  return out.mean_steps;
}

void BM_ReIteration(benchmark::State& st, const std::string& model_name, const DataShape& shape) {
  PeakRss rss;
  rss.start();
  try {
    ReModelConfig cfg;
    cfg.sizes = vocab(shape);
    std::unique_ptr<ReModel> model = build_re_model(resolve_model(model_name), cfg, kSeed);
    if (g_device != Device::cpu) model->to(g_device);
    Adam adam(model->parameters(), {.l2 = 1e-4f, .clip_norm = 3.0f});
    const ReBatch batch = synthetic_batch(shape, cfg.sizes);
    const int64_t tokens = real_tokens(batch);

    uint64_t step = 0;
    auto t0 = Clock::now();
    train_step(*model, adam, batch, step++);
    const double first = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<double> seconds;
    double steps_sum = 0.0;
    for (auto _ : st) {
      t0 = Clock::now();
      steps_sum += train_step(*model, adam, batch, step++);
      seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const size_t n = seconds.size();
    st.SetItemsProcessed(st.iterations() * tokens);
    st.SetLabel(model->describe());
    st.counters["parameters"] = static_cast<double>(model->parameters().count());
    st.counters["tokens"] = static_cast<double>(tokens);
    st.counters["first_iter_s"] = first;
    if (n > 0) {
      st.counters["iter_min_s"] = seconds.front();
      st.counters["iter_median_s"] =
          n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
      st.counters["iter_max_s"] = seconds.back();
      if (steps_sum > 0) st.counters["mean_steps"] = steps_sum / static_cast<double>(n);
    }
    rss.report(st);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
  }
}

struct Config {
  const char* label;
  const char* paper;
  const char* small;
};
constexpr Config kConfigs[] = {
    {"cnn", "cnn+d=300", "cnn+d=64+filters=64"},
    {"bran", "bran+d=300+heads=4", "bran+d=64+heads=4"},
    {"utre", "utre+d=300+heads=4", "utre+d=64+heads=4"},
    {"UTRE", "UTRE+d=300+heads=4", "UTRE+d=64+heads=4"},
    {"UTRE-CPD", "UTRE-CPD+d=300+heads=4", "UTRE-CPD+d=64+heads=4"},
};

// Rows whose single iteration takes more than 20 s on the 2-core development
// machine (README.md): the attention models at the paper size on the CDR shape.
// They are named re_iteration_slow/…, run one timed iteration (after the
// warm-up), and are left out of a run without --benchmark_filter.
bool slow(const Config& c, const std::string& size, const DataShape& shape) {
  return size == "paper" && std::string(shape.name) == "cdr" && std::string(c.label) != "cnn";
}

void register_benchmarks() {
  for (const std::string size : {"small", "paper"})
    for (const DataShape& shape : kShapes)
      for (const Config& c : kConfigs) {
        const bool is_slow = slow(c, size, shape);
        const std::string name = std::string(is_slow ? "re_iteration_slow/" : "re_iteration/") +
                                 c.label + "/" + size + "/" + shape.name;
        benchmark::internal::Benchmark* b =
            benchmark::RegisterBenchmark(name.c_str(), BM_ReIteration,
                                         std::string(size == "small" ? c.small : c.paper), shape)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        if (is_slow) b->Iterations(1);
      }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    setup_device(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_re_iteration: " << e.what() << "\n";
    return 2;
  }
  bool filtered = false;
  for (int i = 1; i < argc; ++i)
    filtered = filtered || std::strncmp(argv[i], "--benchmark_filter", 18) == 0;
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // A negative filter (Google Benchmark ≥ 1.6): everything but the slow rows.
  if (!filtered) benchmark::SetBenchmarkFilter("-^re_iteration_slow/");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
