// Experiment specs: YAML -> a tree of values that remember their line, the profile's
// overrides merged into the base, the axes (models, a named grid, grid axes, zip)
// expanded into cells, every value checked against the option table and the model
// registry, then one RunPlan per cell and seed. Everything that can be wrong in a spec
// is found here, before a run starts: all three profiles are expanded on every load.
#include "experiments/sweep/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "experiments/bench_iteration.h"
#include "experiments/data/error.h"
#include "experiments/data/generators.h"
#include "experiments/re_data.h"
#include "experiments/re_trainer.h"
#include "experiments/tasks.h"
#include "experiments/train_option_kinds.h"
#include "kernels/bench/allocation_sweep.h"
#include "kernels/memory/allocation.h"
#include "kernels/ops/linalg.h"
#include "models/registry.h"

namespace mare::sweep {

namespace {

// A YAML value and the line (1-based; 0 unknown) it was written on. Maps keep their
// order and the line of each key.
struct Val {
  enum class Kind { null, scalar, seq, map };
  Kind kind = Kind::null;
  std::string text;  // scalar as written
  int line = 0;
  std::vector<Val> items;
  std::vector<std::pair<std::string, Val>> fields;
  std::vector<int> key_lines;

  bool is_map() const { return kind == Kind::map; }
  bool is_seq() const { return kind == Kind::seq; }
  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_null() const { return kind == Kind::null; }
  const Val* find(const std::string& key) const {
    for (const auto& [k, v] : fields)
      if (k == key) return &v;
    return nullptr;
  }
  int key_line(const std::string& key) const {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i].first == key) return key_lines[i];
    return line;
  }
  void set(const std::string& key, const Val& v, int kline) {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i].first == key) {
        fields[i].second = v;
        key_lines[i] = kline;
        return;
      }
    fields.emplace_back(key, v);
    key_lines.push_back(kline);
  }
  void erase(const std::string& key) {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i].first == key) {
        fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(i));
        key_lines.erase(key_lines.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  }
};

struct Ctx {
  std::string file;
  [[noreturn]] void fail(int line, const std::string& what) const {
    if (line > 0) throw SpecError(file + ":" + std::to_string(line) + ": " + what);
    throw SpecError(file + ": " + what);
  }
};

int line_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? m.line + 1 : 0;
}

Val convert(const YAML::Node& n, const Ctx& c) {
  Val v;
  v.line = line_of(n);
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
    case YAML::NodeType::Scalar:
      v.kind = Val::Kind::scalar;
      v.text = n.Scalar();
      break;
    case YAML::NodeType::Sequence:
      v.kind = Val::Kind::seq;
      for (const YAML::Node& item : n) v.items.push_back(convert(item, c));
      break;
    case YAML::NodeType::Map:
      v.kind = Val::Kind::map;
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) c.fail(line_of(kv.first), "expected a plain key");
        const std::string key = kv.first.Scalar();
        if (v.find(key)) c.fail(line_of(kv.first), "key '" + key + "' given twice");
        v.fields.emplace_back(key, convert(kv.second, c));
        v.key_lines.push_back(line_of(kv.first));
      }
      break;
  }
  return v;
}

// Profile over base: maps merge key by key, a null removes the key, anything else
// replaces.
Val merge(const Val& base, const Val& over) {
  if (!base.is_map() || !over.is_map()) return over;
  Val out = base;
  for (size_t i = 0; i < over.fields.size(); ++i) {
    const auto& [k, v] = over.fields[i];
    if (v.is_null()) {
      out.erase(k);
      continue;
    }
    const Val* b = out.find(k);
    out.set(k, b ? merge(*b, v) : v, over.key_lines[i]);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::string kind_name(const Val& v) {
  switch (v.kind) {
    case Val::Kind::null:
      return "nothing";
    case Val::Kind::scalar:
      return "'" + v.text + "'";
    case Val::Kind::seq:
      return "a list";
    case Val::Kind::map:
      return "a mapping";
  }
  return "?";
}

const std::string& scalar(const Ctx& c, const Val& v, const std::string& what) {
  if (!v.is_scalar()) c.fail(v.line, "expected " + what + ", found " + kind_name(v));
  return v.text;
}

int64_t as_int(const Ctx& c, const Val& v, const std::string& what) {
  const std::string& t = scalar(c, v, "an integer for " + what);
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno == ERANGE)
    c.fail(v.line, "expected an integer for " + what + ", found '" + t + "'");
  return x;
}

double as_number(const Ctx& c, const Val& v, const std::string& what) {
  const std::string& t = scalar(c, v, "a number for " + what);
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno == ERANGE || x != x)
    c.fail(v.line, "expected a number for " + what + ", found '" + t + "'");
  return x;
}

bool as_bool(const Ctx& c, const Val& v, const std::string& what) {
  const std::string& t = scalar(c, v, "true or false for " + what);
  if (t == "true" || t == "True" || t == "TRUE") return true;
  if (t == "false" || t == "False" || t == "FALSE") return false;
  c.fail(v.line, "expected true or false for " + what + ", found '" + t + "'");
}

// The shortest text that reads back as the same double.
std::string number_text(double x) {
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

// The most runs one plan may hold: a million-cell grid would not finish, and its plan
// alone (a command line a run) would fill the memory.
constexpr int64_t kMaxPlannedRuns = 100000;

// A byte that may stand in a name: ASCII letters, digits and ._+=-, and the bytes of any
// non-ASCII UTF-8 character (a cell may be named "α").
bool name_byte(unsigned char ch) {
  return ch >= 0x80 || std::isalnum(ch) || ch == '.' || ch == '_' || ch == '+' || ch == '=' ||
         ch == '-';
}

// A name that is also a directory name (a cell's, a sweep's): non-empty, name bytes only,
// well-formed UTF-8, not "." or "..".
bool valid_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char ch : s)
    if (!name_byte(static_cast<unsigned char>(ch))) return false;
  try {
    data::check_utf8(s, "a name");  // well-formed, no invisible characters
  } catch (const data::DataError&) {
    return false;
  }
  return true;
}

// A cell name made from its values (lr=0.001_batch=8, data=synth-cdr:/x): each byte that
// may not stand in a directory name ('/', ':', a space, ...) becomes '-'; the rest is kept
// as written, non-ASCII letters too. Two cells whose made names meet are refused, naming
// what each was made from.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char ch : s) out += name_byte(static_cast<unsigned char>(ch)) ? ch : '-';
  return out.empty() ? "-" : out;
}

