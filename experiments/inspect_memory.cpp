#include "experiments/inspect_memory.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "experiments/re_data.h"
#include "experiments/run_dir.h"
#include "models/checkpoint.h"
#include "models/memory_mixer.h"
#include "models/re_model.h"
#include "models/registry.h"

namespace mare {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& p, const std::string& what) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read (expected " + what + ")");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(p.string() + ": not valid JSON (expected " + what + "): " + e.what());
  }
}

// The split's document `id`: an id of the split first, else a 0-based index.
int find_document(const ReSplit& split, const std::string& id, const std::string& where) {
  for (size_t i = 0; i < split.documents.size(); ++i)
    if (split.documents[i].id == id) return static_cast<int>(i);
  if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos && id.size() < 10) {
    const long k = std::stol(id);
    if (k < static_cast<long>(split.documents.size())) return static_cast<int>(k);
  }
  std::string known;
  for (size_t i = 0; i < split.documents.size() && i < 5; ++i)
    known += (i ? ", " : "") + split.documents[i].id;
  throw std::invalid_argument("inspect memory: --doc '" + id + "': no document with that id in " +
                              where + ", and not an index below its " +
                              std::to_string(split.documents.size()) + " documents (ids: " + known +
                              (split.documents.size() > 5 ? ", ..." : "") + ")");
}

// Row `m` of a [M, k...] tensor as a flat vector.
std::vector<float> row(const Tensor& t, int64_t m) {
  const int64_t k = t.numel() / t.dim(0);
  return std::vector<float>(t.f32() + m * k, t.f32() + (m + 1) * k);
}

// Row `m` of a [M, a, b] tensor as a nested [a][b] array.
nlohmann::json matrix_row(const Tensor& t, int64_t m) {
  const int64_t a = t.dim(1), b = t.dim(2);
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < a; ++i)
    out.push_back(std::vector<float>(t.f32() + (m * a + i) * b, t.f32() + (m * a + i + 1) * b));
  return out;
}

struct Field {
  const char* name;
  Tensor nn::MemoryRecording::Step::*tensor;
  const char* inner;  // column name of the last axis ("slot" or "word")
  bool headed;        // [M, R, ·]
};
constexpr Field kFields[] = {
    {"usage", &nn::MemoryRecording::Step::usage, "slot", false},
    {"memory", &nn::MemoryRecording::Step::memory, "word", false},  // [M, N, W]: slot, word
    {"allocation", &nn::MemoryRecording::Step::allocation, "slot", false},
    {"write_weights", &nn::MemoryRecording::Step::write_weights, "slot", false},
    {"read_weights", &nn::MemoryRecording::Step::read_weights, "slot", true},
    {"read_vectors", &nn::MemoryRecording::Step::read_vectors, "word", true},
};

std::string csv_text(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string field_csv(const Field& f, const std::vector<nn::MemoryRecording::Step>& steps,
                      int64_t T) {
  std::ostringstream os;
  os.precision(9);
  const bool memory = std::string(f.name) == "memory";
  os << "iteration,token," << (f.headed ? "head," : memory ? "slot," : "") << f.inner << ",value\n";
  for (size_t t = 0; t < steps.size(); ++t) {
    const Tensor& x = steps[t].*(f.tensor);
    const int64_t a = x.rank() == 3 ? x.dim(1) : 1, b = x.dim(x.rank() - 1);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t h = 0; h < a; ++h)
        for (int64_t k = 0; k < b; ++k) {
          os << t + 1 << "," << i << ",";
          if (x.rank() == 3) os << h << ",";
          os << k << "," << x.f32()[(i * a + h) * b + k] << "\n";
        }
  }
  return os.str();
}

