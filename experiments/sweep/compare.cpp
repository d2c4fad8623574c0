#include "experiments/sweep/compare.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "experiments/run_dir.h"
#include "stats/descriptive.h"
#include "stats/io.h"

namespace fs = std::filesystem;

namespace mare::sweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::set<std::string>& collect_fixed() {
  static const std::set<std::string> s{"sweep", "table", "profile", "cell",
                                       "seed",  "id",    "status",  "dir"};
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

int require_column(const CsvTable& t, const std::string& name) {
  const int c = t.column(name);
  if (c < 0)
    throw CompareError(t.source + ": no '" + name +
                       "' column (expected a table written by mare collect)");
  return c;
}

// Mean and sd of the values of a cell (by seed order); NaN where undefined.
void summarise(CellSample& c) {
  std::vector<double> v;
  for (const auto& kv : c.values) v.push_back(kv.second);
  c.mean = v.empty() ? kNaN : stats::mean(v);
  c.sd = v.size() < 2 ? kNaN : stats::sd(v);
}

std::vector<double> sample(const CellSample& c) {
  std::vector<double> v;
  for (const auto& kv : c.values) v.push_back(kv.second);
  return v;
}

Comparison compare_pair(const CellSample& a, const CellSample& b, const CompareOptions& o) {
  Comparison r;
  r.a = a.cell;
  r.b = b.cell;
  r.n_a = static_cast<int>(a.values.size());
  r.n_b = static_cast<int>(b.values.size());
  r.mean_a = a.mean;
  r.sd_a = a.sd;
  r.mean_b = b.mean;
  r.sd_b = b.sd;
  stats::TestOptions t;
  t.alternative = o.alternative;
  t.conf_level = o.conf_level;
  std::vector<double> x, y;
  for (const auto& [seed, v] : a.values) {
    auto it = b.values.find(seed);
    if (it == b.values.end()) continue;
    x.push_back(v);
    y.push_back(it->second);
  }
  r.n_paired = static_cast<int>(x.size());
  r.dropped = (a.runs - r.n_paired) + (b.runs - r.n_paired);
  if (x.empty()) {
    r.notes.push_back("signed-rank: no seed with a completed run in both cells");
  } else {
    try {
      r.signed_rank = stats::signed_rank_test(x, y, t);
      for (const std::string& w : r.signed_rank->warnings) r.notes.push_back("signed-rank: " + w);
    } catch (const std::logic_error& e) {
      r.notes.push_back(std::string("signed-rank: ") + e.what());
    }
  }
  const std::vector<double> sa = sample(a), sb = sample(b);
  try {
    r.rank_sum = stats::rank_sum_test(sa, sb, t);
    for (const std::string& w : r.rank_sum->warnings) r.notes.push_back("rank-sum: " + w);
  } catch (const std::logic_error& e) {
    r.notes.push_back(std::string("rank-sum: ") + e.what());
  }
  r.vargha_delaney_a = stats::vargha_delaney_a(sa, sb);
  return r;
}

// Holm over the comparisons that have the test; NaN for the others.
void apply_holm(std::vector<Comparison>& cs) {
  for (int which = 0; which < 2; ++which) {
    std::vector<double> p;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const auto& t = which == 0 ? cs[i].signed_rank : cs[i].rank_sum;
      (which == 0 ? cs[i].p_signed_rank_holm : cs[i].p_rank_sum_holm) = kNaN;
      if (t && std::isfinite(t->p_value)) {
        p.push_back(t->p_value);
        at.push_back(i);
      }
    }
    const std::vector<double> adj = stats::holm(p);
    for (std::size_t k = 0; k < at.size(); ++k)
      (which == 0 ? cs[at[k]].p_signed_rank_holm : cs[at[k]].p_rank_sum_holm) = adj[k];
  }
}