constexpr const char* kNameRule =
    "ASCII letters and digits, ._+=- and non-ASCII characters (not empty, not . or ..)";

// ---- the option table -------------------------------------------------------------

enum class Type {
  integer,
  positive,
  nonneg,
  number,
  positive_number,
  number_or_tune,  // null_margin: a number, or tune (chosen on validation)
  boolean,
  string,
  choice,
  int_list,
  choice_list
};
// Which commands (and, for train, which kinds of model) an option applies to. The
// kinds of model that read a train option are train_option_kinds()'s, as `mare train`
// refuses them; kOptions marks a train option kTrain only.
enum Scope : unsigned {
  kClassification = kClassificationModels,
  kSequence = kSequenceModels,
  kRelation = kRelationModels,
  kAllocation = 8,
  kIteration = 16,
};
constexpr unsigned kTrain = kClassification | kSequence | kRelation;

// choice and choice_list: the values, from where the option is read (the same
// function `mare train` / `mare bench` check the command line with).
using Choices = std::vector<std::string> (*)();

struct Opt {
  const char* key;
  Type type;
  unsigned scope;
  Choices choices = nullptr;
};

std::vector<std::string> neutral_one_names() {
  return switch_choices("grpu", "neutral_one");
}

// `mare train` and `mare bench` options, in the order they are written on a command
// line (a fixed order keeps the command, hence the run id, independent of the spec's
// key order). The key is the option's name with '_' for '-'.
// A train option is marked kTrain: the kinds of model that read it are
// train_option_kinds()'s (experiments/train_option_kinds.h), as `mare train` refuses them.
constexpr Opt kOptions[] = {
    {"epochs", Type::positive, kTrain},
    {"batch", Type::positive, kTrain | kAllocation},
    {"lr", Type::positive_number, kTrain},
    {"schedule", Type::string, kTrain},
    {"clip", Type::number, kTrain},
    {"l2", Type::number, kTrain},
    {"samples", Type::positive, kTrain},
    {"test_samples", Type::positive, kTrain},
    {"curriculum", Type::boolean, kTrain},
    {"hidden", Type::positive, kTrain},
    {"neutral_one", Type::choice, kTrain, neutral_one_names},
    {"eval_every", Type::positive, kTrain},
    {"steps", Type::positive, kTrain},
    {"eval_batch", Type::positive, kTrain},
    {"patience", Type::nonneg, kTrain},
    {"max_tokens", Type::nonneg, kTrain},
    {"word2vec", Type::string, kTrain},
    {"class_weights", Type::choice, kTrain, class_weight_names},
    {"batching", Type::choice, kTrain, re_batching_names},
    {"null_margin", Type::number_or_tune, kTrain},
    {"hypernym_filter", Type::choice, kTrain, hypernym_filter_names},
    {"shape", Type::choice, kIteration, iteration_shape_names},
    {"size", Type::choice, kIteration, iteration_size_names},
    {"iterations", Type::positive, kIteration},
    {"warmup", Type::nonneg, kIteration},
    {"alloc", Type::choice_list, kIteration, allocation_variant_names},
    {"variants", Type::choice_list, kAllocation, allocation_variant_names},
    {"seq", Type::int_list, kAllocation},
    {"mem", Type::int_list, kAllocation},
    {"repetitions", Type::positive, kAllocation},
    {"clock", Type::choice, kAllocation, allocation_clock_names},
    {"no_backward", Type::boolean, kAllocation},
    {"device", Type::choice, kTrain | kAllocation | kIteration, device_names},
    {"matmul_precision", Type::choice, kTrain | kIteration, matmul_precision_names},
};

const Opt* find_option(const std::string& key) {
  for (const Opt& o : kOptions)
    if (key == o.key) return &o;
  return nullptr;
}

