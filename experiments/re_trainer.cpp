#include "experiments/re_trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "experiments/data/generators.h"
#include "experiments/re_data.h"
#include "experiments/re_metrics.h"
#include "experiments/re_official.h"
#include "experiments/run_lifecycle.h"
#include "experiments/trainer.h"
#include "kernels/memory_budget.h"
#include "kernels/names.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "models/checkpoint.h"
#include "models/functions.h"
#include "models/optim.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace mare {

namespace {

using Clock = std::chrono::steady_clock;

// --grad-norms: each parameter's gradient norm, summed over the steps of an evaluation
// window that reached it (a parameter the step's task does not reach has no gradient).
struct GradientNorms {
  std::vector<double> sum;
  std::vector<int64_t> steps;

  void add(const ParameterSet& params) {
    const std::vector<ag::Var>& ps = params.all();
    sum.resize(ps.size(), 0.0);
    steps.resize(ps.size(), 0);
    for (size_t k = 0; k < ps.size(); ++k) {
      if (!ps[k]->grad.defined()) continue;
      sum[k] += std::sqrt(sum_squares(ps[k]->grad));  // kernels/ops/optim.h, either device
      ++steps[k];
    }
  }

  // {name: mean norm} over the window; then starts a new window
  nlohmann::json take(const ParameterSet& params) {
    nlohmann::json out = nlohmann::json::object();
    const std::vector<ag::Var>& ps = params.all();
    for (size_t k = 0; k < ps.size() && k < sum.size(); ++k)
      if (steps[k] > 0) out[ps[k]->name] = sum[k] / static_cast<double>(steps[k]);
    sum.assign(sum.size(), 0.0);
    steps.assign(steps.size(), 0);
    return out;
  }
};

// Philox streams of the trainer (kernels/random.h lists the harness's).
constexpr uint32_t kStreamTaskChoice = 4;     // NER or RE, one draw per step
constexpr uint64_t kDrawsPerStep = 1u << 16;  // batch sampling: stream position step · 2^16

std::vector<int> argmax_rows(const Tensor& logits) {
  const Tensor z = logits.to(Device::cpu);
  const int64_t n = z.dim(0), c = z.dim(1);
  std::vector<int> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (z.f32()[i * c + j] > z.f32()[i * c + best]) best = j;
    out[i] = static_cast<int>(best);
  }
  return out;
}

// ReTrainOptions::class_weights: eq. 4-2 weights always, never, or for the corpora that
// take them by default (the multiclass ones).
enum class ClassWeights { by_corpus, on, off };
constexpr Named<ClassWeights> kClassWeights[] = {
    {ClassWeights::by_corpus, "auto"}, {ClassWeights::on, "on"}, {ClassWeights::off, "off"}};

struct Evaluation {
  RelationScores relations;
  // The task's own score (re_official.h) where the corpus has one, else null; f1() is
  // what model selection and the curves read: its F1, else the micro F1 over pairs.
  nlohmann::json official;
  std::vector<int> predicted;  // [split examples] decided class ids, -1 where not scored
  double f1() const {
    return official.is_null() ? relations.micro.f1 : official["f1"].get<double>();
  }
  NerScores ner;
  bool has_ner = false;
  double mean_steps = 0;
  double null_margin = 0;  // the margin the relation decisions used
  double argmax_f1 = 0;    // micro F1 of the argmax decisions (margin 0)
};