std::string fmt(double v, const char* f = "%.4g") {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pm(double mean, double sd) {
  return fmt(mean) + " ± " + fmt(sd);
}

// Markdown cell text: '|' would end the cell.
std::string md(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

std::string csv_value(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return csv_number(v);
}

nlohmann::json jnum(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string group_title(const CompareGroup& g) {
  std::string t = g.sweep.empty() ? "(no sweep)" : g.sweep;
  if (!g.table.empty()) t += " (Table " + g.table + ")";
  return t;
}

}  // namespace

// Edit distance (insertions, deletions, substitutions), for suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// What a table's metric columns are, in a line a reader can act on: the closest
// names to the one asked for, the short aliases, and how many there are in all
// (a collect CSV has ~150: listing every one made a single unreadable line).
std::string describe_metrics(const std::vector<std::string>& metrics, const std::string& asked) {
  if (metrics.empty()) return "the table has no metric columns";
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const std::string& m : metrics) {
    const std::size_t d = edit_distance(asked, m);
    const bool contains = !asked.empty() && m.find(asked) != std::string::npos;
    if (contains || d <= std::max<std::size_t>(3, asked.size() / 3))
      near.emplace_back(contains ? 0 : d, m);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> closest, aliases;
  for (std::size_t k = 0; k < near.size() && k < 5; ++k) closest.push_back(near[k].second);
  for (const std::string& m : metrics)
    if (m.find('.') == std::string::npos) aliases.push_back(m);
  std::string s;
  if (!closest.empty()) s += "closest: " + join(closest, ", ") + "; ";
  if (!aliases.empty()) s += "short names: " + join(aliases, ", ") + "; ";
  return s + std::to_string(metrics.size()) +
         " metric columns in all (the CSV's header line lists them)";
}

namespace {

// The columns compare reads, each required; the metric must be one of the table's metric
// columns (not a fixed column or a parameter).
struct CompareColumns {
  int sweep, table, cell, seed, status, metric, profile;
};

CompareColumns compare_columns(const CsvTable& t, const CompareOptions& o) {
  if (o.metric.empty()) throw CompareError("--metric: expected a metric column name");
  if (!(o.conf_level > 0 && o.conf_level < 1))
    throw CompareError("--conf-level: expected a number strictly between 0 and 1");
  CompareColumns c{};
  c.sweep = require_column(t, "sweep");
  c.table = require_column(t, "table");
  c.cell = require_column(t, "cell");
  c.seed = require_column(t, "seed");
  c.status = require_column(t, "status");
  c.metric = t.column(o.metric);
  if (c.metric < 0 || collect_fixed().count(o.metric) || o.metric.rfind("param.", 0) == 0) {
    std::vector<std::string> metrics;
    for (const std::string& h : t.header)
      if (!collect_fixed().count(h) && h.rfind("param.", 0) != 0) metrics.push_back(h);
    throw CompareError(t.source + ": no metric column '" + o.metric + "'; " +
                       describe_metrics(metrics, o.metric));
  }
  c.profile = t.column("profile");
  return c;
}

// The table's rows as samples: groups (sweep, table) and their cells in order of first
// appearance, each cell's metric value per seed of its completed runs, and what was left
// out and why.
struct Samples {
  std::vector<CompareGroup> groups;
  std::set<std::string> all_cells;
  std::map<std::string, int> excluded_total;
  int used = 0;
};

Samples read_samples(const CsvTable& t, const CompareOptions& o, const CompareColumns& c) {
  Samples out;
  std::map<std::pair<std::string, std::string>, std::size_t> group_index;
  std::map<std::tuple<std::size_t, std::string>, std::size_t> cell_index;
  // The CSV line of each kept seed.
  std::map<std::tuple<std::size_t, std::size_t, int64_t>, std::size_t> seed_row;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::string where = t.source + ":" + std::to_string(t.lines[r]);
    const auto gkey = std::make_pair(row[c.sweep], row[c.table]);
    auto [git, gnew] = group_index.emplace(gkey, out.groups.size());
    if (gnew) out.groups.push_back(CompareGroup{row[c.sweep], row[c.table], {}, {}});
    CompareGroup& g = out.groups[git->second];
    auto [cit, cnew] =
        cell_index.emplace(std::make_tuple(git->second, row[c.cell]), g.cells.size());
    if (cnew) g.cells.push_back(CellSample{row[c.cell], 0, {}, {}, 0, 0});
    out.all_cells.insert(row[c.cell]);
    CellSample& cell = g.cells[cit->second];
    ++cell.runs;
    const std::string& status = row[c.status];
    if (status != "completed") {
      ++cell.excluded[status.empty() ? "no status" : status];
      ++out.excluded_total[status.empty() ? "no status" : status];
      continue;
    }
    if (row[c.metric].empty()) {
      ++cell.excluded["no value"];
      ++out.excluded_total["no value"];
      continue;
    }
    double seed_value = 0, value = 0;
    std::string why;
    if (!stats::parse_number(row[c.seed], seed_value, why) || seed_value != std::floor(seed_value))
      throw CompareError(where + ": column seed: expected an integer, got '" + row[c.seed] + "'");
    if (!stats::parse_number(row[c.metric], value, why))
      throw CompareError(where + ": column " + o.metric + ": expected a number, got '" +
                         row[c.metric] + "' (" + why + ")");
    const auto seed = static_cast<int64_t>(seed_value);
    auto [sit, snew] = seed_row.emplace(std::make_tuple(git->second, cit->second, seed), r);
    if (!snew) {
      std::string hint;
      // Two profiles of one sweep in one table is the likely cause: say so.
      if (c.profile >= 0 && t.rows[sit->second][c.profile] != row[c.profile])
        hint = " (profiles " + t.rows[sit->second][c.profile] + " and " + row[c.profile] +
               ": compare one profile at a time)";
      throw CompareError(where + ": cell " + cell.cell + " has a second completed run of seed " +
                         std::to_string(seed) + " (the first is on line " +
                         std::to_string(t.lines[sit->second]) +
                         "); pairing by seed needs one run per seed" + hint);
    }
    cell.values[seed] = value;
    ++out.used;
  }
  return out;
}

// Refuses samples nothing can be compared in (no value, or one value in all), and a
// baseline that names no cell.
void require_comparable(const Samples& s, const CsvTable& t, const CompareOptions& o) {
  if (s.used == 0) {
    std::vector<std::string> why;
    for (const auto& [status, n] : s.excluded_total)
      why.push_back(std::to_string(n) + " " + status);
    throw CompareError(t.source + ": no completed run with a value of " + o.metric + " (" +
                       (why.empty() ? std::string("no rows") : join(why, ", ")) + ")");
  }
  if (s.used == 1) {
    for (const CompareGroup& g : s.groups)
      for (const CellSample& c : g.cells)
        if (!c.values.empty())
          throw CompareError(t.source + ": one completed run with a value of " + o.metric +
                             " (cell " + c.cell + ", seed " +
                             std::to_string(c.values.begin()->first) +
                             "): a comparison needs two cells with runs of the same seeds");
  }
  if (!o.baseline.empty() && !s.all_cells.count(o.baseline)) {
    throw CompareError(
        "--baseline: no cell '" + o.baseline + "' in " + t.source + " (cells: " +
        join(std::vector<std::string>(s.all_cells.begin(), s.all_cells.end()), ", ") + ")");
  }
}

// One group's comparisons (each cell against the baseline, or every pair of cells), Holm
// over the group; a cell or baseline without values is named in a warning.
void compare_group(CompareGroup& g, const CompareOptions& o, std::vector<std::string>& warnings) {
  for (CellSample& c : g.cells) {
    summarise(c);
    if (c.values.empty())
      warnings.push_back(group_title(g) + ": cell " + c.cell + " has no completed run with " +
                         o.metric + "; left out of the comparisons");
  }
  if (!o.baseline.empty()) {
    const CellSample* base = nullptr;
    for (const CellSample& c : g.cells)
      if (c.cell == o.baseline) base = &c;
    if (base == nullptr || base->values.empty()) {
      warnings.push_back(group_title(g) + ": no completed run of the baseline " + o.baseline +
                         "; group skipped");
      return;
    }
    for (const CellSample& c : g.cells)
      if (&c != base && !c.values.empty()) g.comparisons.push_back(compare_pair(c, *base, o));
  } else {
    for (std::size_t i = 0; i < g.cells.size(); ++i)
      for (std::size_t j = i + 1; j < g.cells.size(); ++j)
        if (!g.cells[i].values.empty() && !g.cells[j].values.empty())
          g.comparisons.push_back(compare_pair(g.cells[i], g.cells[j], o));
  }
  apply_holm(g.comparisons);
}

}  // namespace

CompareReport compare_cells(const CsvTable& t, const CompareOptions& o) {
  CompareReport rep;
  rep.source = t.source;
  rep.options = o;
  const CompareColumns columns = compare_columns(t, o);
  Samples samples = read_samples(t, o, columns);
  require_comparable(samples, t, o);
  for (CompareGroup& g : samples.groups) compare_group(g, o, rep.warnings);
  rep.groups = std::move(samples.groups);
  return rep;
}

std::string compare_markdown(const CompareReport& rep) {
  const CompareOptions& o = rep.options;
  const std::string level = fmt(100 * o.conf_level, "%.6g") + "%";
  std::string s;
  for (const CompareGroup& g : rep.groups) {
    s += "## " + md(group_title(g)) + ": " + md(o.metric) + ", " + stats::to_string(o.alternative) +
         "\n\n";
    s += "| a | b | p | p (Holm) | n | dropped | a: mean ± sd | b: mean ± sd | V | HL a − b [" +
         level + " CI] | rank-sum p | rank-sum p (Holm) | A |\n";
    s += "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const Comparison& c : g.comparisons) {
      const auto& sr = c.signed_rank;
      const auto& rs = c.rank_sum;
      std::string hl = "–";
      if (sr && std::isfinite(sr->estimate))
        hl = fmt(sr->estimate) + " [" + fmt(sr->conf_int[0]) + ", " + fmt(sr->conf_int[1]) + "]";
      // R lowers the level when few pairs cannot reach it: say which level the bounds have.
      if (sr && std::isfinite(sr->estimate) && std::fabs(sr->conf_level - o.conf_level) > 1e-9)
        hl += " at " + fmt(100 * sr->conf_level, "%.3g") + "%";
      s += "| " + md(c.a) + " | " + md(c.b) + " | " + fmt(sr ? sr->p_value : kNaN) + " | " +
           fmt(c.p_signed_rank_holm) + " | " + std::to_string(c.n_paired) + " | " +
           std::to_string(c.dropped) + " | " + pm(c.mean_a, c.sd_a) + " (" + std::to_string(c.n_a) +
           ") | " + pm(c.mean_b, c.sd_b) + " (" + std::to_string(c.n_b) + ") | " +
           fmt(sr ? sr->statistic : kNaN, "%.6g") + " | " + hl + " | " +
           fmt(rs ? rs->p_value : kNaN) + " | " + fmt(c.p_rank_sum_holm) + " | " +
           fmt(c.vargha_delaney_a, "%.3f") + " |\n";
    }
    if (g.comparisons.empty()) {
      std::vector<std::string> with;
      for (const CellSample& c : g.cells)
        if (!c.values.empty()) with.push_back(c.cell);
      s += with.size() == 1 ? "\n(one cell, " + md(with[0]) +
                                  ", has completed runs: nothing to compare it with)\n"
                            : "\n(no pair of cells with completed runs)\n";
    }
    s +=
        "\np: Wilcoxon signed-rank test of a − b paired by seed (n seeds with a completed run in "
        "both cells); Holm over the " +
        std::to_string(g.comparisons.size()) +
        " pairs of this table; dropped: runs of a and b outside the paired test; mean ± sd "
        "(runs) over each cell's completed runs; V: signed-rank statistic; HL: Hodges–Lehmann "
        "estimate of a − b with its confidence interval (at the achievable level where fewer pairs "
        "cannot reach the requested one); rank-sum: Mann–Whitney test over all "
        "completed runs; A: Vargha–Delaney A = P(a > b) + ½ P(a = b).\n";
    std::vector<std::string> notes;
    for (const CellSample& c : g.cells) {
      if (c.excluded.empty()) continue;
      std::vector<std::string> parts;
      for (const auto& [status, n] : c.excluded) parts.push_back(std::to_string(n) + " " + status);
      notes.push_back(c.cell + ": left out " + join(parts, ", "));
    }
    for (const Comparison& c : g.comparisons)
      for (const std::string& n : c.notes) notes.push_back(c.a + " vs " + c.b + ": " + n);
    if (!notes.empty()) {
      s += "\nNotes:\n\n";
      for (const std::string& n : notes) s += "- " + md(n) + "\n";
    }
    s += "\n";
  }
  for (const std::string& w : rep.warnings) s += "Warning: " + md(w) + "\n\n";
  return s;
}