std::string flag_of(const std::string& key) {
  std::string f = "--" + key;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

// The commands an option applies to; for a train option, the kinds of model that read it.
unsigned scope_of(const Opt& o) {
  if (!(o.scope & kTrain)) return o.scope;
  const unsigned kinds = train_option_kinds(flag_of(o.key));
  if (kinds == 0)
    throw std::logic_error("spec option " + std::string(o.key) + " is no train option");
  return (o.scope & ~kTrain) | kinds;
}

enum class Command { train, bench_allocation, bench_iteration };

unsigned command_scope(Command c) {
  return c == Command::train ? kTrain : c == Command::bench_allocation ? kAllocation : kIteration;
}

const char* const kMetaKeys[] = {"name", "table", "description", "command", "profiles"};

// Keys a spec may set outside `profiles` and inside each profile.
std::vector<std::string> content_keys(Command c) {
  std::vector<std::string> keys{"seeds", "grid", "zip"};
  if (c == Command::train) {
    for (const char* k : {"models", "model", "switches", "task", "data"}) keys.push_back(k);
  } else if (c == Command::bench_iteration) {
    keys.push_back("models");
  }
  for (const Opt& o : kOptions)
    if (scope_of(o) & command_scope(c)) keys.push_back(o.key);
  return keys;
}

// Keys a grid axis or a zip column may set (zip also takes `cell`).
std::vector<std::string> axis_keys(Command c) {
  std::vector<std::string> keys;
  for (const std::string& k : content_keys(c))
    if (k != "seeds" && k != "grid" && k != "zip" && k != "models") keys.push_back(k);
  if (c == Command::bench_iteration) keys.push_back("models");
  return keys;
}

void check_keys(const Ctx& c, const Val& map, const std::vector<std::string>& allowed,
                const std::string& where) {
  for (size_t i = 0; i < map.fields.size(); ++i) {
    const std::string& k = map.fields[i].first;
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      c.fail(map.key_lines[i], "unknown key '" + k + "' in " + where +
                                   " (expected one of: " + join(allowed, ", ") + ")");
  }
}

// ---- cells --------------------------------------------------------------------------

// One assignment of an axis: values merged into the cell's configuration, and the
// part of the cell name it contributes.
struct Assignment {
  std::vector<std::pair<std::string, Val>> values;
  std::vector<int> lines;
  std::string name;
  std::string grid_row;  // named grid rows only
};
using Axis = std::vector<Assignment>;

std::string value_name(const Val& v) {
  switch (v.kind) {
    case Val::Kind::null:
      return "none";
    case Val::Kind::scalar:
      return v.text;
    case Val::Kind::seq: {
      std::vector<std::string> parts;
      for (const Val& i : v.items) parts.push_back(value_name(i));
      return join(parts, ",");
    }
    case Val::Kind::map: {
      std::vector<std::string> parts;
      for (const auto& [k, x] : v.fields) parts.push_back(k + "=" + value_name(x));
      return join(parts, "+");
    }
  }
  return "";
}

Val scalar_val(const std::string& text, int line) {
  Val v;
  v.kind = Val::Kind::scalar;
  v.text = text;
  v.line = line;
  return v;
}

// `models:` for train: one assignment of `model` per entry (a name, or {cell, model}).
Axis models_axis(const Ctx& c, const Val& models) {
  if (!models.is_seq())
    c.fail(models.line, "expected a list of models, found " + kind_name(models));
  if (models.items.empty()) c.fail(models.line, "expected at least one model in models: (empty)");
  Axis axis;
  for (const Val& m : models.items) {
    Assignment a;
    if (m.is_map()) {
      check_keys(c, m, {"cell", "model"}, "a models: entry");
      const Val* model = m.find("model");
      if (!model) c.fail(m.line, "expected 'model' in a models: entry");
      a.values.emplace_back("model", *model);
      a.lines.push_back(m.key_line("model"));
      const Val* cell = m.find("cell");
      a.name = cell ? scalar(c, *cell, "a cell name") : scalar(c, *model, "a model name");
      if (cell && !valid_name(a.name))
        c.fail(cell->line,
               "expected a cell name of " + std::string(kNameRule) + ", found '" + a.name + "'");
    } else {
      a.values.emplace_back("model", m);
      a.lines.push_back(m.line);
      a.name = scalar(c, m, "a model name");
    }
    axis.push_back(std::move(a));
  }
  return axis;
}

Axis named_grid_axis(const Ctx& c, const Val& grid) {
  const std::string& name = grid.text;
  std::vector<std::string> known;
  for (const GridInfo& g : model_grids()) {
    known.emplace_back(g.name);
    if (g.name != name) continue;
    Axis axis;
    for (const GridRow& row : g.rows) {
      Assignment a;
      a.values.emplace_back("model", scalar_val(std::string(row.model), grid.line));
      a.lines.push_back(grid.line);
      const std::string label(row.label);
      a.name = !label.empty() && std::isdigit(static_cast<unsigned char>(label[0]))
                   ? "config" + label
                   : label;
      a.grid_row = label;
      axis.push_back(std::move(a));
    }
    return axis;
  }
  c.fail(grid.line, "unknown grid '" + name + "' (expected a mapping of axes or a named grid: " +
                        join(known, ", ") + ")");
}

std::vector<Axis> grid_axes(const Ctx& c, const Val& grid, Command cmd) {
  if (!grid.is_map())
    c.fail(grid.line, "expected a named grid or a mapping of axis -> list of values, found " +
                          kind_name(grid));
  if (grid.fields.empty()) c.fail(grid.line, "expected at least one axis in grid: (empty grid)");
  check_keys(c, grid, axis_keys(cmd), "grid");
  std::vector<Axis> axes;
  for (size_t i = 0; i < grid.fields.size(); ++i) {
    const auto& [key, values] = grid.fields[i];
    if (!values.is_seq())
      c.fail(values.line,
             "expected a list of values for grid axis '" + key + "', found " + kind_name(values));
    if (values.items.empty())
      c.fail(grid.key_lines[i],
             "expected at least one value for grid axis '" + key + "' (empty grid)");
    Axis axis;
    for (const Val& v : values.items) {
      Assignment a;
      a.values.emplace_back(key, v);
      a.lines.push_back(grid.key_lines[i]);
      // A mapping value is named by its values (data: {subset: subtask1.2} -> subtask1.2).
      if (v.is_map()) {
        std::vector<std::string> parts;
        for (const auto& [k, x] : v.fields) parts.push_back(value_name(x));
        a.name = join(parts, "+");
      } else {
        a.name = key + "=" + value_name(v);
      }
      axis.push_back(std::move(a));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

Axis zip_axis(const Ctx& c, const Val& zip, Command cmd) {
  if (!zip.is_map())
    c.fail(zip.line,
           "expected a mapping of key -> list of values in zip:, found " + kind_name(zip));
  if (zip.fields.empty()) c.fail(zip.line, "expected at least one list in zip: (empty zip)");
  std::vector<std::string> allowed = axis_keys(cmd);
  allowed.insert(allowed.begin(), "cell");
  check_keys(c, zip, allowed, "zip");
  size_t n = 0;
  std::string first;
  for (size_t i = 0; i < zip.fields.size(); ++i) {
    const auto& [key, values] = zip.fields[i];
    if (!values.is_seq())
      c.fail(values.line,
             "expected a list of values for zip column '" + key + "', found " + kind_name(values));
    if (values.items.empty())
      c.fail(zip.key_lines[i], "expected at least one value in zip column '" + key + "' (empty)");
    if (i == 0) {
      n = values.items.size();
      first = key;
    } else if (values.items.size() != n) {
      c.fail(zip.key_lines[i], "expected " + std::to_string(n) + " values in zip column '" + key +
                                   "' (as many as '" + first + "'), found " +
                                   std::to_string(values.items.size()));
    }
  }
  Axis axis(n);
  for (size_t r = 0; r < n; ++r) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < zip.fields.size(); ++i) {
      const auto& [key, values] = zip.fields[i];
      const Val& v = values.items[r];
      if (key == "cell") {
        axis[r].name = scalar(c, v, "a cell name");
        if (!valid_name(axis[r].name))
          c.fail(v.line, "expected a cell name of " + std::string(kNameRule) + ", found '" +
                             axis[r].name + "'");
        continue;
      }
      axis[r].values.emplace_back(key, v);
      axis[r].lines.push_back(zip.key_lines[i]);
      parts.push_back(key + "=" + value_name(v));
    }
    if (axis[r].name.empty()) axis[r].name = join(parts, "_");
  }
  return axis;
}

// ---- one cell -> params and command ---------------------------------------------------

struct CellConfig {
  std::string name;
  std::string written;  // what the name was made from, before sanitize
  std::string grid_row;
  Val config;  // map
};

struct DataRef {
  bool generated = false;
  DataNeed need;
  std::string subset;
  std::string kind_path;  // "KIND:PATH" given as is
};

std::string generator_kind(const std::string& generator) {
  if (generator == "synth-cdr") return "synth-cdr";
  if (generator == "synth-ctd") return "bran-tsv";
  return "semeval";  // synth-semeval
}

DataRef parse_data(const Ctx& c, const Val& v) {
  DataRef d;
  if (v.is_scalar()) {
    const std::string& s = v.text;
    const size_t colon = s.find(':');
    if (names_a_release(s)) {
      try {
        const ReSource r = parse_re_source(s);
        if (!std::filesystem::is_directory(r.directory))
          c.fail(v.line, "data " + s + ": " + r.directory + " is not a directory");
      } catch (const std::invalid_argument& e) {
        c.fail(v.line, "data " + s + ": " + e.what());
      } catch (const std::runtime_error& e) {
        c.fail(v.line, "data " + s + ": " + e.what());
      }
      d.kind_path = s;
      return d;
    }
    const std::vector<std::string> kinds{"synth-cdr", "pubtator", "bran-tsv", "semeval"};
    if (colon == std::string::npos || colon + 1 == s.size() ||
        std::find(kinds.begin(), kinds.end(), s.substr(0, colon)) == kinds.end())
      c.fail(v.line,
             "expected data: cdr, semeval2018:1.1, semeval2018:1.2, KIND:PATH with KIND one "
             "of synth-cdr, pubtator, bran-tsv, semeval, or {generator: ..., seed: ..., "
             "docs: ...}, found '" +
                 s + "'");
    // A corpus that is not there fails every run one by one: refuse it here, before
    // anything runs. A relative path is read from where `mare sweep` runs, as its runs do.
    const std::string path = s.substr(colon + 1);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      c.fail(v.line, "data " + s + ": " + path +
                         " does not exist (expected the corpus directory; a relative path is "
                         "read from the directory mare sweep runs in)");
    d.kind_path = s;
    return d;
  }
  if (!v.is_map())
    c.fail(v.line, "expected data: KIND:PATH or {generator: ..., seed: ..., docs: ...}, found " +
                       kind_name(v));
  check_keys(c, v, {"generator", "seed", "docs", "subset"}, "data");
  const Val* g = v.find("generator");
  if (!g) c.fail(v.line, "expected 'generator' in data: (" + data::generator_list() + ")");
  const std::string& gen = scalar(c, *g, "a generator name");
  const std::vector<std::string> names = data::generator_names();
  if (std::find(names.begin(), names.end(), gen) == names.end())
    c.fail(g->line, "unknown generator '" + gen + "' (expected one of: " + join(names, ", ") + ")");
  d.generated = true;
  d.need.generator = gen;
  if (const Val* s = v.find("seed")) {
    d.need.seed = as_int(c, *s, "data seed");
    if (d.need.seed < 0) c.fail(s->line, "expected a data seed >= 0, found " + s->text);
  }
  if (const Val* n = v.find("docs")) {
    d.need.docs = as_int(c, *n, "data docs");
    if (d.need.docs < 1 || d.need.docs > data::kMaxDocs)
      c.fail(n->line,
             "expected docs from 1 to " + std::to_string(data::kMaxDocs) + ", found " + n->text);
  }
  if (const Val* s = v.find("subset")) {
    d.subset = scalar(c, *s, "a sub-directory of the corpus");
    if (!valid_name(d.subset))
      c.fail(s->line, "expected a sub-directory name of " + std::string(kNameRule) + ", found '" +
                          d.subset + "'");
  }
  d.need.dir = "data/" + gen + "-seed" + std::to_string(d.need.seed) +
               (d.need.docs ? "-docs" + std::to_string(d.need.docs) : "");
  d.need.command = {
      "data", "generate", gen, "--out", "{out}", "--seed", std::to_string(d.need.seed)};
  if (d.need.docs) {
    d.need.command.push_back("--docs");
    d.need.command.push_back(std::to_string(d.need.docs));
  }
  return d;
}

std::string data_path(const DataRef& d) {
  if (!d.generated) {
    if (names_a_release(d.kind_path)) return parse_re_source(d.kind_path).directory;
    return d.kind_path.substr(d.kind_path.find(':') + 1);
  }
  return "{root}/" + d.need.dir + (d.subset.empty() ? "" : "/" + d.subset);
}

std::string data_arg(const DataRef& d) {
  if (!d.generated) return d.kind_path;
  return generator_kind(d.need.generator) + ":" + data_path(d);
}

std::string substitute(std::string s, const std::string& key, const std::string& value) {
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size()))
    s.replace(at, key.size(), value);
  return s;
}