// One heatmap per field: a panel per iteration, tokens across, the field's
// other axes (head, slot, word) flattened down.
void write_heatmaps(const fs::path& out, const std::vector<nn::MemoryRecording::Step>& steps,
                    int64_t T, std::vector<fs::path>& files) {
  const fs::path tmp = out / ".heatmap_data";
  fs::create_directories(tmp);
  struct Plot {
    const char* field;
    const char* title;
    const char* ylabel;
    bool unit;  // values in [0, 1]: one colour scale for every panel
  };
  const Plot plots[] = {{"usage", "Usage per token", "slot", true},
                        {"memory", "Memory contents per token", "slot x word", false},
                        {"write_weights", "Write weights per token", "slot", true},
                        {"read_weights", "Read weights per token", "head x slot", true},
                        {"read_vectors", "Read vectors per token", "head x word", false}};
  const int K = static_cast<int>(steps.size());
  for (const Plot& p : plots) {
    const Field* f = nullptr;
    for (const Field& x : kFields)
      if (std::string(x.name) == p.field) f = &x;
    // gnuplot's matrix format: one line per row (the flattened inner axes), one column per token.
    for (int t = 0; t < K; ++t) {
      const Tensor& x = steps[t].*(f->tensor);
      const int64_t rows = x.numel() / x.dim(0);
      std::ostringstream os;
      os.precision(7);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < T; ++i) os << (i ? " " : "") << x.f32()[i * rows + r];
        os << "\n";
      }
      std::ofstream(tmp / (std::string(p.field) + "_" + std::to_string(t) + ".dat")) << os.str();
    }
    std::ostringstream script;
    for (const char* ext : {"png", "svg"}) {
      const fs::path target = out / ("heatmap_" + std::string(p.field) + "." + ext);
      const fs::path partial = out / (".heatmap_" + std::string(p.field) + "." + ext + ".tmp");
      script << (std::string(ext) == "png"
                     ? "set terminal pngcairo size 1200," + std::to_string(300 * K) + "\n"
                     : "set terminal svg size 1200," + std::to_string(300 * K) + "\n")
             << "set output '" << partial.string() << "'\n"
             << "set multiplot layout " << K << ",1 title '" << p.title << "'\n"
             << "set xlabel 'token'\nset ylabel '" << p.ylabel << "'\n"
             << "set palette rgbformulae 22,13,10\nunset key\nset xrange [-0.5:" << T - 0.5 << "]\n"
             << (p.unit ? "set cbrange [0:1]\n" : "set autoscale cb\n");
      for (int t = 0; t < K; ++t) {
        const Tensor& x = steps[t].*(f->tensor);
        const int64_t rows = x.numel() / x.dim(0);
        script << (rows <= 16 ? "set ytics 1\n" : "set ytics autofreq\n") << "set title 'iteration "
               << t + 1 << "'\nset yrange [-0.5:" << rows - 0.5 << "]\nplot '"
               << (tmp / (std::string(p.field) + "_" + std::to_string(t) + ".dat")).string()
               << "' matrix with image\n";
      }
      script << "unset multiplot\nset output\n";
    }
    const fs::path script_path = tmp / (std::string(p.field) + ".gp");
    std::ofstream(script_path) << script.str();
    const std::string cmd =
        "gnuplot '" + script_path.string() + "' 2>'" + (tmp / "gnuplot.err").string() + "'";
    const int status = std::system(cmd.c_str());
    if (status != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream err(tmp / "gnuplot.err");
      const std::string why{std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>()};
      fs::remove_all(tmp);
      throw std::runtime_error("inspect memory: gnuplot failed on " + script_path.string() +
                               " (is gnuplot installed? --no-plots skips the heatmaps): " + why);
    }
    for (const char* ext : {"png", "svg"}) {
      const fs::path target = out / ("heatmap_" + std::string(p.field) + "." + ext);
      fs::rename(out / (".heatmap_" + std::string(p.field) + "." + ext + ".tmp"), target);
      files.push_back(target);
    }
  }
  fs::remove_all(tmp);
}

// The run to inspect: its manifest, the config it ran with, its model and its best
// checkpoint.
struct RunToInspect {
  fs::path manifest_path;
  nlohmann::json config;
  ModelSpec spec;
  fs::path checkpoint;
};

// The options checked and the run read: a `mare train` run of an NTCRE model that has a
// best checkpoint.
RunToInspect read_run(const InspectMemoryOptions& opt) {
  if (opt.run.empty())
    throw std::invalid_argument("inspect memory: RUN (a run directory) is required");
  if (opt.out.empty()) throw std::invalid_argument("inspect memory: --out DIR is required");
  if (opt.doc.empty()) throw std::invalid_argument("inspect memory: --doc ID is required");
  const fs::path manifest_path = opt.run / "manifest.json";
  if (!fs::exists(manifest_path))
    throw std::runtime_error(manifest_path.string() +
                             ": not found (expected the run directory of a `mare train` run)");
  const nlohmann::json manifest = read_json(manifest_path, "a run manifest");
  const nlohmann::json config = manifest.value("config", nlohmann::json::object());
  if (!config.contains("model") || !config["model"].is_string())
    throw std::runtime_error(manifest_path.string() +
                             ": no config.model (expected a relation-extraction run)");
  const std::string model_name = config["model"].get<std::string>();
  const ModelSpec spec = resolve_model(model_name);
  if (spec.base != "ntcre")
    throw std::invalid_argument(manifest_path.string() + ": model '" + model_name +
                                "' is not an NTCRE model (only ntcre has a memory to inspect)");
  const fs::path checkpoint = opt.run / "checkpoint.bin";
  if (!fs::exists(checkpoint))
    throw std::runtime_error(checkpoint.string() +
                             ": not found (the run has no best checkpoint yet: it has not been "
                             "evaluated once)");
  return {manifest_path, config, spec, checkpoint};
}

