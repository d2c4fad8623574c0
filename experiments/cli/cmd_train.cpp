// `mare train --model M --task T --seed S --out DIR`: one run, one directory.
// The task's kind picks the trainer: classification tasks (xor) train a
// Classifier (experiments/trainer.h); sequence tasks (addition,
// multiplication, conditional) train a SequenceModel
// (experiments/sequence_trainer.h), whose defaults are the dissertation's
// (1000 epochs, batch 100, Adam lr 1e-4) unless the options are given.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "experiments/grpu_tasks.h"
#include "experiments/re_data.h"
#include "experiments/re_trainer.h"
#include "experiments/run_lifecycle.h"
#include "experiments/sequence_trainer.h"
#include "experiments/train_option_kinds.h"
#include "experiments/trainer.h"
#include "kernels/parallel.h"
#include "models/registry.h"

namespace mare::cli {

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// A score or error of the summary line, to 4 significant digits (result.json has them all);
// a value that is not a number (null when a run diverged) as JSON writes it.
std::string score(const nlohmann::json& v) {
  if (!v.is_number()) return v.dump();
  std::ostringstream s;
  s << std::setprecision(4) << v.get<double>();
  return s.str();
}

// A finished run of the same configuration is not run again; its result line is
// printed after this one, so that it does not read as a run that just happened.
void say_if_finished_before(bool finished_before, const std::filesystem::path& out) {
  if (finished_before)
    std::cout << "finished before: nothing ran, " << (out / "result.json").string()
              << " is the earlier run's (--force runs it again)\n";
}

// What every trainer of a run directory reads alike: the run's identity and device, and
// the optimiser's options where they are given (each trainer keeps its own defaults).
template <class Options>
void take_common(Options& t, const TrainOptions& o, const CLI::App& cmd) {
  t.seed = o.seed;
  t.out = o.out;
  t.force = o.force;
  t.device = o.device;
  if (cmd.count("--batch")) t.batch = o.batch;
  if (cmd.count("--lr")) t.lr = o.lr;
  if (cmd.count("--clip")) t.clip_norm = o.clip_norm;
}

// The sequence options that stand for model switches (+hidden, +neutral_one).
struct SequenceSwitches {
  int64_t hidden = 0;       // 0: the model's default
  std::string neutral_one;  // empty: the model's default
};

void run_sequence(const TrainOptions& o, SequenceTrainOptions s, const SequenceSwitches& x,
                  const CLI::App& cmd) {
  ModelSpec spec = ModelSpec::parse(o.model);
  // An option and the switch it stands for, both given: refused (the option won silently).
  for (const auto& [option, key, given] :
       {std::tuple{"--hidden", "hidden", x.hidden > 0},
        std::tuple{"--neutral-one", "neutral_one", !x.neutral_one.empty()}})
    if (given && spec.switches.count(key))
      throw std::invalid_argument(std::string("train: ") + option + " and +" + key + "=" +
                                  spec.switches.at(key) + " both given; expected one of them");
  if (x.hidden > 0) spec.switches["hidden"] = std::to_string(x.hidden);
  if (!x.neutral_one.empty()) spec.switches["neutral_one"] = x.neutral_one;
  s.model = spec.canonical();
  s.task = o.task;
  take_common(s, o, cmd);
  if (cmd.count("--epochs")) s.epochs = o.epochs;
  const bool tty = ::isatty(STDERR_FILENO);
  {
    // The structure and size before the run starts.
    SequenceTask probe = make_sequence_task(s.task, s.seed, 1, 1, false);
    auto model = build_sequence_model(spec, probe.shape, s.seed);
    std::cerr << model->describe() << "\nparameters: " << model->parameters().count() << "\n";
  }
  const bool before = !o.force && std::filesystem::exists(o.out / "result.json");
  nlohmann::json r = train_sequence_model(s, &std::cerr, tty);
  say_if_finished_before(before, o.out);
  const auto& f = r["final"];
  std::cout << r["model"].get<std::string>() << " on " << r["task"].get<std::string>() << " (seed "
            << r["seed"] << ", " << r["parameters"]
            << " parameters): " << r["status"].get<std::string>() << ", " << r["steps"]
            << " steps, train mse " << score(f["train_mse"]) << ", test mse "
            << score(f["test_mse"]) << "\n"
            << "run directory: " << o.out.string() << "\n";
}

// An option that a kind of model does not read is refused, not ignored (--l2
// with the GRPU, --epochs with a relation model, --steps with the MLP).
void refuse_foreign_options(const CLI::App& cmd, const std::string& kind,
                            const std::string& model) {
  const unsigned bit = model_kind_bit(kind);
  // What this kind reads, said beside the options of every run (in this order).
  static constexpr std::string_view kEveryRun[] = {
      "--model", "--seed", "--out", "--device", "--matmul-precision", "--threads", "--force"};
  auto every_run = [](std::string_view flag) {
    return std::find(std::begin(kEveryRun), std::end(kEveryRun), flag) != std::end(kEveryRun);
  };
  std::set<std::string> mine;
  for (const TrainOptionKinds& o : kTrainOptionKinds)
    if ((o.kinds & bit) && !every_run(o.flag)) mine.emplace(o.flag);
  for (const CLI::Option* o : cmd.get_options()) {
    const std::string name = o->get_name();
    if (o->count() == 0 || name == "--help" || name == "--help-all" ||
        (train_option_kinds(name) & bit))
      continue;
    std::string list, always;
    for (const std::string& n : mine) list.append(list.empty() ? "" : " ").append(n);
    for (std::string_view n : kEveryRun) always.append(always.empty() ? "" : " ").append(n);
    throw std::invalid_argument("train: " + name + " does not apply to model '" + model + "' (a " +
                                kind + " model reads " + list + ", and " + always + ")");
  }
}

// Relation-extraction models (cnn, bran, utre and their aliases) on a corpus. --eval-every
// is bound to the sequence options' field (one option, two kinds of model).
void run_relation(const TrainOptions& o, ReTrainOptions r, const SequenceTrainOptions& shared,
                  const std::string& time_limit, const CLI::App& cmd) {
  if (cmd.count("--eval-every")) r.eval_every = shared.eval_every;
  r.model = o.model;
  take_common(r, o, cmd);
  if (cmd.count("--l2")) r.l2 = o.l2;  // thesis Table 4.1 unless given, as the others
  if (!time_limit.empty())
    r.time_limit = parse_duration(time_limit, "train: --time-limit");
  else if (const char* env = std::getenv("MARE_TIME_LIMIT"); env && *env)
    r.time_limit = parse_duration(env, "MARE_TIME_LIMIT");
  bool tty = ::isatty(STDERR_FILENO);
  const bool before = !o.force && std::filesystem::exists(o.out / "result.json");
  nlohmann::json res = train_re_model(r, &std::cerr, tty);
  if (res["status"] == "paused") {
    std::cout << res["model"].get<std::string>() << " on " << res["data"].get<std::string>()
              << " (seed " << res["seed"] << "): paused at step " << res["step"] << " of "
              << res["steps"] << " (its time limit); the same command continues it\n"
              << "run directory: " << o.out.string() << "\n";
    std::cout.flush();
    std::cerr.flush();
    std::exit(kExitPaused);
  }
  say_if_finished_before(before, o.out);
  std::cout << res["model"].get<std::string>() << " on " << res["data"].get<std::string>()
            << " (seed " << res["seed"] << ", " << res["parameters"]
            << " parameters): " << res["status"].get<std::string>() << ", " << res["steps"]
            << " steps";
  if (res.contains("test")) {
    // The task's official score where the corpus has one (re_official.h).
    const bool official = res["test"].contains("official");
    const auto& m = official ? res["test"]["official"] : res["test"]["relations"]["micro"];
    std::cout << ", best step " << res["best_step"] << ", test P " << score(m["precision"]) << " R "
              << score(m["recall"]) << " F1 " << score(m["f1"]);
    if (official) std::cout << "\n  scored as " << m["score"].get<std::string>();
    const auto& ref = res["test_references"];
    std::cout << "\n  beside it on test: ";
    if (ref.contains("oracle_f1")) std::cout << "oracle F1 " << score(ref["oracle_f1"]) << ", ";
    std::cout << "majority (" << ref["majority_class"].get<std::string>() << ") F1 "
              << score(ref["majority_f1"]) << ", every pair "
              << ref["constant_positive_class"].get<std::string>() << " F1 "
              << score(ref["constant_positive_f1"]);
  }
  std::cout << "\nrun directory: " << o.out.string() << "\n";
}

// The options bind to the trainers' own option structs (their defaults are the help's);
// run_train takes what every kind reads from `opt` (take_common).
struct TrainArgs {
  TrainOptions opt;  // the MLP's options, and those every kind of model reads
  SequenceTrainOptions seq;
  SequenceSwitches seq_switches;
  ReTrainOptions rel;
  std::string device = "cpu";
  std::string matmul_precision = "highest";
  std::string time_limit;  // --time-limit (relation models), else MARE_TIME_LIMIT
  int threads = 0;         // 0: MARE_THREADS, else every core
};

void run_train(const TrainArgs& a, const CLI::App& cmd) {
  TrainOptions o = a.opt;
  o.device = parse_device(a.device);
  require_training_device(o.device);  // before anything is built or printed
  set_matmul_precision(checked_matmul_precision(a.matmul_precision, o.device, "train"));
  // --threads, else MARE_THREADS (a bad value is refused here, naming it), else every core.
  if (a.threads > 0)
    set_threads(a.threads);
  else
    threads();
  // A model serves one kind of task: say so rather than "unknown model".
  std::string base = resolve_model(o.model).base;
  const ModelInfo* info = find_model(base);
  if (info && info->task_kind == "relation") {
    if (cmd.count("--task"))
      throw std::invalid_argument("model '" + base +
                                  "' reads a corpus: give --data KIND:DIR instead of --task");
    refuse_foreign_options(cmd, "relation", base);
    run_relation(o, a.rel, a.seq, a.time_limit, cmd);
    return;
  }
  if (cmd.count("--data"))
    throw std::invalid_argument("--data is for relation models (cnn, bran, utre); model '" + base +
                                "' takes --task");
  std::string task_kind = is_sequence_task(o.task) ? "sequence" : "classification";
  for (const ModelInfo& m : model_registry())
    if (m.name == base && m.task_kind != task_kind)
      throw std::invalid_argument("model '" + base + "' takes " + std::string(m.task_kind) +
                                  " tasks; task '" + o.task + "' is a " + task_kind + " task");
  refuse_foreign_options(cmd, task_kind, base);
  if (is_sequence_task(o.task)) {
    run_sequence(o, a.seq, a.seq_switches, cmd);
    return;
  }
  bool tty = ::isatty(STDERR_FILENO);
  const bool before = !o.force && std::filesystem::exists(o.out / "result.json");
  nlohmann::json r = train_classifier(o, tty ? &std::cerr : nullptr);
  say_if_finished_before(before, o.out);
  const auto& f = r["final"];
  std::cout << r["model"].get<std::string>() << " on " << r["task"].get<std::string>() << " (seed "
            << r["seed"] << "): " << r["status"].get<std::string>() << ", " << r["steps"]
            << " steps, train accuracy " << f["train_accuracy"] << ", test accuracy "
            << f["test_accuracy"] << "\n"
            << "run directory: " << o.out.string() << "\n";
}

// The optimiser's options; those whose default depends on the kind of model say every
// default.
void add_optimiser_options(CLI::App* cmd, TrainArgs* a) {
  const TrainOptions mlp;
  const SequenceTrainOptions seq;
  const ReTrainOptions re;
  cmd->add_option("--epochs", a->opt.epochs,
                  "Epochs (default: mlp " + num(mlp.epochs) + ", sequence models " +
                      num(seq.epochs) + "; relation models take --steps)")
      ->check(whole_number(1));
  cmd->add_option("--batch", a->opt.batch,
                  "Batch size (default: mlp " + num(mlp.batch) + ", sequence models " +
                      num(seq.batch) + ", relation models " + num(re.batch) + ", Table 4.1)")
      ->check(whole_number(1));
  cmd->add_option("--lr", a->opt.lr,
                  "Adam learning rate (default: mlp " + num(mlp.lr) + ", sequence models " +
                      num(seq.lr) + ", relation models " + num(re.lr) + ", Table 4.1)")
      ->check(number_above(0));
  cmd->add_option("--schedule", a->opt.schedule,
                  "mlp: learning-rate schedule, constant | warmup:STEPS | step:SIZE:GAMMA")
      ->capture_default_str();
  cmd->add_option("--clip", a->opt.clip_norm,
                  "Global gradient-norm clip, 0: off (default: mlp " + num(mlp.clip_norm) +
                      ", sequence models " + num(seq.clip_norm) + ", relation models " +
                      num(re.clip_norm) + ", Table 4.1)")
      ->check(number_above(0, false));
  cmd->add_option("--l2", a->opt.l2,
                  "L2 regularisation λ, loss += λ·Σw² (default: mlp " + num(mlp.l2) +
                      ", relation models " + num(re.l2) + ", Table 4.1; not for sequence models)")
      ->check(number_above(0, false));
}

// The sequence tasks' and models' options, and how often a run evaluates.
void add_sequence_options(CLI::App* cmd, TrainArgs* a) {
  const SequenceTrainOptions seq;
  const ReTrainOptions re;
  add_count(cmd, "--samples", a->seq.samples, "Sequence tasks: training sequences", 1);
  add_count(cmd, "--test-samples", a->seq.test_samples, "Sequence tasks: test sequences", 1);
  cmd->add_flag("--curriculum", a->seq.curriculum,
                "Sequence tasks: lengths 10–15 … 50–55 in five equal phases of the epochs");
  cmd->add_option("--hidden", a->seq_switches.hidden,
                  "Sequence models: hidden (controller) size, same as +hidden=H")
      ->check(whole_number(1));
  cmd->add_option("--neutral-one", a->seq_switches.neutral_one,
                  "GRPU: neutral-element-one form, code (published runs) or text (eq. 4.16)")
      ->check(CLI::IsMember(switch_choices("grpu", "neutral_one")));
  cmd->add_option("--eval-every", a->seq.eval_every,
                  "Evaluate every N epochs (sequence models: train and test MSE; default " +
                      num(seq.eval_every) +
                      ") or N steps (relation models: the validation split; default " +
                      num(re.eval_every) + "), and at the end")
      ->check(whole_number(1));
}

// The relation models' options: corpus, steps, evaluation, batching and scoring.
void add_relation_options(CLI::App* cmd, TrainArgs* a) {
  cmd->add_option("--data", a->rel.data,
                  "Relation models: the corpus: cdr (BioCreative V CDR), semeval2018:1.1 or "
                  "semeval2018:1.2 (SemEval 2018 Task 7), each from the shipped release or "
                  "from :DIR, or KIND:DIR, KIND in synth-cdr | pubtator | bran-tsv | semeval");
  add_count(cmd, "--steps", a->rel.steps, "Relation models: training steps", 1);
  add_count(cmd, "--eval-batch", a->rel.eval_batch,
            "Relation models: documents per evaluation batch", 1);
  add_count(cmd, "--patience", a->rel.patience,
            "Relation models: stop after N evaluations without a better validation F1 (0: "
            "never)",
            0);
  add_count(cmd, "--max-tokens", a->rel.max_tokens,
            "Relation models: cut documents to N tokens (0: the corpus default, CTD 500)", 0);
  cmd->add_option("--word2vec", a->rel.word2vec,
                  "Relation models: initialise word embeddings from this word2vec file (its "
                  "dimension must equal +d)");
  add_choice(cmd, "--class-weights", a->rel.class_weights,
             "Relation models: eq. 4-2 class weights: auto (multiclass corpora), on, off",
             class_weight_names());
  add_choice(cmd, "--batching", a->rel.batching,
             "Relation models: bran (each RE batch from the positive or the negative pool, "
             "p = 0.5), balanced (half of each batch from each pool) or natural (pairs "
             "drawn from all of them: the split's class proportions)",
             re_batching_names());
  cmd->add_option("--null-margin", a->rel.null_margin,
                  "Relation models: predict a relation only when its logit exceeds NULL's by more "
                  "than M (0: argmax; balanced batches on a corpus with one positive pair in q + "
                  "1: log q corrects the prior), or tune: the M that maximises validation F1 at "
                  "each evaluation, the best checkpoint's M scoring train and test")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (parse_null_margin(s)) return "";
            return "expected a number (0: argmax) or tune, got '" + s + "'";
          },
          "M|tune"));
  add_choice(cmd, "--hypernym-filter", a->rel.hypernym_filter,
             "CDR: drop NULL pairs whose disease is a MeSH hypernym of a disease the same "
             "chemical induces in the document (BRAN's filter): none, train (cdr's default) or "
             "all splits (as BRAN and the thesis; validation and test then see their gold)",
             hypernym_filter_names());
  cmd->add_flag("--grad-norms", a->rel.grad_norms,
                "Relation models: metrics.jsonl also holds each parameter's mean gradient norm "
                "(before L2 and clipping) over every evaluation window; a diagnostic, the "
                "training is the same");
  cmd->add_option("--time-limit", a->time_limit,
                  "Relation models: stop at the evaluation after which the next window would "
                  "end past this time (90s, 10m, 1.5h; default: MARE_TIME_LIMIT, else none), "
                  "with last.ckpt written, and exit with status 75; the same command continues "
                  "the run to the bytes of an uninterrupted one");
  cmd->add_flag("--static-step", a->rel.static_step,
                "Relation models with halting: run the halting loop to t_max under masks made "
                "on the device, so that a step reads nothing it computed (the step a CUDA graph "
                "could hold); the same numbers, bit for bit, at t_max iterations' work");
}

