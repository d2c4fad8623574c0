#include "reports/src/figures.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "reports/src/gnuplot.h"
#include "reports/src/tables.h"
#include "reports/src/util.h"

namespace mare::report {
namespace {

namespace fs = std::filesystem;
namespace gp = gnuplot;
using json = nlohmann::json;

// ---------------------------------------------------------------- JSON access

const json* child(const json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* key : path) {
    cur = child(*cur, key);
    if (!cur) return nullptr;
  }
  return cur;
}

std::optional<double> number(const json* j) {
  if (!j || !j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::string as_text(const json* v) {
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number_integer()) return std::to_string(v->get<int64_t>());
  if (v->is_number_unsigned()) return std::to_string(v->get<uint64_t>());
  if (v->is_number()) return gp::num(v->get<double>());
  return v->dump();
}

// ---------------------------------------------------------------- runs

// A run's setting: run.json params, else the manifest's resolved config, else result.json
// (legacy run directories have no run.json).
const json* run_value(const RunRecord& r, const std::string& key) {
  if (const json* v = child(r.params, key)) return v;
  if (const json* config = child(r.manifest, "config"))
    if (const json* v = child(*config, key)) return v;
  return child(r.result, key);
}

std::string run_string(const RunRecord& r, const std::string& key) {
  return as_text(run_value(r, key));
}

// Finished runs only: a failed or interrupted run's curves would pull the means down.
bool run_usable(const RunRecord& r) {
  return r.status.empty() || r.status == "completed" || r.status == "diverged";
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "seed12" or "seed12-0badcafe" (the sweep layout <cell>/seed<k>-<id8>/).
bool is_seed_dir(std::string_view name) {
  if (name.substr(0, 4) != "seed") return false;
  name.remove_prefix(4);
  const std::size_t dash = name.find('-');
  if (dash == std::string_view::npos) return all_digits(name);
  return all_digits(name.substr(0, dash)) && name.size() - dash - 1 == 8;
}

// The name a run's curve is labelled with: its cell; for legacy directories without run.json,
// the row directory of <row>/seed<k>/ (reports/grpu/runs) or <name> of <name>-seed<k>/.
std::string run_label(const RunRecord& r) {
  if (!r.cell.empty()) return r.cell;
  fs::path dir = r.dir.lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  std::string name = dir.filename().string();
  if (is_seed_dir(name)) return dir.parent_path().filename().string();
  const std::size_t pos = name.rfind("-seed");
  if (pos != std::string::npos && pos > 0 && all_digits(std::string_view(name).substr(pos + 5)))
    return name.substr(0, pos);
  if (!name.empty()) return name;
  return run_string(r, "model");
}

// "synth-ctd" of "synth-ctd:/path/to/data"; "" for runs without a data source.
std::string run_dataset(const RunRecord& r) {
  const std::string data = run_string(r, "data");
  const std::size_t colon = data.find(':');
  if (colon != std::string::npos) return data.substr(0, colon);
  return data.empty() ? "" : fs::path(data).filename().string();
}

struct Group {
  std::string sweep, label, dataset;
  std::string display;  // label, with dataset / sweep where those differ between groups
  std::vector<const RunRecord*> runs;
};

struct NaturalLess {
  bool operator()(const std::tuple<std::string, std::string, std::string>& x,
                  const std::tuple<std::string, std::string, std::string>& y) const {
    for (const auto& [a, b] :
         {std::pair(std::get<0>(x), std::get<0>(y)), std::pair(std::get<1>(x), std::get<1>(y)),
          std::pair(std::get<2>(x), std::get<2>(y))}) {
      if (natural_less(a, b)) return true;
      if (natural_less(b, a)) return false;
    }
    return false;
  }
};

// One group per (sweep, cell, dataset), sorted by those (numbers in them by value: config2
// before config10); runs by seed then directory.
std::vector<Group> group_runs(const std::vector<const RunRecord*>& runs) {
  std::map<std::tuple<std::string, std::string, std::string>, Group, NaturalLess> by_key;
  for (const RunRecord* r : runs) {
    const auto key = std::make_tuple(r->sweep, run_label(*r), run_dataset(*r));
    Group& g = by_key[key];
    std::tie(g.sweep, g.label, g.dataset) = key;
    g.runs.push_back(r);
  }
  std::set<std::string> sweeps, datasets;
  for (const auto& [key, g] : by_key) {
    sweeps.insert(g.sweep);
    datasets.insert(g.dataset);
  }
  std::vector<Group> out;
  for (auto& [key, g] : by_key) {
    g.display = g.label;
    if (datasets.size() > 1 && !g.dataset.empty() && g.label.find(g.dataset) == std::string::npos)
      g.display += " [" + g.dataset + "]";
    if (sweeps.size() > 1 && !g.sweep.empty()) g.display = g.sweep + "/" + g.display;
    std::sort(g.runs.begin(), g.runs.end(), [](const RunRecord* a, const RunRecord* b) {
      return std::tie(a->seed, a->dir) < std::tie(b->seed, b->dir);
    });
    out.push_back(std::move(g));
  }
  return out;
}

// The tables' provenance of the runs (tables.h: specs, profiles, seeds, devices, commits,
// dates, sources, runs), with the cells as the figure labels them.
json runs_provenance(const std::vector<Group>& groups) {
  std::vector<const RunRecord*> runs;
  json cells = json::array();
  for (const Group& g : groups) {
    cells.push_back(g.display);
    runs.insert(runs.end(), g.runs.begin(), g.runs.end());
  }
  json p = provenance_of(runs);
  p["cells"] = cells;
  return p;
}

// One benchmark file's provenance as the tables give it, several under "benchmarks".
json benches_provenance(const std::vector<const BenchFile*>& benches) {
  json list = json::array();
  for (const BenchFile* b : benches) list.push_back(provenance_of(*b));
  if (list.size() == 1) return list[0];
  return {{"benchmarks", list}};
}

// ---------------------------------------------------------------- statistics

struct Summary {
  double mean = 0, sd = 0;
  std::size_t n = 0;
};

// Mean and sample standard deviation (0 for one value).
Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

// One data row per x: x, the mean of its values, their sample sd and how many (the
// mean-and-band series of the figures, x in ascending order).
std::vector<std::vector<double>> mean_sd_rows(const std::map<double, std::vector<double>>& by_x) {
  std::vector<std::vector<double>> rows;
  for (const auto& [x, v] : by_x) {
    const Summary s = summarize(v);
    rows.push_back({x, s.mean, s.sd, static_cast<double>(s.n)});
  }
  return rows;
}

// Quantile by linear interpolation between order statistics (R's type 7, numpy's default).
double quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nan("");
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// ---------------------------------------------------------------- figure assembly

// The data file: one block per series, blocks separated by two blank lines (gnuplot's
// `index`), each headed by its title and column names.
class Dat {
 public:
  int add(const std::string& title, const std::string& columns,
          const std::vector<std::vector<double>>& rows) {
    text_ += "# [" + std::to_string(count_) + "] " + gp::comment(title) + "\n# " + columns + "\n";
    for (const auto& row : rows) {
      for (std::size_t i = 0; i < row.size(); ++i) text_ += (i ? " " : "") + gp::num(row[i]);
      text_ += "\n";
    }
    text_ += "\n\n";
    return count_++;
  }
  const std::string& text() const { return text_; }
  int count() const { return count_; }

 private:
  std::string text_;
  int count_ = 0;
};

// Made with designated initialisers ({.id = …, .title = …}); the rest start empty.
struct Figure {
  std::string id, title;
  std::string missing{};  // set: no figure, this is why
  std::string header{};   // comment lines for the .dat file (what the columns mean)
  Dat dat{};
  std::string body{};  // gnuplot commands after the terminal is set; the data file is DAT
  int styles = 0;      // palette line styles 1..styles defined before the body
  int width = 800, height = 520;  // SVG size; the PNG is twice as large at the same layout
  json provenance = json::object();
};

Figure missing_figure(const std::string& id, const std::string& title, const std::string& why) {
  return {.id = id, .title = title, .missing = why};
}

struct Gnuplot {
  std::optional<fs::path> binary;
  gp::Terminals terminals;
};

std::string script_for(const Figure& f, const std::string& png_terminal) {
  std::string s;
  s += "# " + gp::comment(f.title) + "\n";
  s += "# Written by `mare report`. Data: " + f.id +
       ".dat, one block per series (blocks separated by two blank lines, selected with "
       "`index`).\n";
  s += "# Re-plot in this directory with `gnuplot -d " + f.id + ".gp`: writes " + f.id +
       ".png and " + f.id + ".svg.\n";
  s += "DAT = " + gp::quote(f.id + ".dat") + "\n";
  s += "do for [fmt in \"png svg\"] {\n";
  s += "reset\n";
  s += "if (fmt eq \"png\") {\n";
  const std::string size = std::to_string(2 * f.width) + "," + std::to_string(2 * f.height);
  if (png_terminal == "pngcairo")
    s += "  set terminal pngcairo size " + size +
         " font \"DejaVu Sans,12\" fontscale 2 linewidth 2 noenhanced\n";
  else
    s += "  set terminal png size " + size + " noenhanced\n";
  s += "  set output " + gp::quote(f.id + ".png") + "\n";
  s += "} else {\n";
  s += "  set terminal svg size " + std::to_string(f.width) + "," + std::to_string(f.height) +
       " font \"DejaVu Sans,12\" linewidth 1 noenhanced\n";
  s += "  set output " + gp::quote(f.id + ".svg") + "\n";
  s += "}\n";
  s += "set encoding utf8\n";
  for (int k = 1; k <= f.styles; ++k) s += gp::line_style(k) + "\n";
  s += f.body;
  if (!f.body.empty() && f.body.back() != '\n') s += "\n";
  s += "unset output\n";
  s += "}\n";
  return s;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

// Writes <id>.dat and <id>.gp and runs gnuplot on them in a scratch directory beside the
// figures; the pictures are renamed into place only when gnuplot succeeded, so a failed
// run never leaves a half-written picture under the final name.
Artifact render(const Figure& f, const fs::path& out_dir, const Gnuplot& g) {
  Artifact a;
  a.id = f.id;
  a.title = f.title;
  a.provenance = f.provenance;
  const fs::path figs = out_dir / "figures";
  const std::vector<std::string> exts = {".dat", ".gp", ".png", ".svg"};
  if (!f.missing.empty()) {
    // A stale figure of an earlier report in the same directory would contradict `missing`.
    for (const auto& ext : exts) remove_quietly(figs / (f.id + ext));
    a.missing = f.missing;
    return a;
  }
  const std::string dat = "# " + gp::comment(f.title) + "\n" + f.header + f.dat.text();
  const std::string script = script_for(f, g.terminals.png);

  auto keep_data_only = [&](const std::string& why) {
    gp::atomic_write(figs / (f.id + ".dat"), dat);
    gp::atomic_write(figs / (f.id + ".gp"), script);
    remove_quietly(figs / (f.id + ".png"));
    remove_quietly(figs / (f.id + ".svg"));
    a.files = {fs::path("figures") / (f.id + ".dat"), fs::path("figures") / (f.id + ".gp")};
    a.missing = why + " (its data and script are written: figures/" + f.id + ".dat, .gp)";
    return a;
  };
  if (!g.binary)
    return keep_data_only(
        "gnuplot not found (install gnuplot, or set MARE_GNUPLOT to its path) for the pictures");
  if (g.terminals.png.empty() || !g.terminals.svg)
    return keep_data_only(g.binary->string() + " (" + g.terminals.version +
                          ") has no png/pngcairo or svg terminal");

  const fs::path scratch =
      figs / ("." + f.id + ".tmp" + std::to_string(static_cast<long>(::getpid())));
  remove_quietly(scratch);
  fs::create_directories(scratch);
  gp::atomic_write(scratch / (f.id + ".dat"), dat);
  gp::atomic_write(scratch / (f.id + ".gp"), script);
  const gp::RunResult r = gp::run(*g.binary, scratch, f.id + ".gp");
  std::error_code ec;
  bool pictures = r.ok;
  for (const char* ext : {".png", ".svg"})
    pictures = pictures && fs::file_size(scratch / (f.id + ext), ec) > 0 && !ec;
  if (!pictures) {
    remove_quietly(scratch);
    return keep_data_only(r.ok ? "gnuplot wrote no picture for " + f.id + ".gp"
                               : "gnuplot failed on " + f.id + ".gp: " + r.error);
  }
  for (const auto& ext : exts) {
    fs::rename(scratch / (f.id + ext), figs / (f.id + ext), ec);
    if (ec) {
      remove_quietly(scratch);
      throw std::runtime_error((figs / (f.id + ext)).string() +
                               ": cannot move the drawn figure into place: " + ec.message());
    }
    a.files.push_back(fs::path("figures") / (f.id + ext));
  }
  remove_quietly(scratch);
  return a;
}

std::string plot_title(const std::string& s) {
  return "set title " + gp::quote(s) + "\n";
}

// Common look: grid, ticks outside, key with a light frame.
const char* const kAxes =
    "set border 3 lw 1\nset tics nomirror out\nset grid lc rgb \"#d0d0d0\" lw 1 dt 1\n"
    "set key box lc rgb \"#a0a0a0\" samplen 3 spacing 1.1\n";

// ---------------------------------------------------------------- fig 4.5: F1 by distance

// A key a reader can read beside its panel: outside the plotting area on the right, one
// column (`maxrows` = the panel's series), so that it neither covers the data nor
// wraps across the canvas; gnuplot shrinks the plotting area to make room.
// Where the plotting area ends (a fraction of the canvas) so that a key of titles up to
// `longest` characters fits beside it: 10 px a character at 12 pt (DejaVu Sans's letters
// and underscores run 0.6-0.8 em) and 100 px for the sample line and the box, kept
// between 45 % and 80 %.
double plot_right_for(std::size_t longest, int width) {
  const double key = 10.0 * static_cast<double>(longest) + 100.0;
  return std::clamp(1.0 - key / width, 0.45, 0.8);
}

std::string key_beside(int series, double plot_right) {
  return "set rmargin at screen " + gp::num(plot_right) +
         "\nset key outside right top vertical Left reverse maxrows " +
         std::to_string(std::max(1, series)) + " box lc rgb \"#a0a0a0\"\n";
}

// [first, last) ranges that split n series into the fewest panels of at most `most`
// each, as even as they go (13 at most 4 a panel: 4, 3, 3, 3).
std::vector<std::pair<std::size_t, std::size_t>> panel_ranges(std::size_t n, std::size_t most) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t panels = std::max<std::size_t>(1, (n + most - 1) / most);
  for (std::size_t p = 0, first = 0; p < panels; ++p) {
    const std::size_t size = n / panels + (p < n % panels ? 1 : 0);
    out.emplace_back(first, first + size);
    first += size;
  }
  return out;
}

// "cells 5-8" of a panel, "cell 13" when it has one.
std::string panel_cells(std::size_t first, std::size_t last) {
  return first == last ? "cell " + std::to_string(first)
                       : "cells " + std::to_string(first) + "-" + std::to_string(last);
}

// The panels of a figure, one per group of series: a canvas tall enough for each panel's
// key (22 px a key line at 12 pt) and its axes.
int panel_height(int series) {
  return std::max(300, 22 * series + 130);
}

// The finished relation runs with test F1 by distance bucket.
std::vector<const RunRecord*> distance_runs(const ReportInputs& in) {
  std::vector<const RunRecord*> runs;
  for (const auto& r : in.runs) {
    const json* b = at(r.result, {"test", "relations", "by_distance"});
    if (run_usable(r) && b && b->is_array() && !b->empty()) runs.push_back(&r);
  }
  return runs;
}

using DistanceKey = std::pair<std::string, std::string>;  // (sweep, corpus)

// The runs of each (sweep, corpus), tables in their natural order.
std::vector<std::pair<DistanceKey, std::vector<const RunRecord*>>> distance_tables(
    const std::vector<const RunRecord*>& runs) {
  // One panel per (sweep, corpus): a table's cells on one corpus, each a mean line with a
  // band of ± one sd over its seeds.
  std::map<DistanceKey, std::vector<const RunRecord*>> grouped;
  for (const RunRecord* r : runs) grouped[{r->sweep, run_dataset(*r)}].push_back(r);
  std::vector<std::pair<DistanceKey, std::vector<const RunRecord*>>> by_panel(grouped.begin(),
                                                                              grouped.end());
  std::stable_sort(by_panel.begin(), by_panel.end(), [](const auto& x, const auto& y) {
    return natural_less(x.first.first, y.first.first);  // table4.5 < table4.6 < table4.10
  });
  return by_panel;
}

// One cell's rows: per distance bucket, the mean test F1 over its runs, the sd and how many.
std::vector<std::vector<double>> distance_series(const Group& g) {
  std::map<double, std::vector<double>> by_bucket;
  for (const RunRecord* r : g.runs)
    for (const json& b : *at(r->result, {"test", "relations", "by_distance"})) {
      const auto d = number(child(b, "max_distance"));
      const auto f1 = number(child(b, "f1"));
      if (d && f1) by_bucket[*d].push_back(*f1);
    }
  return mean_sd_rows(by_bucket);
}

// A panel's heading and plots; its key is set once the longest title of every panel
// is known (the panels share one plotting-area width, so their axes line up).
struct DistancePanel {
  std::string head, plots;
  int series;
};

// The panel of groups [first, last) of a table (their data added to f.dat; `split`: the
// table has more than one panel); none when no cell has a bucket with numbers.
std::optional<DistancePanel> distance_panel(Figure& f, const DistanceKey& key,
                                            const std::vector<Group>& groups, std::size_t first,
                                            std::size_t last, bool split, int& next_style,
                                            std::size_t& longest) {
  std::set<double> buckets;
  std::string plots;
  int k = 0;
  for (std::size_t gi = first; gi < last; ++gi) {
    const Group& g = groups[gi];
    const std::vector<std::vector<double>> rows = distance_series(g);
    for (const auto& row : rows) buckets.insert(row[0]);
    if (rows.empty()) continue;
    const int ls = ++next_style;
    ++k;
    const std::string t =
        g.label + " (" + std::to_string(g.runs.size()) + (g.runs.size() == 1 ? " run)" : " runs)");
    longest = std::max(longest, t.size());
    const std::string where = (key.first.empty() ? std::string() : key.first + " ") +
                              (key.second.empty() ? std::string() : "[" + key.second + "] ");
    const int idx = f.dat.add(where + t, "max_distance f1_mean f1_sd n", rows);
    const std::string sel = "DAT index " + std::to_string(idx);
    plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + sel +
             " using 1:($2-$3):($2+$3) with filledcurves ls " + std::to_string(ls) +
             " fs transparent solid 0.12 noborder notitle, \\\n     " + sel +
             " using 1:2 with linespoints ls " + std::to_string(ls) + " title " + gp::quote(t);
  }
  if (k == 0) return std::nullopt;
  std::string tics;
  for (double d : buckets) tics += (tics.empty() ? "" : ", ") + gp::num(d);
  const std::string panel_title = (key.first.empty() ? std::string("runs") : key.first) +
                                  (key.second.empty() ? std::string() : " on " + key.second) +
                                  (split ? ", " + panel_cells(first + 1, last) : std::string()) +
                                  " (mean, band: ± sd)";
  return DistancePanel{plot_title(panel_title) + "set xtics (" + tics + ")\n", plots, k};
}

Figure fig_4_5(const ReportInputs& in) {
  const std::string
      id = "fig4.5",
      title = "Fig. 4.5: test relation F1 by maximum distance between the related entities";
  const std::vector<const RunRecord*> runs = distance_runs(in);
  if (runs.empty())
    return missing_figure(id, title,
                          "no finished relation run with result.json test.relations.by_distance "
                          "among the inputs");
  Figure f{
      .id = id,
      .title = title,
      .header =
          "# Columns: maximum distance (tokens; cumulative bucket: pairs at most this far apart), "
          "mean test F1 over the cell's runs, sample sd, runs. One panel per table (sweep) and "
          "corpus.\n"};
  std::string body = std::string(kAxes);
  std::vector<DistancePanel> panels;
  int height = 0, next_style = 0;
  std::size_t longest = 0;
  std::vector<Group> all_groups;
  for (const auto& [key, panel_runs] : distance_tables(runs)) {
    const auto groups = group_runs(panel_runs);
    // A handful of cells a panel: a table's 13 cells in three panels.
    const auto ranges = panel_ranges(groups.size(), 6);
    for (const auto& [first, last] : ranges) {
      std::optional<DistancePanel> p =
          distance_panel(f, key, groups, first, last, ranges.size() > 1, next_style, longest);
      if (!p) continue;
      for (std::size_t gi = first; gi < last; ++gi) all_groups.push_back(groups[gi]);
      // Multiplot panels share the canvas evenly.
      height = std::max(height, panel_height(p->series));
      panels.push_back(std::move(*p));
    }
  }
  const int drawn = static_cast<int>(panels.size());
  if (drawn == 0)
    return missing_figure(id, title, "the relation runs' by_distance buckets have no numbers");
  f.styles = next_style;
  body +=
      "set xlabel \"maximum distance between the related entities (tokens)\"\n"
      "set ylabel \"test F1 (relations, micro)\"\n"
      "set yrange [0:1]\nset offsets graph 0.03, graph 0.03, 0, 0\n";
  if (drawn > 1)
    body += "set multiplot layout " + std::to_string(drawn) + ",1 title " +
            gp::quote("Relation F1 by entity-pair distance (test)") + "\n";
  f.width = 1100;
  const double right = plot_right_for(longest, f.width);
  for (const DistancePanel& p : panels)
    body += p.head + key_beside(p.series, right) + p.plots + "\n";
  if (drawn > 1) body += "unset multiplot\n";
  f.body = body;
  f.height = drawn * height + (drawn > 1 ? 40 : 0);
  f.provenance = runs_provenance(all_groups);
  f.provenance["split"] = "test";
  return f;
}

// ---------------------------------------------------------------- fig 4.6: validation F1

// Whether a run's data source names CTD (in any case).
bool run_on_ctd(const RunRecord& r) {
  std::string d = run_dataset(r);
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  return d.find("ctd") != std::string::npos;
}

// The runs of the per-class figure: the finished ones with a valid_f1_per_class series,
// only those on CTD data when there are any (then `any_ctd`).
struct ClassRuns {
  std::vector<const RunRecord*> runs;
  bool any_ctd = false;
};

ClassRuns class_runs(const ReportInputs& in) {
  ClassRuns out;
  for (const auto& r : in.runs) {
    if (!run_usable(r)) continue;
    bool has = false;
    for (const json& m : r.metrics)
      if (const json* c = child(m, "valid_f1_per_class"); c && c->is_object()) has = true;
    if (!has) continue;
    out.runs.push_back(&r);
    if (run_on_ctd(r)) out.any_ctd = true;
  }
  // The thesis's figure is the CTD study's (14 classes): show CTD runs when there are any.
  if (out.any_ctd) {
    std::vector<const RunRecord*> ctd;
    for (const RunRecord* r : out.runs)
      if (run_on_ctd(*r)) ctd.push_back(r);
    out.runs = ctd;
  }
  return out;
}

// The relation classes any of the groups' runs scores, by name.
std::set<std::string> class_names(const std::vector<Group>& groups) {
  std::set<std::string> classes;
  for (const Group& g : groups)
    for (const RunRecord* r : g.runs)
      for (const json& m : r->metrics)
        if (const json* c = child(m, "valid_f1_per_class"); c && c->is_object())
          for (const auto& [name, v] : c->items()) classes.insert(name);
  return classes;
}

// One score of the runs' metrics per step: the mean over the runs that have it at that
// step, the sample sd and how many.
std::vector<std::vector<double>> class_series(
    const std::vector<const RunRecord*>& rs,
    const std::function<std::optional<double>(const json&)>& value) {
  std::map<double, std::vector<double>> by_step;
  for (const RunRecord* r : rs)
    for (const json& m : r->metrics) {
      const auto step = number(child(m, "step"));
      const auto v = value(m);
      if (step && v) by_step[*step].push_back(*v);
    }
  return mean_sd_rows(by_step);
}

// The plot command of a group's panel, the overall F1 then each class in its style (the
// data added to f.dat); "" when none of them has a step.
std::string class_panel(Figure& f, const Group& g, const std::set<std::string>& classes,
                        const std::map<std::string, int>& style) {
  std::string plots;
  auto add = [&](const std::string& name, const std::vector<std::vector<double>>& rows, int ls,
                 const std::string& extra) {
    if (rows.empty()) return;
    const int idx = f.dat.add(g.display + ": " + name, "step f1_mean f1_sd n", rows);
    plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + "DAT index " +
             std::to_string(idx) + " using 1:2 with linespoints ls " + std::to_string(ls) + extra +
             " title " + gp::quote(name);
  };
  add("all classes (micro)",
      class_series(g.runs, [](const json& m) { return number(child(m, "valid_f1")); }), 1, " lw 3");
  for (const auto& c : classes)
    add(c,
        class_series(g.runs,
                     [&c](const json& m) -> std::optional<double> {
                       const json* pc = child(m, "valid_f1_per_class");
                       return pc ? number(child(*pc, c)) : std::nullopt;
                     }),
        style.at(c), "");
  return plots;
}

Figure fig_4_6(const ReportInputs& in) {
  const std::string id = "fig4.6",
                    title = "Fig. 4.6: validation F1 per relation class over training";
  const ClassRuns selected = class_runs(in);
  if (selected.runs.empty())
    return missing_figure(
        id, title,
        "no finished relation run with metrics.jsonl valid_f1_per_class among the inputs");
  auto groups = group_runs(selected.runs);
  constexpr std::size_t kMaxPanels = 6;
  std::vector<std::string> omitted;
  while (groups.size() > kMaxPanels) {
    omitted.insert(omitted.begin(), groups.back().display);
    groups.pop_back();
  }
  Figure f{.id = id,
           .title = title,
           .header =
               "# Columns: training step, mean validation F1 over the cell's runs that evaluated "
               "at this step, sample sd, runs. One block per cell and class; 'all classes' is "
               "valid_f1 (micro over the non-NULL classes).\n"};
  // Every class keeps one style across panels; style 1 (black, solid) is the overall F1.
  const std::set<std::string> classes = class_names(groups);
  std::map<std::string, int> style;
  int next = 2;
  for (const auto& c : classes) style[c] = next++;
  f.styles = next - 1;

  std::string body = std::string(kAxes);
  const std::size_t panels = groups.size();
  if (panels > 1)
    body += "set multiplot layout " + std::to_string(panels) + ",1 title " +
            gp::quote("Validation F1 per class (mean over runs)") + "\n";
  f.height = static_cast<int>(std::max<std::size_t>(1, panels)) *
                 panel_height(static_cast<int>(classes.size()) + 1) +
             (panels > 1 ? 40 : 0);
  f.width = 1100;
  std::size_t longest = std::string("all classes (micro)").size();
  for (const auto& c : classes) longest = std::max(longest, c.size());
  const double right = plot_right_for(longest, f.width);
  int plotted = 0;
  for (const Group& g : groups) {
    const std::string plots = class_panel(f, g, classes, style);
    if (plots.empty()) continue;
    ++plotted;
    body += plot_title(g.display + " (" + std::to_string(g.runs.size()) +
                       (g.runs.size() == 1 ? " run)" : " runs, mean)"));
    body += "set xlabel \"training step\"\nset ylabel \"validation F1\"\nset yrange [0:1]\n" +
            key_beside(static_cast<int>(classes.size()) + 1, right) + plots + "\n";
  }
  if (panels > 1) body += "unset multiplot\n";
  if (plotted == 0)
    return missing_figure(id, title, "the relation runs' metrics.jsonl have no step numbers");
  f.body = body;
  f.provenance = runs_provenance(groups);
  if (!omitted.empty()) f.provenance["cells_omitted"] = omitted;
  if (selected.any_ctd)
    f.provenance["selection"] = "runs on CTD data only (the thesis's figure is CTD's)";
  return f;
}

// ---------------------------------------------------------------- fig 5.1-5.5: GRPU

struct GrpuSelection {
  const char* id;
  const char* title;
  const char* task;
  int small_batch;  // 1: batch <= 10 only, 0: batch > 10 only, -1: any
};

const GrpuSelection kGrpuFigures[] = {
    {"fig5.1", "Fig. 5.1: convergence on the addition problem (batch > 10)", "addition", 0},
    {"fig5.2", "Fig. 5.2: convergence on the multiplication problem (batch > 10)", "multiplication",
     0},
    {"fig5.3", "Fig. 5.3: convergence on the addition problem with conditionals", "conditional",
     -1},
    {"fig5.4", "Fig. 5.4: convergence of the new addition experiment (batch <= 10)", "addition", 1},
    {"fig5.5", "Fig. 5.5: convergence of the new multiplication experiment (batch <= 10)",
     "multiplication", 1},
};

bool run_flag(const RunRecord& r, const std::string& key) {
  const std::string v = run_string(r, key);
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

// The dissertation's final (1000-epoch) MSE of the Table 5.1 row with a cell's settings:
// model (GRPU or the bidirectional GRU), task (addition or conditional), batch, samples,
// curriculum.
struct Published {
  std::optional<double> train, test;
};
std::optional<Published> published_grpu(const RunRecord& r) {
  static const std::string name = "table_5_1_grpu.csv";
  const auto& csvs = embedded_paper_csvs();
  const auto it = csvs.find(name);
  if (it == csvs.end()) return std::nullopt;
  const CsvTable t = parse_csv(it->second, "reports/paper/" + name);
  auto col = [&](const std::string& c) -> std::optional<std::size_t> {
    const auto at = std::find(t.header.begin(), t.header.end(), c);
    if (at == t.header.end()) return std::nullopt;
    return static_cast<std::size_t>(at - t.header.begin());
  };
  const auto cm = col("model"), cb = col("batch"), cs = col("samples"), cc = col("curriculum"),
             cd = col("conditional"), ctr = col("train_mse"), cte = col("test_mse");
  if (!cm || !cb || !cs || !cc || !cd || !ctr || !cte) return std::nullopt;
  const std::string model = run_string(r, "model");
  const bool bigru = model == "bigru";
  if (!bigru && model.rfind("grpu", 0) != 0) return std::nullopt;
  const auto batch = number(run_value(r, "batch")), samples = number(run_value(r, "samples"));
  if (!batch || !samples) return std::nullopt;
  // Every row of Table 5.1 is the addition problem (plain or with conditionals).
  const std::string task = run_string(r, "task");
  if (task != "addition" && task != "conditional") return std::nullopt;
  const bool curriculum = run_flag(r, "curriculum");
  const bool conditional = task == "conditional";
  for (const auto& row : t.rows) {
    double b = 0, n = 0, c = 0, d = 0;
    if (row.size() != t.header.size() || !parse_double(row[*cb], b) || !parse_double(row[*cs], n) ||
        !parse_double(row[*cc], c) || !parse_double(row[*cd], d))
      continue;
    const bool row_bigru = row[*cm].find("GRU") != std::string::npos && row[*cm] != "GRPU";
    if (row_bigru != bigru || b != *batch || n != *samples || (c != 0) != curriculum ||
        (d != 0) != conditional)
      continue;
    Published p;
    double v = 0;
    if (parse_double(row[*ctr], v)) p.train = v;
    if (parse_double(row[*cte], v)) p.test = v;
    return p;
  }
  return std::nullopt;
}

Figure fig_grpu(const ReportInputs& in, const GrpuSelection& sel) {
  std::vector<const RunRecord*> runs;
  for (const auto& r : in.runs) {
    if (!run_usable(r) || run_string(r, "task") != sel.task) continue;
    const auto batch = number(run_value(r, "batch"));
    const bool small = batch && *batch <= 10;
    if (sel.small_batch >= 0 && small != (sel.small_batch == 1)) continue;
    bool has = false;
    for (const json& m : r.metrics)
      if (number(child(m, "train_mse")) || number(child(m, "test_mse"))) has = true;
    if (has) runs.push_back(&r);
  }
  const std::string batch_rule = sel.small_batch < 0 ? ""
                                 : sel.small_batch   ? ", batch <= 10"
                                                     : ", batch > 10";
  if (runs.empty())
    return missing_figure(sel.id, sel.title,
                          std::string("no finished sequence run of task ") + sel.task + batch_rule +
                              " with train_mse/test_mse in metrics.jsonl among the inputs");
  Figure f;
  f.id = sel.id;
  f.title = sel.title;
  f.header =
      "# Columns: epoch, mean MSE over the cell's runs that evaluated at this epoch, sample sd, "
      "runs\n";
  const auto groups = group_runs(runs);
  std::string plots;
  int k = 0;
  for (const Group& g : groups) {
    ++k;
    for (const char* metric : {"train_mse", "test_mse"}) {
      std::map<double, std::vector<double>> by_epoch;
      for (const RunRecord* r : g.runs)
        for (const json& m : r->metrics) {
          auto x = number(child(m, "epoch"));
          if (!x) x = number(child(m, "step"));
          const auto v = number(child(m, metric));
          if (x && v) by_epoch[*x].push_back(*v);
        }
      const std::vector<std::vector<double>> rows = mean_sd_rows(by_epoch);
      bool positive = false;
      for (const auto& row : rows) positive = positive || row[1] > 0;
      if (!positive) continue;  // nothing a log axis can show
      const bool train = std::string(metric) == "train_mse";
      const std::string t = g.display + (train ? " train" : " test") + " (" +
                            std::to_string(g.runs.size()) +
                            (g.runs.size() == 1 ? " run)" : " runs, mean)");
      const int idx = f.dat.add(t, "epoch mse_mean mse_sd n", rows);
      // One colour and marker per cell; train solid, test dashed.
      const int every = std::max<int>(1, static_cast<int>(rows.size()) / 10);
      plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + "DAT index " +
               std::to_string(idx) + " using 1:($2 > 0 ? $2 : NaN) with linespoints ls " +
               std::to_string(k) + (train ? " dt 1" : " dt (10,5)") + " pi " +
               std::to_string(every) + " title " + gp::quote(t);
    }
  }
  if (plots.empty())
    return missing_figure(sel.id, sel.title,
                          std::string("the runs of task ") + sel.task +
                              " have no positive train_mse/test_mse to plot");
  // The published final values of the same settings, as large open marks at epoch 1000.
  k = 0;
  json published = json::array();
  for (const Group& g : groups) {
    ++k;
    const auto p = published_grpu(*g.runs.front());
    if (!p) continue;
    for (const auto& [v, train] :
         {std::make_pair(p->train, true), std::make_pair(p->test, false)}) {
      if (!v || *v <= 0) continue;
      const std::string t = g.display + (train ? " train" : " test") + ", Table 5.1 (published)";
      const int idx = f.dat.add(t, "epoch mse", {{1000, *v}});
      plots += ", \\\n     DAT index " + std::to_string(idx) + " using 1:2 with points ls " +
               std::to_string(k) + (train ? " pt 4" : " pt 8") + " ps 3 title " + gp::quote(t);
    }
    published.push_back({{"cell", g.display},
                         {"train_mse", p->train ? json(*p->train) : json()},
                         {"test_mse", p->test ? json(*p->test) : json()}});
  }
  f.styles = k;
  f.body = std::string(kAxes) + plot_title(f.title.substr(f.title.find(':') + 2)) +
           "set xlabel \"epoch\"\nset ylabel \"mean squared error\"\nset logscale y\n"
           "set format y \"%.0e\"\nset key below maxcols 2 nobox font \",10\"\n" +
           plots + "\n";
  std::size_t entries = 0;
  for (std::size_t pos = 0; (pos = plots.find(" title ", pos)) != std::string::npos; ++pos)
    ++entries;
  f.width = 900;
  f.height = 480 + 22 * static_cast<int>((entries + 1) / 2);
  f.provenance = runs_provenance(groups);
  f.provenance["task"] = sel.task;
  if (!published.empty()) f.provenance["published"] = published;
  return f;
}

// ---------------------------------------------------------------- benchmarks

std::vector<const BenchFile*> benches_of(const ReportInputs& in, const std::string& kind) {
  std::vector<const BenchFile*> out;
  for (const auto& b : in.benchmarks)
    if (b.kind == kind) out.push_back(&b);
  std::sort(out.begin(), out.end(),
            [](const BenchFile* a, const BenchFile* b) { return a->path < b->path; });
  return out;
}

// Why a figure of `mare bench KIND` is not made when benches_of finds none.
std::string no_benchmark(const std::string& kind) {
  return "no " + kind + " benchmark JSON (`mare bench " + kind + " --json`) among the inputs";
}

std::string bench_caption(const BenchFile& b) {
  std::string s = as_text(child(b.json, "device"));
  if (s.empty()) s = "device ?";
  if (const auto t = number(child(b.json, "threads")))
    s += ", " + gp::num(*t) + (*t == 1 ? " thread" : " threads");
  return s;
}

struct ThesisAllocation {
  std::map<std::pair<std::string, int>, std::map<double, double>> series;  // (mechanism, N)
  std::string error;
};

// Thesis Table 4.14 from the published CSVs compiled into the library (reports/paper/).
ThesisAllocation thesis_allocation() {
  static const std::string name = "table_4_14_allocation.csv";
  ThesisAllocation t;
  const auto& csvs = embedded_paper_csvs();
  const auto it = csvs.find(name);
  if (it == csvs.end()) {
    t.error = "reports/paper/" + name + " was not compiled in";
    return t;
  }
  std::istringstream file(it->second);
  std::string line;
  int lineno = 0;
  bool header = false;
  while (std::getline(file, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      header = true;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    try {
      if (cells.size() != 4) throw std::invalid_argument("4 columns");
      t.series[{cells[0], std::stoi(cells[1])}][std::stod(cells[2])] = std::stod(cells[3]);
    } catch (const std::exception&) {
      t.error = "reports/paper/" + name + ":" + std::to_string(lineno) +
                ": expected mechanism,memory_size,seq_len,seconds";
      t.series.clear();
      return t;
    }
  }
  return t;
}

// Thesis marks: diamond for the sorted (original) allocation, circle for the parallel one.
std::string alloc_style(const std::string& variant, int mem_index) {
  static const char* const colours[] = {"#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7"};
  const bool sorted = variant == "sorted";
  return std::string("lc rgb \"") + colours[mem_index % 5] + "\" lw 2 dt " +
         (sorted ? "1" : "(10,5)") + " pt " + (sorted ? "13" : "7") + " ps 1.3";
}

// (variant, N) -> sequence length -> seconds: the lines of one panel.
using AllocSeries = std::map<std::pair<std::string, int>, std::map<double, double>>;

// One panel of Fig. 4.9: its lines and where they end.
struct AllocPanel {
  struct LineEnd {
    double x, y;
    int mem;
  };
  std::string title, ylabel, plots;
  std::vector<LineEnd> ends;
  double ymin = INFINITY, ymax = 0;
  // Labels at the line ends; one closer than 4 % of the panel's height (log scale) to a
  // label already placed (the other variant of the same N) is left out.
  std::string labels() const {
    std::string out;
    std::vector<double> placed;
    const double min_gap = 0.04 * std::max(std::log10(ymax / ymin), 1.0);
    for (const LineEnd& e : ends) {
      bool clash = false;
      for (double y : placed) clash = clash || std::abs(std::log10(e.y / y)) < min_gap;
      if (clash) continue;
      placed.push_back(e.y);
      out += "set label " + gp::quote("N=" + std::to_string(e.mem)) + " at " + gp::num(e.x * 1.25) +
             "," + gp::num(e.y) + " left font \",10\"\n";
    }
    return out;
  }
};

// Adds the line of one variant and memory size to panel p (its data to f.dat); nothing
// when it has no positive point.
void add_alloc_line(Figure& f, AllocPanel& p, const std::string& variant, int mem,
                    const std::map<double, double>& pts, const std::string& source) {
  std::vector<std::vector<double>> rows;
  for (const auto& [x, y] : pts)
    if (x > 0 && y > 0) rows.push_back({x, y});
  if (rows.empty()) return;
  const std::string t = variant + " N=" + std::to_string(mem);
  const int idx = f.dat.add(source + ": " + t, "seq seconds", rows);
  int mem_index = 0;
  for (int m : {4, 16, 32, 64, 128}) {
    if (m == mem) break;
    ++mem_index;
  }
  p.plots += std::string(p.plots.empty() ? "plot " : ", \\\n     ") + "DAT index " +
             std::to_string(idx) + " using 1:2 with linespoints " +
             alloc_style(variant, mem_index) + " title " + gp::quote(t);
  // The memory size at the end of each line, so that lines stay named printed in grey.
  p.ends.push_back({rows.back()[0], rows.back()[1], mem});
  for (const auto& r : rows) {
    p.ymin = std::min(p.ymin, r[1]);
    p.ymax = std::max(p.ymax, r[1]);
  }
}

// Adds every line of `series` to panel p: the sorted variant's, then the parallel one's.
void add_alloc_lines(Figure& f, AllocPanel& p, const AllocSeries& series,
                     const std::string& source) {
  for (const char* variant : {"sorted", "parallel"})
    for (const auto& [key, pts] : series)
      if (key.first == variant) add_alloc_line(f, p, variant, key.second, pts, source);
}

// The thesis's panel (Table 4.14).
AllocPanel thesis_alloc_panel(Figure& f, const ThesisAllocation& thesis) {
  AllocPanel p;
  p.title = "Thesis Table 4.14 (TensorFlow, Tesla T4)";
  p.ylabel = "seconds for 100 repetitions";
  add_alloc_lines(f, p, thesis.series, "thesis");
  return p;
}

// (variant, N) -> seq -> seconds of a benchmark's rows; forward pass only (the thesis times
// the allocation itself), sorted and parallel only (the thesis's two mechanisms).
AllocSeries bench_alloc_series(const json& rows) {
  AllocSeries series;
  for (const json& row : rows) {
    const std::string variant = as_text(child(row, "variant"));
    const std::string pass = as_text(child(row, "pass"));
    if ((variant != "sorted" && variant != "parallel") || (!pass.empty() && pass != "forward"))
      continue;
    const auto mem = number(child(row, "mem"));
    const auto seq = number(child(row, "seq"));
    auto sec = number(child(row, "seconds"));
    if (!sec) sec = number(child(row, "wall_seconds"));
    if (mem && seq && sec) series[{variant, static_cast<int>(*mem)}][*seq] = *sec;
  }
  return series;
}

// The panel of one allocation benchmark file; without plots when it has no forward-pass
// rows of the sorted or parallel variant.
AllocPanel bench_alloc_panel(Figure& f, const BenchFile& b) {
  AllocPanel p;
  const json* rows = child(b.json, "rows");
  if (!rows || !rows->is_array()) return p;
  const AllocSeries series = bench_alloc_series(*rows);
  std::string caption = "This harness (" + bench_caption(b);
  if (const auto batch = number(child(b.json, "batch"))) caption += ", batch " + gp::num(*batch);
  // Two panels of this harness (e.g. the main job's full grid and a sweep's run) are told
  // apart by their source: the sweep and cell of a run, else the file's name.
  const std::string sweep = b.run.is_object() ? as_text(child(b.run, "sweep")) : std::string();
  caption += "; " + (sweep.empty() ? b.path.filename().string()
                                   : "sweep " + sweep + " " + as_text(child(b.run, "cell")));
  p.title = caption + ")";
  p.ylabel = "seconds per call (median)";
  add_alloc_lines(f, p, series, b.path.filename().string());
  return p;
}

Figure fig_4_9(const ReportInputs& in) {
  const std::string id = "fig4.9",
                    title = "Fig. 4.9: allocation time against sequence length, per memory size";
  auto benches = benches_of(in, "allocation");
  if (benches.empty()) return missing_figure(id, title, no_benchmark("allocation"));
  if (benches.size() > 3) benches.resize(3);
  Figure f{.id = id, .title = title};
  const ThesisAllocation thesis = thesis_allocation();
  f.header =
      "# Columns: sequence length (memories allocated one after another), seconds.\n"
      "# Thesis blocks: seconds for 100 repetitions (TensorFlow, Tesla T4, Table 4.14).\n"
      "# Our blocks: median seconds per call, forward pass, batch as in the benchmark file.\n";
  std::vector<AllocPanel> panels;
  if (thesis.error.empty() && !thesis.series.empty()) {
    AllocPanel p = thesis_alloc_panel(f, thesis);
    if (!p.plots.empty()) panels.push_back(p);
  }
  std::vector<const BenchFile*> used;
  for (const BenchFile* b : benches) {
    AllocPanel p = bench_alloc_panel(f, *b);
    if (!p.plots.empty()) {
      panels.push_back(p);
      used.push_back(b);
    }
  }
  if (used.empty())
    return missing_figure(id, title,
                          "the allocation benchmark JSON has no forward-pass rows of the sorted or "
                          "parallel variant");
  f.styles = 0;
  f.width = 560 * static_cast<int>(panels.size());
  f.height = 720;
  std::string body = std::string(kAxes);
  body += "set multiplot layout 1," + std::to_string(panels.size()) + " title " +
          gp::quote("Allocation: sorted (diamonds, solid) vs parallel (circles, dashed)") + "\n";
  body +=
      "set logscale xy\nset xrange [0.7:5000]\nset xlabel \"sequence length\"\n"
      "set format y \"%g\"\nset key below maxcols 2 nobox font \",10\" spacing 1\n";
  for (const AllocPanel& p : panels) {
    body += "unset label\n" + plot_title(p.title) + "set ylabel " + gp::quote(p.ylabel) + "\n" +
            p.labels() + p.plots + "\n";
  }
  body += "unset multiplot\n";
  f.body = body;
  f.provenance = benches_provenance(used);
  f.provenance["thesis"] = thesis.error.empty()
                               ? "Table 4.14 (reports/paper/table_4_14_allocation.csv)"
                               : "not shown: " + thesis.error;
  return f;
}

// One panel of Fig. 4.11: a box per model of one document shape.
struct IterationPanel {
  std::string title, tics, plots;
};

// A benchmark file's iteration times, and the shapes' tokens where the file gives them.
struct IterationTimes {
  // shape -> (model label -> times); labels keep the benchmark's row order per shape.
  std::map<std::string, std::vector<std::pair<std::string, std::vector<double>>>> shapes;
  std::map<std::string, double> tokens;  // shape -> tokens
};

IterationTimes iteration_times(const json& rows) {
  IterationTimes it;
  std::map<std::string, std::set<std::string>> allocs_of_model;
  for (const json& row : rows)
    allocs_of_model[as_text(child(row, "model"))].insert(as_text(child(row, "alloc")));
  for (const json& row : rows) {
    const json* times = child(row, "times_s");
    if (!times || !times->is_array()) continue;
    std::vector<double> v;
    for (const json& t : *times)
      if (const auto x = number(&t)) v.push_back(*x);
    if (v.empty()) continue;
    const std::string model = as_text(child(row, "model"));
    const std::string alloc = as_text(child(row, "alloc"));
    std::string label = model;
    if (allocs_of_model[model].size() > 1 && !alloc.empty()) label += " (" + alloc + ")";
    const std::string shape = as_text(child(row, "shape"));
    if (const auto t = number(child(row, "tokens"))) it.tokens[shape] = *t;
    it.shapes[shape].push_back({label, std::move(v)});
  }
  return it;
}

// The shapes in panel order: shorter documents first (thesis: SemEval, then BioCreative).
std::vector<std::string> iteration_shape_order(const IterationTimes& it) {
  std::vector<std::string> shape_order;
  for (const auto& [shape, models] : it.shapes) shape_order.push_back(shape);
  std::stable_sort(shape_order.begin(), shape_order.end(),
                   [&](const std::string& a, const std::string& b) {
                     const double ta = it.tokens.count(a) ? it.tokens.at(a) : 0;
                     const double tb = it.tokens.count(b) ? it.tokens.at(b) : 0;
                     return ta < tb;
                   });
  return shape_order;
}

// One model's box at x: x, first quartile, whiskers, third quartile, median, mean and
// iterations; its times beyond the whiskers are added to `outliers` as (x, seconds).
std::vector<double> iteration_box(std::vector<double> v, double x,
                                  std::vector<std::vector<double>>& outliers) {
  std::sort(v.begin(), v.end());
  const double q1 = quantile(v, 0.25), q3 = quantile(v, 0.75), med = quantile(v, 0.5);
  const double lo_fence = q1 - 1.5 * (q3 - q1), hi_fence = q3 + 1.5 * (q3 - q1);
  double wlo = q1, whi = q3;
  for (double t : v) {
    if (t >= lo_fence) wlo = std::min(wlo, t);
    if (t <= hi_fence) whi = std::max(whi, t);
    if (t < lo_fence || t > hi_fence) outliers.push_back({x, t});
  }
  return {x, q1, wlo, whi, q3, med, summarize(v).mean, static_cast<double>(v.size())};
}

// The panel of one shape of benchmark file b (its boxes and outliers added to f.dat).
IterationPanel iteration_panel(Figure& f, const BenchFile& b, const IterationTimes& it,
                               const std::string& shape) {
  const auto& models = it.shapes.at(shape);
  IterationPanel p;
  p.title = (shape.empty() ? std::string("iteration") : shape) +
            (it.tokens.count(shape) ? ", " + gp::num(it.tokens.at(shape)) + " tokens" : "") + " (" +
            bench_caption(b) + ")";
  std::vector<std::vector<double>> boxes, outliers;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const double x = static_cast<double>(i + 1);
    boxes.push_back(iteration_box(models[i].second, x, outliers));
    p.tics += (p.tics.empty() ? "" : ", ") + gp::quote(models[i].first) + " " + gp::num(x);
  }
  const int bi =
      f.dat.add(p.title + ": boxes", "x q1 whisker_low whisker_high q3 median mean n", boxes);
  p.plots = "plot DAT index " + std::to_string(bi) +
            " using 1:2:3:4:5 with candlesticks whiskerbars 0.5 lc rgb \"#000000\" lw 1.5 "
            "fs solid 0.25 title \"quartiles, whiskers 1.5 IQR\", \\\n     DAT index " +
            std::to_string(bi) +
            " using 1:6:6:6:6 with candlesticks lc rgb \"#000000\" lw 3 title \"median\", "
            "\\\n     DAT index " +
            std::to_string(bi) +
            " using 1:7 with points pt 13 ps 1.5 lc rgb \"#D55E00\" title \"mean\"";
  if (!outliers.empty()) {
    const int oi = f.dat.add(p.title + ": outliers", "x seconds", outliers);
    p.plots += ", \\\n     DAT index " + std::to_string(oi) +
               " using 1:2 with points pt 6 ps 1.2 lc rgb \"#000000\" title \"outliers\"";
  }
  p.tics = "set xtics (" + p.tics +
           ")\nset xrange [0.4:" + gp::num(static_cast<double>(models.size()) + 0.6) + "]\n";
  return p;
}

Figure fig_4_11(const ReportInputs& in) {
  const std::string id = "fig4.11",
                    title = "Fig. 4.11: seconds per training iteration per model configuration";
  auto benches = benches_of(in, "iteration");
  if (benches.empty()) return missing_figure(id, title, no_benchmark("iteration"));
  Figure f{
      .id = id,
      .title = title,
      .header =
          "# Box blocks: x, first quartile, lower whisker, upper whisker, third quartile, median, "
          "mean, iterations (quartiles: linear interpolation, R type 7; whiskers: the most extreme "
          "times within 1.5 IQR of the box).\n# Outlier blocks: x, seconds.\n"};
  std::vector<IterationPanel> panels;
  std::vector<const BenchFile*> used;
  for (const BenchFile* b : benches) {
    const json* rows = child(b->json, "rows");
    if (!rows || !rows->is_array()) continue;
    const IterationTimes times = iteration_times(*rows);
    for (const std::string& shape : iteration_shape_order(times))
      panels.push_back(iteration_panel(f, *b, times, shape));
    if (!times.shapes.empty()) used.push_back(b);
  }
  if (panels.empty())
    return missing_figure(id, title, "the iteration benchmark JSON has no rows with times_s");
  constexpr std::size_t kMaxPanels = 4;
  if (panels.size() > kMaxPanels) panels.resize(kMaxPanels);
  f.width = 520 * static_cast<int>(panels.size());
  f.height = 520;
  std::string body = std::string(kAxes) +
                     "set boxwidth 0.5\nset yrange [0:*]\n"
                     "set ylabel \"seconds per iteration\"\n"
                     "set key below horizontal nobox font \",10\"\n";
  if (panels.size() > 1)
    body += "set multiplot layout 1," + std::to_string(panels.size()) + " title " +
            gp::quote("Seconds per training iteration") + "\n";
  for (const IterationPanel& p : panels) body += plot_title(p.title) + p.tics + p.plots + "\n";
  if (panels.size() > 1) body += "unset multiplot\n";
  f.body = body;
  f.provenance = benches_provenance(used);
  return f;
}

// ---------------------------------------------------------------- corpus statistics

using Distribution = std::vector<std::pair<double, double>>;  // (value, count)

// A list of values, an object {"value": count}, or {"edges": [...], "counts": [...]}.
std::optional<Distribution> read_distribution(const json* j) {
  if (!j) return std::nullopt;
  Distribution d;
  if (j->is_array()) {
    for (const json& v : *j)
      if (const auto x = number(&v)) d.push_back({*x, 1.0});
  } else if (j->is_object()) {
    const json* edges = child(*j, "edges");
    const json* counts = child(*j, "counts");
    if (edges && counts && edges->is_array() && counts->is_array()) {
      for (std::size_t i = 0; i + 1 < edges->size() && i < counts->size(); ++i) {
        const auto lo = number(&(*edges)[i]), hi = number(&(*edges)[i + 1]);
        const auto c = number(&(*counts)[i]);
        if (lo && hi && c) d.push_back({(*lo + *hi) / 2, *c});
      }
    } else {
      for (const auto& [key, v] : j->items()) {
        const auto c = number(&v);
        char* end = nullptr;
        const double x = std::strtod(key.c_str(), &end);
        if (c && end && *end == '\0' && end != key.c_str()) d.push_back({x, *c});
      }
    }
  }
  if (d.empty()) return std::nullopt;
  return d;
}

struct SplitDistribution {
  std::string corpus, split;
  Distribution values;
};

int split_rank(const std::string& s) {
  if (s == "train") return 0;
  if (s == "valid" || s == "dev" || s == "validation") return 1;
  if (s == "test") return 2;
  return 3;
}

using Key = std::vector<std::string>;  // a path of object keys

// "synth-ctd" of "synth-ctd:/data/synth-ctd"; "bran-tsv:ctd" of "bran-tsv:/data/ctd".
std::string corpus_name(const CorpusStats& c) {
  for (const char* key : {"corpus", "name"})
    if (std::string n = as_text(child(c.json, key)); !n.empty()) return n;
  const std::string source = as_text(child(c.json, "source"));
  if (source.empty()) return c.path.stem().string();
  const std::size_t colon = source.find(':');
  if (colon == std::string::npos) return source;
  const std::string kind = source.substr(0, colon);
  fs::path dir = fs::path(source.substr(colon + 1)).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  const std::string base = dir.filename().string();
  return base.empty() || base == kind ? kind : kind + ":" + base;
}

// The distributions of one field (first of `keys` present) per corpus and split, splits in
// the file's "split_order" (else train, valid, test, others by name).
// Only the corpora `keep` accepts, when it is given.
std::vector<SplitDistribution> corpus_distributions(
    const ReportInputs& in, const std::vector<Key>& keys,
    const std::function<bool(const CorpusStats&)>& keep = nullptr) {
  std::vector<std::pair<std::tuple<std::string, int, std::string>, SplitDistribution>> found;
  for (const auto& c : in.corpora) {
    if (keep && !keep(c)) continue;
    const std::string name = corpus_name(c);
    std::vector<std::string> order;
    if (const json* o = child(c.json, "split_order"); o && o->is_array())
      for (const json& s : *o) order.push_back(as_text(&s));
    auto rank = [&](const std::string& split) {
      const auto it = std::find(order.begin(), order.end(), split);
      return it != order.end() ? static_cast<int>(it - order.begin()) : 100 + split_rank(split);
    };
    std::vector<std::pair<std::string, const json*>> splits;
    if (const json* s = child(c.json, "splits")) {
      if (s->is_object())
        for (const auto& [k, v] : s->items()) splits.push_back({k, &v});
      else if (s->is_array())
        for (const json& v : *s) {
          std::string k = as_text(child(v, "split"));
          if (k.empty()) k = as_text(child(v, "name"));
          splits.push_back({k, &v});
        }
    } else {
      splits.push_back({"", &c.json});  // one unsplit corpus
    }
    for (const auto& [split, j] : splits)
      for (const Key& key : keys) {
        const json* v = j;
        for (const auto& k : key) v = v ? child(*v, k) : nullptr;
        if (auto d = read_distribution(v)) {
          found.push_back({{name, rank(split), split}, {name, split, std::move(*d)}});
          break;
        }
      }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SplitDistribution> out;
  for (auto& [key, d] : found) out.push_back(std::move(d));
  return out;
}

// A 1-2-5 bin width giving at most `max_bins` bins over [lo, hi].
double bin_width(double lo, double hi, int max_bins) {
  const double span = std::max(hi - lo, 1.0);
  for (double decade = 1;; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (span / (m * decade) <= max_bins) return m * decade;
}

// The corpora a thesis figure is about: Fig. 4.4 plots CTD (BRAN's TSV format; here the
// synthetic synth-ctd, CTD itself is not available offline), Fig. 4.10 the two real corpora
// (BioCreative V CDR and SemEval 2018, as shipped). A figure shows those of them among the
// inputs, or every corpus when none of them is there.
bool is_ctd(const CorpusStats& c) {
  const std::string kind = as_text(child(c.json, "kind"));
  return kind == "bran-tsv" || corpus_name(c).find("ctd") != std::string::npos;
}
bool is_release(const CorpusStats& c) {
  const std::string kind = as_text(child(c.json, "kind"));
  return kind == "cdr" || kind == "semeval2018";
}

// One histogram per corpus and split; with `merge_splits` (and more than one corpus) one
// per corpus, its splits together.
Figure fig_histogram(const ReportInputs& in, const std::string& id, const std::string& title,
                     const std::vector<Key>& keys, const std::string& what,
                     const std::string& xlabel, bool fractions,
                     const std::function<bool(const CorpusStats&)>& about, bool merge_splits) {
  auto dists = corpus_distributions(in, keys, about);
  if (dists.empty()) dists = corpus_distributions(in, keys);
  if (merge_splits) {
    std::set<std::string> names;
    for (const auto& d : dists) names.insert(d.corpus);
    if (names.size() > 1) {
      std::vector<SplitDistribution> merged;
      for (auto& d : dists) {
        if (merged.empty() || merged.back().corpus != d.corpus)
          merged.push_back({d.corpus, "", {}});
        // (value, count) pairs: the binning below adds repeated values up.
        Distribution& into = merged.back().values;
        into.insert(into.end(), d.values.begin(), d.values.end());
      }
      dists = std::move(merged);
    }
  }
  if (dists.empty())
    return missing_figure(
        id, title,
        in.corpora.empty()
            ? "no corpus statistics (`mare data stats --json`) among the inputs"
            : "the corpus statistics have no \"" + keys.front().back() + "\" in any split");
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& d : dists)
    for (const auto& [x, c] : d.values) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  const double w = bin_width(std::min(lo, 0.0), hi, 40);
  const double start = std::floor(std::min(lo, 0.0) / w) * w;
  const auto bins = static_cast<std::size_t>(std::floor((hi - start) / w)) + 1;
  Figure f{.id = id, .title = title};
  f.header = "# Columns: bin centre (" + xlabel + "; bins of width " + gp::num(w) + " from " +
             gp::num(start) + ", lower edge included), " +
             (fractions ? "fraction of the split's " + what : "number of " + what) + "\n";
  std::set<std::string> corpora;
  for (const auto& d : dists) corpora.insert(d.corpus);
  std::string plots;
  int k = 0;
  for (const auto& d : dists) {
    std::vector<double> counts(bins, 0.0);
    double total = 0, sum = 0;
    for (const auto& [x, c] : d.values) {
      const auto b = static_cast<std::size_t>(std::floor((x - start) / w));
      counts[std::min(b, bins - 1)] += c;
      total += c;
      sum += x * c;
    }
    if (total <= 0) continue;
    std::vector<std::vector<double>> rows;
    for (std::size_t b = 0; b < bins; ++b)
      rows.push_back(
          {start + (static_cast<double>(b) + 0.5) * w, fractions ? counts[b] / total : counts[b]});
    std::string name = corpora.size() > 1 || d.split.empty() ? d.corpus : "";
    if (!d.split.empty()) name += (name.empty() ? "" : " ") + d.split;
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.1f", sum / total);
    const std::string t = name + " (" + gp::num(total) + " " + what + ", mean " + mean + ")";
    const int idx = f.dat.add(t, fractions ? "bin_centre fraction" : "bin_centre count", rows);
    ++k;
    plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + "DAT index " +
             std::to_string(idx) + " using 1:2 with histeps ls " + std::to_string(k) + " title " +
             gp::quote(t);
  }
  if (k == 0) return missing_figure(id, title, "the corpus statistics' " + what + " are empty");
  f.styles = k;
  f.width = 900;
  f.height = 520 + 22 * ((k + 1) / 2);
  std::string heading = corpora.size() == 1 ? *corpora.begin() : "";
  f.body = std::string(kAxes) +
           plot_title(title.substr(title.find(':') + 2) +
                      (heading.empty() ? "" : " (" + heading + ")")) +
           "set xlabel " + gp::quote(xlabel) + "\nset ylabel " +
           gp::quote(fractions ? "fraction of " + what : "number of " + what) +
           "\nset yrange [0:*]\n" +
           // Below the plot, never over the bars (a key inside could cover a tall one).
           "set key below maxcols 2 nobox font \",10\"\n" + plots + "\n";
  // As the tables': the corpora by name, the files they were read from.
  std::set<std::string> names, sources;
  for (const auto& c : in.corpora)
    if (corpora.count(corpus_name(c))) {
      names.insert(corpus_name(c));
      sources.insert(c.path.string());
    }
  f.provenance["corpora"] = names;
  f.provenance["sources"] = sources;
  f.provenance["bin_width"] = w;
  return f;
}

// ---------------------------------------------------------------- memory heatmaps

// ---------------------------------------------------------------- fig 4.2: memory per token

// A number matrix of memory.json ([a][b] of numbers, or [a] of numbers as one column).
std::vector<std::vector<double>> matrix_of(const json* j) {
  std::vector<std::vector<double>> m;
  if (!j || !j->is_array()) return m;
  for (const json& row : *j) {
    if (row.is_array()) {
      std::vector<double> r;
      for (const json& v : row) r.push_back(number(&v).value_or(std::nan("")));
      m.push_back(std::move(r));
    } else {
      m.push_back({number(&row).value_or(std::nan(""))});
    }
  }
  return m;
}

// The inspection the figure shows: the first by directory with steps in its memory.json.
const Inspection* memory_inspection(const ReportInputs& in) {
  const Inspection* insp = nullptr;
  for (const auto& i : in.inspections) {
    const json* steps = child(i.json, "steps");
    if (steps && steps->is_array() && !steps->empty() && (!insp || i.dir < insp->dir)) insp = &i;
  }
  return insp;
}

// The tokens the figure shows: the one the memory writes most to and the one it writes
// least to; none when memory.json has no write weights.
std::vector<std::size_t> memory_tokens(const json& steps, const std::vector<std::string>& tokens) {
  // Tokens by write mass over the iterations (padding beyond the document's tokens excluded).
  std::vector<double> mass;
  for (const json& st : steps) {
    const auto w = matrix_of(child(st, "write_weights"));
    if (mass.size() < w.size()) mass.resize(w.size(), 0.0);
    for (std::size_t i = 0; i < w.size(); ++i)
      for (double v : w[i])
        if (std::isfinite(v)) mass[i] += v;
  }
  if (!tokens.empty() && mass.size() > tokens.size()) mass.resize(tokens.size());
  if (mass.empty()) return {};
  std::size_t most = 0, least = 0;
  for (std::size_t i = 1; i < mass.size(); ++i) {
    if (mass[i] > mass[most]) most = i;
    if (mass[i] < mass[least]) least = i;
  }
  std::vector<std::size_t> chosen = {most};
  if (least != most) chosen.push_back(least);
  return chosen;
}

// A per-token field of memory.json's steps, as its panels draw it.
struct MemoryField {
  const char* key;
  const char* label;
  bool transpose;  // rows of the JSON go across (x) instead of up (y)
  bool signed_values;
};

// Slots up the y axis in every panel but V(t) (heads up, word across).
const MemoryField kMemoryFields[] = {{"usage", "u(t)", false, false},
                                     {"memory", "M(t)", false, true},
                                     {"write_weights", "w^w(t)", false, false},
                                     {"read_weights", "w^r(t)", true, false},
                                     {"read_vectors", "V(t)", false, true}};

// The largest magnitude in the signed fields (memory, read vectors) of the chosen tokens,
// 1 when there is none: the ends of their colour scale.
double memory_signed_max(const json& steps, const std::vector<std::size_t>& chosen) {
  double signed_max = 0;
  for (std::size_t i : chosen)
    for (const json& st : steps)
      for (const MemoryField& fd : kMemoryFields)
        if (fd.signed_values) {
          const json* per_token = child(st, fd.key);
          if (!per_token || !per_token->is_array() || i >= per_token->size()) continue;
          for (const auto& row : matrix_of(&(*per_token)[i]))
            for (double v : row)
              if (std::isfinite(v)) signed_max = std::max(signed_max, std::abs(v));
        }
  if (signed_max == 0) signed_max = 1;
  return signed_max;
}

// Token i's field at one iteration as (x, y, value) points, sorted by y then x; none when
// the step has no such field for the token.
std::vector<std::vector<double>> memory_points(const json& step, const MemoryField& fd,
                                               std::size_t i) {
  const json* per_token = child(step, fd.key);
  std::vector<std::vector<double>> m;
  if (per_token && per_token->is_array() && i < per_token->size()) m = matrix_of(&(*per_token)[i]);
  // Rows of the JSON matrix are y (slots), columns x; read weights [head][slot] turn.
  std::vector<std::vector<double>> pts;
  for (std::size_t r = 0; r < m.size(); ++r)
    for (std::size_t q = 0; q < m[r].size(); ++q) {
      const double x = static_cast<double>(fd.transpose ? r : q) + 1;
      const double y = static_cast<double>(fd.transpose ? q : r) + 1;
      pts.push_back({x, y, m[r][q]});
    }
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
    return std::tie(a[1], a[0]) < std::tie(b[1], b[0]);
  });
  return pts;
}

// The gnuplot of one panel, token i ('tok') at iteration k + 1 (its points added to f.dat);
// an empty slot of the layout when there are no points.
std::string memory_panel(Figure& f, const std::vector<std::vector<double>>& pts,
                         const MemoryField& fd, std::size_t i, const std::string& tok,
                         std::size_t k, bool first_column, double signed_max) {
  double max_x = 1, max_y = 1;
  for (const auto& p : pts) {
    max_x = std::max(max_x, p[0]);
    max_y = std::max(max_y, p[1]);
  }
  const std::string label =
      std::string(fd.label).replace(std::string(fd.label).find('t'), 1, std::to_string(k + 1));
  std::string body = "set title " + gp::quote(label) + " offset 0,-0.6 font \",10\"\n";
  body += first_column ? "set ylabel " + gp::quote("'" + tok + "' t=" + std::to_string(k + 1)) +
                             " font \",10\"\n"
                       : "unset ylabel\n";
  if (pts.empty()) return body + "set multiplot next\n";
  const int idx = f.dat.add("token " + std::to_string(i) + " '" + tok + "', iteration " +
                                std::to_string(k + 1) + ", " + fd.key,
                            "x y value", pts);
  body += fd.signed_values ? "set palette defined (-1 \"#2166ac\", 0 \"white\", 1 \"#b2182b\")\n"
                             "set cbrange [" +
                                 gp::num(-signed_max) + ":" + gp::num(signed_max) + "]\n"
                           : std::string(
                                 "set palette defined (0 \"white\", 1 \"black\")\n"
                                 "set cbrange [0:1]\n");
  // Boxes, not `with image`: a one-column field (usage) has no pixel width for image.
  body += "set xrange [0.5:" + gp::num(max_x + 0.5) + "]\nset yrange [0.5:" + gp::num(max_y + 0.5) +
          "]\nplot DAT index " + std::to_string(idx) +
          " using 1:2:(0.5):(0.5):3 with boxxyerror fc palette fs solid 1.0 noborder "
          "notitle\n";
  return body;
}

// Thesis Fig. 4.2 from memory.json: for two tokens of the inspected document (the one the
// memory writes most to, summed over iterations, and the one it writes least to), a row per
// iteration with usage u(t), memory M(t), write weights w^w(t), read weights w^r(t) and read
// vectors V(t). (The thesis's M(t-1) is the row above.)
Figure fig_4_2(const ReportInputs& in) {
  const std::string id = "fig4.2",
                    title = "Fig. 4.2: the NTCRE memory, iteration by iteration, for two tokens";
  const Inspection* insp = memory_inspection(in);
  if (!insp)
    return missing_figure(id, title,
                          in.inspections.empty()
                              ? "no `mare inspect memory` output directory among the inputs"
                              : "the inspections' memory.json have no steps");
  const json& steps = insp->json.at("steps");
  std::vector<std::string> tokens;
  if (const json* t = at(insp->json, {"document", "tokens"}); t && t->is_array())
    for (const json& x : *t) tokens.push_back(as_text(&x));
  const std::vector<std::size_t> chosen = memory_tokens(steps, tokens);
  if (chosen.empty()) return missing_figure(id, title, "memory.json has no write_weights");
  Figure f{
      .id = id,
      .title = title,
      .header =
          "# One block per panel (token, iteration, field): x, y, value on a regular grid. Slots "
          "are y for usage (x 1), memory (x word), write weights (x 1) and read weights (x head); "
          "read vectors have heads as y and the word as x.\n"};
  const double signed_max = memory_signed_max(steps, chosen);
  const std::size_t rows = chosen.size() * steps.size(), cols = std::size(kMemoryFields);
  std::string body =
      "set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " title " +
      gp::quote("NTCRE memory, " + insp->dir.filename().string() +
                ". Weights: 0 white, 1 black. Memory, read vectors: blue < 0 < red (|max| " +
                gp::num(std::round(signed_max * 1000) / 1000) + ")") +
      " font \",11\"\n"
      "unset colorbox\nset tics scale 0\nunset xtics\nunset ytics\nset border lw 0.5\n"
      "set lmargin 6\nset rmargin 1\nset tmargin 2\nset bmargin 0.5\n";
  int panels = 0;
  for (std::size_t i : chosen) {
    const std::string tok = i < tokens.size() ? tokens[i] : "#" + std::to_string(i);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      for (std::size_t c = 0; c < cols; ++c) {
        const auto pts = memory_points(steps[k], kMemoryFields[c], i);
        body += memory_panel(f, pts, kMemoryFields[c], i, tok, k, c == 0, signed_max);
        if (!pts.empty()) ++panels;
      }
    }
  }
  body += "unset multiplot\n";
  if (panels == 0) return missing_figure(id, title, "memory.json has no per-token fields");
  f.body = body;
  f.width = 900;
  f.height = static_cast<int>(rows) * 120 + 60;
  f.provenance["sources"] = json::array({insp->dir.string()});
  json toks = json::array();
  for (std::size_t i : chosen)
    toks.push_back({{"index", i}, {"token", i < tokens.size() ? tokens[i] : ""}});
  f.provenance["tokens"] = toks;
  f.provenance["selection"] = "the tokens with the largest and smallest write-weight mass";
  return f;
}

// Copies the heatmaps `mare inspect memory` drew (heatmap_<field>.{png,svg}: every token of
// the document across, one panel per iteration: thesis Fig. 4.3).
Artifact fig_heatmaps(const ReportInputs& in, const fs::path& out_dir, const std::string& id,
                      const std::string& title) {
  Artifact a;
  a.id = id;
  a.title = title;
  const fs::path figs = out_dir / "figures";
  // Remove what an earlier report in this directory copied, so the list matches the inputs.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(figs, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(id + "-", 0) == 0) remove_quietly(e.path());
  }
  std::vector<Inspection> sorted = in.inspections;
  std::sort(sorted.begin(), sorted.end(),
            [](const Inspection& x, const Inspection& y) { return x.dir < y.dir; });
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(sorted[i].dir, ec)) {
      const std::string name = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      if (name.rfind("heatmap_", 0) == 0 && (ext == ".png" || ext == ".svg"))
        files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& src : files) {
      // One inspection keeps the source names; several are told apart by their index.
      const std::string name = id + "-" + (sorted.size() > 1 ? std::to_string(i + 1) + "-" : "") +
                               src.filename().string();
      fs::copy_file(src, figs / name, fs::copy_options::overwrite_existing, ec);
      if (ec)
        throw std::runtime_error((figs / name).string() + ": cannot copy " + src.string() + ": " +
                                 ec.message());
      a.files.push_back(fs::path("figures") / name);
    }
    if (!files.empty()) sources.push_back(sorted[i].dir.string());
  }
  if (a.files.empty())
    a.missing = in.inspections.empty()
                    ? "no `mare inspect memory` output directory among the inputs"
                    : "the inspection directories have no heatmap_*.png/svg (written without "
                      "gnuplot, or with --no-plots)";
  a.provenance["sources"] = sources;
  return a;
}

}  // namespace

