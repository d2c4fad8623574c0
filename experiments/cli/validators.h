// Range checks of numeric options, said in words: "--epochs: expected a whole
// number ≥ 1, got '0'" (CLI11's own PositiveNumber printed "Value 0 not in range
// 0.000000 to 1797693…", a 310-digit number). The help shows the range after the
// type (INT:>=1, FLOAT:>0, INT:1-4096).
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/ops/linalg.h"
#include "kernels/tensor.h"

namespace mare::cli {

// --matmul-precision (train, bench iteration): parsed, and `high` refused where no
// GPU computes (the CPU's GEMMs are fp32 whatever the setting).
inline const char* const kMatmulPrecisionHelp =
    "GEMM precision on the GPU: highest (fp32, the default) or high (TF32 tensor cores, "
    "products good to ~1e-3 relative, several times faster; recorded in a run's config); the "
    "CPU computes in fp32 and refuses high";
inline MatmulPrecision checked_matmul_precision(const std::string& name, Device device,
                                                const std::string& command) {
  const MatmulPrecision p = parse_matmul_precision(name);
  if (p == MatmulPrecision::high && device != Device::cuda)
    throw std::invalid_argument(command +
                                ": --matmul-precision high: TF32 runs on a GPU's tensor cores; "
                                "on the " +
                                to_string(device) +
                                " every GEMM is fp32 (give --device cuda, or leave the "
                                "precision at highest)");
  return p;
}

namespace detail {
inline bool parse_whole(const std::string& s, int64_t& v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  v = x;
  return true;
}
inline bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return errno == 0 && *end == '\0' && std::isfinite(v);
}
}  // namespace detail

// A whole number from lo to hi (hi: no upper bound when it is the largest int64).
inline CLI::Validator whole_number(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  const bool open = hi == std::numeric_limits<int64_t>::max();
  const std::string range =
      open ? "≥ " + std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        int64_t v = 0;
        if (detail::parse_whole(s, v) && v >= lo && v <= hi) return "";
        return "expected a whole number " + range + ", got '" + s + "'";
      },
      open ? ">=" + std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi));
}

// An option that takes a whole number ≥ lo, its default shown in the help.
template <class T>
CLI::Option* add_count(CLI::App* cmd, const std::string& name, T& value, const std::string& help,
                       int64_t lo) {
  return cmd->add_option(name, value, help)->capture_default_str()->check(whole_number(lo));
}

// An option that takes one of `names` (the list its owner declares, e.g.
// device_names()), its default shown in the help.
template <class T>
CLI::Option* add_choice(CLI::App* cmd, const std::string& name, T& value, const std::string& help,
                        const std::vector<std::string>& names) {
  return cmd->add_option(name, value, help)->capture_default_str()->check(CLI::IsMember(names));
}

// A finite number above lo (strictly) or at least lo.
inline CLI::Validator number_above(double lo, bool strictly = true) {
  std::string bound = CLI::detail::to_string(lo);
  const std::string desc = (strictly ? "> " : "≥ ") + bound;
  const std::string help =
      (strictly ? ">" : ">=") + bound;  // ASCII: the help's columns count bytes
  return CLI::Validator(
      [lo, strictly, desc](std::string& s) -> std::string {
        double v = 0;
        if (detail::parse_number(s, v) && (strictly ? v > lo : v >= lo)) return "";
        return "expected a number " + desc + ", got '" + s + "'";
      },
      help);
}

}  // namespace mare::cli