// Where and how the run computes, and whether it runs again.
void add_run_options(CLI::App* cmd, TrainArgs* a) {
  add_choice(cmd, "--device", a->device,
             "cpu or cuda (every model; the data is made on the host, the model trains on the "
             "device)",
             device_names());
  add_choice(cmd, "--matmul-precision", a->matmul_precision, kMatmulPrecisionHelp,
             matmul_precision_names());
  cmd->add_flag("--force", a->opt.force, "Run again even if DIR/result.json exists");
  cmd->add_option("--threads", a->threads,
                  "Kernel threads (default: MARE_THREADS, else every core); every metric, "
                  "checkpoint and number a run writes is the same at any count (manifest.json "
                  "and result.json record the count itself)")
      ->check(whole_number(1, kMaxThreads));
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto [cmd, a] = add_command<TrainArgs>(
      app, "train", "Train one model on one task and write its run directory", run_train);
  cmd->add_option("--model", a->opt.model, "Model name from `mare list`, with +switches")
      ->capture_default_str();
  cmd->add_option("--task", a->opt.task, "Task name from `mare list`")->capture_default_str();
  add_count(cmd, "--seed", a->opt.seed, "Seed of data, initial weights, order and dropout", 0);
  cmd->add_option("--out", a->opt.out, "Run directory to write")->required();
  add_optimiser_options(cmd, a);
  add_sequence_options(cmd, a);
  add_relation_options(cmd, a);
  add_run_options(cmd, a);
}

}  // namespace mare::cli