// ---------------------------------------------------------------- learning curves

// The relation tables whose runs get a learning-curve figure, in thesis order.
struct CurveTable {
  const char* id;
  const char* table;
  const char* what;
};
constexpr CurveTable kCurveTables[] = {
    {"curves4.5", "4.5", "CDR models"},
    {"curves4.6", "4.6", "the CDR ablation grid"},
    {"curves4.10", "4.10", "CTD models"},
    {"curves4.12", "4.12", "SemEval models"},
    {"curves4.13", "4.13", "SemEval embedding initialisations"},
    {"curves", "", "runs of no thesis table, e.g. reports/learning/"}};

// Validation F1 (solid) and the training sample's F1 (dashed, same colour) against the
// training step, per cell: the mean over its seeds, with a band from the lowest to the
// highest seed under the validation line. At most four cells a panel, so that each panel
// holds a handful of lines.
// The finished runs of a curves table with a valid_f1 series.
std::vector<const RunRecord*> curve_runs(const ReportInputs& in, const std::string& table) {
  std::vector<const RunRecord*> runs;
  for (const auto& r : in.runs) {
    if (!run_usable(r) || r.table != table) continue;
    bool has = false;
    for (const json& m : r.metrics) has = has || number(child(m, "valid_f1")).has_value();
    if (has) runs.push_back(&r);
  }
  return runs;
}