// Scores a split, or the documents `only` of it (relations only): relations
// always (decided by `rule`), NER when `ner` (the model trains it).
Evaluation evaluate(ReModel& model, const ReCorpus& corpus, const ReSplit& split,
                    int64_t eval_batch, Device device, bool ner, const NullMarginRule& rule,
                    const std::vector<int>* only = nullptr) {
  Evaluation ev;
  // The examples scored, in the split's order, and each one's place among them.
  std::vector<bool> kept(split.examples.size(), only == nullptr);
  std::vector<std::vector<BatchItem>> batches;
  if (only) {
    for (size_t q = 0; q < only->size(); ++q) {
      const int d = (*only)[q];
      if (q % static_cast<size_t>(eval_batch) == 0) batches.emplace_back();
      batches.back().push_back({d, split.document_examples[d]});
      for (int x : split.document_examples[d]) kept[x] = true;
    }
    ner = false;
  } else {
    batches = evaluation_batches(split, static_cast<int>(eval_batch));
  }
  std::vector<int> gold, distance, at(split.examples.size(), -1);
  for (size_t i = 0; i < split.examples.size(); ++i) {
    if (!kept[i]) continue;
    at[i] = static_cast<int>(gold.size());
    gold.push_back(split.labels[i]);
    distance.push_back(split.examples[i].distance);
  }
  std::vector<PairDecision> decisions(gold.size());  // an unscored pair: NULL
  std::vector<std::vector<int>> ner_gold, ner_pred;
  double steps_sum = 0, steps_batches = 0;
  nn::Context ctx;
  for (const auto& items : batches) {
    ReBatch batch = to_device(make_batch(split, items), device);
    if (batch.P > 0) {
      ReOutput out = model.forward(batch, ReTask::relations, ctx);
      const Tensor z = out.pair_logits->value.to(Device::cpu);
      const std::vector<PairDecision> d = pair_decisions(z.f32(), z.dim(0), z.dim(1));
      for (int64_t k = 0; k < batch.P; ++k) decisions[at[batch.example_index[k]]] = d[k];
      steps_sum += out.mean_steps(), steps_batches += 1;
    }
    if (ner) {
      ReOutput out = model.forward(batch, ReTask::entities, ctx);
      const std::vector<int> p = argmax_rows(out.ner_logits->value);
      const Tensor g = batch.ner_targets.to(Device::cpu);
      for (int64_t b = 0; b < batch.B; ++b) {
        std::vector<int> gs, ps;
        for (int64_t i = 0; i < batch.T; ++i) {
          const int32_t t = g.i32()[b * batch.T + i];
          if (t < 0) break;
          gs.push_back(t);
          ps.push_back(p[b * batch.T + i]);
        }
        ner_gold.push_back(std::move(gs));
        ner_pred.push_back(std::move(ps));
      }
    }
  }
  // A task that gives its pairs (semeval2018) always predicts one of its types.
  auto decide_all = [&](double m) {
    std::vector<int> pred(decisions.size());
    for (size_t i = 0; i < pred.size(); ++i)
      pred[i] = corpus.given_pairs ? decisions[i].best : decide(decisions[i], m);
    return pred;
  };
  auto decided = [&](double m) {
    return relation_scores(gold, decide_all(m), distance, corpus.relation_names);
  };
  ev.null_margin =
      rule.tune && !corpus.given_pairs ? tune_null_margin(gold, decisions).margin : rule.margin;
  ev.relations = decided(ev.null_margin);
  ev.argmax_f1 = ev.null_margin == 0 ? ev.relations.micro.f1 : decided(0).micro.f1;
  const std::vector<int> pred = decide_all(ev.null_margin);
  ev.predicted.assign(split.examples.size(), -1);
  for (size_t i = 0; i < split.examples.size(); ++i)
    if (at[i] >= 0) ev.predicted[i] = pred[at[i]];
  ev.official = official_score(corpus, split, ev.predicted, only);
  if (ner) {
    ev.ner = ner_scores(ner_gold, ner_pred, corpus.ner_tag_names);
    ev.has_ner = true;
  }
  ev.mean_steps = steps_batches > 0 ? steps_sum / steps_batches : 0.0;
  return ev;
}

nlohmann::json evaluation_json(const Evaluation& ev) {
  nlohmann::json j = {{"relations", to_json(ev.relations)}};
  if (!ev.official.is_null()) j["official"] = ev.official;
  if (ev.has_ner) j["ner"] = to_json(ev.ner);
  if (ev.mean_steps > 0) j["mean_halting_steps"] = ev.mean_steps;
  return j;
}

