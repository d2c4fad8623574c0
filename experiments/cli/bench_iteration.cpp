// `mare bench iteration` (registered by cmd_bench.cpp under `mare bench`):
// seconds per training iteration of UTRE/NTCRE(-CPD) at the thesis Table 4.15
// shapes (experiments/bench_iteration.h), with each row's GEMM bound (and with
// --speedup its 1-thread run), one progress line per row on stderr,
// a table on stdout, the rows as JSON (written to a temporary file and renamed).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "experiments/bench_iteration.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "experiments/run_dir.h"

namespace mare::cli {

namespace {

struct Options {
  IterationBenchOptions bench;
  std::string device = "cpu";
  std::string matmul_precision = "highest";
  std::string json_path;
};

void run(const Options& o) {
  if (!o.json_path.empty()) check_writable_file(o.json_path, "--json");
  IterationBenchOptions b = o.bench;
  b.device = parse_device(o.device);
  set_matmul_precision(checked_matmul_precision(o.matmul_precision, b.device, "bench iteration"));
  const nlohmann::json j = run_iteration_bench(b, &std::cerr);
  std::cout << "model\tshape\talloc\tmean_s\tmedian_s\tsd_s\tratio\tflops_ratio\tthreads\t"
               "gemm_gflop\tgemm_gflops_per_s\tbound_s\tbound_ratio\tops\tdevice_reads\tuploads";
  const bool speedup = j.contains("speedup");
  if (speedup) std::cout << "\t1t_median_s\t1t_bound_s\t1t_bound_ratio\tspeedup";
  std::cout << "\n";
  auto num = [](const nlohmann::json& v, int precision) {
    std::ostringstream s;
    if (v.is_null())
      s << "-";
    else
      s << std::fixed << std::setprecision(precision) << v.get<double>();
    return s.str();
  };
  for (const nlohmann::json& r : j["rows"]) {
    std::cout << r["model"].get<std::string>() << "\t" << r["shape"].get<std::string>() << "\t"
              << (r["alloc"].is_null() ? std::string("-") : r["alloc"].get<std::string>())
              << std::fixed << std::setprecision(4) << "\t" << r["mean_s"].get<double>() << "\t"
              << r["median_s"].get<double>() << "\t" << r["sd_s"].get<double>() << "\t";
    if (r["ratio"].is_null())
      std::cout << "-";
    else
      std::cout << std::setprecision(3) << r["ratio"].get<double>();
    std::cout << "\t" << num(r.value("ratio_gemm_flops", nlohmann::json()), 3);
    std::cout << "\t" << r["threads"].get<int>() << "\t" << num(r["gemm_gflop"], 2) << "\t"
              << num(r["gemm_gflops_per_s"], 1) << "\t" << num(r["bound_s"], 4) << "\t"
              << num(r["bound_ratio"], 2) << "\t" << r["ops"].get<int64_t>() << "\t"
              << r["device_reads"].get<int64_t>() << "\t" << r["uploads"].get<int64_t>();
    if (speedup && r.contains("threads_1")) {
      const nlohmann::json& o = r["threads_1"];
      std::cout << "\t" << num(o["median_s"], 4) << "\t" << num(o["bound_s"], 4) << "\t"
                << num(o["bound_ratio"], 2) << "\t" << num(r["speedup"], 2);
    }
    std::cout << "\n";
  }
  if (b.by_op) {
    // Each row's dispatches by op, most first, as one block a row.
    for (const nlohmann::json& r : j["rows"]) {
      if (!r.contains("ops_by_name")) continue;
      std::vector<std::pair<int64_t, std::string>> ops;
      for (const auto& [op, n] : r["ops_by_name"].items()) ops.emplace_back(n.get<int64_t>(), op);
      std::stable_sort(ops.begin(), ops.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      std::cout << "\nops of one iteration: " << r["model"].get<std::string>() << " on "
                << r["shape"].get<std::string>() << " (" << r["ops"].get<int64_t>()
                << " dispatches)\n";
      for (const auto& [n, op] : ops) std::cout << "  " << std::setw(6) << n << "  " << op << "\n";
    }
  }
  if (!o.json_path.empty()) {
    atomic_write(o.json_path, json_text(j));
    std::cout << "wrote " << o.json_path << "\n";
  }
}

}  // namespace

void add_bench_iteration_command(CLI::App& bench) {
  auto [it, o] = add_command<Options>(
      bench, "iteration",
      "Seconds per training iteration of UTRE, NTCRE, UTRE-CPD, NTCRE-CPD (or any relation model; "
      "--grpu: the GRPU) at the thesis Table 4.15 shapes, with the NTCRE-x / UTRE-x ratios and "
      "each iteration's GEMM flops, GEMM bound and time / bound",
      run);
  it->add_option("--models", o->bench.models, "Models (registry names or aliases)")
      ->delimiter(',')
      ->capture_default_str();
  it->add_option("--shape", o->bench.shape, "semeval (T 96), cdr (T 398) or both")
      ->capture_default_str();
  it->add_option("--size", o->bench.size,
                 "paper (d 300, 4 heads, batch 32) or default (d 32, 4 heads, batch 32)")
      ->capture_default_str();
  it->add_option("--iterations", o->bench.iterations, "Timed iterations per row")
      ->capture_default_str();
  it->add_option("--warmup", o->bench.warmup, "Untimed iterations before them")
      ->capture_default_str();
  it->add_option("--alloc", o->bench.allocs,
                 "NTCRE allocation variants, one row each: sorted, parallel, parallel-eps, rank, "
                 "parallel-block, network (default: the model's, sorted)")
      ->delimiter(',');
  add_choice(it, "--device", o->device, "cpu or cuda", device_names());
  add_choice(it, "--matmul-precision", o->matmul_precision, kMatmulPrecisionHelp,
             matmul_precision_names());
  it->add_flag("--grpu", o->bench.grpu,
               "Add the GRPU's training iteration (the addition task: batch 100, 50-55 steps, H "
               "100, Adam lr 1e-4)");
  it->add_flag("--speedup", o->bench.speedup,
               "Also run every row at 1 thread (threads_1 in the JSON) and report the 1-thread / "
               "K-thread speedup (with --threads K > 1, or MARE_THREADS, or every core)");
  it->add_flag("--by-op", o->bench.by_op,
               "Also count each row's op dispatches by op (the last timed iteration; "
               "ops_by_name in the JSON) and print them, most first");
  it->add_flag("--static-step", o->bench.static_step,
               "Relation models: the static step (the halting loop to t_max under device "
               "masks, no read of what the step computed; the same numbers)");
  it->add_option("--json", o->json_path, "Write the rows as JSON to FILE");
}

}  // namespace mare::cli
