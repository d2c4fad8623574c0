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

}  // namespace

InspectStepResult inspect_step(const InspectStepOptions& opt) {
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

  ReCorpusOptions copt;
  copt.source = opt.data;
  copt.max_tokens = opt.max_tokens;
  copt.seed = opt.seed;
  const ReCorpus corpus = ReCorpus::load(copt);

  // Built as the trainer builds it: entity tags are an input when NER is not trained.
  const bool sum_tasks = spec.switches.count("multitask") && spec.switches.at("multitask") == "sum";
  const double ner_prob = spec.get_double("ner_prob", 0.5);
  ReModelConfig mcfg;
  mcfg.sizes = corpus.sizes;
  std::unique_ptr<ReModel> model = build_re_model(spec, mcfg, opt.seed);
  const bool trains_ner = model->supports_ner() && (sum_tasks || ner_prob > 0);
  if (trains_ner) {
    mcfg.entity_tag_input = false;
    model = build_re_model(spec, mcfg, opt.seed);
  }
  if (opt.task == "ner" && !trains_ner)
    throw std::invalid_argument("inspect step: --task ner: model " + spec.canonical() +
                                " does not train NER (ner_prob 0, or a model without a NER head)");
  bool weighted = corpus.weighted_by_default;
  if (opt.class_weights == "on")
    weighted = true;
  else if (opt.class_weights == "off")
    weighted = false;
  else if (opt.class_weights != "auto")
    throw std::invalid_argument("inspect step: --class-weights " + opt.class_weights +
                                ": expected auto, on or off");

  InspectStepResult r;
  nlohmann::json files = nlohmann::json::object();
  auto save = [&](const std::string& group, const std::string& name, const Tensor& t) {
    const fs::path rel = fs::path(group) / (name + ".npy");
    write_npy(opt.out / rel, t);
    r.files.push_back(opt.out / rel);
    files[group][name] = {{"file", rel.string()},
                          {"shape", t.shape().vec()},
                          {"dtype", t.dtype() == DType::f32 ? "float32" : "int32"}};
  };
  ParameterSet& params = model->parameters();
  for (const ag::Var& p : params.all()) save("params", p->name, p->value);

  // The trainer's draw at step 0.
  PhiloxStream sampler(opt.seed, kStreamShuffle);
  sampler.seek(0);
  const std::vector<BatchItem> items =
      opt.task == "ner"
          ? sample_ner_batch(corpus.train, opt.batch, sampler)
          : sample_re_batch(parse_re_batching(opt.batching), corpus.train, opt.batch, sampler);
  const ReBatch batch = make_batch(corpus.train, items);
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

  nn::Context ctx;
  ctx.training = true;
  ctx.seed = opt.seed;
  ctx.step = 0;
  for (const ag::Var& p : params.all()) p->grad = Tensor();
  ag::Var loss, task_loss;
  ReOutput out;
  const std::vector<float>& cw = corpus.class_weights;
  if (opt.task == "ner") {
    out = model->forward(batch, ReTask::entities, ctx);
    task_loss = ag::cross_entropy(out.ner_logits, batch.ner_targets);
    save("outputs", "ner_logits", out.ner_logits->value);
  } else {
    out = model->forward(batch, ReTask::relations, ctx);
    const Tensor weights =
        weighted ? Tensor::from_vector(cw, {static_cast<int64_t>(cw.size())}) : Tensor();
    task_loss = ag::cross_entropy(out.pair_logits, batch.labels, weights);
    save("outputs", "pair_logits", out.pair_logits->value);
  }
  loss = out.aux_loss ? ag::add(task_loss, out.aux_loss) : task_loss;
  if (out.halting_steps.defined()) save("outputs", "halting_steps", out.halting_steps);
  ag::backward(loss);

  nlohmann::json missing = nlohmann::json::array();
  for (const ag::Var& p : params.all()) {
    if (p->grad.defined())
      save("grads", p->name, p->grad);
    else
      missing.push_back(p->name);
  }
  for (const auto& [name, t] : model->buffers()) save("buffers", name, t);

  const auto item = [](const ag::Var& v) {
    return static_cast<double>(v->value.to(Device::cpu).f32()[0]);
  };
  const ReVocabSizes& v = corpus.sizes;
  nlohmann::json config = resolved_config(spec);
  config["entity_tag_input"] = mcfg.entity_tag_input;
  config["describe"] = model->describe();
  config["vocab"] = {{"words", v.words},
                     {"ngrams", v.ngrams},
                     {"chars", v.chars},
                     {"pos_tags", v.pos_tags},
                     {"entity_tags", v.entity_tags},
                     {"ner_tags", v.ner_tags},
                     {"relations", v.relations},
                     {"max_distance", v.max_distance}};
  config["classes"] = v.relations;
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
             {"files", files}};
  if (out.halting_steps.defined()) r.index["mean_halting_steps"] = out.mean_steps();
  const fs::path index = opt.out / "step.json";
  std::ofstream f(index);
  f << r.index.dump(1) << "\n";
  if (!f) throw std::runtime_error(index.string() + ": cannot be written");
  r.files.push_back(index);
  return r;
}

}  // namespace mare
