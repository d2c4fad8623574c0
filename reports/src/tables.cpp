#include "reports/src/tables.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "stats/descriptive.h"
#include "stats/wilcoxon.h"

namespace mare::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kNone = "—";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& v) {
  if (v.size() < 2) return join(v, "");
  return join(std::vector<std::string>(v.begin(), v.end() - 1), ", ") + " and " + v.back();
}

// ---- summaries -------------------------------------------------------------------------

std::string mean_sd(const std::vector<double>& x, int decimals) {
  if (x.empty()) return kNone;
  const double m = stats::mean(x);
  const std::string n = " (" + std::to_string(x.size()) + ")";
  if (x.size() == 1) return format_fixed(m, decimals) + n;
  return format_fixed(m, decimals) + " ± " + format_fixed(stats::sd(x), decimals) + n;
}

std::string median_range(const std::vector<double>& x, int sig) {
  if (x.empty()) return kNone;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  return format_sig(stats::median(x), sig) + " [" + format_sig(*lo, sig) + ", " +
         format_sig(*hi, sig) + "]";
}

std::string signed_fixed(double d, int decimals) {
  std::string s = format_fixed(d, decimals);
  return (s[0] == '-' || s.find_first_not_of("0.") == std::string::npos) ? s : "+" + s;
}

// A published cell as printed ("" -> "—").
std::string printed(const std::string& s) {
  return s.empty() ? kNone : s;
}

bool pub_number(const std::string& s, double& v) {
  return parse_double(s, v);
}

// ours (mean) − published, or "—".
std::string diff_mean(const std::vector<double>& ours, const std::string& published, int decimals) {
  double p = 0;
  if (ours.empty() || !pub_number(published, p)) return kNone;
  return signed_fixed(stats::mean(ours) - p, decimals);
}

// ---- which runs -----------------------------------------------------------------------

bool completed(const RunRecord& r) {
  return r.status == "completed";
}

std::vector<const RunRecord*> runs_of(const ReportInputs& in,
                                      const std::function<bool(const RunRecord&)>& keep) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : in.runs)
    if (r.kind != "bench" && keep(r)) out.push_back(&r);
  return out;
}

bool in_table(const RunRecord& r, std::initializer_list<const char*> tables) {
  for (const char* t : tables)
    if (r.table == t) return true;
  return false;
}

// Counts of the runs that did not complete, for the notes.
std::string not_completed_note(const std::vector<const RunRecord*>& runs) {
  std::map<std::string, int> by;
  for (const RunRecord* r : runs)
    if (!completed(*r)) ++by[r->status.empty() ? "unknown" : r->status];
  if (by.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [s, n] : by) parts.push_back(std::to_string(n) + " " + s);
  return "Not counted (did not complete): " + join(parts, ", ") + ".";
}

std::vector<double> values_of(const std::vector<const RunRecord*>& runs, const std::string& key,
                              double scale = 1.0) {
  std::vector<double> x;
  for (const RunRecord* r : runs) {
    if (!completed(*r)) continue;
    auto it = r->values.find(key);
    if (it != r->values.end() && std::isfinite(it->second)) x.push_back(it->second * scale);
  }
  return x;
}

// Runs grouped by a label, labels in first-seen order.
struct Groups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunRecord*>> runs;
  void add(const std::string& label, const RunRecord* r) {
    if (!runs.count(label)) order.push_back(label);
    runs[label].push_back(r);
  }
};

// ---- model names ----------------------------------------------------------------------

struct ModelParts {
  std::string base;
  std::map<std::string, std::string> switches;  // key -> value ("on" for a flag)
};

ModelParts parse_model(const std::string& name) {
  static const std::map<std::string, std::string> aliases{
      {"UTRE-CPD", "utre+ngram+transition+cpd"},
      {"UTRE", "utre+ngram+transition"},
      {"NTCRE-CPD", "ntcre+ngram+transition+cpd"},
      {"NTCRE", "ntcre+ngram+transition"}};
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '+');) parts.push_back(p);
  ModelParts m;
  if (parts.empty()) return m;
  auto add = [&](const std::string& p) {
    const auto eq = p.find('=');
    if (eq == std::string::npos)
      m.switches[p] = "on";
    else
      m.switches[p.substr(0, eq)] = p.substr(eq + 1);
  };
  auto alias = aliases.find(parts[0]);
  if (alias != aliases.end()) {
    ModelParts a = parse_model(alias->second);
    m = a;
  } else {
    m.base = lower(parts[0]);
  }
  for (std::size_t i = 1; i < parts.size(); ++i) add(parts[i]);
  return m;
}

std::string run_model(const RunRecord& r) {
  if (r.manifest.is_object() && r.manifest.contains("config") && r.manifest["config"].is_object() &&
      r.manifest["config"].contains("model") && r.manifest["config"]["model"].is_string())
    return r.manifest["config"]["model"].get<std::string>();
  return param(r, "model");
}

bool flag_on(const ModelParts& m, const std::string& key) {
  auto it = m.switches.find(key);
  return it != m.switches.end() && it->second != "off" && it->second != "0" &&
         it->second != "false";
}

bool extra_data(const RunRecord& r) {
  for (const char* k : {"extra_data", "data_extra", "plus_data"}) {
    const std::string v = lower(param(r, k));
    if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  }
  const std::string c = lower(r.cell);
  return c.find("+data") != std::string::npos;
}

// ---- provenance -----------------------------------------------------------------------

std::string manifest_date(const json& m) {
  if (!m.is_object()) return "";
  // The day only: provenance lists the distinct dates of its runs, not every start time.
  for (const char* k : {"date", "started", "created", "started_at", "created_at"})
    if (m.contains(k) && m[k].is_string()) {
      const std::string d = m[k].get<std::string>();
      const bool iso = d.size() > 10 && d[4] == '-' && d[7] == '-' && d[10] == 'T';
      return iso ? d.substr(0, 10) : d;
    }
  return "";
}

json sorted_list(const std::set<std::string>& s) {
  json a = json::array();
  for (const std::string& x : s) a.push_back(x);
  return a;
}

// ---- the published tables ------------------------------------------------------------

std::map<std::string, std::string> row_map(const CsvTable& t, std::size_t i) {
  std::map<std::string, std::string> m;
  for (std::size_t c = 0; c < t.header.size() && c < t.rows[i].size(); ++c)
    m[t.header[c]] = t.rows[i][c];
  return m;
}

std::vector<std::map<std::string, std::string>> rows_of(const CsvTable& t) {
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) out.push_back(row_map(t, i));
  return out;
}

Table missing_table(const std::string& id, const std::string& title, const std::string& why) {
  return {.id = id, .title = title, .missing = why};
}

void add_note(Table& t, const std::string& note) {
  if (!note.empty()) t.notes.push_back(note);
}

// ---- tables that put the published rows beside ours --------------------------------------

using Row = std::map<std::string, std::string>;
using Runs = std::vector<const RunRecord*>;

// The last published row that `match` accepts (an empty row when none does).
Row last_row(const std::vector<Row>& pub, const std::function<bool(const Row&)>& match) {
  Row out;
  for (const Row& p : pub)
    if (match(p)) out = p;
  return out;
}

// A published row's cell as the CSV has it, "—" when there is no row.
std::string cell(const Row& p, const std::string& column) {
  return p.empty() ? kNone : p.at(column);
}

// ... and as printed ("—" for an empty cell too).
std::string printed_cell(const Row& p, const std::string& column) {
  return p.empty() ? kNone : printed(p.at(column));
}

// A thesis table whose rows are the published CSV's, each beside our runs of the same
// group, then one row for each group of ours the thesis does not have. A new table of
// this kind is a description: what selects its runs, how runs and published rows are
// grouped, and how one row's cells are made.
struct PublishedBesideOurs {
  std::string id, title;
  std::initializer_list<const char*> tables;  // run.json "table" values of its runs
  std::string missing;                        // why it is not made when no run is there
  std::string published_csv;                  // in ../shared/paper/
  std::vector<std::string> columns;
  // the group of one of our runs (pub: the published rows)
  std::function<std::string(const RunRecord&, const std::vector<Row>& pub)> group;
  // the group a published row stands for ("" when none of ours)
  std::function<std::string(const Row& pub, const Groups& ours)> published_group;
  // one row's cells: a published row with our runs of its group (maybe none), and a
  // group of ours the thesis does not have
  std::function<std::vector<std::string>(const Row& pub, const Runs& rs)> published_row;
  std::function<std::vector<std::string>(const std::string& group, const Runs& rs)> ours_only_row;
  std::string note;
  // Relation tables: runs grouped by corpus too (the real one beside the published
  // values), and a last column naming each row's data sources.
  bool by_corpus = false;
};

// The corpus a run trained on, as its family: cdr (cdr+dev too), semeval2018 (either
// subtask), or the kind or generator of other data (synth-cdr, pubtator, ...).
std::string corpus_family(const RunRecord& r) {
  const std::string k = data_kind(r);
  return k == "cdr+dev" ? "cdr" : k;  // the same test split, another training protocol
}

// The data sources of a row's runs ("cdr"; "semeval2018:1.1+1.2, semeval2018:1.2+1.1"),
// "—" for a published row without runs of ours.
std::string corpus_cell(const Runs& rs) {
  std::vector<std::string> seen;
  for (const RunRecord* r : rs) {
    const std::string d = data_source(*r);
    if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
  }
  std::string out;
  for (const std::string& d : seen) out += (out.empty() ? "" : ", ") + d;
  return out.empty() ? kNone : out;
}

Table render(const PublishedBesideOurs& d, const ReportInputs& in, const Paper& paper) {
  const Runs runs = runs_of(in, [&](const RunRecord& r) { return in_table(r, d.tables); });
  if (runs.empty()) return missing_table(d.id, d.title, d.missing);
  const std::vector<Row> pub = rows_of(paper.at(d.published_csv));
  // The published values are the thesis's corpora: runs on a real corpus stand beside
  // them when there are any, runs on other data (synthetic stand-ins) get rows of their
  // own, named by their corpus, never averaged in.
  std::string primary = corpus_family(*runs.front());
  for (const RunRecord* r : runs)
    if (corpus_family(*r) == "cdr" || corpus_family(*r) == "semeval2018")
      primary = corpus_family(*r);
  Groups g;
  for (const RunRecord* r : runs) {
    const std::string family = corpus_family(*r);
    g.add(d.group(*r, pub) + (!d.by_corpus || family == primary ? "" : " [" + family + "]"), r);
  }
  Table t;
  t.id = d.id;
  t.title = d.title;
  t.columns = d.columns;
  if (d.by_corpus) t.columns.push_back("corpus");
  std::set<std::string> shown;
  for (const Row& p : pub) {
    const std::string key = d.published_group(p, g);
    Runs rs;
    if (!key.empty() && g.runs.count(key)) {
      rs = g.runs[key];
      shown.insert(key);
    }
    t.rows.push_back(d.published_row(p, rs));
    if (d.by_corpus) t.rows.back().push_back(corpus_cell(rs));
  }
  for (const std::string& key : g.order)
    if (!shown.count(key)) {
      t.rows.push_back(d.ours_only_row(key, g.runs[key]));
      if (d.by_corpus) t.rows.back().push_back(corpus_cell(g.runs[key]));
    }
  t.provenance = provenance_of(runs);
  add_note(t, d.note);
  add_note(t, not_completed_note(runs));
  return t;
}