// What a model should be compared with on the test split: the majority class of
// train for every pair (NULL: F1 0), the most frequent non-NULL class of train
// for every pair, and, for a generated corpus (synth-cdr, synth-ctd, synth-semeval),
// the rule-based oracle that reads the generator's documented evidence
// (data::cdr_oracle, ctd_oracle, semeval_oracle) on the test documents as loaded.
nlohmann::json reference_scores(const ReCorpus& corpus) {
  const size_t C = corpus.relation_names.size();
  std::vector<int> counts(C, 0);
  for (int l : corpus.train.labels) ++counts[l];
  int majority = 0, positive = 1;
  for (size_t c = 0; c < C; ++c) {
    if (counts[c] > counts[majority]) majority = static_cast<int>(c);
    if (c > 0 && counts[c] > counts[positive]) positive = static_cast<int>(c);
  }
  const std::vector<int>& gold = corpus.test.labels;
  // Scored as the model is: by the task's official score where the corpus has one.
  auto constant_f1 = [&](int cls) {
    const std::vector<int> predicted(gold.size(), cls);
    if (corpus.official != OfficialScore::none)
      return official_score(corpus, corpus.test, predicted)["f1"].get<double>();
    return relation_scores(gold, predicted, {}, corpus.relation_names).micro.f1;
  };
  nlohmann::json j = {{"majority_class", corpus.relation_names[majority]},
                      {"majority_f1", constant_f1(majority)},
                      {"constant_positive_class", corpus.relation_names[positive]},
                      {"constant_positive_f1", constant_f1(positive)}};
  if (const data::Oracle oracle = data::oracle_of(corpus.generator)) {
    std::vector<std::vector<data::Relation>> predicted;
    for (const data::Document& d : corpus.test.documents) predicted.push_back(oracle(d));
    j["oracle_f1"] = data::score_relations(corpus.test.documents, predicted).f1();
  }
  return j;
}

}  // namespace

std::vector<std::string> class_weight_names() {
  return names_list(kClassWeights);
}

std::optional<NullMarginRule> parse_null_margin(const std::string& text) {
  if (text == "tune") return NullMarginRule{true, 0};
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double m = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(m)) return std::nullopt;
  return NullMarginRule{false, m};
}

