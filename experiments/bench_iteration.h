// `mare bench iteration`: seconds per training iteration of UTRE, NTCRE,
// UTRE-CPD and NTCRE-CPD at the thesis Table 4.15 shapes (SemEval 2018, T 96;
// BioCreative CDR, T 398), every iteration's time kept (thesis Figure 4.11),
// and the NTCRE-x / UTRE-x ratio of the means (SPEC §10; the JSON layout is what
// `mare report` reads for Table 4.15 and Fig. 4.11).
//
// One iteration is the trainer's RE step (models/bench/re_iteration_setup.h,
// shared with bench_re_iteration): forward on a synthetic batch, cross-entropy
// plus the ponder cost, backward, L2 1e-4, clipping at norm 3, Adam. Sizes:
// `paper` = d 300, 4 heads, batch 32 (thesis Table 4.1); `default` = d 32,
// 4 heads, batch 32 (the main job's default profile; minutes, not hours, on a
// laptop). `alloc` variants add one NTCRE row per variant
// (`NTCRE+alloc=V`); UTRE rows have no allocation (null). Any relation model
// can be a row (cnn, bran, utre, ...); `grpu` adds the GRPU's row (shape
// `addition`: the thesis's addition task, batch 100, 50–55 steps, H 100, MSE,
// Adam lr 1e-4; the same whatever --size and --shape).
//
// Every row also carries its GEMM bound (models/bench/gemm_bound.h): the
// iteration's GEMM flops as the kernels count them, the GEMM throughput of the
// model's dominant shape measured in the same process at the same thread count
// (sampled before the row and before each timed iteration), the time those
// flops take at it (bound_s) and the
// iteration's median over it (bound_ratio). `speedup` runs every row again at
// one thread (`threads_1`) and gives the 1-thread / K-thread median ratio.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tensor.h"

namespace mare {

struct IterationBenchOptions {
  std::vector<std::string> models{"UTRE", "NTCRE", "UTRE-CPD", "NTCRE-CPD"};
  std::string shape = "both";       // iteration_shape_names(): semeval | cdr | both
  std::string size = "default";     // iteration_size_names(): paper | default
  int iterations = 5;               // timed iterations per row
  int warmup = 1;                   // untimed iterations before them
  std::vector<std::string> allocs;  // NTCRE allocation variants; empty: the model's default
  Device device = Device::cpu;
  bool grpu = false;     // add the GRPU's row (shape `addition`)
  bool speedup = false;  // also run every row at 1 thread (when threads() > 1)
  // Tally the op dispatches by name (kernels/tensor.h, op_tally): every row gets ops_by_name,
  // the dispatches of its last timed iteration per op. The tally takes a lock a dispatch.
  bool by_op = false;
  // The relation models' static step (models/layers.h: Context::static_step).
  bool static_step = false;
};

// What --shape and --size take.
std::vector<std::string> iteration_shape_names();
std::vector<std::string> iteration_size_names();

// Mean, median and sample standard deviation (n − 1; 0 for one value).
struct TimeSummary {
  double mean = 0, median = 0, sd = 0;
};
TimeSummary summarize_times(std::vector<double> seconds);

// Runs every row and returns the contract's JSON (plus context fields). One
// progress line per row goes to `progress` when given. Throws
// std::invalid_argument naming the option for a bad value.
nlohmann::json run_iteration_bench(const IterationBenchOptions& opt, std::ostream* progress);

}  // namespace mare