// Three cells of a row: the published value (with its sd when the thesis prints one),
// ours as mean ± sd, and ours minus the published value.
void add_beside(std::vector<std::string>& row, const std::string& published,
                const std::vector<double>& ours, const std::string& published_sd = "") {
  row.push_back(printed(published) + (published_sd.empty() ? "" : " ± " + published_sd));
  row.push_back(mean_sd(ours, 1));
  row.push_back(diff_mean(ours, published, 1));
}

// A published row's key column, when our groups are named by it.
std::function<std::string(const Row&, const Groups&)> by_column(const std::string& column) {
  return [column](const Row& p, const Groups&) { return p.at(column); };
}

// ---- Table 4.5: CDR relation extraction -------------------------------------------------

// The published row of a model label, "" when the thesis has none of ours.
std::string published_45_row(const std::string& label) {
  if (label == "BRAN") return "BRAN Verga et al. 2018";
  if (label == "BRAN +Data") return "BRAN Verga et al. 2018 +Data";
  return label;
}

Table table_45(const ReportInputs& in, const Paper& paper) {
  auto ours = [](const Runs& rs, const char* metric) { return values_of(rs, metric, 100); };
  return render(
      {.id = "table4.5",
       .title = "Table 4.5: CDR relation extraction, test set (%)",
       .tables = {"4.5"},
       .missing = "no CDR relation runs among the inputs (runs of table 4.5: a sweep with table "
                  "\"4.5\", or `mare train` runs on synth-cdr/pubtator data)",
       .published_csv = "table_4_5_cdr_results.csv",
       .columns = {"model", "published P", "ours P", "published R", "ours R", "published F1",
                   "ours F1", "F1 difference"},
       .group = [](const RunRecord& r, const std::vector<Row>&) { return model_label(r); },
       .published_group =
           [](const Row& p, const Groups& g) {
             std::string label;
             for (const std::string& l : g.order)
               if (published_45_row(l) == p.at("model")) label = l;
             return label;
           },
       .published_row =
           [&](const Row& p, const Runs& rs) {
             const auto P = ours(rs, "test_precision"), R = ours(rs, "test_recall"),
                        F = ours(rs, "test_f1");
             return std::vector<std::string>{p.at("model"), printed(p.at("precision")),
                                             mean_sd(P, 1), printed(p.at("recall")),
                                             mean_sd(R, 1), printed(p.at("f1")),
                                             mean_sd(F, 1), diff_mean(F, p.at("f1"), 1)};
           },
       .ours_only_row =
           [&](const std::string& l, const Runs& rs) {
             return std::vector<std::string>{l + " (ours only)",
                                             kNone,
                                             mean_sd(ours(rs, "test_precision"), 1),
                                             kNone,
                                             mean_sd(ours(rs, "test_recall"), 1),
                                             kNone,
                                             mean_sd(ours(rs, "test_f1"), 1),
                                             kNone};
           },
       .note = "Ours: on cdr the BioCreative V CDR relation score (document-level CID triples "
               "against every gold relation of the test split), elsewhere micro P/R/F1 of the "
               "CID pairs; mean ± sd (number of completed runs). Published: thesis Table 4.5 "
               "(BioCreative V CDR). Models the thesis quotes from the literature have no run "
               "of ours.",
       .by_corpus = true},
      in, paper);
}

// ---- Table 4.6: ablation --------------------------------------------------------------

struct Bits {
  int memory = 0, ngram = 0, transition = 0, halting = 0;
};

bool utre_like(const ModelParts& m) {
  return m.base == "utre" || m.base == "ntcre";
}

// The Table 4.6 configuration of a run: its cell when the cell is a published config,
// else the row whose components match the model's switches; other models by name.
std::string config_46(const RunRecord& r,
                      const std::vector<std::map<std::string, std::string>>& pub) {
  for (const auto& p : pub)
    if (r.cell == p.at("config")) return r.cell;
  const ModelParts m = parse_model(run_model(r));
  if (!utre_like(m)) return model_label(r);
  Bits b{m.base == "ntcre", flag_on(m, "ngram"), flag_on(m, "transition"), flag_on(m, "cpd")};
  for (const auto& p : pub)
    if (p.at("memory") == std::to_string(b.memory) &&
        p.at("char_ngram") == std::to_string(b.ngram) &&
        p.at("transition") == std::to_string(b.transition) &&
        p.at("halting") == std::to_string(b.halting))
      return p.at("config");
  return model_label(r);
}

Table table_46(const ReportInputs& in, const Paper& paper) {
  auto ours = [](const Runs& rs, const char* metric) { return values_of(rs, metric, 100); };
  return render(
      {.id = "table4.6",
       .title = "Table 4.6: ablation on CDR, F1 (%) by configuration",
       .tables = {"4.6"},
       .missing = "no runs of the table 4.6 sweep among the inputs (run.json \"table\": \"4.6\")",
       .published_csv = "table_4_6_ablation.csv",
       .columns = {"config", "memory", "char n-gram", "transition", "halting", "published train",
                   "ours train", "difference", "published valid", "ours valid", "difference",
                   "published test", "ours test", "difference"},
       .group = [](const RunRecord& r, const std::vector<Row>& pub) { return config_46(r, pub); },
       .published_group = by_column("config"),
       .published_row =
           [&](const Row& p, const Runs& rs) {
             std::vector<std::string> row{p.at("config"), p.at("memory"), p.at("char_ngram"),
                                          p.at("transition"), p.at("halting")};
             for (const char* split : {"train", "valid", "test"}) {
               const std::string metric = std::string(split) + "_f1";
               add_beside(row, p.at(metric), ours(rs, metric.c_str()));
             }
             return row;
           },
       .ours_only_row =
           [&](const std::string& l, const Runs& rs) {
             std::vector<std::string> row(14, kNone);  // ours only: train, valid, test
             row[0] = l;
             row[6] = mean_sd(ours(rs, "train_f1"), 1);
             row[9] = mean_sd(ours(rs, "valid_f1"), 1);
             row[12] = mean_sd(ours(rs, "test_f1"), 1);
             return row;
           },
       .note = "Ours: the best-on-validation checkpoint's F1 on train, validation and test, "
               "scored on cdr as the BioCreative V CDR relation task does (document-level CID "
               "triples), elsewhere as the micro F1 of the CID pairs; mean ± sd (completed "
               "runs); train: the whole training split (runs from before result.json held it "
               "show —). Published: mean of 30 repetitions. Components: 1 = on (memory: ntcre; "
               "halting: cpd).",
       .by_corpus = true},
      in, paper);
}

// ---- Table 4.7: Wilcoxon between configurations ----------------------------------------

using F1BySeed = std::map<std::string, std::map<int64_t, double>>;  // config -> seed -> test F1 (%)

// The completed runs' test F1 by Table 4.6 configuration and seed.
F1BySeed f1_by_seed(const Runs& runs, const std::vector<Row>& pub46) {
  F1BySeed f1;
  for (const RunRecord* r : runs) {
    if (!completed(*r) || !r->values.count("test_f1")) continue;
    f1[config_46(*r, pub46)][r->seed] = r->values.at("test_f1") * 100;
  }
  return f1;
}

// The configurations Table 4.7 tests against each other, with the published p of a pair.
struct WilcoxonPairs {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::map<std::pair<std::string, std::string>, std::string> published;
};

WilcoxonPairs wilcoxon_pairs(const Paper& paper, const std::vector<Row>& pub46,
                             const F1BySeed& f1) {
  // The published pairs first, then every other configuration against NTCRE-CPD.
  WilcoxonPairs wp;
  auto& pairs = wp.pairs;
  for (const auto& p : rows_of(paper.at("table_4_7_wilcoxon.csv"))) {
    pairs.emplace_back(p.at("a"), p.at("b"));
    wp.published[{p.at("a"), p.at("b")}] = p.at("p");
  }
  std::vector<std::string> configs;  // Table 4.6's row order, then the others by name
  for (const auto& p : pub46)
    if (f1.count(p.at("config"))) configs.push_back(p.at("config"));
  for (const auto& [config, _] : f1)
    if (std::find(configs.begin(), configs.end(), config) == configs.end())
      configs.push_back(config);
  for (const std::string& config : configs) {
    if (config == "NTCRE-CPD" || !f1.count("NTCRE-CPD")) continue;
    std::pair<std::string, std::string> pr{config, "NTCRE-CPD"};
    if (std::find(pairs.begin(), pairs.end(), pr) == pairs.end() &&
        std::find(pairs.begin(), pairs.end(), std::make_pair(pr.second, pr.first)) == pairs.end())
      pairs.push_back(pr);
  }
  return wp;
}

// One row of Table 4.7 and its p (NaN where no test was made; the Holm column is filled
// in once every row's p is known).
struct WilcoxonRow {
  std::vector<std::string> cells;
  double p = NAN;
};

// The test of a against b on their runs paired by seed; the test's name goes to `methods`.
WilcoxonRow wilcoxon_row(const std::string& a, const std::string& b, const F1BySeed& f1,
                         const std::string& pub_p, std::set<std::string>& methods) {
  WilcoxonRow row;
  std::string why;
  std::vector<double> x, y;
  if (!f1.count(a) || !f1.count(b)) {
    why = "no completed runs of " + (!f1.count(a) ? a : b);
  } else {
    for (const auto& [seed, v] : f1.at(a))
      if (f1.at(b).count(seed)) {
        x.push_back(v);
        y.push_back(f1.at(b).at(seed));
      }
    if (x.empty()) why = "no seed common to both";
  }
  if (!why.empty()) {
    row.cells = {
        a, b, std::to_string(x.size()), kNone, kNone, kNone, kNone, why, kNone, printed(pub_p)};
    return row;
  }
  try {
    const stats::TestResult res = stats::signed_rank_test(x, y);
    row.p = res.p_value;
    methods.insert(res.title);
    row.cells = {a,
                 b,
                 std::to_string(x.size()),
                 format_fixed(stats::mean(x), 2),
                 format_fixed(stats::mean(y), 2),
                 signed_fixed(stats::hodges_lehmann([&] {
                                std::vector<double> d;
                                for (std::size_t i = 0; i < x.size(); ++i) d.push_back(x[i] - y[i]);
                                return d;
                              }()),
                              2),
                 format_shortest(res.statistic),
                 format_sig(res.p_value, 4),
                 "",
                 printed(pub_p)};
  } catch (const std::invalid_argument& e) {
    row.cells = {a,
                 b,
                 std::to_string(x.size()),
                 format_fixed(stats::mean(x), 2),
                 format_fixed(stats::mean(y), 2),
                 kNone,
                 kNone,
                 std::string("no test: ") + e.what(),
                 kNone,
                 printed(pub_p)};
  }
  return row;
}