namespace {

// ---- one training run, as its steps ---------------------------------------------
//
// train_re_model: options checked → corpus loaded → model built → run directory begun
// (or a finished run returned, or a killed one resumed) → training steps with an
// evaluation and a checkpoint every --eval-every → the best checkpoint scored on every
// split → timing.json and result.json.

// The options that are parsed, checked before anything is loaded.
struct ReRunSettings {
  ReBatching batching;
  NullMarginRule margin_rule;
  ClassWeights class_weights;
  ModelSpec spec;
};

ReRunSettings check_options(const ReTrainOptions& opt) {
  if (opt.out.empty()) throw std::invalid_argument("train: --out DIR is required");
  if (opt.data.empty())
    throw std::invalid_argument("train: --data KIND:DIR is required for relation models");
  if (opt.steps < 1 || opt.batch < 1 || opt.eval_every < 1 || opt.eval_batch < 1)
    throw std::invalid_argument(
        "train: --steps, --batch, --eval-every and --eval-batch must be ≥ 1");
  const ReBatching batching = parse_re_batching(opt.batching);
  const std::optional<NullMarginRule> margin_rule = parse_null_margin(opt.null_margin);
  if (!margin_rule)
    throw std::invalid_argument("train: --null-margin " + opt.null_margin +
                                ": expected a number (0: argmax) or tune");
  const ClassWeights* class_weights = value_of(kClassWeights, opt.class_weights);
  if (!class_weights)
    throw std::invalid_argument("train: --class-weights " + opt.class_weights + ": expected " +
                                names_of(kClassWeights, " or "));
  require_training_device(opt.device);
  ModelSpec spec = resolve_model(opt.model);
  const ModelInfo* info = find_model(spec.base);
  if (!info || info->task_kind != "relation")
    throw std::invalid_argument("model '" + spec.base + "' is not a relation-extraction model");
  return {batching, *margin_rule, *class_weights, std::move(spec)};
}

ReCorpus load_corpus(const ReTrainOptions& opt, const ModelSpec& spec) {
  ReCorpusOptions copt;
  copt.source = opt.data;
  copt.max_tokens = opt.max_tokens;
  copt.word2vec = opt.word2vec;
  copt.seed = opt.seed;
  copt.hypernym_filter = opt.hypernym_filter;
  if (!opt.word2vec.empty()) copt.word2vec_dim = static_cast<int>(spec.get_int("d", 300));
  return ReCorpus::load(copt);
}

// The model on its device, and what its training does: which tasks, with which weights.
struct ReRunModel {
  std::unique_ptr<ReModel> model;
  bool trains_ner = false;
  bool sum_tasks = false;  // +multitask=sum: every step trains RE and NER together
  double ner_prob = 0.5;   // else a step is NER with this probability
  bool weighted = false;   // eq. 4-2 class weights on the relation loss
};

ReRunModel build_model(const ReTrainOptions& opt, const ReRunSettings& set,
                       const ReCorpus& corpus) {
  const ModelSpec& spec = set.spec;
  ReRunModel m;
  m.sum_tasks = spec.switches.count("multitask") && spec.switches.at("multitask") == "sum";
  m.ner_prob = spec.get_double("ner_prob", 0.5);
  if (m.ner_prob < 0 || m.ner_prob > 1)
    throw std::invalid_argument("model " + spec.canonical() + ": ner_prob must be in [0, 1]");
  m.weighted = set.class_weights == ClassWeights::on ||
               (set.class_weights == ClassWeights::by_corpus && corpus.weighted_by_default);
  ReModelConfig mcfg;
  mcfg.sizes = corpus.sizes;
  mcfg.word_init = corpus.word_init;
  m.model = build_re_model(spec, mcfg, opt.seed);
  m.trains_ner = m.model->supports_ner() && (m.sum_tasks || m.ner_prob > 0);
  if (m.trains_ner) {
    // SPEC §4.2: when NER is trained the gold entity tags are not an input.
    mcfg.entity_tag_input = false;
    m.model = build_re_model(spec, mcfg, opt.seed);
  }
  if (opt.device != Device::cpu) m.model->to(opt.device);
  return m;
}

// What makes two runs the same run (RunLifecycle compares it with a finished run's).
nlohmann::json run_config(const ReTrainOptions& opt, const ReRunSettings& set,
                          const ReCorpus& corpus, const ReRunModel& m) {
  nlohmann::json config = {{"model", set.spec.canonical()},
                           {"data", opt.data},
                           {"seed", opt.seed},
                           {"steps", opt.steps},
                           {"batch", opt.batch},
                           {"eval_batch", opt.eval_batch},
                           {"lr", decimal(opt.lr)},
                           {"clip_norm", decimal(opt.clip_norm)},
                           {"l2", decimal(opt.l2)},
                           {"eval_every", opt.eval_every},
                           {"patience", opt.patience},
                           {"max_tokens", corpus.max_tokens},
                           {"word2vec", opt.word2vec},
                           {"class_weights", m.weighted},
                           {"ner_trained", m.trains_ner},
                           {"optimizer", "adam(0.9, 0.999, 1e-8)"}};
  // Options the manifests did not always record, recorded where they are not the
  // default, so that the manifests of earlier runs (the default) still match: an argmax
  // run, the bran batching, no gradient norms (the device: RunLifecycle).
  if (!set.margin_rule.is_argmax()) config["null_margin"] = opt.null_margin;
  if (opt.batching != ReTrainOptions{}.batching) config["batching"] = opt.batching;
  if (opt.grad_norms) config["grad_norms"] = true;
  if (corpus.hypernym_filter != "none") config["hypernym_filter"] = corpus.hypernym_filter;
  // The data by content: the same path holding other files (a corpus generated again with
  // other options, an edited file) is not the same run.
  config["data_sha256"] = corpus.digest;
  return config;
}

// manifest.json beyond the config: the build, the model's structure, the data's sizes.
nlohmann::json run_manifest(const ReTrainOptions& opt, const ReCorpus& corpus, ReModel& model) {
  nlohmann::json manifest =
      training_manifest(opt.seed, to_string(opt.device), model.parameters().count());
  manifest["model_structure"] = model.describe();
  if (opt.static_step) manifest["step"] = "static";
  manifest["data"] = {{"source", opt.data},
                      {"train_documents", corpus.train.documents.size()},
                      {"valid_documents", corpus.valid.documents.size()},
                      {"test_documents", corpus.test.documents.size()},
                      {"train_examples", corpus.train.examples.size()},
                      {"train_positives", corpus.train.positives.size()},
                      {"relations", corpus.relation_names},
                      {"vocabulary", corpus.sizes.words}};
  if (!corpus.files.empty()) manifest["data"]["files"] = corpus.files;
  if (corpus.hypernym_filter != "none")
    manifest["data"]["hypernym_filtered_train_negatives"] = corpus.train.filtered_negatives;
  return manifest;
}

// The training loop and its state: what last.ckpt carries besides the tensors (step,
// best step and F1, evaluations since the best), the loss window since the last
// evaluation, and the step times.
class ReTraining {
 public:
  ReTraining(const ReTrainOptions& opt, const ReRunSettings& set, const ReCorpus& corpus,
             ReRunModel& m, RunLifecycle& life, std::ostream* progress, bool tty)
      : opt_(opt),
        set_(set),
        corpus_(corpus),
        m_(m),
        model_(*m.model),
        params_(model_.parameters()),
        life_(life),
        progress_(progress),
        tty_(tty),
        adam_(params_, {.l2 = opt.l2, .clip_norm = opt.clip_norm}),
        sampler_(opt.seed, kStreamShuffle),
        train_docs_(train_sample(corpus.train.documents.size())) {
    if (m.weighted) {
      const std::vector<float>& cw = corpus.class_weights;
      class_weights_ = Tensor::from_vector(cw, {static_cast<int64_t>(cw.size())}).to(opt.device);
    }
  }