// One series of a group's runs: per step, the mean over the seeds that evaluated at it,
// the lowest, the highest and how many.
std::vector<std::vector<double>> curve_series(const std::vector<const RunRecord*>& rs,
                                              const char* key) {
  std::map<double, std::vector<double>> by_step;
  for (const RunRecord* r : rs)
    for (const json& m : r->metrics) {
      const auto step = number(child(m, "step"));
      const auto v = number(child(m, key));
      if (step && v) by_step[*step].push_back(*v);
    }
  std::vector<std::vector<double>> rows;
  for (const auto& [step, v] : by_step) {
    const Summary sm = summarize(v);
    rows.push_back({step, sm.mean, *std::min_element(v.begin(), v.end()),
                    *std::max_element(v.begin(), v.end()), static_cast<double>(sm.n)});
  }
  return rows;
}

// How the groups fall into panels, and each panel's heading.
struct CurvePanels {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;  // [first, last) groups
  std::vector<std::string> heads;
  bool mixed = false;  // more than one sweep or corpus: titles name them, keys the cells
};

CurvePanels curve_panels(const std::vector<Group>& groups) {
  // Panels: a run of groups of one sweep and corpus (sorted so above) is split
  // into panels of at most four cells; a panel never mixes sweeps or corpora. With more
  // than one such run, each panel's title names its sweep and corpus and the keys name
  // the cells alone.
  CurvePanels cp;
  for (std::size_t b = 0; b < groups.size();) {
    std::size_t e = b;
    while (e < groups.size() && groups[e].sweep == groups[b].sweep &&
           groups[e].dataset == groups[b].dataset)
      ++e;
    cp.mixed = cp.mixed || b > 0;
    const auto local = panel_ranges(e - b, 4);
    for (const auto& [first, last] : local) {
      cp.ranges.emplace_back(b + first, b + last);
      std::string head = groups[b].sweep;
      if (!groups[b].dataset.empty()) head += (head.empty() ? "" : " on ") + groups[b].dataset;
      if (local.size() > 1) head += " (" + panel_cells(first + 1, last) + ")";
      cp.heads.push_back(head);
    }
    b = e;
  }
  return cp;
}