// A model switch value as params holds it: flags true, numbers as numbers.
nlohmann::json switch_value(const SwitchInfo* info, const std::string& v) {
  if (v == "on") return true;
  if (info && info->kind == SwitchInfo::Kind::integer) {
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (*end == '\0') return x;
  }
  if (info && info->kind == SwitchInfo::Kind::number) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (*end == '\0') return x;
  }
  return v;
}

const SwitchInfo* find_switch(const ModelInfo& m, const std::string& key) {
  for (const SwitchInfo& s : m.switches)
    if (s.name == key) return &s;
  return nullptr;
}

struct Built {
  nlohmann::json params = nlohmann::json::object();
  std::vector<std::string> command;
  std::string kind;
  std::vector<DataNeed> data;
};

// The `model` of a train cell with the spec's switches applied: a switch applies to
// the models that have it (`d` to cnn and bran, `heads` to bran only); `used` collects
// the switches that applied somewhere, `seen` every switch given (with its line).
struct SwitchUse {
  std::set<std::string> used;
  std::map<std::string, int> seen;
};

ModelSpec compose_model(const Ctx& c, const Val& model, const Val* switches, SwitchUse& use) {
  const std::string& name = scalar(c, model, "a model name");
  ModelSpec spec;
  try {
    spec = resolve_model(name);
  } catch (const std::invalid_argument& e) {
    c.fail(model.line, std::string("expected a model of the registry: ") + e.what());
  }
  if (!switches) return spec;
  if (!switches->is_map())
    c.fail(switches->line,
           "expected a mapping switch -> value in switches:, found " + kind_name(*switches));
  const ModelInfo* info = find_model(spec.base);
  for (size_t i = 0; i < switches->fields.size(); ++i) {
    const auto& [key, v] = switches->fields[i];
    use.seen.emplace(key, switches->key_lines[i]);
    const SwitchInfo* sw = find_switch(*info, key);
    if (!sw) continue;
    use.used.insert(key);
    const std::string& text = scalar(c, v, "a value for switch '" + key + "'");
    if (text == "false" || text == "False" || text == "FALSE") {
      if (sw->kind != SwitchInfo::Kind::flag)
        c.fail(v.line, "expected a value for switch '" + key + "' (false only turns a flag off)");
      spec.switches.erase(key);
    } else if (text == "true" || text == "True" || text == "TRUE") {
      spec.switches[key] = "on";
    } else {
      spec.switches[key] = text;
    }
    try {
      resolve_model(spec.canonical());
    } catch (const std::invalid_argument& e) {
      c.fail(v.line, std::string("bad switch: ") + e.what());
    }
  }
  try {  // the switches together, once all are set
    validate_model(spec.canonical());
  } catch (const std::invalid_argument& e) {
    // Switches may come from the spec's base, a profile and a grid: name the line of
    // each, and fail at the last of them (it was always the base's switches: line).
    std::string where;
    int last = switches->line;
    for (size_t i = 0; i < switches->fields.size(); ++i) {
      where += (where.empty() ? "" : ", ") + switches->fields[i].first + " at line " +
               std::to_string(switches->key_lines[i]);
      last = std::max(last, switches->key_lines[i]);
    }
    c.fail(last, std::string("bad switches (") + where + "): " + e.what());
  }
  return spec;
}