// Fills in the rows' Holm-adjusted p, the adjustment over the rows with a test.
void add_holm(std::vector<WilcoxonRow>& rows) {
  std::vector<double> ps;
  for (const WilcoxonRow& r : rows)
    if (std::isfinite(r.p)) ps.push_back(r.p);
  const std::vector<double> adj = stats::holm(ps);
  std::size_t k = 0;
  for (WilcoxonRow& r : rows)
    if (std::isfinite(r.p)) r.cells[8] = format_sig(adj[k++], 4);
}

Table table_47(const ReportInputs& in, const Paper& paper) {
  const std::string id = "table4.7",
                    title =
                        "Table 4.7: Wilcoxon signed-rank tests between configurations "
                        "(test F1, runs paired by seed)";
  auto runs = runs_of(in, [](const RunRecord& r) { return in_table(r, {"4.6", "4.7"}); });
  if (runs.empty())
    return missing_table(id, title,
                         "no runs of the table 4.6 sweep among the inputs: the tests pair its "
                         "configurations' runs by seed");
  const auto pub46 = rows_of(paper.at("table_4_6_ablation.csv"));
  const F1BySeed f1 = f1_by_seed(runs, pub46);
  const WilcoxonPairs wp = wilcoxon_pairs(paper, pub46, f1);
  std::vector<WilcoxonRow> rows;
  std::set<std::string> methods;
  for (const auto& [a, b] : wp.pairs) {
    const auto pub = wp.published.find({a, b});
    rows.push_back(wilcoxon_row(a, b, f1, pub != wp.published.end() ? pub->second : "", methods));
  }
  add_holm(rows);
  Table t;
  t.id = id;
  t.title = title;
  t.columns = {"a", "b", "pairs",    "mean F1 a",  "mean F1 b", "Hodges-Lehmann a - b",
               "V", "p", "p (Holm)", "published p"};
  for (WilcoxonRow& r : rows) t.rows.push_back(std::move(r.cells));
  t.provenance = provenance_of(runs);
  add_note(t, "Two-sided Wilcoxon signed-rank test (R's wilcox.test; " +
                  (methods.empty()
                       ? std::string("none computed")
                       : join(std::vector<std::string>(methods.begin(), methods.end()), "; ")) +
                  ") of the test F1 (%) of two configurations' completed runs with the same seed; "
                  "V is the sum of the ranks of the positive differences a - b; Hodges-Lehmann is "
                  "the median of their Walsh averages; Holm's adjustment is over the rows of this "
                  "table. Published: thesis Table 4.7 (p-values only).");
  add_note(t, not_completed_note(runs));
  return t;
}

// ---- Table 4.10: CTD per class ----------------------------------------------------------

// Our CTD class name -> (pair type, relation) of Tables 4.9/4.10.
std::pair<std::string, std::string> ctd_class(const std::string& name) {
  static const std::map<std::string, std::string> chem_gene{
      {"increases_expression", "increase_expression"},
      {"increases_metabolic_processing", "increase_metabolic_proc"},
      {"decreases_expression", "decrease_expression"},
      {"increases_activity", "increase_activity"},
      {"affects_response_to_substance", "affects_response"},
      {"decreases_activity", "decrease_activity"},
      {"affects_transport", "affects_transport"},
      {"increases_reaction", "increase_reaction"},
      {"decreases_reaction", "decrease_reaction"},
      {"decreases_metabolic_processing", "decrease_metabolic_proc"}};
  auto strip = [&](const std::string& prefix, std::string& rest) {
    if (name.rfind(prefix, 0) != 0) return false;
    rest = name.substr(prefix.size());
    return true;
  };
  std::string rest;
  if (strip("chem_disease_", rest)) return {"chemical_disease", rest};
  if (strip("gene_disease_", rest)) return {"gene_disease", rest};
  if (strip("chem_gene_", rest)) {
    auto it = chem_gene.find(rest);
    return {"chemical_gene", it == chem_gene.end() ? rest : it->second};
  }
  return {"", name};
}

// Class names present under "<split>.relations.per_class." in the runs' values.
std::vector<std::string> classes_in(const std::vector<const RunRecord*>& runs,
                                    const std::string& prefix, const std::string& leaf) {
  std::set<std::string> s;
  for (const RunRecord* r : runs)
    for (const auto& [k, v] : r->values)
      if (k.rfind(prefix, 0) == 0 && k.size() > prefix.size() + leaf.size() &&
          k.compare(k.size() - leaf.size(), leaf.size(), leaf) == 0)
        s.insert(k.substr(prefix.size(), k.size() - prefix.size() - leaf.size()));
  return {s.begin(), s.end()};
}

// A published row's P, R and F1 (with F1's sd where the thesis prints one).
struct PublishedScores {
  std::string p, r, f1, f1_sd;
};

// A table of per-class scores (Tables 4.10, B.1, C.1): our runs grouped by model, one row
// for each class their result.json scores under `prefix`, ours P/R/F1 beside the
// published ones of the same model and class. A new table of this kind is a description:
// its runs, the classes' cells and order, and where a class's published scores are.
struct PerClass {
  std::string id, title;
  Runs runs;
  std::string missing;  // why it is not made when `runs` is empty
  std::string published_csv;
  std::vector<std::string> columns;
  std::string prefix;  // "<prefix><class>.f1" in the runs' values
  // the cells that name a class (after the model's)
  std::function<std::vector<std::string>(const std::string& cls)> class_cells;
  // the classes of one model in row order (default: by name)
  std::function<std::vector<std::string>(std::vector<std::string> classes, const std::vector<Row>&)>
      order;
  std::function<std::optional<PublishedScores>(const std::string& label, const std::string& cls,
                                               const std::vector<Row>& pub)>
      published;
  // a row after each model's classes (none when not given)
  std::function<std::vector<std::string>(const std::string& label, const Runs& rs)> after_model;
  std::vector<std::string> notes;
};

Table render(const PerClass& d, const ReportInputs&, const Paper& paper) {
  if (d.runs.empty()) return missing_table(d.id, d.title, d.missing);
  Groups g;
  for (const RunRecord* r : d.runs) g.add(model_label(*r), r);
  const std::vector<Row> pub = rows_of(paper.at(d.published_csv));
  Table t;
  t.id = d.id;
  t.title = d.title;
  t.columns = d.columns;
  for (const std::string& label : g.order) {
    const Runs& rs = g.runs[label];
    std::vector<std::string> classes = classes_in(rs, d.prefix, ".f1");
    if (d.order) classes = d.order(std::move(classes), pub);
    for (const std::string& cls : classes) {
      const std::string key = d.prefix + cls;
      const auto F = values_of(rs, key + ".f1", 100);
      std::vector<std::string> row{label};
      for (std::string& c : d.class_cells(cls)) row.push_back(std::move(c));
      row.push_back(mean_sd(values_of(rs, key + ".precision", 100), 1));
      row.push_back(mean_sd(values_of(rs, key + ".recall", 100), 1));
      row.push_back(mean_sd(F, 1));
      if (const auto p = d.published(label, cls, pub)) {
        row.push_back(printed(p->p));
        row.push_back(printed(p->r));
        row.push_back(printed(p->f1) + (p->f1_sd.empty() ? "" : " ± " + p->f1_sd));
        row.push_back(diff_mean(F, p->f1, 1));
      } else {
        row.insert(row.end(), 4, kNone);
      }
      t.rows.push_back(std::move(row));
    }
    if (d.after_model) t.rows.push_back(d.after_model(label, rs));
  }
  t.provenance = provenance_of(d.runs);
  for (const std::string& n : d.notes) add_note(t, n);
  add_note(t, not_completed_note(d.runs));
  return t;
}