// The gnuplot of panel p (its data added to f.dat); a panel without series gets its label only.
std::string curve_panel(Figure& f, const std::vector<Group>& groups, const CurvePanels& cp,
                        std::size_t p, int& style, double right) {
  const std::size_t panels = cp.ranges.size();
  std::string plots;
  int entries = 0;
  // The score the panel's runs were selected on: the task's own on the real corpora.
  const std::string family = groups[cp.ranges[p].first].dataset;
  std::string body = "set ylabel " +
                     gp::quote(family == "cdr"           ? "F1 (official: document-level triples)"
                               : family == "semeval2018" ? "macro F1 (official)"
                                                         : "relation F1 (micro)") +
                     "\n";
  for (std::size_t k = cp.ranges[p].first; k < cp.ranges[p].second; ++k) {
    const Group& g = groups[k];
    const int ls = ++style;
    const std::string seeds =
        " (" + std::to_string(g.runs.size()) + (g.runs.size() == 1 ? " seed)" : " seeds)");
    const auto valid = curve_series(g.runs, "valid_f1"), train = curve_series(g.runs, "train_f1");
    if (!valid.empty()) {
      const std::string sel =
          "DAT index " + std::to_string(f.dat.add(g.display + ": valid_f1",
                                                  "step f1_mean f1_min f1_max n", valid));
      plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + sel +
               " using 1:3:4 with filledcurves ls " + std::to_string(ls) +
               " fs transparent solid 0.15 noborder notitle, \\\n     " + sel +
               " using 1:2 with linespoints ls " + std::to_string(ls) + " dt 1 title " +
               gp::quote((cp.mixed ? g.label : g.display) + seeds);
      ++entries;
    }
    if (!train.empty()) {
      const std::string sel =
          "DAT index " + std::to_string(f.dat.add(g.display + ": train_f1",
                                                  "step f1_mean f1_min f1_max n", train));
      // The same colour, dashed: one key entry a cell (the panel's title says which is which).
      plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + sel +
               " using 1:2 with lines ls " + std::to_string(ls) + " dt 2 notitle";
    }
  }
  if (plots.empty()) return body;  // the y label only, as a panel without series had
  // The corpus's trivial baseline (result.json's every-pair F1 on test), one line a panel.
  for (std::size_t k = cp.ranges[p].first; k < cp.ranges[p].second; ++k) {
    const RunRecord* r = groups[k].runs.front();
    const auto it = r->values.find("test_references.constant_positive_f1");
    if (it == r->values.end() || !std::isfinite(it->second)) continue;
    plots += ", \\\n     " + gp::num(it->second) +
             " with lines lc rgb \"#808080\" dt 3 lw 1.5 title \"every pair (test)\"";
    ++entries;
    break;
  }
  body +=
      plot_title(cp.mixed
                     ? cp.heads[p]
                     : (panels > 1 ? panel_cells(cp.ranges[p].first + 1, cp.ranges[p].second) + ": "
                                   : std::string()) +
                           "validation (solid; band: lowest to highest seed), training "
                           "sample (dashed)") +
      key_beside(entries, right) + plots + "\n";
  return body;
}