void add_option(const Ctx& c, const Opt& o, const Val& v, const std::string& data_dir, Built& b) {
  const std::string key = o.key;
  const std::string flag = flag_of(key);
  switch (o.type) {
    case Type::integer:
    case Type::positive:
    case Type::nonneg: {
      const int64_t x = as_int(c, v, key);
      if (o.type == Type::positive && x < 1)
        c.fail(v.line, "expected " + key + " >= 1, found " + v.text);
      if (o.type == Type::nonneg && x < 0)
        c.fail(v.line, "expected " + key + " >= 0, found " + v.text);
      b.params[key] = x;
      b.command.insert(b.command.end(), {flag, std::to_string(x)});
      return;
    }
    case Type::number:
    case Type::positive_number: {
      const double x = as_number(c, v, key);
      if (o.type == Type::positive_number && !(x > 0))
        c.fail(v.line, "expected " + key + " > 0, found " + v.text);
      b.params[key] = x;
      b.command.insert(b.command.end(), {flag, number_text(x)});
      return;
    }
    case Type::number_or_tune: {  // parse_null_margin's grammar (re_trainer.h)
      const std::string& t = scalar(c, v, "a number or tune for " + key);
      const std::optional<NullMarginRule> rule = parse_null_margin(t);
      if (!rule) c.fail(v.line, "expected a number or tune for " + key + ", found '" + t + "'");
      if (rule->tune) {
        b.params[key] = t;
        b.command.insert(b.command.end(), {flag, t});
      } else {
        b.params[key] = rule->margin;
        b.command.insert(b.command.end(), {flag, number_text(rule->margin)});
      }
      return;
    }
    case Type::boolean: {
      const bool x = as_bool(c, v, key);
      b.params[key] = x;
      if (x) b.command.push_back(flag);
      return;
    }
    case Type::string: {
      const std::string& s = scalar(c, v, "a string for " + key);
      if (s.find("{data}") != std::string::npos && data_dir.empty())
        c.fail(v.line, "expected data: for {data} in " + key);
      b.params[key] = s;
      b.command.insert(b.command.end(), {flag, substitute(s, "{data}", data_dir)});
      return;
    }
    case Type::choice: {
      const std::vector<std::string> ok = o.choices();
      const std::string& s = scalar(c, v, "one of " + join(ok, "|") + " for " + key);
      if (std::find(ok.begin(), ok.end(), s) == ok.end())
        c.fail(v.line,
               "expected " + key + " to be one of " + join(ok, ", ") + ", found '" + s + "'");
      b.params[key] = s;
      b.command.insert(b.command.end(), {flag, s});
      return;
    }
    case Type::int_list:
    case Type::choice_list: {
      std::vector<Val> items;
      if (v.is_seq())
        items = v.items;
      else if (v.is_scalar())
        items.push_back(v);
      else
        c.fail(v.line, "expected a list for " + key + ", found " + kind_name(v));
      if (items.empty()) c.fail(v.line, "expected at least one value for " + key);
      std::vector<std::string> parts;
      for (const Val& i : items) {
        if (o.type == Type::int_list) {
          const int64_t x = as_int(c, i, key);
          if (x < 1) c.fail(i.line, "expected " + key + " values >= 1, found " + i.text);
          parts.push_back(std::to_string(x));
        } else {
          const std::vector<std::string> ok = o.choices();
          const std::string& s = scalar(c, i, "one of " + join(ok, "|"));
          if (std::find(ok.begin(), ok.end(), s) == ok.end())
            c.fail(i.line,
                   "expected " + key + " values among " + join(ok, ", ") + ", found '" + s + "'");
          parts.push_back(s);
        }
      }
      b.params[key] = join(parts, ",");
      b.command.insert(b.command.end(), {flag, join(parts, ",")});
      return;
    }
  }
}

std::string scope_name(unsigned scope) {
  std::vector<std::string> s;
  if (scope & kClassification) s.emplace_back("classification models");
  if (scope & kSequence) s.emplace_back("sequence models");
  if (scope & kRelation) s.emplace_back("relation models");
  if (scope & kAllocation) s.emplace_back("bench-allocation");
  if (scope & kIteration) s.emplace_back("bench-iteration");
  return join(s, ", ");
}

// A relation model's corpus: --data and the params that name it (a generated corpus by
// generator, seed, size and subset, which the sweep then makes). Returns the directory
// {data} stands for: the corpus directory (its vectors.bin), not the subset under it.
std::string add_relation_data(const Ctx& c, const Val* task, const Val* data, const Val& model,
                              const ModelSpec& spec, Built& b) {
  if (task)
    c.fail(task->line,
           "expected data: instead of task: for the relation model '" + spec.base + "'");
  if (!data)
    c.fail(model.line,
           "expected data: (a generator or KIND:PATH) for the relation model '" + spec.base + "'");
  const DataRef d = parse_data(c, *data);
  b.command.insert(b.command.end(), {"--data", data_arg(d)});
  if (d.generated) {
    b.params["data"] = d.need.generator;
    b.params["data_seed"] = d.need.seed;
    if (d.need.docs) b.params["data_docs"] = d.need.docs;
    if (!d.subset.empty()) b.params["data_subset"] = d.subset;
    b.data.push_back(d.need);
  } else {
    b.params["data"] = d.kind_path;
  }
  return d.generated ? "{root}/" + d.need.dir : data_path(d);
}