  void resume() {
    const nlohmann::json s = life_.load_state(params_, adam_, model_.buffers());
    step_ = s.at("step");
    best_step_ = s.at("best_step");
    since_best_ = s.at("since_best");
    best_f1_ = s.at("best_f1");
    if (progress_) *progress_ << "resuming " << opt_.out.string() << " at step " << step_ << "\n";
  }

  // Steps until --steps, divergence, --patience or the time limit.
  void train(Clock::time_point started) {
    t0_ = Clock::now();
    window_start_ = t0_;
    last_valid_f1_ = best_f1_ < 0 ? 0.0 : best_f1_;
    while (step_ < opt_.steps) {
      const auto ts = Clock::now();
      const std::optional<float> loss = train_step();
      if (!loss) break;  // diverged
      step_seconds_.push_back(std::chrono::duration<double>(Clock::now() - ts).count());
      if (step_ % opt_.eval_every == 0 || step_ == opt_.steps) {
        evaluate_and_checkpoint();
        if (stopped_early_) break;
        if (out_of_time(started)) {
          paused_ = true;
          break;
        }
      }
      show_progress(*loss);
    }
    if (progress_ && tty_) *progress_ << "\n";
  }

  // Stopped at the time limit, with its last.ckpt.
  bool paused() const { return paused_; }
  nlohmann::json paused_result() const {
    return {{"status", "paused"},
            {"model", set_.spec.canonical()},
            {"data", opt_.data},
            {"seed", opt_.seed},
            {"step", step_},
            {"steps", opt_.steps},
            {"time_limit_seconds", opt_.time_limit}};
  }

  // result.json: the status and, unless diverged, the best checkpoint scored on every
  // split (and the test predictions in the task's format beside it).
  nlohmann::json result() {
    nlohmann::json result = {
        {"status", status_}, {"model", set_.spec.canonical()},   {"data", opt_.data},
        {"seed", opt_.seed}, {"device", to_string(opt_.device)}, {"threads", threads()},
        {"steps", step_},    {"parameters", params_.count()}};
    if (status_ == "diverged") {
      result["diverged"] = diverged_at_;
      return result;
    }
    load_checkpoint(life_.best_checkpoint().string(), params_, nullptr, &model_.buffers());
    result["best_step"] = best_step_;
    result["stopped_early"] = stopped_early_;
    // Validation first: a tuned NULL margin is chosen there and scores train and test.
    const Evaluation valid = evaluate_split(corpus_.valid, m_.trains_ner, set_.margin_rule);
    const NullMarginRule chosen{false, valid.null_margin};
    result["train"] = evaluation_json(evaluate_split(corpus_.train, m_.trains_ner, chosen));
    result["valid"] = evaluation_json(valid);
    const Evaluation test = evaluate_split(corpus_.test, m_.trains_ner, chosen);
    result["test"] = evaluation_json(test);
    // The test predictions in the task's own format, beside result.json (written first:
    // result.json comes last), so that the task's own scorer can read them too.
    if (const std::string name = official_predictions_name(corpus_); !name.empty()) {
      atomic_write(life_.dir().path() / name,
                   official_predictions(corpus_, corpus_.test, test.predicted));
      result["test"]["official"]["predictions_file"] = name;
    }
    if (!set_.margin_rule.is_argmax())
      result["null_margin"] = {{"rule", set_.margin_rule.tune ? "tuned on validation" : "fixed"},
                               {"margin", valid.null_margin},
                               {"valid_argmax_f1", valid.argmax_f1},
                               {"test_argmax_f1", test.argmax_f1}};
    result["test_references"] = reference_scores(corpus_);
    return result;
  }