// CTD class names in the published rows' order, then the others (by name).
std::vector<std::string> ctd_published_order(const std::vector<std::string>& names,
                                             const std::vector<Row>& pub) {
  std::vector<std::string> out;
  for (const Row& p : pub)
    for (const std::string& n : names)
      if (ctd_class(n) == std::make_pair(p.at("pair_type"), p.at("relation"))) out.push_back(n);
  for (const std::string& n : names)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

// The published row of a CTD class.
Row ctd_row(const std::vector<Row>& pub, const std::string& cls) {
  const auto [pair_type, relation] = ctd_class(cls);
  return last_row(pub, [&](const Row& r) {
    return r.at("pair_type") == pair_type && r.at("relation") == relation;
  });
}

Table table_410(const ReportInputs& in, const Paper& paper) {
  return render(
      PerClass{
          .id = "table4.10",
          .title = "Table 4.10: CTD relation extraction per class, test set (%)",
          .runs = runs_of(in, [](const RunRecord& r) { return in_table(r, {"4.10"}); }),
          .missing = "no CTD relation runs among the inputs (table \"4.10\", or runs on "
                     "synth-ctd/bran-tsv data)",
          .published_csv = "table_4_10_ctd_results.csv",
          .columns = {"model", "pair type", "relation", "ours P", "ours R", "ours F1",
                      "published P", "published R", "published F1", "F1 difference"},
          .prefix = "test.relations.per_class.",
          .class_cells =
              [](const std::string& cls) {
                const auto [pair_type, relation] = ctd_class(cls);
                return std::vector<std::string>{pair_type.empty() ? kNone : pair_type, relation};
              },
          // The published order, then the classes the thesis does not list (NULL excluded).
          .order =
              [](std::vector<std::string> classes, const std::vector<Row>& pub) {
                std::erase_if(classes, [](const std::string& c) { return lower(c) == "null"; });
                return ctd_published_order(classes, pub);
              },
          .published = [](const std::string& label, const std::string& cls,
                          const std::vector<Row>& pub) -> std::optional<PublishedScores> {
            const bool ntcre = label == "NTCRE-CPD";
            const Row p = ctd_row(pub, cls);
            if (p.empty() || !(ntcre || label == "BRAN")) return std::nullopt;
            if (ntcre) return PublishedScores{p.at("p"), p.at("r"), p.at("f1"), p.at("f1_sd")};
            return PublishedScores{p.at("bran_p"), p.at("bran_r"), p.at("bran_f1"), ""};
          },
          .after_model =
              [](const std::string& label, const Runs& rs) {
                return std::vector<std::string>{label,
                                                "all",
                                                "micro",
                                                mean_sd(values_of(rs, "test_precision", 100), 1),
                                                mean_sd(values_of(rs, "test_recall", 100), 1),
                                                mean_sd(values_of(rs, "test_f1", 100), 1),
                                                kNone,
                                                kNone,
                                                kNone,
                                                kNone};
              },
          .notes = {"Published: thesis Table 4.10, NTCRE-CPD (mean ± sd of 10 runs) and BRAN; "
                    "other models have no published row."}},
      in, paper);
}

// ---- Tables 4.12, 4.13: SemEval ---------------------------------------------------------

std::string subtask_of(const RunRecord& r) {
  const std::string s = param(r, "subtask");
  if (!s.empty()) return s;
  const std::string source = data_source(r);
  if (data_kind(r) == "semeval2018")  // semeval2018:S[+T][:DIR] scores subtask S
    return source.substr(source.find(':') + 1, 3);
  const std::string d = source + " " + r.cell;
  return d.find("1.2") != std::string::npos ? "1.2" : "1.1";
}

// Test macro F1 (%) of the runs of one SemEval subtask ("1.1" or "1.2"): the task's
// official score (test_f1) on the real corpus, the macro F1 over pairs elsewhere.
std::vector<double> subtask_f1(const Runs& rs, const std::string& subtask) {
  std::vector<double> out;
  for (const RunRecord* r : rs) {
    if (subtask_of(*r) != subtask) continue;
    const std::vector<double> v =
        values_of({r}, r->values.count("test.official.f1") ? "test_f1" : "test_macro_f1", 100);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

Table table_412(const ReportInputs& in, const Paper& paper) {
  return render(
      {.id = "table4.12",
       .title = "Table 4.12: SemEval 2018 Task 7, macro F1 (%) of subtasks 1.1 and 1.2",
       .tables = {"4.12"},
       .missing = "no SemEval relation runs among the inputs (table \"4.12\", or runs on "
                  "synth-semeval/semeval data)",
       .published_csv = "table_4_12_semeval_results.csv",
       .columns = {"model", "published 1.1", "ours 1.1", "difference", "published 1.2", "ours 1.2",
                   "difference"},
       .group = [](const RunRecord& r, const std::vector<Row>&) { return model_label(r); },
       .published_group = by_column("model"),
       .published_row =
           [](const Row& p, const Runs& rs) {
             std::vector<std::string> row{p.at("model")};
             add_beside(row, p.at("subtask_1_1"), subtask_f1(rs, "1.1"), p.at("subtask_1_1_sd"));
             add_beside(row, p.at("subtask_1_2"), subtask_f1(rs, "1.2"));
             return row;
           },
       .ours_only_row =
           [](const std::string& l, const Runs& rs) {
             return std::vector<std::string>{l + " (ours only)",
                                             kNone,
                                             mean_sd(subtask_f1(rs, "1.1"), 1),
                                             kNone,
                                             kNone,
                                             mean_sd(subtask_f1(rs, "1.2"), 1),
                                             kNone};
           },
       .note = "Ours: on semeval2018 the organisers' score on the official test keys (macro F1: "
               "harmonic mean of macro P and R, direction included), elsewhere the macro F1 over "
               "the relation classes of the test pairs; mean ± sd (completed runs); the subtask "
               "from the run's \"subtask\" parameter or its data (semeval2018:S[+T] scores S; "
               "a path naming 1.2, else 1.1).",
       .by_corpus = true},
      in, paper);
}

std::string init_of(const RunRecord& r) {
  for (const char* k : {"init", "embeddings", "embedding_init"}) {
    const std::string v = param(r, k);
    if (!v.empty()) return v;
  }
  std::string w = lower(param(r, "word2vec") + " " + r.cell);
  if (w.find("google") != std::string::npos) return "GoogleNews";
  if (w.find("nlpl") != std::string::npos) return "NLPL";
  if (w.find("acl") != std::string::npos || w.find("semeval") != std::string::npos)
    return "ACL+SemEval2018";
  if (param(r, "word2vec").empty()) return "random";
  return fs::path(param(r, "word2vec")).stem().string();
}

Table table_413(const ReportInputs& in, const Paper& paper) {
  return render(
      {.id = "table4.13",
       .title = "Table 4.13: SemEval macro F1 (%) by word-embedding initialisation",
       .tables = {"4.13"},
       .missing = "no runs of the table 4.13 sweep (embedding initialisations) among the inputs",
       .published_csv = "table_4_13_embedding_init.csv",
       .columns = {"model", "initialisation", "published 1.1", "ours 1.1", "difference",
                   "published 1.2", "ours 1.2", "difference"},
       .group = [](const RunRecord& r,
                   const std::vector<Row>&) { return model_label(r) + "\t" + init_of(r); },
       .published_group = [](const Row& p,
                             const Groups&) { return p.at("model") + "\t" + p.at("init"); },
       .published_row =
           [](const Row& p, const Runs& rs) {
             std::vector<std::string> row{p.at("model"), p.at("init")};
             add_beside(row, p.at("subtask_1_1"), subtask_f1(rs, "1.1"));
             add_beside(row, p.at("subtask_1_2"), subtask_f1(rs, "1.2"));
             return row;
           },
       .ours_only_row =
           [](const std::string& key, const Runs& rs) {
             const auto tab = key.find('\t');
             std::vector<std::string> row(8, kNone);  // ours only: 1.1 and 1.2
             row[0] = key.substr(0, tab) + " (ours only)";
             row[1] = key.substr(tab + 1);
             row[3] = mean_sd(subtask_f1(rs, "1.1"), 1);
             row[6] = mean_sd(subtask_f1(rs, "1.2"), 1);
             return row;
           },
       .note = "Initialisation from the run's \"init\" parameter, else its --word2vec file "
               "(none: random). The thesis prints NTCRE-CPD random 1.1 with a digit missing: "
               "left empty.",
       .by_corpus = true},
      in, paper);
}

// ---- Tables 4.14, 4.15: benchmark files ------------------------------------------------

// A table of benchmark files (Tables 4.14, 4.15): the rows of every `mare bench` JSON of
// one kind, beside the published times. A new table of this kind is a description: the
// benchmark kind, the fields a row must have, and one file's rows.
struct BenchRows {
  std::string id, title;
  std::string kind;  // BenchFile::kind: "allocation", "iteration", "gbench"
  std::string missing;
  std::string rows_key = "rows";   // the file's array of rows ("benchmarks": Google Benchmark)
  std::vector<std::string> needs;  // the fields every row must have
  std::vector<std::string> columns;
  // one file's rows (each checked to be an object with `needs`), given its device
  std::function<std::vector<std::vector<std::string>>(const json& rows, const std::string& device,
                                                      const Paper&)>
      rows;
  std::string note;
};

Table render(const BenchRows& d, const ReportInputs& in, const Paper& paper) {
  std::vector<const BenchFile*> files;
  for (const BenchFile& b : in.benchmarks)
    if (b.kind == d.kind) files.push_back(&b);
  if (files.empty()) return missing_table(d.id, d.title, d.missing);
  Table t;
  t.id = d.id;
  t.title = d.title;
  t.columns = d.columns;
  json prov = json::array();
  for (const BenchFile* f : files) {
    const json& rows = f->json.at(d.rows_key);
    if (!rows.is_array())
      throw InputError(f->path.string() + ": \"" + d.rows_key +
                       "\" must be an array of benchmark rows");
    for (const json& r : rows)
      if (!r.is_object() || !std::all_of(d.needs.begin(), d.needs.end(),
                                         [&](const std::string& k) { return r.contains(k); }))
        throw InputError(f->path.string() + ": an " + d.kind + " row needs " + listed(d.needs));
    // Google Benchmark keeps the device among its context's custom fields (bench_ops).
    const std::string device = d.kind == "gbench"
                                   ? f->json.at("context").value("mare_device", std::string("cpu"))
                                   : f->json.value("device", std::string("?"));
    for (auto& row : d.rows(rows, device, paper)) t.rows.push_back(std::move(row));
    prov.push_back(provenance_of(*f));
  }
  t.provenance = prov.size() == 1 ? prov[0] : json{{"benchmarks", prov}};
  add_note(t, d.note);
  return t;
}

Table table_414(const ReportInputs& in, const Paper& paper) {
  return render(
      BenchRows{
          .id = "table4.14",
          .title = "Table 4.14: allocation, seconds per 100 calls (forward), sorted vs parallel, "
                   "and speedup",
          .kind = "allocation",
          .missing = "no allocation benchmark among the inputs (`mare bench allocation --json "
                     "FILE`)",
          .needs = {"variant", "mem", "seq", "seconds"},
          .columns = {"device", "N", "sequence", "ours sorted", "ours parallel", "ours speedup",
                      "published sorted", "published parallel", "published speedup",
                      "speedup difference"},
          .rows =
              [](const json& rows, const std::string& device, const Paper& paper) {
                using Key = std::pair<int, int>;  // (memory size, sequence length)
                std::map<Key, double> pub_sorted, pub_parallel;
                for (const auto& p : rows_of(paper.at("table_4_14_allocation.csv"))) {
                  double v = 0;
                  if (!pub_number(p.at("seconds"), v)) continue;
                  const Key key{std::stoi(p.at("memory_size")), std::stoi(p.at("seq_len"))};
                  (p.at("mechanism") == "sorted" ? pub_sorted : pub_parallel)[key] = v;
                }
                std::map<Key, std::string> pub_speedup;
                for (const auto& p : rows_of(paper.at("table_4_14_speedup_printed.csv")))
                  pub_speedup[{std::stoi(p.at("memory_size")), std::stoi(p.at("seq_len"))}] =
                      p.at("speedup_printed");
                std::map<Key, double> sorted, parallel;
                for (const json& r : rows) {
                  if (r.value("pass", std::string("forward")) != "forward") continue;
                  const std::string v = r["variant"].get<std::string>();
                  const Key key{r["mem"].get<int>(), r["seq"].get<int>()};
                  if (v == "sorted") sorted[key] = r["seconds"].get<double>() * 100;
                  if (v == "parallel") parallel[key] = r["seconds"].get<double>() * 100;
                }
                std::set<Key> keys;
                for (const auto& [k, _] : sorted) keys.insert(k);
                for (const auto& [k, _] : parallel) keys.insert(k);
                std::vector<std::vector<std::string>> out;
                for (const Key& k : keys) {
                  const bool s = sorted.count(k), p = parallel.count(k);
                  std::string sp = kNone, d = kNone;
                  if (s && p && parallel[k] > 0) {
                    const double ratio = sorted[k] / parallel[k];
                    sp = format_fixed(ratio, 2);
                    double pv = 0;
                    if (pub_speedup.count(k) && pub_number(pub_speedup[k], pv))
                      d = signed_fixed(ratio - pv, 2);
                  }
                  out.push_back({device, std::to_string(k.first), std::to_string(k.second),
                                 s ? format_sig(sorted[k], 3) : kNone,
                                 p ? format_sig(parallel[k], 3) : kNone, sp,
                                 pub_sorted.count(k) ? format_fixed(pub_sorted[k], 2) : kNone,
                                 pub_parallel.count(k) ? format_fixed(pub_parallel[k], 2) : kNone,
                                 pub_speedup.count(k) ? pub_speedup[k] : kNone, d});
                }
                return out;
              },
          .note = "Ours: median seconds per call of the forward pass (`mare bench allocation`, "
                  "batch of memories as the JSON says) times 100; speedup = sorted / parallel. "
                  "Published: thesis Table 4.14, 100 repetitions in TensorFlow on a Tesla T4, "
                  "speedup as printed (not exactly the ratio of its printed times). Times on "
                  "different hardware are beside each other, not comparable; the speedup is."},
      in, paper);
}

// ---- Table 4.15: time per iteration -----------------------------------------------------

std::string dataset_of_shape(const std::string& shape) {
  const std::string s = lower(shape);
  if (s == "semeval") return "SemEval2018";
  if (s == "cdr") return "BioCreative";
  return shape;
}

// "mean ± sd" of a benchmark row's times: its "times_s", else its "mean_s" (and "sd_s").
std::string iteration_time(const json& r, const std::vector<double>& times) {
  if (!times.empty()) return mean_sd(times, 3);
  if (!r.contains("mean_s") || !r["mean_s"].is_number()) return kNone;
  return format_fixed(r["mean_s"].get<double>(), 3) +
         (r.contains("sd_s") && r["sd_s"].is_number()
              ? " ± " + format_fixed(r["sd_s"].get<double>(), 3)
              : "");
}

Table table_415(const ReportInputs& in, const Paper& paper) {
  return render(
      BenchRows{
          .id = "table4.15",
          .title = "Table 4.15: seconds per training iteration",
          .kind = "iteration",
          .missing = "no iteration benchmark among the inputs (`mare bench iteration --json "
                     "FILE`)",
          .needs = {"model", "shape"},
          .columns = {"device", "model", "dataset", "tokens", "batch", "d", "allocation",
                      "ours s/iteration", "published s/iteration", "difference", "ours NTCRE/UTRE",
                      "published NTCRE/UTRE"},
          .rows =
              [](const json& rows, const std::string& device, const Paper& paper) {
                std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>>
                    pub;
                for (const auto& p : rows_of(paper.at("table_4_15_iteration_time.csv")))
                  pub[{p.at("model"), p.at("dataset")}] = {p.at("mean_s"), p.at("sd_s")};
                auto pub_ratio = [&](const std::string& model, const std::string& dataset) {
                  if (model.rfind("NTCRE", 0) != 0) return kNone;
                  const std::string utre = "UTRE" + model.substr(5);
                  double a = 0, b = 0;
                  if (!pub.count({model, dataset}) || !pub.count({utre, dataset}) ||
                      !pub_number(pub[{model, dataset}].first, a) ||
                      !pub_number(pub[{utre, dataset}].first, b) || b == 0)
                    return kNone;
                  return format_fixed(a / b, 2);
                };
                std::vector<std::vector<std::string>> out;
                for (const json& r : rows) {
                  const std::string model = r["model"].get<std::string>();
                  const std::string dataset = dataset_of_shape(r["shape"].get<std::string>());
                  std::vector<double> times;
                  if (r.contains("times_s") && r["times_s"].is_array())
                    times = r["times_s"].get<std::vector<double>>();
                  const double mean =
                      !times.empty() ? stats::mean(times) : r.value("mean_s", std::nan(""));
                  std::string p = kNone, d = kNone;
                  if (pub.count({model, dataset})) {
                    const auto& [m, s] = pub[{model, dataset}];
                    p = m + (s.empty() ? "" : " ± " + s);
                    double pm = 0;
                    if (pub_number(m, pm) && std::isfinite(mean)) d = signed_fixed(mean - pm, 3);
                  }
                  auto text = [&](const char* k) {
                    if (!r.contains(k) || r[k].is_null()) return kNone;
                    return r[k].is_string() ? r[k].get<std::string>() : r[k].dump();
                  };
                  std::string ratio = kNone;
                  if (r.contains("ratio") && r["ratio"].is_number())
                    ratio = format_fixed(r["ratio"].get<double>(), 2);
                  out.push_back({device, model, dataset, text("tokens"), text("batch"), text("d"),
                                 text("alloc"), iteration_time(r, times), p, d, ratio,
                                 pub_ratio(model, dataset)});
                }
                return out;
              },
          .note = "Ours: `mare bench iteration`, mean ± sd (iterations) of one training "
                  "iteration (forward, loss, backward, update) at the JSON's size. Published: "
                  "thesis Table 4.15, V100, SemEval 96 tokens and BioCreative 398 tokens. "
                  "NTCRE/UTRE: the time of NTCRE-x over UTRE-x at the same shape."},
      in, paper);
}

// ---- Tables B.1, C.1: named-entity recognition ----------------------------------------

Table table_ner(const ReportInputs& in, const Paper& paper, const std::string& which) {
  const bool b1 = which == "B.1";
  auto with_ner = [&](std::initializer_list<const char*> tables) {
    return runs_of(in, [&](const RunRecord& r) {
      if (!in_table(r, tables)) return false;
      for (const auto& [k, v] : r.values)
        if (k.rfind("test.ner.per_type.", 0) == 0) return true;
      return false;
    });
  };
  // B.1 reports the models of Table 4.5; the ablation sweep's runs stand in without them.
  auto runs = b1 ? with_ner({"4.5", "B.1"}) : with_ner({"4.10", "C.1"});
  if (b1 && runs.empty()) runs = with_ner({"4.6"});
  return render(
      PerClass{
          .id = "table" + which,
          .title = "Table " + which + ": named-entity recognition on " + (b1 ? "CDR" : "CTD") +
                   ", test set (%)",
          .runs = runs,
          .missing = std::string("no ") + (b1 ? "CDR" : "CTD") +
                     " runs that trained NER among the inputs (result.json without test.ner: NER "
                     "is scored only when trained, +ner_prob > 0)",
          .published_csv = "ner_results_b1_c1.csv",
          .columns = {"model", "class", "ours P", "ours R", "ours F1", "published P", "published R",
                      "published F1", "F1 difference"},
          .prefix = "test.ner.per_type.",
          .class_cells = [](const std::string& cls) { return std::vector<std::string>{cls}; },
          .order = {},  // by name
          .published = [&](const std::string& label, const std::string& cls,
                           const std::vector<Row>& pub) -> std::optional<PublishedScores> {
            const Row p = last_row(pub, [&](const Row& r) {
              return r.at("table") == which && r.at("model") == label &&
                     lower(r.at("class")) == lower(cls);
            });
            if (p.empty()) return std::nullopt;
            return PublishedScores{p.at("p"), p.at("r"), p.at("f1"), p.at("f1_sd")};
          },
          .after_model = {},
          .notes = {std::string("Ours: span P/R/F1 per entity type on the test split. "
                                "Published: thesis Table ") +
                    which + (b1 ? "" : " (names no model; NTCRE-CPD inferred)") +
                    "; some of its F1 values are not 2PR/(P+R) of its P and R."}},
      in, paper);
}

// ---- Table 5.1: GRPU --------------------------------------------------------------------

std::string yes(const std::string& s) {
  const std::string v = lower(s);
  return (v == "true" || v == "1" || v == "on" || v == "yes") ? "1" : "0";
}

// A Table 5.1 row's key: model, batch, samples, curriculum (0/1), conditional (0/1).
std::string grpu_key(const std::vector<std::string>& parts) {
  return join(parts, "\t");
}

std::vector<std::string> grpu_parts(const std::string& key) {
  std::vector<std::string> parts;
  for (std::size_t a = 0;;) {
    const std::size_t b = key.find('\t', a);
    parts.push_back(key.substr(a, b - a));
    if (b == std::string::npos) return parts;
    a = b + 1;
  }
}

std::string grpu_group(const RunRecord& r, const std::vector<Row>&) {
  const std::string base = lower(parse_model(run_model(r)).base);
  const std::string model = base == "bigru"  ? "bidirectional GRU (reference)"
                            : base == "grpu" ? "GRPU"
                                             : run_model(r);
  return grpu_key({model, param(r, "batch"), param(r, "samples"), yes(param(r, "curriculum")),
                   param(r, "task") == "conditional" ? "1" : "0"});
}

// One row of Table 5.1: the key's label, our runs' MSE beside the published row's (p
// empty: a row of ours only).
std::vector<std::string> grpu_row(const std::string& key, const Row& p, const Runs& rs) {
  const std::vector<std::string> k = grpu_parts(key);
  std::string label = k[0] + ", batch " + k[1] + ", " + k[2] + " samples";
  if (k[3] == "1") label += ", curriculum";
  if (k[4] == "1") label += ", conditional";
  std::set<std::string> models, epochs;
  std::vector<double> per_epoch;
  int done = 0;
  for (const RunRecord* r : rs) {
    if (!completed(*r)) continue;
    ++done;
    models.insert(run_model(*r));
    if (r->values.count("epochs")) epochs.insert(format_shortest(r->values.at("epochs")));
  }
  for (const RunRecord* r : rs)
    if (r->timing.is_object() && r->timing.contains("seconds_per_epoch") &&
        r->timing["seconds_per_epoch"].is_array() && !r->timing["seconds_per_epoch"].empty())
      per_epoch.push_back(stats::mean(r->timing["seconds_per_epoch"].get<std::vector<double>>()));
  auto ratio = [](const std::vector<double>& x, const std::string& published) {
    double v = 0;
    if (x.empty() || !parse_double(published, v) || v == 0) return kNone;
    return format_sig(stats::median(x) / v, 3);
  };
  auto published = [&](const char* column) {
    return p.empty() ? kNone : (p.at(column).empty() ? "N/A" : p.at(column));
  };
  const auto tr = values_of(rs, "train_mse"), te = values_of(rs, "test_mse");
  auto listed = [](const std::set<std::string>& s) {
    return s.empty() ? kNone : join(std::vector<std::string>(s.begin(), s.end()), ", ");
  };
  return {label + (p.empty() ? " (ours only)" : ""),
          listed(models),
          std::to_string(done),
          listed(epochs),
          published("train_mse"),
          median_range(tr, 3),
          p.empty() ? kNone : ratio(tr, p.at("train_mse")),
          published("test_mse"),
          median_range(te, 3),
          p.empty() ? kNone : ratio(te, p.at("test_mse")),
          per_epoch.empty() ? kNone : format_fixed(stats::mean(per_epoch), 2)};
}

Table table_51(const ReportInputs& in, const Paper& paper) {
  auto key_of = [](const Row& p) {
    return grpu_key(
        {p.at("model"), p.at("batch"), p.at("samples"), p.at("curriculum"), p.at("conditional")});
  };
  return render(
      {.id = "table5.1",
       .title = "Table 5.1: GRPU on the addition problem and its variants, MSE after the last "
                "epoch",
       .tables = {"5.1"},
       .missing = "no GRPU/sequence runs among the inputs (table \"5.1\", or `mare train --model "
                  "grpu|bigru --task addition|conditional` runs)",
       .published_csv = "table_5_1_grpu.csv",
       .columns = {"row", "model", "runs", "epochs", "published train MSE",
                   "ours train MSE: median [min, max]", "train: ours / published",
                   "published test MSE", "ours test MSE: median [min, max]",
                   "test: ours / published", "measured s/epoch"},
       .group = grpu_group,
       .published_group = [&](const Row& p, const Groups&) { return key_of(p); },
       .published_row = [&](const Row& p, const Runs& rs) { return grpu_row(key_of(p), p, rs); },
       .ours_only_row = [](const std::string& key,
                           const Runs& rs) { return grpu_row(key, Row{}, rs); },
       .note = "Ours: train and test MSE after the last epoch of each completed run, median "
               "[min, max] over the runs (seeds); \"ours / published\" is the median over the "
               "published value. Published: dissertation Table 5.1, one run per row after 1000 "
               "epochs; its BiGRU value is quoted from the Minimal Gated Unit paper. s/epoch: "
               "mean over the runs of each run's mean wall time per epoch (timing.json), "
               "evaluation included; it depends on the machine and its load."},
      in, paper);
}

// ---- Tables 4.4, 4.9, 4.11: the corpora used -------------------------------------------

// The corpus a stats file describes ("synth-cdr", "pubtator", ...), lower case.
std::string corpus_kind(const CorpusStats& c) {
  for (const char* k : {"kind", "format", "corpus", "generator"})
    if (c.json.contains(k) && c.json[k].is_string()) return lower(c.json[k].get<std::string>());
  return "";
}

// splits as (name, object) in file order.
std::vector<std::pair<std::string, json>> splits_of(const CorpusStats& c) {
  std::vector<std::pair<std::string, json>> out;
  const json& s = c.json.at("splits");
  if (s.is_object()) {
    // "split_order" when given, else train, valid, test, train_ds first (JSON objects come
    // back sorted by name), then the others.
    std::vector<std::string> order{"train", "valid", "test", "train_ds"};
    if (c.json.contains("split_order") && c.json["split_order"].is_array()) {
      order.clear();
      for (const json& x : c.json["split_order"])
        if (x.is_string()) order.push_back(x.get<std::string>());
    }
    for (const std::string& k : order)
      if (s.contains(k)) out.emplace_back(k, s[k]);
    for (const auto& [k, v] : s.items())
      if (std::find(order.begin(), order.end(), k) == order.end()) out.emplace_back(k, v);
  } else {
    for (const json& v : s)
      if (v.is_object()) out.emplace_back(v.value("split", v.value("name", std::string("?"))), v);
  }
  return out;
}

// Relation counts of a split: {"relations": {class: n}} (or "relation_counts"/"classes"),
// a count being a number or an object with "count"/"pairs"/"examples".
std::map<std::string, double> relation_counts(const json& split, const std::string& where) {
  std::map<std::string, double> out;
  for (const char* k : {"relations", "relation_counts", "classes"}) {
    if (!split.contains(k) || !split[k].is_object()) continue;
    for (const auto& [name, v] : split[k].items()) {
      if (v.is_number()) {
        out[name] = v.get<double>();
      } else if (v.is_object()) {
        for (const char* c : {"count", "pairs", "examples"})
          if (v.contains(c) && v[c].is_number()) {
            out[name] = v[c].get<double>();
            break;
          }
      } else {
        throw InputError(where + ": relation count of '" + name + "' is not a number");
      }
    }
    return out;
  }
  return out;
}

double number_or_nan(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (j.contains(k) && j[k].is_number()) return j[k].get<double>();
  return std::nan("");
}

std::string count_text(double v) {
  return std::isfinite(v) ? format_shortest(v) : kNone;
}

// A table of the corpora the runs read (Tables 4.4, 4.9, 4.11): for each corpus statistics
// file of a matching kind, its rows beside the published counts. A new table of this kind
// is a description: which corpora, the published CSV, the columns, and one corpus's rows.
struct CorpusCounts {
  std::string id, title;
  std::vector<std::string> kinds;  // corpus kinds it shows (a substring of corpus_kind)
  std::string missing;             // why it is not made when no such corpus is there
  std::string published_csv;
  std::vector<std::string> columns;
  // the rows of one corpus, given the published rows
  std::function<std::vector<std::vector<std::string>>(const CorpusStats&, const std::vector<Row>&)>
      rows;
  std::string note;
};

Table render(const CorpusCounts& d, const ReportInputs& in, const Paper& paper) {
  std::vector<const CorpusStats*> cs;
  for (const CorpusStats& c : in.corpora) {
    const std::string k = corpus_kind(c);
    if (std::any_of(d.kinds.begin(), d.kinds.end(),
                    [&](const std::string& want) { return k.find(want) != std::string::npos; }))
      cs.push_back(&c);
  }
  if (cs.empty()) return missing_table(d.id, d.title, d.missing);
  const std::vector<Row> pub = rows_of(paper.at(d.published_csv));
  Table t;
  t.id = d.id;
  t.title = d.title;
  t.columns = d.columns;
  std::set<std::string> files, kinds;
  for (const CorpusStats* c : cs) {
    for (auto& row : d.rows(*c, pub)) t.rows.push_back(std::move(row));
    files.insert(c->path.string());
    kinds.insert(corpus_kind(*c));
  }
  t.provenance = {{"sources", sorted_list(files)}, {"corpora", sorted_list(kinds)}};
  add_note(t, d.note);
  return t;
}

// "where" for the errors about one split of a corpus statistics file.
std::string split_where(const CorpusStats& c, const std::string& split) {
  return c.path.string() + ": split " + split;
}

Table table_44(const ReportInputs& in, const Paper& paper) {
  return render(
      {.id = "table4.4",
       .title = "Table 4.4: CDR data used (documents and pairs)",
       .kinds = {"cdr", "pubtator"},
       .missing = "no statistics of a CDR corpus among the inputs (`mare data stats --json` of "
                  "synth-cdr or pubtator data)",
       .published_csv = "table_4_4_cdr_data.csv",
       .columns = {"corpus", "split", "documents", "positive pairs", "negative pairs",
                   "negative pairs as BRAN builds them", "published documents",
                   "published positive", "published negative"},
       .rows =
           [](const CorpusStats& c, const std::vector<Row>& pub) {
             std::vector<std::vector<std::string>> rows;
             for (const auto& [name, s] : splits_of(c)) {
               double pos = number_or_nan(s, {"positive", "positive_pairs"}),
                      neg = number_or_nan(s, {"negative", "negative_pairs"});
               const auto rel = relation_counts(s, split_where(c, name));
               if (!std::isfinite(pos) && !rel.empty()) {
                 pos = neg = 0;
                 for (const auto& [k, v] : rel) (lower(k) == "null" ? neg : pos) += v;
               }
               const std::string split = name == "train_ds" ? "ctd_extra_data" : name;
               const Row p = last_row(pub, [&](const Row& r) { return r.at("split") == split; });
               // cdr's stats: BRAN's pairs, which the thesis counted (corpus_stats.h).
               std::string bran = kNone;
               if (s.contains("table_4_4") && s["table_4_4"].is_object()) {
                 const json& t = s["table_4_4"];
                 bran = count_text(number_or_nan(t, {"unfiltered_negative"}) +
                                   number_or_nan(t, {"bran_unknown_id_pairs"}) -
                                   number_or_nan(t, {"hypernym_filtered"}));
               }
               rows.push_back({corpus_kind(c), name, count_text(number_or_nan(s, {"documents"})),
                               count_text(pos), count_text(neg), bran, cell(p, "documents"),
                               cell(p, "positive"), cell(p, "negative")});
             }
             return rows;
           },
       .note = "Ours: the corpus the runs read, from `mare data stats --json` (positive: pairs "
               "of a relation class, negative: NULL pairs; on cdr the hypernym filter on the "
               "training split only). As BRAN builds them (cdr): our NULL pairs before the filter, "
               "plus the pairs of BRAN's \"-1\" pseudo-entity, less the filter on every split. "
               "Published: BioCreative V CDR (thesis Table 4.4); train_ds (distant supervision) "
               "stands beside the thesis's CTD +Data row."},
      in, paper);
}

Table table_49(const ReportInputs& in, const Paper& paper) {
  return render(
      {.id = "table4.9",
       .title = "Table 4.9: CTD data used, pairs per class and split",
       .kinds = {"ctd", "bran-tsv"},
       .missing = "no statistics of a CTD corpus among the inputs (`mare data stats --json` of "
                  "synth-ctd or bran-tsv data)",
       .published_csv = "table_4_9_ctd_classes.csv",
       .columns = {"corpus", "pair type", "relation", "train", "valid", "test", "published train",
                   "published valid", "published test"},
       .rows =
           [](const CorpusStats& c, const std::vector<Row>& pub) {
             std::map<std::string, std::map<std::string, double>> counts;  // class -> split -> n
             for (const auto& [name, s] : splits_of(c))
               for (const auto& [cls, n] : relation_counts(s, split_where(c, name)))
                 counts[cls][name] = n;
             std::vector<std::string> names;
             for (const auto& [cls, _] : counts) names.push_back(cls);
             std::vector<std::vector<std::string>> rows;
             for (const std::string& cls : ctd_published_order(names, pub)) {
               const auto [pair_type, relation] = ctd_class(cls);
               const Row p = ctd_row(pub, cls);
               auto n = [&](const char* split) {
                 return counts[cls].count(split) ? format_shortest(counts[cls][split]) : kNone;
               };
               rows.push_back({corpus_kind(c), pair_type.empty() ? kNone : pair_type, relation,
                               n("train"), n("valid"), n("test"), cell(p, "train"),
                               cell(p, "valid"), cell(p, "test")});
             }
             return rows;
           },
       .note = "Ours: pairs per relation class and split of the corpus the runs read (`mare data "
               "stats --json`). Published: thesis Table 4.9 (CTD distant supervision; the NULL "
               "class not listed)."},
      in, paper);
}

Table table_411(const ReportInputs& in, const Paper& paper) {
  return render(
      {.id = "table4.11",
       .title = "Table 4.11: SemEval 2018 Task 7 data used, relations per class",
       .kinds = {"semeval", "semeval2018"},
       .missing = "no statistics of a SemEval corpus among the inputs (`mare data stats --json` "
                  "of synth-semeval or semeval data)",
       .published_csv = "table_4_11_semeval_classes.csv",
       .columns = {"corpus", "split", "relation", "ours", "ours left to right / REVERSE",
                   "published subtask 1.1", "published subtask 1.2",
                   "published Reversa Sim / Não (Sim: left to right)"},
       .rows =
           [](const CorpusStats& c, const std::vector<Row>& pub) {
             // SemEval's files write MODEL-FEATURE, the thesis MODEL_FEATURE.
             auto norm = [](std::string x) {
               std::replace(x.begin(), x.end(), '-', '_');
               return x;
             };
             auto published = [&](const std::string& r) {
               return last_row(pub, [&](const Row& p) { return p.at("relation") == norm(r); });
             };
             std::vector<std::vector<std::string>> rows;
             for (const auto& [name, s] : splits_of(c)) {
               const auto counts = relation_counts(s, split_where(c, name));
               std::vector<std::string> names;  // the published order, then the others
               for (const Row& p : pub)
                 for (const auto& [ours, _] : counts)
                   if (norm(ours) == p.at("relation")) names.push_back(ours);
               for (const auto& [r, _] : counts)
                 if (published(r).empty()) names.push_back(r);
               for (const std::string& r : names) {
                 // The thesis counts the training data: published values beside train only.
                 const Row p = name == "train" ? published(r) : Row{};
                 std::string rev = kNone;
                 if (s.contains("reverse") && s["reverse"].is_object() &&
                     s["reverse"].contains(r)) {
                   // The thesis's "Reversa: Sim" is left to right, the files' lines without
                   // the REVERSE flag (its USAGE 615 / 332 are the files' 619 / 334 less
                   // the abstracts 1.2 shares with 1.1): ours in that order, flag "no" first.
                   const json& x = s["reverse"][r];
                   rev = count_text(number_or_nan(x, {"no"})) + " / " +
                         count_text(number_or_nan(x, {"yes"}));
                 }
                 rows.push_back({corpus_kind(c), name, r, format_shortest(counts.at(r)), rev,
                                 printed_cell(p, "subtask_1_1"), printed_cell(p, "subtask_1_2"),
                                 p.empty() ? kNone
                                           : printed(p.at("reverse_yes")) + " / " +
                                                 printed(p.at("reverse_no"))});
               }
             }
             return rows;
           },
       .note = "Ours: relations per class and split of the corpus the runs read (`mare data "
               "stats --json`; the subtask is the corpus's; left to right: a line without the "
               "REVERSE flag). Published: thesis Table 4.11, the training data of subtasks 1.1 "
               "(clean) and 1.2 (noisy), beside our train split; its reverse column counts both "
               "subtasks together, with the six abstracts 1.2 shares with 1.1 once."},
      in, paper);
}

// ---- What each relation cell reaches ---------------------------------------------------

// The thesis's published test F1 (%) for a cell's model on the real corpus its runs read
// (CDR: Table 4.5, Gu et al. 2016's CNN for a cnn; SemEval 2018 subtask 1.1 or 1.2: Table
// 4.12), with the table's number; "" where the thesis has none.
std::string published_beside(const RunRecord& r, const Paper& paper, std::string* table) {
  const std::string family = corpus_family(r), label = model_label(r);
  if (family == "cdr") {
    const std::string row = label == "CNN" ? "CNN Gu et al. 2016" : published_45_row(label);
    const Row p = last_row(rows_of(paper.at("table_4_5_cdr_results.csv")),
                           [&](const Row& x) { return x.at("model") == row; });
    *table = "4.5";
    return p.empty() ? "" : p.at("f1");
  }
  if (family == "semeval2018") {
    const std::string column = subtask_of(r) == "1.2" ? "subtask_1_2" : "subtask_1_1";
    const Row p = last_row(rows_of(paper.at("table_4_12_semeval_results.csv")),
                           [&](const Row& x) { return x.at("model") == label; });
    *table = "4.12";
    return p.empty() ? "" : p.at(column);
  }
  return "";
}

using CeilingKey = std::tuple<std::string, std::string, std::string>;  // table, sweep, cell

// The relation cells of the ceiling table in its row order, and the runs of each.
struct CeilingCells {
  std::vector<CeilingKey> keys;
  std::map<CeilingKey, Runs> by;
};

CeilingCells ceiling_cells(const Runs& runs) {
  // A cell is a sweep's (two sweeps may name a cell alike, on other corpora): by table (in
  // the thesis's order; no table last), then sweep, then name (config2 before config10).
  CeilingCells cells;
  auto& keys = cells.keys;
  for (const RunRecord* r : runs) {
    const CeilingKey key{r->table, r->sweep, r->cell.empty() ? model_label(*r) : r->cell};
    if (!cells.by.count(key)) keys.push_back(key);
    cells.by[key].push_back(r);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const CeilingKey& a, const CeilingKey& b) {
    const auto& [ta, sa, ca] = a;
    const auto& [tb, sb, cb] = b;
    if (ta.empty() != tb.empty()) return tb.empty();
    if (ta != tb) return natural_less(ta, tb);
    if (sa != sb) return natural_less(sa, sb);
    return natural_less(ca, cb);
  });
  return cells;
}

// A cell's row: its scores beside the every-pair baseline, the oracle and the published value.
std::vector<std::string> ceiling_row(const CeilingKey& key, const Runs& rs, const Paper& paper) {
  const auto& [table, sweep, cell] = key;
  const auto test = values_of(rs, "test_f1", 100),
             oracle = values_of(rs, "test_references.oracle_f1", 100);
  const auto done = values_of(rs, "test_f1");
  std::string pub_table;
  const std::string pub = published_beside(*rs.front(), paper, &pub_table);
  double pub_value = 0;
  const bool has_pub = pub_number(pub, pub_value) && pub_value > 0;
  return {table.empty() ? kNone : table,
          sweep.empty() ? kNone : sweep,
          cell,
          corpus_cell(rs),
          std::to_string(done.size()),
          mean_sd(values_of(rs, "best_step"), 0),
          mean_sd(values_of(rs, "train_f1", 100), 1),
          mean_sd(values_of(rs, "valid_f1", 100), 1),
          mean_sd(test, 1),
          mean_sd(values_of(rs, "test_references.constant_positive_f1", 100), 1),
          mean_sd(oracle, 1),
          test.empty() || oracle.empty() || stats::mean(oracle) == 0
              ? kNone
              : format_fixed(stats::mean(test) / stats::mean(oracle), 2),
          has_pub ? pub + " (" + pub_table + ")" : kNone,
          test.empty() || !has_pub ? kNone : format_fixed(stats::mean(test) / pub_value, 2)};
}

// The note's list of the cells decided with a NULL margin, each with its margin and its
// test F1 by argmax; "" when there is none.
std::string null_margin_cells(const CeilingCells& cells) {
  std::string margins;
  for (const CeilingKey& key : cells.keys) {
    const auto& [table, sweep, cell] = key;
    const auto m = values_of(cells.by.at(key), "null_margin.margin"),
               argmax = values_of(cells.by.at(key), "null_margin.test_argmax_f1", 100);
    if (m.empty()) continue;
    margins += (margins.empty() ? "" : "; ") + cell + (sweep.empty() ? "" : " (" + sweep + ")") +
               ": margin " + mean_sd(m, 2) + ", test F1 " + mean_sd(argmax, 1) + " by argmax";
  }
  return margins;
}

// Not a thesis table: for every relation cell, its scores beside the references
// result.json holds for its test split (the every-pair baseline; the corpus's oracle on
// generated corpora) and, on the real corpora, the thesis's published value, so that a
// model that trained but did not learn shows as such.
Table table_ceiling(const ReportInputs& in, const Paper& paper) {
  const std::string id = "ceiling",
                    title =
                        "What each relation cell reaches: F1 (%) beside the every-pair "
                        "baseline, the corpus's oracle or the published value (test split)";
  const Runs runs = runs_of(in, relation_run);
  if (runs.empty())
    return missing_table(id, title,
                         "no relation runs among the inputs (result.json with test.relations)");
  const CeilingCells cells = ceiling_cells(runs);
  Table t;
  t.id = id;
  t.title = title;
  t.columns = {"table",
               "sweep",
               "cell",
               "corpus",
               "runs",
               "best step",
               "train F1",
               "valid F1",
               "test F1",
               "every-pair F1",
               "oracle F1",
               "test / oracle",
               "published F1 (thesis table)",
               "test / published"};
  for (const CeilingKey& key : cells.keys)
    t.rows.push_back(ceiling_row(key, cells.by.at(key), paper));
  t.provenance = provenance_of(runs);
  add_note(t,
           "Ours: F1 of the best-on-validation checkpoint on each split, mean ± sd over the "
           "cell's completed runs: the task's official score on the real corpora (CDR: "
           "document-level (PMID, chemical, disease) triples; SemEval 2018: the organisers' "
           "macro F1, direction included), micro F1 over the pairs on the others; train is the "
           "whole training split (— for runs from before result.json held it). Every-pair: "
           "predicting the most frequent relation class for every candidate pair of the test "
           "split, scored the same way. Oracle: the generator's rule, which reads the textual "
           "evidence that decided each relation (generated corpora: synth-cdr, and synth-ctd "
           "and synth-semeval folders with their generator.json; — for other corpora). "
           "Published: the thesis's test F1 for the model on that real corpus (Table 4.5, Gu et "
           "al. 2016's CNN for cnn; Table 4.12 for the subtask scored), at the thesis's size "
           "and budget, not ours. The thesis has no such table; it tells a model that learned "
           "from one that only trained.");
  // Cells decided with a NULL margin (result.json's null_margin: --null-margin M or tune).
  const std::string margins = null_margin_cells(cells);
  if (!margins.empty())
    add_note(t,
             "Decided with a NULL margin (`mare train --null-margin`: a relation only where its "
             "logit exceeds NULL's by more than the margin, chosen on validation or given); "
             "the F1 columns are with it. " +
                 margins + ".");
  add_note(t, not_completed_note(runs));
  return t;
}

std::string latex_row(const std::vector<std::string>& cells) {
  std::string s;
  for (std::size_t i = 0; i < cells.size(); ++i) s += (i ? " & " : "") + tex_escape(cells[i]);
  return s + " \\\\\n";
}

}  // namespace

// ---- public ---------------------------------------------------------------------------

const CsvTable& Paper::at(const std::string& file) const {
  auto it = files.find(file);
  if (it == files.end())
    throw InputError((fs::path(folder) / file).string() +
                     ": published table not found (expected the CSVs of reports/paper/ in that "
                     "folder)");
  return it->second;
}

Paper load_paper(const std::optional<fs::path>& dir) {
  Paper p;
  if (!dir) {
    for (const auto& [name, text] : embedded_paper_csvs())
      p.files[name] = parse_csv(text, "reports/paper/" + name);
    return p;
  }
  if (!fs::is_directory(*dir)) throw InputError(dir->string() + ": not a directory");
  p.folder = dir->string();
  for (const auto& e : fs::directory_iterator(*dir)) {
    if (e.path().extension() != ".csv") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    p.files[e.path().filename().string()] = parse_csv(ss.str(), e.path().string());
  }
  return p;
}

std::string model_label(const RunRecord& run) {
  const std::string name = run_model(run);
  const ModelParts m = parse_model(name);
  std::string label;
  if (m.base == "bran") {
    label = "BRAN";
  } else if (m.base == "cnn") {
    label = "CNN";
  } else if (utre_like(m)) {
    const bool ngram = flag_on(m, "ngram"), tr = flag_on(m, "transition"), cpd = flag_on(m, "cpd");
    const std::string up = m.base == "utre" ? "UTRE" : "NTCRE";
    if (ngram && tr)
      label = up + (cpd ? "-CPD" : "");
    else
      label = m.base + (ngram ? "+ngram" : "") + (tr ? "+transition" : "") + (cpd ? "+cpd" : "");
    auto alloc = m.switches.find("alloc");
    if (alloc != m.switches.end() && alloc->second != "sorted") label += " alloc=" + alloc->second;
  } else {
    label = name.empty() ? "?" : name;
  }
  if (extra_data(run)) label += " +Data";
  return label;
}

json provenance_of(const std::vector<const RunRecord*>& runs) {
  std::set<std::string> specs, profiles, devices, commits, dates, sources;
  std::set<int64_t> seeds;
  for (const RunRecord* r : runs) {
    if (r->run.is_object() && r->run.contains("spec") && r->run["spec"].is_string())
      specs.insert(r->run["spec"].get<std::string>());
    if (!r->profile.empty()) profiles.insert(r->profile);
    seeds.insert(r->seed);
    if (r->manifest.is_object()) {
      if (r->manifest.contains("device") && r->manifest["device"].is_string())
        devices.insert(r->manifest["device"].get<std::string>());
      if (r->manifest.contains("build") && r->manifest["build"].is_object() &&
          r->manifest["build"].contains("git_commit"))
        commits.insert(r->manifest["build"]["git_commit"].get<std::string>());
      const std::string d = manifest_date(r->manifest);
      dates.insert(d.empty() ? "not recorded" : d);
    } else {
      const std::string d = param(*r, "device");
      if (!d.empty()) devices.insert(d);
    }
    sources.insert(r->source.string());
  }
  json s = json::array();
  for (int64_t x : seeds) s.push_back(x);
  return {{"specs", sorted_list(specs)},
          {"profiles", sorted_list(profiles)},
          {"seeds", s},
          {"devices", sorted_list(devices)},
          {"commits", sorted_list(commits)},
          {"dates", sorted_list(dates)},
          {"sources", sorted_list(sources)},
          {"runs", runs.size()}};
}

json provenance_of(const BenchFile& b) {
  const json& j = b.json;
  std::string device, commit, date;
  if (b.kind == "gbench" && j.contains("context")) {
    date = j["context"].value("date", std::string());
    device = j["context"].value("host_name", std::string());
  } else {
    device = j.value("device", std::string());
    commit = j.value("mare_commit", std::string());
    date = j.value("date", std::string());
  }
  json p = {{"sources", json::array({b.path.string()})},
            {"devices", device.empty() ? json::array() : json::array({device})},
            {"commits", commit.empty() ? json::array() : json::array({commit})},
            {"dates", json::array({date.empty() ? std::string("not recorded") : date})}};
  if (b.run.is_object()) {
    p["specs"] = json::array({b.run.value("spec", std::string())});
    p["profiles"] = json::array({b.run.value("profile", std::string())});
    p["seeds"] = json::array({b.run.value("seed", 0)});
  }
  return p;
}

std::string provenance_line(const json& p) {
  if (p.is_object() && p.contains("benchmarks")) {
    std::vector<std::string> parts;
    for (const json& b : p["benchmarks"]) parts.push_back(provenance_line(b));
    return join(parts, " | ");
  }
  if (!p.is_object()) return "";
  auto list = [&](const char* key) {
    std::vector<std::string> v;
    if (p.contains(key))
      for (const json& x : p[key]) v.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return v;
  };
  std::vector<std::string> parts;
  const std::pair<const char*, const char*> fields[] = {
      {"specs", "spec"},     {"profiles", "profile"}, {"seeds", "seeds"},   {"devices", "device"},
      {"commits", "commit"}, {"dates", "date"},       {"corpora", "corpus"}};
  for (const auto& [key, name] : fields) {
    auto v = list(key);
    if (!v.empty()) parts.push_back(std::string(name) + " " + join(v, ", "));
  }
  if (p.contains("runs")) parts.push_back("runs " + std::to_string(p["runs"].get<int64_t>()));
  auto src = list("sources");
  if (!src.empty())
    parts.push_back("from " + (src.size() > 3
                                   ? src[0] + ", … (" + std::to_string(src.size()) + " places)"
                                   : join(src, ", ")));
  return join(parts, "; ");
}

// ---- ops: Google Benchmark output of kernels/bench/bench_ops ------------------------------

// Each op benchmark's time on 1 thread beside its time on the most threads it ran on, and
// the speedup (names "BM_Op/arg:v/threads:K"; iterations only, no aggregates).
Table table_ops(const ReportInputs& in, const Paper& paper) {
  return render(
      BenchRows{.id = "ops",
                .title = "Op benchmarks: milliseconds per call on 1 thread and on every thread",
                .kind = "gbench",
                .missing = "no Google Benchmark output among the inputs (`kernels/bench/bench_ops "
                           "--benchmark_out=FILE --benchmark_out_format=json`)",
                .rows_key = "benchmarks",
                .needs = {"name", "real_time", "time_unit"},
                .columns = {"device", "benchmark", "1 thread (ms)", "threads", "K threads (ms)",
                            "speedup"},
                .rows =
                    [](const json& rows, const std::string& device, const Paper&) {
                      static const std::map<std::string, double> kMs = {
                          {"ns", 1e-6}, {"us", 1e-3}, {"ms", 1.0}, {"s", 1e3}};
                      std::map<std::string, std::map<int, double>> times;  // name -> threads -> ms
                      std::vector<std::string> order;
                      for (const json& b : rows) {
                        if (b.value("run_type", std::string("iteration")) != "iteration") continue;
                        std::string name = b["name"].get<std::string>();
                        int k = 1;
                        if (const auto at = name.rfind("/threads:"); at != std::string::npos) {
                          k = std::stoi(name.substr(at + 9));
                          name.erase(at);
                        }
                        const auto unit = kMs.find(b["time_unit"].get<std::string>());
                        if (unit == kMs.end() || !b["real_time"].is_number()) continue;
                        if (!times.count(name)) order.push_back(name);
                        times[name][k] = b["real_time"].get<double>() * unit->second;
                      }
                      std::vector<std::vector<std::string>> out;
                      for (const std::string& name : order) {
                        const std::map<int, double>& t = times[name];
                        const auto one = t.find(1);
                        const auto most = std::prev(t.end());
                        const bool both = one != t.end() && most->first > 1;
                        out.push_back(
                            {device, name, one != t.end() ? format_sig(one->second, 3) : kNone,
                             both ? std::to_string(most->first) : kNone,
                             both ? format_sig(most->second, 3) : kNone,
                             both && most->second > 0 ? format_fixed(one->second / most->second, 2)
                                                      : kNone});
                      }
                      return out;
                    },
                .note = "Google Benchmark's real time per iteration of each op benchmark "
                        "(kernels/bench/bench_ops), on 1 thread and on the most threads it ran "
                        "on; speedup = the 1-thread time / that time. Not a thesis table: the "
                        "kernels' own measurement."},
      in, paper);
}

std::vector<Table> build_tables(const ReportInputs& in, const Paper& paper) {
  return {table_44(in, paper),         table_45(in, paper),  table_46(in, paper),
          table_47(in, paper),         table_49(in, paper),  table_410(in, paper),
          table_411(in, paper),        table_412(in, paper), table_413(in, paper),
          table_414(in, paper),        table_415(in, paper), table_ner(in, paper, "B.1"),
          table_ner(in, paper, "C.1"), table_51(in, paper),  table_ops(in, paper),
          table_ceiling(in, paper)};
}

std::string table_markdown(const Table& t) {
  std::string s = "## " + t.title + "\n\n";
  if (!t.missing.empty()) return s + "Not made: " + t.missing + "\n";
  s += "|";
  for (const std::string& c : t.columns) s += " " + md_cell(c) + " |";
  s += "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) s += " --- |";
  s += "\n";
  for (const auto& row : t.rows) {
    s += "|";
    for (const std::string& c : row) s += " " + md_cell(c) + " |";
    s += "\n";
  }
  for (const std::string& n : t.notes) s += "\n" + n + "\n";
  const std::string prov = provenance_line(t.provenance);
  if (!prov.empty()) s += "\nProvenance: " + prov + "\n";
  return s;
}

std::string table_csv(const Table& t) {
  std::string s;
  for (std::size_t i = 0; i < t.columns.size(); ++i) s += (i ? "," : "") + csv_field(t.columns[i]);
  s += "\n";
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) s += (i ? "," : "") + csv_field(row[i]);
    s += "\n";
  }
  return s;
}

