#include "experiments/inspect_step.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "experiments/re_data.h"
#include "kernels/random.h"
#include "models/functions.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace mare {

namespace fs = std::filesystem;

void write_npy(const fs::path& path, const Tensor& t) {
  const Tensor h = t.to(Device::cpu);
  std::string shape = "(";
  for (int i = 0; i < h.rank(); ++i)
    shape += std::to_string(h.dim(i)) + (h.rank() == 1 ? "," : i + 1 < h.rank() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + (h.dtype() == DType::f32 ? "<f4" : "<i4") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a
  // multiple of 64 and ended by a newline.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  const uint16_t len = static_cast<uint16_t>(header.size());
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>(len >> 8);
  bytes += header;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (h.numel() > 0) {
    const char* data = h.dtype() == DType::f32 ? reinterpret_cast<const char*>(h.f32())
                                               : reinterpret_cast<const char*>(h.i32());
    out.write(data, static_cast<std::streamsize>(h.nbytes()));  // x86 and ARM: little-endian
  }
  if (!out)
    throw std::runtime_error(path.string() + ": cannot be written (expected a writable --out)");
}

namespace {

// The model's configuration as build_re_model resolves it (models/re_models.cpp): the
// switches given, else the defaults it applies.
nlohmann::json resolved_config(const ModelSpec& spec) {
  auto text = [&](const std::string& key, const std::string& fallback) {
    return spec.switches.count(key) ? spec.switches.at(key) : fallback;
  };
  const int64_t d = spec.get_int("d", 300), iterations = spec.get_int("iterations", 3);
  nlohmann::json c = {{"model", spec.canonical()},
                      {"base", spec.base},
                      {"switches", spec.switches},
                      {"d", d},
                      {"heads", spec.get_int("heads", 4)},
                      {"iterations", iterations},
                      {"max_steps", spec.get_int("max_steps", iterations)},
                      {"dropout", spec.get_double("dropout", 0.15)},
                      {"norm", spec.base == "bran" ? "layer" : text("norm", "batch")},
                      {"embed_scale", text("embed_scale", spec.base == "bran" ? "sqrt_d" : "1")},
                      {"biaffine_init", text("biaffine_init", "zeros")},
                      {"transition_init", text("transition_init", "ones")}};
  for (const char* flag : {"ngram", "transition", "cpd"}) c[flag] = spec.has(flag);
  if (spec.base == "ntcre") {
    c["slots"] = spec.get_int("slots", 4);
    c["word"] = spec.get_int("word", d);
    c["read_heads"] = spec.get_int("read_heads", 2);
    c["alloc"] = text("alloc", "sorted");
  }
  return c;
}

// The options checked and the model resolved: a relation-extraction model is required.
ModelSpec checked_spec(const InspectStepOptions& opt) {
  if (opt.out.empty()) throw std::invalid_argument("inspect step: --out DIR is required");
  if (opt.data.empty()) throw std::invalid_argument("inspect step: --data KIND:DIR is required");
  if (opt.batch < 1) throw std::invalid_argument("inspect step: --batch must be ≥ 1");
  if (opt.task != "re" && opt.task != "ner")
    throw std::invalid_argument("inspect step: --task " + opt.task + ": expected re or ner");
  const ModelSpec spec = resolve_model(opt.model);
  const ModelInfo* info = find_model(spec.base);
  if (!info || info->task_kind != "relation")
    throw std::invalid_argument("inspect step: model '" + spec.base +
                                "' is not a relation-extraction model");
  return spec;
}

// The corpus of --data, cut and shuffled as the run's seed and --max-tokens say.
ReCorpus load_corpus(const InspectStepOptions& opt) {
  ReCorpusOptions copt;
  copt.source = opt.data;
  copt.max_tokens = opt.max_tokens;
  copt.seed = opt.seed;
  return ReCorpus::load(copt);
}

// The model at its initial parameters and the configuration it was built from.
struct StepModel {
  ReModelConfig mcfg;
  std::unique_ptr<ReModel> model;
};

// Built as the trainer builds it: entity tags are an input when NER is not trained.
// --task ner needs a model that trains NER.
StepModel build_model(const ModelSpec& spec, const ReCorpus& corpus,
                      const InspectStepOptions& opt) {
  const bool sum_tasks = spec.switches.count("multitask") && spec.switches.at("multitask") == "sum";
  const double ner_prob = spec.get_double("ner_prob", 0.5);
  StepModel m;
  m.mcfg.sizes = corpus.sizes;
  m.model = build_re_model(spec, m.mcfg, opt.seed);
  const bool trains_ner = m.model->supports_ner() && (sum_tasks || ner_prob > 0);
  if (trains_ner) {
    m.mcfg.entity_tag_input = false;
    m.model = build_re_model(spec, m.mcfg, opt.seed);
  }
  if (opt.task == "ner" && !trains_ner)
    throw std::invalid_argument("inspect step: --task ner: model " + spec.canonical() +
                                " does not train NER (ner_prob 0, or a model without a NER head)");
  return m;
}

// Whether the relation loss weights the classes: --class-weights, or under auto the
// corpus's default.
bool class_weighted(const InspectStepOptions& opt, const ReCorpus& corpus) {
  bool weighted = corpus.weighted_by_default;
  if (opt.class_weights == "on")
    weighted = true;
  else if (opt.class_weights == "off")
    weighted = false;
  else if (opt.class_weights != "auto")
    throw std::invalid_argument("inspect step: --class-weights " + opt.class_weights +
                                ": expected auto, on or off");
  return weighted;
}

// Writes each tensor as GROUP/NAME.npy under --out, adding its path to the result's files
// and its file, shape and dtype to the index's `files`.
class NpyWriter {
 public:
  NpyWriter(const fs::path& out, std::vector<fs::path>& written) : out_(out), written_(written) {}
  void operator()(const std::string& group, const std::string& name, const Tensor& t) {
    const fs::path rel = fs::path(group) / (name + ".npy");
    write_npy(out_ / rel, t);
    written_.push_back(out_ / rel);
    files_[group][name] = {{"file", rel.string()},
                           {"shape", t.shape().vec()},
                           {"dtype", t.dtype() == DType::f32 ? "float32" : "int32"}};
  }
  const nlohmann::json& files() const { return files_; }

 private:
  const fs::path& out_;
  std::vector<fs::path>& written_;
  nlohmann::json files_ = nlohmann::json::object();
};

// The trainer's draw at step 0.
ReBatch step0_batch(const InspectStepOptions& opt, const ReCorpus& corpus) {
  PhiloxStream sampler(opt.seed, kStreamShuffle);
  sampler.seek(0);
  const std::vector<BatchItem> items =
      opt.task == "ner"
          ? sample_ner_batch(corpus.train, opt.batch, sampler)
          : sample_re_batch(parse_re_batching(opt.batching), corpus.train, opt.batch, sampler);
  return make_batch(corpus.train, items);
}

// The batch's tensors, those it defines.
void save_batch(NpyWriter& save, const ReBatch& batch) {
  for (const auto& [name, t] :
       std::vector<std::pair<std::string, Tensor>>{{"words", batch.words},
                                                   {"mask", batch.mask},
                                                   {"ngrams", batch.ngrams},
                                                   {"chars", batch.chars},
                                                   {"pos_tags", batch.pos_tags},
                                                   {"entity_tags", batch.entity_tags},
                                                   {"ner_targets", batch.ner_targets},
                                                   {"pair_doc", batch.pair_doc},
                                                   {"labels", batch.labels},
                                                   {"head_offsets", batch.head_offsets},
                                                   {"head_rows", batch.head_rows},
                                                   {"tail_offsets", batch.tail_offsets},
                                                   {"tail_rows", batch.tail_rows}})
    if (t.defined()) save("batch", name, t);
}

// The step's losses and the forward pass's output.
struct StepLoss {
  ag::Var loss, task_loss;
  ReOutput out;
};

// The training step's forward and backward passes at step 0 (gradients cleared first):
// the task's loss plus the auxiliary one; the logits and halting steps are saved.
StepLoss forward_backward(ReModel& model, const ReBatch& batch, const InspectStepOptions& opt,
                          bool weighted, const std::vector<float>& cw, NpyWriter& save) {
  nn::Context ctx;
  ctx.training = true;
  ctx.seed = opt.seed;
  ctx.step = 0;
  for (const ag::Var& p : model.parameters().all()) p->grad = Tensor();
  StepLoss s;
  if (opt.task == "ner") {
    s.out = model.forward(batch, ReTask::entities, ctx);
    s.task_loss = ag::cross_entropy(s.out.ner_logits, batch.ner_targets);
    save("outputs", "ner_logits", s.out.ner_logits->value);
  } else {
    s.out = model.forward(batch, ReTask::relations, ctx);
    const Tensor weights =
        weighted ? Tensor::from_vector(cw, {static_cast<int64_t>(cw.size())}) : Tensor();
    s.task_loss = ag::cross_entropy(s.out.pair_logits, batch.labels, weights);
    save("outputs", "pair_logits", s.out.pair_logits->value);
  }
  s.loss = s.out.aux_loss ? ag::add(s.task_loss, s.out.aux_loss) : s.task_loss;
  if (s.out.halting_steps.defined()) save("outputs", "halting_steps", s.out.halting_steps);
  ag::backward(s.loss);
  return s;
}

// The gradients (returning the names of the parameters without one) and the buffers.
nlohmann::json save_grads_and_buffers(ReModel& model, NpyWriter& save) {
  nlohmann::json missing = nlohmann::json::array();
  for (const ag::Var& p : model.parameters().all()) {
    if (p->grad.defined())
      save("grads", p->name, p->grad);
    else
      missing.push_back(p->name);
  }
  for (const auto& [name, t] : model.buffers()) save("buffers", name, t);
  return missing;
}

// The index's config: the model's resolved configuration, how it was built and the
// corpus's vocabulary sizes.
nlohmann::json step_config(const ModelSpec& spec, const StepModel& m, const ReVocabSizes& v) {
  nlohmann::json config = resolved_config(spec);
  config["entity_tag_input"] = m.mcfg.entity_tag_input;
  config["describe"] = m.model->describe();
  config["vocab"] = {{"words", v.words},
                     {"ngrams", v.ngrams},
                     {"chars", v.chars},
                     {"pos_tags", v.pos_tags},
                     {"entity_tags", v.entity_tags},
                     {"ner_tags", v.ner_tags},
                     {"relations", v.relations},
                     {"max_distance", v.max_distance}};
  config["classes"] = v.relations;
  return config;
}

// Writes the index as step.json under --out, the last of the result's files.
void write_index(const fs::path& out, InspectStepResult& r) {
  const fs::path index = out / "step.json";
  std::ofstream f(index);
  f << r.index.dump(1) << "\n";
  if (!f) throw std::runtime_error(index.string() + ": cannot be written");
  r.files.push_back(index);
}

}  // namespace

InspectStepResult inspect_step(const InspectStepOptions& opt) {
  const ModelSpec spec = checked_spec(opt);
  const ReCorpus corpus = load_corpus(opt);
  const StepModel m = build_model(spec, corpus, opt);
  const bool weighted = class_weighted(opt, corpus);

  InspectStepResult r;
  NpyWriter save(opt.out, r.files);
  for (const ag::Var& p : m.model->parameters().all()) save("params", p->name, p->value);
  const ReBatch batch = step0_batch(opt, corpus);
  save_batch(save, batch);
  const std::vector<float>& cw = corpus.class_weights;
  const auto [loss, task_loss, out] = forward_backward(*m.model, batch, opt, weighted, cw, save);
  const nlohmann::json missing = save_grads_and_buffers(*m.model, save);

  const auto item = [](const ag::Var& v) {
    return static_cast<double>(v->value.to(Device::cpu).f32()[0]);
  };
  const nlohmann::json config = step_config(spec, m, corpus.sizes);
  r.index = {{"config", config},
             {"seed", opt.seed},
             {"data", opt.data},
             {"task", opt.task},
             {"batching", opt.batching},
             {"batch", {{"B", batch.B}, {"T", batch.T}, {"P", batch.P}}},
             {"class_weights", weighted ? nlohmann::json(cw) : nlohmann::json(nullptr)},
             {"loss", item(loss)},
             {"task_loss", item(task_loss)},
             {"aux_loss", out.aux_loss ? nlohmann::json(item(out.aux_loss)) : nlohmann::json(0.0)},
             {"parameters_without_gradient", missing},
             {"files", save.files()}};
  if (out.halting_steps.defined()) r.index["mean_halting_steps"] = out.mean_steps();
  write_index(opt.out, r);
  return r;
}

}  // namespace mare