  // timing.json: wall time since train() began and the distribution of step times.
  nlohmann::json timing() const {
    const double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::vector<double> sorted = step_seconds_;
    std::sort(sorted.begin(), sorted.end());
    auto q = [&](double f) {
      return sorted.empty() ? 0.0 : sorted[static_cast<size_t>(f * (sorted.size() - 1))];
    };
    return {
        {"wall_seconds", wall},
        {"steps_this_process", step_seconds_.size()},
        {"seconds_per_step", step_seconds_.empty() ? 0.0 : wall / step_seconds_.size()},
        {"step_seconds_quantiles",
         {{"min", q(0)}, {"p25", q(0.25)}, {"median", q(0.5)}, {"p75", q(0.75)}, {"max", q(1)}}}};
  }

 private:
  // After a checkpoint: would the next window (at the last one's pace) end past the limit?
  bool out_of_time(Clock::time_point started) {
    const auto now = Clock::now();
    const double window = std::chrono::duration<double>(now - window_start_).count();
    window_start_ = now;
    if (opt_.time_limit <= 0 || step_ >= opt_.steps) return false;
    return std::chrono::duration<double>(now - started).count() + window > opt_.time_limit;
  }

  // One step: NER with probability ner_prob (unless every step trains both), else RE on
  // a batch of the chosen batching; the losses' value, or nothing when it diverged.
  std::optional<float> train_step() {
    sampler_.seek(static_cast<uint64_t>(step_) * kDrawsPerStep);
    const bool ner_step =
        m_.trains_ner && !m_.sum_tasks &&
        philox_uniform(opt_.seed, kStreamTaskChoice, static_cast<uint64_t>(step_)) <
            static_cast<float>(m_.ner_prob);
    nn::Context ctx;
    ctx.training = true;
    ctx.seed = opt_.seed;
    ctx.step = static_cast<uint64_t>(step_);
    ctx.static_step = opt_.static_step;
    // Gradients start undefined every step: a parameter that this step's task
    // does not reach (the NER head on an RE step, and the reverse) gets no
    // update at all, not even Adam's momentum, and a resumed run (whose fresh
    // parameters have no gradient buffers yet) takes exactly the same steps.
    for (const ag::Var& p : params_.all()) p->grad = Tensor();
    ag::Var loss;
    Tensor re_loss, ner_loss;  // the task losses, read with the total after the forward
    const int batch_size = static_cast<int>(opt_.batch);
    if (ner_step) {
      ReBatch batch = to_device(
          make_batch(corpus_.train, sample_ner_batch(corpus_.train, batch_size, sampler_)),
          opt_.device);
      model_.stage(batch, ReTask::entities);
      ReOutput out = model_.forward(batch, ReTask::entities, ctx);
      loss = ag::cross_entropy(out.ner_logits, batch.ner_targets);
      ner_loss = loss->value;
      if (out.aux_loss) loss = ag::add(loss, out.aux_loss);
    } else {
      ReBatch batch =
          to_device(make_batch(corpus_.train,
                               sample_re_batch(set_.batching, corpus_.train, batch_size, sampler_)),
                    opt_.device);
      model_.stage(batch, ReTask::relations);
      ReOutput out = model_.forward(batch, ReTask::relations, ctx);
      loss = ag::cross_entropy(out.pair_logits, batch.labels, class_weights_);
      re_loss = loss->value;
      if (out.aux_loss) loss = ag::add(loss, out.aux_loss);
      if (m_.sum_tasks && m_.trains_ner) {
        ReOutput tags = model_.forward(batch, ReTask::entities, ctx);
        ag::Var nl = ag::cross_entropy(tags.ner_logits, batch.ner_targets);
        ner_loss = nl->value;
        loss = ag::add(loss, nl);
        if (tags.aux_loss) loss = ag::add(loss, tags.aux_loss);
      }
    }
    // The losses, read once: before backward, or after the update in a static step (the
    // whole step then runs without a read). A diverged step's update is never kept
    // either way: nothing is written from the parameters after a divergence.
    std::vector<float> losses;
    auto diverged = [&] {
      losses = Tensor::items({re_loss, ner_loss, loss->value});
      if (!stops_on_divergence(losses[2], step_, {{"task", ner_step ? "ner" : "re"}}, diverged_at_))
        return false;
      status_ = "diverged";
      return true;
    };
    if (!opt_.static_step && diverged()) return std::nullopt;
    ag::backward(loss);
    if (opt_.grad_norms) norms_.add(params_);
    adam_.step(opt_.lr);
    if (opt_.static_step && diverged()) return std::nullopt;
    const float re_value = losses[0], ner_value = losses[1], value = losses[2];
    ++step_;
    if (std::isfinite(re_value)) loss_sum_ += re_value, ++loss_n_;
    if (std::isfinite(ner_value)) ner_loss_sum_ += ner_value, ++ner_loss_n_;
    return value;
  }