// A classification or sequence model's task: --task, one of the registry's of its kind.
void add_task(const Ctx& c, const Val* task, const Val* data, const Val& model,
              const ModelSpec& spec, const std::string& task_kind, Built& b) {
  if (data)
    c.fail(data->line,
           "expected task: instead of data: for the " + task_kind + " model '" + spec.base + "'");
  if (!task)
    c.fail(model.line, "expected task: for the " + task_kind + " model '" + spec.base + "'");
  const std::string& t = scalar(c, *task, "a task name");
  std::vector<std::string> known;
  const TaskInfo* found = nullptr;
  for (const TaskInfo& ti : task_registry()) {
    if (ti.kind == task_kind) known.emplace_back(ti.name);
    if (ti.name == t) found = &ti;
  }
  if (!found || found->kind != task_kind)
    c.fail(task->line, "expected a " + task_kind + " task for model '" + spec.base +
                           "' (one of: " + join(known, ", ") + "), found '" + t + "'");
  b.command.insert(b.command.end(), {"--task", t});
  b.params["task"] = t;
}

// A train cell: its model with switches, its corpus or task, the switches as params (an
// option that a switch also sets is refused) and the seed. Returns the options' scope (the
// model's kind); `data_dir` gets what {data} stands for.
unsigned build_train(const Ctx& c, const CellConfig& cell, SwitchUse& used_switches, Built& b,
                     std::string& data_dir) {
  const Val& cfg = cell.config;
  b.kind = "train";
  const Val* model = cfg.find("model");
  if (!model)
    c.fail(1, "expected a model for cell '" + cell.name +
                  "': give models:, a named grid (grid: table4.6) or model:");
  const ModelSpec spec = compose_model(c, *model, cfg.find("switches"), used_switches);
  const ModelInfo* info = find_model(spec.base);
  const std::string task_kind(info->task_kind);
  b.command = {"train", "--model", spec.canonical()};
  b.params["model"] = spec.canonical();
  const Val* task = cfg.find("task");
  const Val* data = cfg.find("data");
  if (task_kind == "relation")
    data_dir = add_relation_data(c, task, data, *model, spec, b);
  else
    add_task(c, task, data, *model, spec, task_kind, b);
  for (const auto& [k, v] : spec.switches) {
    if (cfg.find(k) && find_option(k))
      c.fail(cfg.key_line(k), "switch '" + k + "' of model " + spec.canonical() + " and option '" +
                                  k + "' are both set: keep one");
    b.params[k] = switch_value(find_switch(*info, k), v);
  }
  b.command.insert(b.command.end(), {"--seed", "{seed}"});
  return model_kind_bit(task_kind);
}

// A bench iteration cell's models: registry names, as --models.
void add_bench_models(const Ctx& c, const Val& cfg, Built& b) {
  const Val* models = cfg.find("models");
  if (!models) return;
  std::vector<Val> items = models->is_seq() ? models->items : std::vector<Val>{*models};
  if (items.empty()) c.fail(models->line, "expected at least one model in models:");
  std::vector<std::string> names;
  for (const Val& m : items) {
    const std::string& n = scalar(c, m, "a model name");
    try {
      resolve_model(n);
    } catch (const std::invalid_argument& e) {
      c.fail(m.line, std::string("expected a model of the registry: ") + e.what());
    }
    if (n.find(',') != std::string::npos) c.fail(m.line, "expected a model name without ','");
    names.push_back(n);
  }
  b.params["models"] = join(names, ",");
  b.command.insert(b.command.end(), {"--models", join(names, ",")});
}

// One cell's command and params: what it runs (a model's training or a benchmark), its
// options (each refused where it does not apply), and where it writes.
Built build_cell(const Ctx& c, Command cmd, const CellConfig& cell, SwitchUse& used_switches) {
  Built b;
  const Val& cfg = cell.config;
  unsigned scope = command_scope(cmd);
  std::string data_dir;
  if (cmd == Command::train) {
    scope = build_train(c, cell, used_switches, b, data_dir);
  } else if (cmd == Command::bench_allocation) {
    b.kind = "bench";
    b.command = {"bench", "allocation"};
  } else {
    b.kind = "bench";
    b.command = {"bench", "iteration"};
    add_bench_models(c, cfg, b);
  }
  for (const Opt& o : kOptions) {
    const Val* v = cfg.find(o.key);
    if (!v) continue;
    if (!(scope_of(o) & scope))
      c.fail(cfg.key_line(o.key), "option '" + std::string(o.key) + "' applies to " +
                                      scope_name(scope_of(o)) + ", not to cell '" + cell.name +
                                      "'");
    add_option(c, o, *v, data_dir, b);
  }
  if (cell.grid_row.size()) b.params["grid_row"] = cell.grid_row;
  if (cmd == Command::train) {
    b.command.insert(b.command.end(), {"--out", "{run}"});
  } else {
    b.command.insert(b.command.end(), {"--json", "{run}/bench.json"});
    if (cmd == Command::bench_allocation)
      b.command.insert(b.command.end(), {"--csv", "{run}/bench.csv"});
  }
  return b;
}

std::vector<int64_t> parse_seeds(const Ctx& c, const Val& v) {
  std::vector<int64_t> seeds;
  if (v.is_scalar()) {
    seeds.push_back(as_int(c, v, "seeds"));
  } else if (v.is_seq()) {
    if (v.items.empty()) c.fail(v.line, "expected at least one seed in seeds: (empty list)");
    for (const Val& s : v.items) seeds.push_back(as_int(c, s, "a seed"));
  } else if (v.is_map()) {
    check_keys(c, v, {"from", "to"}, "seeds");
    const Val* from = v.find("from");
    const Val* to = v.find("to");
    if (!from || !to) c.fail(v.line, "expected seeds: {from: A, to: B} with both bounds");
    const int64_t a = as_int(c, *from, "seeds.from");
    const int64_t z = as_int(c, *to, "seeds.to");
    if (a < 0) c.fail(from->line, "expected seeds.from >= 0, found " + std::to_string(a));
    if (z < a)
      c.fail(v.line, "expected seeds.from <= seeds.to, found from " + std::to_string(a) + " > to " +
                         std::to_string(z));
    if (z - a >= kMaxPlannedRuns)
      c.fail(v.line, "expected at most " + std::to_string(kMaxPlannedRuns) + " seeds");
    for (int64_t s = a; s <= z; ++s) seeds.push_back(s);
    return seeds;
  } else {
    c.fail(v.line, "expected seeds: a list of seeds or {from: A, to: B}");
  }
  std::set<int64_t> seen;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const int line = v.is_seq() ? v.items[i].line : v.line;
    if (seeds[i] < 0) c.fail(line, "expected seeds >= 0, found " + std::to_string(seeds[i]));
    if (!seen.insert(seeds[i]).second)
      c.fail(line, "seed " + std::to_string(seeds[i]) + " is given twice");
  }
  return seeds;
}