std::string table_latex(const Table& t) {
  std::string s = "% " + t.id + ", written by `mare report`; needs \\usepackage{booktabs}\n";
  s += "\\begin{table}[htbp]\n\\centering\n\\small\n";
  s += "\\caption{" + tex_escape(t.title) + "}\n";
  s += "\\label{tab:" + t.id + "}\n";
  s += "\\begin{tabular}{" + std::string(t.columns.size(), 'l') + "}\n\\toprule\n";
  s += latex_row(t.columns) + "\\midrule\n";
  for (const auto& row : t.rows) s += latex_row(row);
  s += "\\bottomrule\n\\end{tabular}\n";
  for (const std::string& n : t.notes)
    s += "\n\\par\\smallskip\\footnotesize " + tex_escape(n) + "\n";
  s += "\\end{table}\n";
  return s;
}

std::string table_html(const Table& t) {
  std::string s = "<table>\n<caption>" + html_escape(t.title) + "</caption>\n<thead><tr>";
  for (const std::string& c : t.columns) s += "<th>" + html_escape(c) + "</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (const std::string& c : row) s += "<td>" + html_escape(c) + "</td>";
    s += "</tr>\n";
  }
  s += "</tbody>\n</table>\n";
  return s;
}

Artifact write_table(const Table& t, const fs::path& dir) {
  Artifact a;
  a.id = t.id;
  a.title = t.title;
  a.missing = t.missing;
  a.provenance = t.provenance;
  if (!t.missing.empty()) return a;
  const fs::path rel = fs::path("tables");
  write_file_atomic(dir / rel / (t.id + ".md"), table_markdown(t));
  write_file_atomic(dir / rel / (t.id + ".csv"), table_csv(t));
  write_file_atomic(dir / rel / (t.id + ".tex"), table_latex(t));
  a.files = {rel / (t.id + ".md"), rel / (t.id + ".csv"), rel / (t.id + ".tex")};
  return a;
}

}  // namespace mare::report