  Evaluation evaluate_split(const ReSplit& split, bool ner, const NullMarginRule& rule,
                            const std::vector<int>* only = nullptr) {
    return evaluate(model_, corpus_, split, opt_.eval_batch, opt_.device, ner, rule, only);
  }

  // Validation and the training sample scored, a metrics.jsonl line, the best checkpoint
  // kept, last.ckpt written; sets stopped_early_ when --patience runs out.
  void evaluate_and_checkpoint() {
    const Evaluation valid = evaluate_split(corpus_.valid, m_.trains_ner, set_.margin_rule);
    const Evaluation on_train =
        evaluate_split(corpus_.train, false, {false, valid.null_margin}, &train_docs_);
    life_.append_metrics(metrics_line(valid, on_train));
    loss_sum_ = ner_loss_sum_ = 0;
    loss_n_ = ner_loss_n_ = 0;
    const double f1 = valid.f1();
    last_valid_f1_ = f1;
    if (f1 > best_f1_) {
      best_f1_ = f1, best_step_ = step_, since_best_ = 0;
      save_checkpoint(life_.best_checkpoint().string(), params_, nullptr, &model_.buffers());
    } else {
      ++since_best_;
    }
    if (opt_.patience > 0 && since_best_ >= opt_.patience && step_ < opt_.steps)
      stopped_early_ = true;
    if (opt_.after_evaluation) opt_.after_evaluation(step_);
    life_.save_state(params_, adam_, model_.buffers(),
                     {{"step", step_},
                      {"best_step", best_step_},
                      {"since_best", since_best_},
                      {"best_f1", best_f1_}});
  }

  // One metrics.jsonl line. On a corpus with an official score, valid_f1 and train_f1
  // are that score (the pairs' micro F1 beside it); elsewhere the micro F1 over pairs.
  nlohmann::json metrics_line(const Evaluation& ev, const Evaluation& on_train) {
    const bool official = !ev.official.is_null();
    nlohmann::json line = {{"step", step_},
                           {"train_re_loss", loss_n_ ? loss_sum_ / loss_n_ : 0.0},
                           {"train_ner_loss", ner_loss_n_ ? ner_loss_sum_ / ner_loss_n_ : 0.0},
                           {"re_steps", loss_n_},
                           {"ner_steps", ner_loss_n_},
                           {"valid_precision", official ? ev.official["precision"].get<double>()
                                                        : ev.relations.micro.precision},
                           {"valid_recall", official ? ev.official["recall"].get<double>()
                                                     : ev.relations.micro.recall},
                           {"valid_f1", ev.f1()},
                           {"valid_macro_f1", ev.relations.macro_f1},
                           {"train_f1", on_train.f1()}};
    if (official) line["valid_pair_micro_f1"] = ev.relations.micro.f1;
    nlohmann::json per_class = nlohmann::json::object();
    for (size_t c = 1; c < ev.relations.class_names.size(); ++c)
      per_class[ev.relations.class_names[c]] = ev.relations.per_class[c].f1;
    line["valid_f1_per_class"] = per_class;
    if (!set_.margin_rule.is_argmax()) {
      line["valid_null_margin"] = ev.null_margin;
      line["valid_argmax_f1"] = ev.argmax_f1;
    }
    if (ev.has_ner) line["valid_ner_f1"] = ev.ner.micro.f1;
    if (ev.mean_steps > 0) line["valid_mean_halting_steps"] = ev.mean_steps;
    if (opt_.grad_norms) line["grad_norms"] = norms_.take(params_);
    return line;
  }