struct Spec {
  Ctx ctx;
  Val root;
  Command command = Command::train;
  std::string name, table, description;
};

Spec read_spec(const std::string& path) {
  Spec s;
  s.ctx.file = path;
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw SpecError(path + ": a directory; expected a YAML spec file (experiments/specs/*.yaml)");
  std::ifstream in(path);
  if (!in) throw SpecError(path + ": cannot read the spec file");
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node node;
  try {
    node = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    s.ctx.fail(e.mark.line >= 0 ? e.mark.line + 1 : 0, "invalid YAML: " + e.msg);
  }
  s.root = convert(node, s.ctx);
  if (!s.root.is_map()) s.ctx.fail(s.root.line, "expected a mapping at the top of the spec");
  const Ctx& c = s.ctx;
  const Val* cmd = s.root.find("command");
  if (!cmd) c.fail(1, "expected command: train, bench-allocation or bench-iteration");
  const std::string& cmd_text = scalar(c, *cmd, "a command");
  if (cmd_text == "train")
    s.command = Command::train;
  else if (cmd_text == "bench-allocation")
    s.command = Command::bench_allocation;
  else if (cmd_text == "bench-iteration")
    s.command = Command::bench_iteration;
  else
    c.fail(cmd->line, "expected command: train, bench-allocation or bench-iteration, found '" +
                          cmd_text + "'");
  std::vector<std::string> allowed(std::begin(kMetaKeys), std::end(kMetaKeys));
  for (const std::string& k : content_keys(s.command)) allowed.push_back(k);
  check_keys(c, s.root, allowed, "the spec");
  const Val* name = s.root.find("name");
  if (!name) c.fail(1, "expected name: (the sweep's name)");
  s.name = scalar(c, *name, "a sweep name");
  if (!valid_name(s.name))
    c.fail(name->line,
           "expected a sweep name of " + std::string(kNameRule) + ", found '" + s.name + "'");
  if (const Val* t = s.root.find("table"); t && !t->is_null())
    s.table = scalar(c, *t, "a thesis table id such as \"4.6\"");
  if (const Val* d = s.root.find("description"); d && !d->is_null())
    s.description = scalar(c, *d, "a description");
  const Val* profiles = s.root.find("profiles");
  if (!profiles) c.fail(1, "expected profiles: with smoke, default and paper (gpu optional)");
  if (!profiles->is_map())
    c.fail(profiles->line,
           "expected profiles: a mapping with smoke, default and paper (gpu optional), found " +
               kind_name(*profiles));
  for (size_t i = 0; i < profiles->fields.size(); ++i) {
    const auto& [k, v] = profiles->fields[i];
    if (std::find(sweep::profiles().begin(), sweep::profiles().end(), k) == sweep::profiles().end())
      c.fail(profiles->key_lines[i],
             "unknown profile '" + k + "' (expected smoke, default, paper and gpu)");
    if (!v.is_null() && !v.is_map())
      c.fail(v.line,
             "expected profile '" + k + "' to be a mapping of overrides, found " + kind_name(v));
    if (v.is_map()) check_keys(c, v, content_keys(s.command), "profile '" + k + "'");
  }
  for (const std::string& p : sweep::required_profiles())
    if (!profiles->find(p))
      c.fail(s.root.key_line("profiles"),
             "missing profile '" + p + "' (every spec defines smoke, default and paper)");
  return s;
}

// The axes of a spec's content, outermost first: the models (a named grid, models:), each
// grid: axis, the zip: columns.
std::vector<Axis> spec_axes(const Spec& s, const Val& content) {
  const Ctx& c = s.ctx;
  std::vector<Axis> axes;
  if (s.command == Command::train) {
    Axis models;
    if (const Val* g = content.find("grid"); g && g->is_scalar()) models = named_grid_axis(c, *g);
    if (const Val* m = content.find("models")) {
      Axis more = models_axis(c, *m);
      models.insert(models.end(), more.begin(), more.end());
    }
    if (!models.empty() && content.find("model"))
      c.fail(content.key_line("model"), "expected either model: or models:/a named grid, not both");
    if (!models.empty()) axes.push_back(std::move(models));
  }
  if (const Val* g = content.find("grid"); g && !g->is_scalar())
    for (Axis& a : grid_axes(c, *g, s.command)) axes.push_back(std::move(a));
  else if (g && s.command != Command::train)
    c.fail(g->line,
           "expected grid: a mapping of axis -> list of values (named grids are for "
           "train)");
  if (const Val* z = content.find("zip")) axes.push_back(zip_axis(c, *z, s.command));

  return axes;
}

// The plan's size from its axes, before anything is built: a grid nobody can run is refused.
void require_plan_size(const Ctx& c, const Val& content, const std::vector<Axis>& axes,
                       size_t seeds) {
  double planned = static_cast<double>(seeds);
  for (const Axis& axis : axes) planned *= static_cast<double>(axis.size());
  if (planned > kMaxPlannedRuns)
    c.fail(content.find("grid") ? content.key_line("grid") : 1,
           "this plan has " +
               (planned < 9e18 ? std::to_string(static_cast<int64_t>(planned))
                               : number_text(planned)) +
               " runs (cells x seeds): expected at most " + std::to_string(kMaxPlannedRuns) +
               "; split the grid into several specs");
}