std::string compare_csv(const CompareReport& rep) {
  std::string s = csv_record({"sweep",
                              "table",
                              "metric",
                              "alternative",
                              "a",
                              "b",
                              "n_a",
                              "n_b",
                              "n_paired",
                              "dropped",
                              "mean_a",
                              "sd_a",
                              "mean_b",
                              "sd_b",
                              "V",
                              "p",
                              "p_holm",
                              "signed_rank_method",
                              "hl_estimate",
                              "hl_ci_low",
                              "hl_ci_high",
                              "conf_level",
                              "W",
                              "p_rank_sum",
                              "p_rank_sum_holm",
                              "rank_sum_method",
                              "rank_sum_estimate",
                              "vargha_delaney_a",
                              "notes"});
  for (const CompareGroup& g : rep.groups) {
    for (const Comparison& c : g.comparisons) {
      const auto& sr = c.signed_rank;
      const auto& rs = c.rank_sum;
      s += csv_record({g.sweep,
                       g.table,
                       rep.options.metric,
                       stats::to_string(rep.options.alternative),
                       c.a,
                       c.b,
                       std::to_string(c.n_a),
                       std::to_string(c.n_b),
                       std::to_string(c.n_paired),
                       std::to_string(c.dropped),
                       csv_value(c.mean_a),
                       csv_value(c.sd_a),
                       csv_value(c.mean_b),
                       csv_value(c.sd_b),
                       sr ? csv_value(sr->statistic) : "",
                       sr ? csv_value(sr->p_value) : "",
                       csv_value(c.p_signed_rank_holm),
                       sr ? stats::to_string(sr->method) : "",
                       sr ? csv_value(sr->estimate) : "",
                       sr ? csv_value(sr->conf_int[0]) : "",
                       sr ? csv_value(sr->conf_int[1]) : "",
                       sr ? csv_value(sr->conf_level) : "",
                       rs ? csv_value(rs->statistic) : "",
                       rs ? csv_value(rs->p_value) : "",
                       csv_value(c.p_rank_sum_holm),
                       rs ? stats::to_string(rs->method) : "",
                       rs ? csv_value(rs->estimate) : "",
                       csv_value(c.vargha_delaney_a),
                       join(c.notes, "; ")});
    }
  }
  return s;
}