Figure fig_curves(const ReportInputs& in, const CurveTable& ct) {
  const std::string table = ct.table, id = ct.id;
  const std::string title = (table.empty() ? std::string("Learning curves")
                                           : std::string("Learning curves of Table ") + table) +
                            " (" + ct.what + "): validation and training F1 against the step";
  const std::vector<const RunRecord*> runs = curve_runs(in, ct.table);
  if (runs.empty())
    return missing_figure(id, title,
                          (table.empty() ? std::string("no finished run outside the tables")
                                         : "no finished run of table " + table) +
                              " with metrics.jsonl valid_f1 among the inputs");
  Figure f{
      .id = id,
      .title = title,
      .header =
          "# Columns: training step, mean F1 over the cell's seeds that evaluated at this step, "
          "lowest, highest, seeds. Two blocks per cell: valid_f1 (the validation split) and "
          "train_f1 (a fixed sample of the training split; absent for runs from before it).\n"};
  // A sweep's cells on one corpus next to each other (group_runs orders by sweep, then
  // cell, then corpus): the panels below are cut from such runs of groups.
  auto groups = group_runs(runs);
  std::stable_sort(groups.begin(), groups.end(), [](const Group& x, const Group& y) {
    if (x.sweep != y.sweep) return natural_less(x.sweep, y.sweep);
    return natural_less(x.dataset, y.dataset);
  });
  const CurvePanels cp = curve_panels(groups);
  const bool mixed = cp.mixed;
  const std::size_t panels = cp.ranges.size();
  auto key_name = [&](const Group& g) { return mixed ? g.label : g.display; };
  std::size_t longest = 0;
  for (const Group& g : groups) longest = std::max(longest, key_name(g).size() + 10);
  f.width = 1100;
  const double right = plot_right_for(longest, f.width);
  std::string body = std::string(kAxes) + "set xlabel \"training step\"\nset yrange [0:1]\n";
  if (panels > 1)
    body += "set multiplot layout " + std::to_string(panels) + ",1 title " +
            gp::quote((table.empty() ? std::string("Runs") : "Table " + table) +
                      ": relation F1 against the step" +
                      (mixed ? std::string(" (validation solid, band from the lowest to the "
                                           "highest seed; training sample dashed)")
                             : std::string())) +
            "\n";
  int style = 0;
  for (std::size_t p = 0; p < panels; ++p) body += curve_panel(f, groups, cp, p, style, right);
  if (panels > 1) body += "unset multiplot\n";
  f.styles = style;
  f.body = body;
  f.height = static_cast<int>(panels) * 340 + (panels > 1 ? 40 : 0);
  f.provenance = runs_provenance(groups);
  return f;
}