// The corpus the run trained on (or --data), cut and seeded as the run was.
ReCorpusOptions corpus_options(const InspectMemoryOptions& opt, const RunToInspect& run) {
  const nlohmann::json& config = run.config;
  ReCorpusOptions copt;
  copt.source = !opt.data.empty() ? opt.data : config.value("data", std::string());
  if (copt.source.empty())
    throw std::runtime_error(run.manifest_path.string() + ": no config.data and no --data given");
  // The manifest holds the resolved cut: 0 there means none (an option of 0 would
  // mean the corpus's default).
  const int max_tokens = config.value("max_tokens", 0);
  copt.max_tokens = max_tokens == 0 ? -1 : max_tokens;
  copt.word2vec = config.value("word2vec", std::string());
  copt.seed = config.value("seed", uint64_t{1});
  if (!copt.word2vec.empty()) copt.word2vec_dim = static_cast<int>(run.spec.get_int("d", 300));
  return copt;
}

// The run's model at its best checkpoint, built as the run built it (entity tags an
// input unless NER was trained).
std::unique_ptr<ReModel> load_model(const RunToInspect& run, const ReCorpus& corpus,
                                    uint64_t seed) {
  ReModelConfig mcfg;
  mcfg.sizes = corpus.sizes;
  mcfg.entity_tag_input = !run.config.value("ner_trained", false);
  std::unique_ptr<ReModel> model = build_re_model(run.spec, mcfg, seed);
  load_checkpoint(run.checkpoint.string(), model->parameters(), nullptr, &model->buffers());
  return model;
}

// One forward pass over the document in evaluation mode, recording into `rec` the
// memory's state after each iteration.
ReOutput record_memory(ReModel& model, const ReBatch& batch, nn::MemoryRecording& rec) {
  nn::Context ctx;  // evaluation mode
  ctx.memory_recording = &rec;
  ReOutput out = model.forward(batch, batch.P > 0 ? ReTask::relations : ReTask::entities, ctx);
  if (rec.steps.empty())
    throw std::logic_error("inspect memory: the model recorded no memory step");
  return out;
}

// The document inspected: its split, its index there and the text of its tokens.
struct InspectedDocument {
  const ReSplit& split;
  int index;
  std::vector<std::string> tokens;
};

// The document's tokens as the model saw them (the cut's length, not the raw text's).
InspectedDocument inspected_document(const ReSplit& split, int doc) {
  const data::Document& d = split.documents[doc];
  std::vector<std::string> tokens;
  for (int i = 0; i < split.features[doc].length; ++i) tokens.push_back(d.tokens[i].text);
  return {split, doc, tokens};
}

// memory.json's description of the inspection: the run, the model, the document, the
// memory's sizes and the layout of `steps`.
nlohmann::json memory_header(const InspectMemoryOptions& opt, const ModelSpec& spec, ReModel& model,
                             const std::string& source, const InspectedDocument& doc,
                             const nn::MemoryRecording& rec) {
  nlohmann::json j;
  j["run"] = opt.run.string();
  j["model"] = spec.canonical();
  j["model_structure"] = model.describe();
  j["data"] = source;
  j["split"] = opt.split;
  const data::Document& d = doc.split.documents[doc.index];
  j["document"] = {{"id", d.id}, {"index", doc.index}, {"tokens", doc.tokens}};
  const Tensor& m0 = rec.steps[0].memory;
  j["slots"] = m0.dim(1);
  j["word"] = m0.dim(2);
  j["read_heads"] = rec.steps[0].read_weights.dim(1);
  j["iterations"] = rec.steps.size();
  j["layout"] =
      "steps[k] is the state after iteration k+1; each field is indexed [token][...]: usage, "
      "allocation, write_weights [token][slot]; memory [token][slot][word]; read_weights "
      "[token][head][slot]; read_vectors [token][head][word]; run [token] is 1 where the "
      "token's memory stepped (real and not halted)";
  return j;
}

