// `mare stats`: Wilcoxon tests and summaries of result files from the command line.
//
//   mare stats signed-rank A [B]   paired (or one-sample against --mu) signed-rank test
//   mare stats rank-sum A B        Mann–Whitney rank-sum test of A against B
//   mare stats summary A           n, mean ± sd, median, range, bootstrap CI of the mean
//
// A and B hold one number per line, or CSV with --column NAME ("-" reads stdin). The
// numbers come from stats/ (pure functions; this file only parses options and prints).
// Plain text mimics R's print of wilcox.test(conf.int = TRUE); --json prints one object.
// Bad input throws std::runtime_error naming the file and line; main() reports it.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "stats/descriptive.h"
#include "stats/io.h"
#include "stats/wilcoxon.h"

namespace mare::cli {
namespace {

using stats::TestResult;

struct TestArgs {
  std::string a, b, column;
  std::string alternative = "two-sided", method = "auto", zero_method = "wilcox";
  bool correct = true, json = false;
  double mu = 0.0, conf_level = 0.95;
};

void add_test_options(CLI::App* cmd, TestArgs& args, bool zero_method) {
  cmd->add_option("--column", args.column, "CSV column to read (default: one number per line)");
  cmd->add_option("--alternative", args.alternative, "two-sided, less or greater")
      ->capture_default_str();
  cmd->add_option("--method", args.method,
                  "auto (R's rule), exact, approx or conditional (exact given ties)")
      ->capture_default_str();
  cmd->add_flag("--correct,!--no-correct", args.correct,
                "Continuity correction of the normal approximation (default on)");
  if (zero_method) {
    cmd->add_option("--zero-method", args.zero_method, "wilcox (drop zeros, R), pratt or zsplit")
        ->capture_default_str();
  }
  cmd->add_option("--mu", args.mu, "Location (shift) under the null hypothesis")
      ->capture_default_str();
  cmd->add_option("--conf-level", args.conf_level, "Confidence level of the interval")
      ->capture_default_str();
  cmd->add_flag("--json", args.json, "Print one JSON object instead of text");
}

// Option parsing errors from stats/ are std::invalid_argument; the CLI reports
// std::runtime_error with the option named.
stats::TestOptions to_options(const TestArgs& args) {
  stats::TestOptions o;
  try {
    o.alternative = stats::parse_alternative(args.alternative);
    o.method = stats::parse_method(args.method);
    o.zero_method = stats::parse_zero_method(args.zero_method);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  if (!std::isfinite(args.mu)) throw std::runtime_error("--mu: expected a finite number");
  if (!(args.conf_level > 0.0 && args.conf_level < 1.0)) {
    throw std::runtime_error("--conf-level: expected a number strictly between 0 and 1");
  }
  o.mu = args.mu;
  o.conf_level = args.conf_level;
  o.correct = args.correct;
  return o;
}

// Up to 7 significant digits; R's "< 2.2e-16" below machine epsilon.
std::string fmt(double v) {
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  if (std::isnan(v)) return "NA";
  std::ostringstream s;
  s << std::setprecision(7) << v;
  return s.str();
}

std::string fmt_p(double p) {
  return p < DBL_EPSILON ? "< 2.2e-16" : "= " + fmt(p);
}

std::string hypothesis(stats::Alternative a, bool shift, double mu) {
  const std::string what = shift ? "true location shift is " : "true location is ";
  switch (a) {
    case stats::Alternative::less:
      return what + "less than " + fmt(mu);
    case stats::Alternative::greater:
      return what + "greater than " + fmt(mu);
    default:
      return what + "not equal to " + fmt(mu);
  }
}

void warn(const TestResult& r) {
  for (const std::string& w : r.warnings) std::cerr << "mare: warning: " << w << "\n";
}

nlohmann::json bounds(const std::array<double, 2>& ci) {
  // JSON has no infinity: an open bound is null.
  auto b = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return nlohmann::json::array({b(ci[0]), b(ci[1])});
}

nlohmann::json to_json(const TestResult& r, const stats::TestOptions& o, double effect,
                       const char* effect_name) {
  nlohmann::json j;
  j["test"] = r.test;
  j["alternative"] = stats::to_string(r.alternative);
  j["method"] = stats::to_string(r.method);
  j["correct"] = r.correct;
  j["n"] = r.n;
  if (r.test == "rank-sum") {
    j["n_x"] = r.n_x;
    j["n_y"] = r.n_y;
  } else {
    j["n_zero"] = r.n_zero;
    j["zero_method"] = stats::to_string(o.zero_method);
  }
  j["mu"] = o.mu;
  j["statistic"] = r.statistic;
  j["p_value"] = r.p_value;
  j["estimate"] = std::isfinite(r.estimate) ? nlohmann::json(r.estimate) : nlohmann::json(nullptr);
  j["conf_int"] = bounds(r.conf_int);
  j["conf_level"] = r.conf_level;
  j["effect_size"] = {{"name", effect_name}, {"value", effect}};
  j["warnings"] = r.warnings;
  return j;
}

void print_text(const TestResult& r, const std::string& data, const stats::TestOptions& o,
                bool shift, double effect, const char* effect_name) {
  const bool rank_sum = r.test == "rank-sum";
  std::cout << "\n\t" << r.title << "\n\n"
            << "data:  " << data << "\n"
            << (rank_sum ? "W" : "V") << " = " << fmt(r.statistic) << ", p-value "
            << fmt_p(r.p_value) << "\n"
            << "alternative hypothesis: " << hypothesis(r.alternative, shift, o.mu) << "\n";
  if (std::isfinite(r.estimate)) {
    std::cout << fmt(100 * r.conf_level) << " percent confidence interval:\n"
              << " " << fmt(r.conf_int[0]) << " " << fmt(r.conf_int[1]) << "\n"
              << "sample estimates:\n"
              << (rank_sum ? "difference in location" : "(pseudo)median") << "\n"
              << fmt(r.estimate) << "\n";
  }
  std::cout << "effect size: " << effect_name << " = " << fmt(effect) << "\n\n";
}

void run_signed_rank(const TestArgs& args, bool have_b) {
  const stats::TestOptions o = to_options(args);
  const stats::Sample a = stats::read_sample(args.a, args.column);
  stats::Sample b;
  if (have_b) {
    b = stats::read_sample(args.b, args.column);
    if (a.values.size() != b.values.size()) {
      const stats::Sample& longer = a.values.size() > b.values.size() ? a : b;
      const stats::Sample& shorter = a.values.size() > b.values.size() ? b : a;
      const std::size_t i = shorter.values.size();
      throw std::runtime_error(longer.source + ":" + std::to_string(longer.lines[i]) + ": value " +
                               std::to_string(i + 1) + " has no partner in " + shorter.source +
                               " (" + std::to_string(shorter.values.size()) + " values against " +
                               std::to_string(longer.values.size()) +
                               "); a paired test needs samples of equal length");
    }
    // Pairs are lines: value i of A and of B must stand on the same line, so a
    // blank, comment or missing line in one file cannot shift every later pair.
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      if (a.lines[i] == b.lines[i]) continue;
      const bool a_later = a.lines[i] > b.lines[i];
      const stats::Sample& gap = a_later ? a : b;
      const stats::Sample& other = a_later ? b : a;
      const std::size_t line = other.lines[i];
      throw std::runtime_error(gap.source + ":" + std::to_string(line) +
                               ": expected a value, paired with " + other.source + ":" +
                               std::to_string(line) + " (a paired test pairs the files line by " +
                               "line; a blank, comment or missing value there would pair every " +
                               "later value with the wrong one)");
    }
  }
  TestResult r;
  try {
    r = stats::signed_rank_test(a.values, b.values, o);
  } catch (const std::logic_error& e) {  // invalid_argument, length_error
    throw std::runtime_error(std::string(e.what()) + " (" + args.a +
                             (have_b ? " and " + args.b : std::string()) + ")");
  }
  const double effect = stats::matched_pairs_rank_biserial(a.values, b.values);
  const char* effect_name = "matched-pairs rank-biserial r";
  warn(r);
  if (args.json) {
    std::cout << to_json(r, o, effect, effect_name).dump() << "\n";
  } else {
    print_text(r, have_b ? a.source + " and " + b.source : a.source, o, have_b, effect,
               effect_name);
  }
}

void run_rank_sum(const TestArgs& args) {
  const stats::TestOptions o = to_options(args);
  const stats::Sample a = stats::read_sample(args.a, args.column);
  const stats::Sample b = stats::read_sample(args.b, args.column);
  TestResult r;
  try {
    r = stats::rank_sum_test(a.values, b.values, o);
  } catch (const std::logic_error& e) {  // invalid_argument, length_error
    throw std::runtime_error(std::string(e.what()) + " (" + args.a + " and " + args.b + ")");
  }
  const double effect = stats::vargha_delaney_a(a.values, b.values);
  const char* effect_name = "Vargha-Delaney A";
  warn(r);
  if (args.json) {
    nlohmann::json j = to_json(r, o, effect, effect_name);
    j["rank_biserial"] = stats::rank_biserial(a.values, b.values);
    std::cout << j.dump() << "\n";
  } else {
    print_text(r, a.source + " and " + b.source, o, true, effect, effect_name);
  }
}

struct SummaryArgs {
  std::string a, column, statistic = "mean";
  double conf_level = 0.95;
  int resamples = 10000;
  std::uint64_t seed = 1;
  bool json = false;
};

void run_summary(const SummaryArgs& args) {
  if (!(args.conf_level > 0.0 && args.conf_level < 1.0)) {
    throw std::runtime_error("--conf-level: expected a number strictly between 0 and 1");
  }
  if (args.resamples < 1) throw std::runtime_error("--resamples: expected a positive count");
  if (args.statistic != "mean" && args.statistic != "median") {
    throw std::runtime_error("--statistic: expected mean or median, got '" + args.statistic + "'");
  }
  const stats::Sample a = stats::read_sample(args.a, args.column);
  const std::vector<double>& x = a.values;
  auto stat = [&](std::span<const double> s) {
    return args.statistic == "mean" ? stats::mean(s) : stats::median(s);
  };
  const auto ci = stats::bootstrap_ci(x, stat, args.conf_level, args.resamples, args.seed);
  const double mean = stats::mean(x), sd = stats::sd(x), median = stats::median(x);
  const double lo = *std::min_element(x.begin(), x.end());
  const double hi = *std::max_element(x.begin(), x.end());
  if (args.json) {
    auto num = [](double v) {
      return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    };
    nlohmann::json j;
    j["test"] = "summary";
    j["n"] = x.size();
    j["mean"] = num(mean);
    j["sd"] = num(sd);
    j["median"] = num(median);
    j["min"] = lo;
    j["max"] = hi;
    j["conf_int"] = {ci[0], ci[1]};
    j["conf_level"] = args.conf_level;
    j["bootstrap"] = {{"statistic", args.statistic},
                      {"resamples", args.resamples},
                      {"seed", args.seed},
                      {"generator", "mt19937_64"}};
    std::cout << j.dump() << "\n";
    return;
  }
  std::cout << a.source << ": n = " << x.size() << "\n"
            << "  mean +- sd  " << fmt(mean) << " +- " << fmt(sd) << "\n"
            << "  median      " << fmt(median) << "\n"
            << "  min, max    " << fmt(lo) << ", " << fmt(hi) << "\n"
            << "  " << fmt(100 * args.conf_level) << "% percentile bootstrap CI of the "
            << args.statistic << " (" << args.resamples << " resamples, seed " << args.seed
            << "): [" << fmt(ci[0]) << ", " << fmt(ci[1]) << "]\n";
}

}  // namespace

void add_stats_command(CLI::App& app) {
  CLI::App* stats_cmd = add_group(
      app, "stats", "Wilcoxon tests and summaries of result files (R's wilcox.test conventions)");

  auto [sr, sr_args] = add_command<TestArgs>(
      *stats_cmd, "signed-rank", "Wilcoxon signed-rank test: paired A and B, or A against --mu",
      [](const TestArgs& a, const CLI::App& cmd) { run_signed_rank(a, cmd.count("B") > 0); });
  sr->add_option("A", sr_args->a, "File of values (one per line, or CSV with --column)")
      ->required();
  sr->add_option("B", sr_args->b, "File of paired values (omit for a one-sample test)");
  add_test_options(sr, *sr_args, true);

  auto [rs, rs_args] = add_command<TestArgs>(
      *stats_cmd, "rank-sum", "Wilcoxon rank-sum (Mann-Whitney) test of A against B", run_rank_sum);
  rs->add_option("A", rs_args->a, "File of values of the first sample")->required();
  rs->add_option("B", rs_args->b, "File of values of the second sample")->required();
  add_test_options(rs, *rs_args, false);

  auto [sm, sm_args] = add_command<SummaryArgs>(
      *stats_cmd, "summary",
      "n, mean +- sd, median, range and a seeded percentile bootstrap interval", run_summary);
  sm->add_option("A", sm_args->a, "File of values")->required();
  sm->add_option("--column", sm_args->column, "CSV column to read");
  sm->add_option("--conf-level", sm_args->conf_level, "Level of the bootstrap interval")
      ->capture_default_str();
  sm->add_option("--resamples", sm_args->resamples, "Bootstrap resamples")
      ->capture_default_str()
      ->check(whole_number(1, 10000000));
  add_count(sm, "--seed", sm_args->seed, "Seed of the mt19937_64 resampler", 0);
  sm->add_option("--statistic", sm_args->statistic, "Bootstrapped statistic: mean or median")
      ->capture_default_str();
  sm->add_flag("--json", sm_args->json, "Print one JSON object instead of text");
}

}  // namespace mare::cli