// The cells: the cartesian product of the axes, first axis outermost, each the base
// configuration with its assignments merged in and named by them (or by the spec).
std::vector<CellConfig> cartesian_cells(const Spec& s, const Val& cell_base,
                                        const std::vector<Axis>& axes) {
  std::vector<CellConfig> cells;
  std::vector<size_t> idx(axes.size(), 0);
  while (true) {
    CellConfig cell;
    cell.config = cell_base;
    std::vector<std::string> parts;
    for (size_t a = 0; a < axes.size(); ++a) {
      const Assignment& as = axes[a][idx[a]];
      for (size_t i = 0; i < as.values.size(); ++i) {
        const auto& [k, v] = as.values[i];
        const Val* b = cell.config.find(k);
        cell.config.set(k, b ? merge(*b, v) : v, as.lines[i]);
      }
      parts.push_back(as.name);
      if (!as.grid_row.empty()) cell.grid_row = as.grid_row;
    }
    // A null (`~`) unsets a key: `word2vec: ~` in a zip column means no --word2vec.
    for (size_t i = cell.config.fields.size(); i-- > 0;)
      if (cell.config.fields[i].second.is_null()) cell.config.erase(cell.config.fields[i].first);
    cell.written = parts.empty() ? s.name : join(parts, "_");
    cell.name = sanitize(cell.written);
    cells.push_back(std::move(cell));
    size_t a = axes.size();
    while (a > 0 && ++idx[a - 1] == axes[a - 1].size()) idx[--a] = 0;
    if (a == 0) break;
  }

  return cells;
}

// Every cell's runs, one a seed, with their ids and directories, and the data they need;
// two cells of one name are refused.
void add_runs(const Spec& s, const std::vector<CellConfig>& cells,
              const std::vector<int64_t>& seeds, SwitchUse& used_switches, SweepPlan& plan) {
  const Ctx& c = s.ctx;
  std::map<std::string, std::string> names;  // cell name -> what it was made from
  std::set<std::string> data_dirs;
  std::map<std::string, std::string> ids;
  for (const CellConfig& cell : cells) {
    if (const auto [at, fresh] = names.emplace(cell.name, cell.written); !fresh)
      c.fail(1, "two cells are named '" + cell.name + "'" +
                    (at->second == cell.written
                         ? std::string()
                         : " (made from '" + at->second + "' and '" + cell.written + "')") +
                    ": give zip: a cell: column or models: entries {cell: ..., model: ...}");
    const Built b = build_cell(c, s.command, cell, used_switches);
    for (const DataNeed& d : b.data)
      if (data_dirs.insert(d.dir).second) plan.data.push_back(d);
    for (int64_t seed : seeds) {
      RunPlan r;
      r.cell = cell.name;
      r.seed = seed;
      r.kind = b.kind;
      r.params = b.params;
      r.command = b.command;
      for (std::string& arg : r.command)
        if (arg == "{seed}") arg = std::to_string(seed);
      r.done_file = b.kind == "train" ? "result.json" : "bench.json";
      const nlohmann::json config = {{"params", r.params}, {"seed", seed}, {"command", r.command}};
      r.id = fnv1a_hex(config.dump());
      r.dir = r.cell + "/seed" + std::to_string(seed) + "-" + r.id.substr(0, 8);
      plan.runs.push_back(std::move(r));
    }
  }
}

// A switch no model of the spec has is a typo (the first one in the file is named).
void refuse_unused_switches(const Ctx& c, const SwitchUse& used_switches,
                            const std::vector<CellConfig>& cells) {
  const std::pair<const std::string, int>* unused = nullptr;
  for (const auto& kv : used_switches.seen)
    if (!used_switches.used.count(kv.first) && (!unused || kv.second < unused->second))
      unused = &kv;
  if (unused) {
    std::set<std::string> known;
    for (const CellConfig& cell : cells)
      if (const Val* m = cell.config.find("model"); m && m->is_scalar())
        if (const ModelInfo* info = find_model(resolve_model(m->text).base))
          for (const SwitchInfo& x : info->switches) known.emplace(x.name);
    c.fail(unused->second, "unknown switch '" + unused->first +
                               "': no model of this spec has it (known: " +
                               join({known.begin(), known.end()}, ", ") + ")");
  }
}

SweepPlan expand(const Spec& s, const std::string& spec_path, const std::string& profile) {
  const Ctx& c = s.ctx;
  Val base = s.root;
  for (const char* k : kMetaKeys) base.erase(k);
  const Val* over = s.root.find("profiles")->find(profile);
  const Val content = over && over->is_map() ? merge(base, *over) : base;

  SweepPlan plan;
  plan.spec_path = spec_path;
  plan.name = s.name;
  plan.table = s.table;
  plan.profile = profile;
  plan.description = s.description;

  const Val* seeds_val = content.find("seeds");
  if (!seeds_val) c.fail(1, "expected seeds: (a list, or {from: A, to: B})");
  const std::vector<int64_t> seeds = parse_seeds(c, *seeds_val);
  const std::vector<Axis> axes = spec_axes(s, content);
  Val cell_base = content;
  for (const char* k : {"seeds", "grid", "zip"}) cell_base.erase(k);
  if (s.command == Command::train) cell_base.erase("models");
  require_plan_size(c, content, axes, seeds.size());
  const std::vector<CellConfig> cells = cartesian_cells(s, cell_base, axes);
  SwitchUse used_switches;
  add_runs(s, cells, seeds, used_switches, plan);
  refuse_unused_switches(c, used_switches, cells);
  return plan;
}

}  // namespace

std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const std::vector<std::string>& profiles() {
  static const std::vector<std::string> p{"smoke", "default", "paper", "gpu"};
  return p;
}

const std::vector<std::string>& required_profiles() {
  static const std::vector<std::string> p{"smoke", "default", "paper"};
  return p;
}

nlohmann::json SweepPlan::run_json(const RunPlan& run) const {
  return {{"spec", spec_path}, {"sweep", name},         {"table", table},   {"profile", profile},
          {"cell", run.cell},  {"params", run.params},  {"seed", run.seed}, {"id", run.id},
          {"kind", run.kind},  {"command", run.command}};
}

SweepPlan load_sweep(const std::string& path, const std::string& profile) {
  const Spec s = read_spec(path);
  const auto& all = profiles();
  if (std::find(all.begin(), all.end(), profile) == all.end())
    s.ctx.fail(s.root.key_line("profiles"),
               "unknown profile '" + profile + "' (expected smoke, default, paper or gpu)");
  const Val* defined = s.root.find("profiles");
  if (!defined->find(profile))
    s.ctx.fail(s.root.key_line("profiles"),
               "this spec has no '" + profile + "' profile (it defines smoke, default and paper)");
  // Every profile is expanded, so that a mistake in `paper` shows in a smoke run.
  SweepPlan wanted;
  for (const std::string& p : all) {
    if (!defined->find(p)) continue;
    SweepPlan plan = expand(s, path, p);
    if (p == profile) wanted = std::move(plan);
  }
  return wanted;
}

}  // namespace mare::sweep