// Each iteration's recorded state: its mixer, which tokens stepped, and every field per
// token.
nlohmann::json steps_json(const std::vector<nn::MemoryRecording::Step>& recorded, int64_t T) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t k = 0; k < recorded.size(); ++k) {
    const nn::MemoryRecording::Step& s = recorded[k];
    nlohmann::json js = {{"iteration", k + 1}, {"mixer", s.mixer}};
    js["run"] = std::vector<float>(s.run.f32(), s.run.f32() + T);
    for (const Field& f : kFields) {
      const Tensor& x = s.*(f.tensor);
      nlohmann::json per_token = nlohmann::json::array();
      for (int64_t i = 0; i < T; ++i)
        per_token.push_back(x.rank() == 3 ? matrix_row(x, i) : nlohmann::json(row(x, i)));
      js[f.name] = std::move(per_token);
    }
    steps.push_back(std::move(js));
  }
  return steps;
}

// The document's pairs: the entities, the gold relation and the predicted one (the
// highest logit, the first of equals).
nlohmann::json pairs_json(const ReCorpus& corpus, const InspectedDocument& doc,
                          const ReBatch& batch, const ReOutput& out) {
  const ReSplit& split = doc.split;
  const data::Document& d = split.documents[doc.index];
  nlohmann::json pairs = nlohmann::json::array();
  const Tensor z = out.pair_logits->value.to(Device::cpu);
  const int64_t C = z.dim(1);
  for (int64_t p = 0; p < batch.P; ++p) {
    int64_t best = 0;
    for (int64_t c = 1; c < C; ++c)
      if (z.f32()[p * C + c] > z.f32()[p * C + best]) best = c;
    const data::Example& e = split.examples[split.document_examples[doc.index][p]];
    pairs.push_back(
        {{"head", d.entities[e.head].id},
         {"tail", d.entities[e.tail].id},
         {"gold", corpus.relation_names[split.labels[split.document_examples[doc.index][p]]]},
         {"predicted", corpus.relation_names[best]}});
  }
  return pairs;
}

// memory_tokens.csv: each token's position, text and whether it is real (not padding).
std::string tokens_csv(const std::vector<std::string>& tokens, const Tensor& batch_mask,
                       int64_t T) {
  std::ostringstream tok;
  tok << "token,text,real\n";
  const Tensor mask = batch_mask.to(Device::cpu);
  for (int64_t i = 0; i < T; ++i)
    tok << i << "," << csv_text(i < static_cast<int64_t>(tokens.size()) ? tokens[i] : "") << ","
        << (mask.f32()[i] > 0 ? 1 : 0) << "\n";
  return tok.str();
}

}  // namespace

InspectMemoryResult inspect_memory(const InspectMemoryOptions& opt) {
  const RunToInspect run = read_run(opt);
  const ReCorpusOptions copt = corpus_options(opt, run);
  const ReCorpus corpus = ReCorpus::load(copt);
  if (opt.split != "train" && opt.split != "valid" && opt.split != "test")
    throw std::invalid_argument("inspect memory: --split '" + opt.split +
                                "': expected train, valid or test");
  const ReSplit& split = corpus.split(opt.split);
  const int doc = find_document(split, opt.doc, "the " + opt.split + " split of " + copt.source);

  const std::unique_ptr<ReModel> model = load_model(run, corpus, copt.seed);
  const ReBatch batch = make_batch(split, {BatchItem{doc, split.document_examples[doc]}});
  nn::MemoryRecording rec;
  const ReOutput out = record_memory(*model, batch, rec);
  const int64_t T = batch.T;

  const InspectedDocument document = inspected_document(split, doc);
  nlohmann::json j = memory_header(opt, run.spec, *model, copt.source, document, rec);
  j["steps"] = steps_json(rec.steps, T);
  if (batch.P > 0) j["pairs"] = pairs_json(corpus, document, batch, out);

  InspectMemoryResult result;
  fs::create_directories(opt.out);
  atomic_write(opt.out / "memory.json", j.dump() + "\n");
  result.files.push_back(opt.out / "memory.json");
  atomic_write(opt.out / "memory_tokens.csv", tokens_csv(document.tokens, batch.mask, T));
  result.files.push_back(opt.out / "memory_tokens.csv");
  for (const Field& f : kFields) {
    const fs::path p = opt.out / ("memory_" + std::string(f.name) + ".csv");
    atomic_write(p, field_csv(f, rec.steps, T));
    result.files.push_back(p);
  }
  if (opt.plots) write_heatmaps(opt.out, rec.steps, T, result.files);
  result.memory = std::move(j);
  return result;
}

}  // namespace mare