nlohmann::json compare_json(const CompareReport& rep) {
  auto test_json = [](const std::optional<stats::TestResult>& t, double holm) {
    if (!t) return nlohmann::json(nullptr);
    return nlohmann::json{{"statistic", jnum(t->statistic)},
                          {"p_value", jnum(t->p_value)},
                          {"p_holm", jnum(holm)},
                          {"method", stats::to_string(t->method)},
                          {"correct", t->correct},
                          {"estimate", jnum(t->estimate)},
                          {"conf_int", {jnum(t->conf_int[0]), jnum(t->conf_int[1])}},
                          {"conf_level", jnum(t->conf_level)},
                          {"warnings", t->warnings}};
  };
  nlohmann::json j;
  j["source"] = rep.source;
  j["metric"] = rep.options.metric;
  j["alternative"] = stats::to_string(rep.options.alternative);
  j["baseline"] =
      rep.options.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(rep.options.baseline);
  j["conf_level"] = rep.options.conf_level;
  j["groups"] = nlohmann::json::array();
  for (const CompareGroup& g : rep.groups) {
    nlohmann::json gj{{"sweep", g.sweep}, {"table", g.table}};
    gj["cells"] = nlohmann::json::array();
    for (const CellSample& c : g.cells) {
      nlohmann::json seeds = nlohmann::json::array(), values = nlohmann::json::array();
      for (const auto& [seed, v] : c.values) {
        seeds.push_back(seed);
        values.push_back(v);
      }
      gj["cells"].push_back({{"cell", c.cell},
                             {"runs", c.runs},
                             {"n", c.values.size()},
                             {"seeds", seeds},
                             {"values", values},
                             {"mean", jnum(c.mean)},
                             {"sd", jnum(c.sd)},
                             {"excluded", c.excluded}});
    }
    gj["comparisons"] = nlohmann::json::array();
    for (const Comparison& c : g.comparisons) {
      gj["comparisons"].push_back({{"a", c.a},
                                   {"b", c.b},
                                   {"n_a", c.n_a},
                                   {"n_b", c.n_b},
                                   {"n_paired", c.n_paired},
                                   {"dropped", c.dropped},
                                   {"mean_a", jnum(c.mean_a)},
                                   {"sd_a", jnum(c.sd_a)},
                                   {"mean_b", jnum(c.mean_b)},
                                   {"sd_b", jnum(c.sd_b)},
                                   {"signed_rank", test_json(c.signed_rank, c.p_signed_rank_holm)},
                                   {"rank_sum", test_json(c.rank_sum, c.p_rank_sum_holm)},
                                   {"vargha_delaney_a", jnum(c.vargha_delaney_a)},
                                   {"notes", c.notes}});
    }
    j["groups"].push_back(gj);
  }
  j["warnings"] = rep.warnings;
  return j;
}

void write_compare(const CompareReport& rep, const std::string& prefix) {
  const fs::path base(prefix);
  if (base.has_parent_path()) fs::create_directories(base.parent_path());
  atomic_write(prefix + ".md", compare_markdown(rep));
  atomic_write(prefix + ".csv", compare_csv(rep));
  atomic_write(prefix + ".json", compare_json(rep).dump(2) + "\n");
}

}  // namespace mare::sweep