std::vector<Artifact> write_figures(const ReportInputs& in, const fs::path& out_dir,
                                    const std::function<bool(const std::string&)>& wanted) {
  const fs::path figs = out_dir / "figures";
  std::error_code ec;
  fs::create_directories(figs, ec);
  if (ec || !fs::is_directory(figs))
    throw std::runtime_error(figs.string() + ": cannot create the figures directory" +
                             (ec ? ": " + ec.message() : ""));
  Gnuplot g;
  g.binary = gp::find_binary();
  if (g.binary) g.terminals = gp::terminals(*g.binary);

  std::vector<Artifact> out;
  auto want = [&](const std::string& id) { return !wanted || wanted(id); };
  auto add = [&](const Figure& f) {
    if (want(f.id)) out.push_back(render(f, out_dir, g));
  };
  add(fig_4_2(in));
  if (want("fig4.3"))
    out.push_back(fig_heatmaps(in, out_dir, "fig4.3",
                               "Fig. 4.3: the NTCRE memory over the whole sequence (heatmaps of "
                               "`mare inspect memory`)"));
  add(fig_histogram(in, "fig4.4", "Fig. 4.4: distances between the entities of related pairs",
                    {{"related_pair_distances"}, {"distances"}}, "related pairs",
                    "distance between the entities (tokens)", false, is_ctd, false));
  add(fig_4_5(in));
  add(fig_4_6(in));
  add(fig_4_9(in));
  add(fig_histogram(in, "fig4.10", "Fig. 4.10: document lengths",
                    {{"tokens", "per_document"}, {"document_tokens"}}, "documents",
                    "document length (tokens)", true, is_release, true));
  add(fig_4_11(in));
  for (const auto& sel : kGrpuFigures) add(fig_grpu(in, sel));
  for (const auto& ct : kCurveTables) add(fig_curves(in, ct));
  const std::string version = g.binary ? g.terminals.version : "";
  for (auto& a : out)
    if (a.missing.empty() && !version.empty() && a.id != "fig4.3")
      a.provenance["gnuplot"] = version;
  return out;
}

}  // namespace mare::report