  // On a terminal one line rewritten every step; otherwise (logs) a line per evaluation.
  void show_progress(float loss) const {
    if (!progress_ || !(tty_ || step_ % opt_.eval_every == 0 || step_ == opt_.steps)) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
    const double rate = step_seconds_.size() / std::max(elapsed, 1e-9);
    *progress_ << (tty_ ? "\r" : "") << "step " << step_ << "/" << opt_.steps << "  loss "
               << fixed(loss, 4) << "  valid F1 " << fixed(last_valid_f1_, 4) << "  "
               << fixed(rate, 2) << " steps/s  ETA "
               << static_cast<int64_t>((opt_.steps - step_) / std::max(rate, 1e-9)) << " s"
               << (tty_ ? "   " : "\n") << std::flush;
  }

  const ReTrainOptions& opt_;
  const ReRunSettings& set_;
  const ReCorpus& corpus_;
  ReRunModel& m_;
  ReModel& model_;
  ParameterSet& params_;
  RunLifecycle& life_;
  std::ostream* progress_;
  bool tty_;
  Adam adam_;
  PhiloxStream sampler_;
  const std::vector<int> train_docs_;  // the training sample scored at every evaluation
  Tensor class_weights_;               // undefined when unweighted

  int64_t step_ = 0, best_step_ = 0, since_best_ = 0;
  double best_f1_ = -1.0;
  double last_valid_f1_ = 0.0;
  std::string status_ = "completed";
  nlohmann::json diverged_at_;
  bool stopped_early_ = false;
  bool paused_ = false;             // stopped at the time limit (opt_.time_limit)
  Clock::time_point window_start_;  // the start of the current evaluation window
  GradientNorms norms_;
  double loss_sum_ = 0, ner_loss_sum_ = 0;
  int64_t loss_n_ = 0, ner_loss_n_ = 0;
  std::vector<double> step_seconds_;
  Clock::time_point t0_ = Clock::now();
};

}  // namespace

// Refuses a batch whose inputs alone (each item's index and its document's word, n-gram and
// character ids, at the longest training document) exceed the memory budget, from the sizes
// and before anything is allocated; what the activations add beyond is held by the tensor
// budget as they are made (kernels/memory_budget.h).
void require_batch_memory(const ReTrainOptions& opt, const ReCorpus& corpus) {
  size_t longest = 0;
  for (const data::Document& d : corpus.train.documents)
    longest = std::max(longest, d.tokens.size());
  if (corpus.max_tokens > 0) longest = std::min(longest, static_cast<size_t>(corpus.max_tokens));
  const double per_item = static_cast<double>(sizeof(BatchItem) + sizeof(int)) +
                          3.0 * sizeof(int32_t) * static_cast<double>(longest);
  for (const auto& [n, option] : {std::pair<int64_t, const char*>{opt.batch, "--batch"},
                                  std::pair<int64_t, const char*>{opt.eval_batch, "--eval-batch"}})
    require_memory(static_cast<double>(n) * per_item, 0,
                   std::string(option) + " " + std::to_string(n) + " (its inputs alone, " +
                       std::to_string(longest) + " tokens a document)",
                   std::string("a smaller ") + option);
}

nlohmann::json train_re_model(const ReTrainOptions& opt, std::ostream* progress, bool tty) {
  const auto started = std::chrono::steady_clock::now();
  const ReRunSettings settings = check_options(opt);
  const ReCorpus corpus = load_corpus(opt, settings.spec);
  require_batch_memory(opt, corpus);
  ReRunModel m = build_model(opt, settings, corpus);
  RunLifecycle life(opt.out, run_config(opt, settings, corpus, m), opt.force, opt.device);
  ReTraining training(opt, settings, corpus, m, life, progress, tty);
  const RunLifecycle::Start start = life.begin(run_manifest(opt, corpus, *m.model), progress);
  if (start == RunLifecycle::Start::finished) return life.finished_result();
  if (start == RunLifecycle::Start::resumed) training.resume();
  training.train(started);
  if (training.paused()) {
    if (progress)
      *progress << "paused at step " << training.paused_result()["step"] << " of " << opt.steps
                << " (its time limit): last.ckpt holds it, the same command continues it\n";
    return training.paused_result();
  }
  const nlohmann::json result = training.result();
  life.dir().write_timing(training.timing());
  life.finish(result);
  return result;
}

std::vector<int> train_sample(size_t documents) {
  const size_t n = documents, k = std::min(n, kTrainSampleDocs);
  std::vector<int> docs;
  for (size_t q = 0; q < k; ++q) docs.push_back(static_cast<int>(q * n / k));
  return docs;
}

}  // namespace mare
