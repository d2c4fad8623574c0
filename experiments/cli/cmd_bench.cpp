// `mare bench allocation`: the allocation-kernel comparison of thesis Table 4.14
// on this machine (SPEC §10). Runs the shared sweep of
// kernels/bench/allocation_sweep.h, prints the Table-4.14-shaped tables and
// writes the rows as JSON and CSV (each written to a temporary file and
// renamed, so a reader never sees half a file). `--device cuda` runs the same
// sweep on the GPU (CUDA kernels, CUDA-event times, a device-to-device copy as
// the floor) and adds the device's measured copy bandwidth: to the header, as
// a table per pass, and to the JSON (top level and per row); the CSV keeps its
// columns on both devices. Without the CUDA backend or without a GPU it fails
// with the reason. `mare bench iteration` is registered here and lives in
// bench_iteration.cpp.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "experiments/cli/commands.h"
#include "experiments/cli/validators.h"
#include "experiments/run_dir.h"
#include "kernels/bench/allocation_sweep.h"
#include "kernels/memory_budget.h"
#include "kernels/parallel.h"
#include "mare_build_info.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::cli {

namespace {

struct BenchAllocationOptions {
  std::string device = "cpu";
  std::vector<std::string> variants;
  std::vector<int64_t> seqs{1, 10, 50, 100, 200, 500, 1000};
  std::vector<int64_t> mems{4, 16, 32, 64, 128};
  int64_t batch = 32;
  int repetitions = 5;
  bool no_backward = false;
  std::string clock = "wall";
  bool clock_given = false;  // --clock on the command line (refused on cuda)
  std::string json_path, csv_path;
};

// The GPU's fields: its name, its measured copy bandwidth and (CUDA builds) the device
// and the toolkit the kernels were built with.
void add_gpu_fields(nlohmann::json& j, const SweepResult& r) {
  j["device_name"] = r.device_name;
  j["copy_bandwidth_gbs"] = r.copy_bandwidth_gbs;
  j["copy_bandwidth"] =
      "best of 5 device-to-device cudaMemcpyAsync of 256 MiB, CUDA events, bytes read + written";
#ifdef MARE_WITH_CUDA
  const cuda::DeviceInfo d = cuda::device_info(cuda::current_device());
  j["cuda_device"] = {{"index", d.index},
                      {"compute_capability",
                       std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)},
                      {"multiprocessors", d.multiprocessors},
                      {"total_memory_bytes", d.total_memory},
                      {"driver_version", d.driver_version},
                      {"runtime_version", d.runtime_version}};
  j["cuda_build"] = std::string("nvcc ") + MARE_CUDA_COMPILER_VERSION + ", architectures " +
                    MARE_CUDA_ARCHITECTURES;
#endif
}

// The run's settings on either device: threads, the build, the sweep's configuration, and
// what its statistic, clock and bytes mean.
void add_run_fields(nlohmann::json& j, const SweepResult& r, bool on_gpu) {
  int threads_used = 1;
  for (const SweepRow& s : r.rows) threads_used = std::max(threads_used, s.threads);
  j["threads"] = threads_used;
  j["hardware_threads"] = std::thread::hardware_concurrency();
  if (threads_used > 1)
    j["thread_speedup"] =
        "seconds_1thread: the same median with the variant on 1 thread (timed beside each "
        "repetition); thread_speedup = seconds_1thread / seconds";
  j["mare_commit"] = MARE_GIT_COMMIT;
  j["build"] = std::string(MARE_BUILD_TYPE) + ", " + MARE_CXX_COMPILER + ", " + MARE_CXX_FLAGS;
  j["batch"] = r.config.batch;
  j["repetitions"] = r.config.repetitions;
  j["min_repetition_seconds"] = r.config.min_rep_seconds;
  j["seed"] = r.config.seed;
  j["statistic"] = "median seconds per call over repetitions, warm-up excluded";
  j["clock"] = on_gpu ? "cuda_events" : r.config.cpu_clock ? "thread_cpu" : "wall";
  j["bytes"] = on_gpu ? "bytes one pass must read and write; copy = device-to-device "
                        "cudaMemcpyAsync of exactly those bytes"
                      : "bytes one pass must read and write; copy = memcpy of exactly those bytes";
  j["wall_seconds"] = r.wall_seconds;
}

// The core's measured peak, against which the CPU rows' compute bound is taken.
nlohmann::json compute_peak_json(const ComputePeak& peak) {
  return {{"clock_hz", peak.clock_hz},
          {"simd_lanes", peak.simd_lanes},
          {"simd_select_lane_ops_per_second", peak.select_ops_per_second},
          {"simd_count_lane_ops_per_second", peak.count_ops_per_second},
          {"scalar_ops_per_second", peak.scalar_ops_per_second},
          {"microbenchmark_seconds", peak.seconds},
          {"what",
           "one core, measured in this run, vectors of the build's register width, 8 "
           "independent chains over 64 partners in L1: simd_select = compare + select-multiply "
           "(p = h_k < h_i ? p*h_k : p), simd_count = compare + add of the mask (r -= h_k < h_i), "
           "each counted as 2 lane-operations per step and lane; scalar = the select step on "
           "scalars; clock = a dependent integer-add chain"},
          {"bound",
           "compute_bound_seconds = ops_per_memory x memories / the peak named in "
           "ops_peak; peak_fraction = compute_bound_seconds / the 1-thread time"}};
}

// What each variant's ops_per_memory counts, forward and forward+backward.
nlohmann::json ops_counted_json(const SweepConfig& config) {
  nlohmann::json counted;
  for (AllocationVariant v : config.variants)
    for (bool backward : {false, true}) {
      std::string what;
      allocation_ops_per_memory(v, 4, backward, nullptr, &what);
      counted[std::string(to_string(v))][backward ? "forward+backward" : "forward"] = what;
    }
  return counted;
}

// The CPU's floors and bounds: how the copy floor is timed, the core's peak and what
// the ops are counted as.
void add_cpu_fields(nlohmann::json& j, const SweepResult& r) {
  j["copy_floor"] =
      "memcpy on the same thread count as the variants (one call on 1 thread; up to 64 "
      "chunks of >= 64 KiB on the kernel threads otherwise) "
      "(copy_floor_seconds, floor_ratio = seconds / copy_floor_seconds); "
      "copy_floor_seconds_1thread: the same copy on 1 thread, floor_ratio_1thread = the "
      "variant's 1-thread time / it";
  j["compute_peak"] = compute_peak_json(r.peak);
  j["ops_counted"] = ops_counted_json(r.config);
}

// The fields every row has, on either device.
nlohmann::json row_json(const SweepRow& s) {
  return {{"variant", s.variant},
          {"pass", s.pass},
          {"seq", s.seq},
          {"mem", s.mem},
          {"batch", s.batch},
          {"memories", s.memories},
          {"bytes_processed", s.bytes},
          {"calls_per_repetition", s.calls_per_repetition},
          {"repetitions", s.repetitions},
          {"seconds", s.seconds},
          {"wall_seconds", s.wall_seconds},
          {"cpu_seconds", s.cpu_seconds},
          {"seconds_min", s.seconds_min},
          {"seconds_max", s.seconds_max},
          {"copy_floor_seconds", s.floor_seconds},
          {"floor_ratio", s.floor_ratio},
          {"speedup_vs_sorted", s.speedup_vs_sorted},
          {"gbytes_per_second", s.gbytes_per_second},
          {"threads", s.threads},
          {"seconds_1thread", s.seconds_1thread},
          {"thread_speedup", s.thread_speedup}};
}

// A CPU row's 1-thread floor and, for a variant (not the copy), its compute bound.
void add_cpu_row_fields(nlohmann::json& row, const SweepRow& s) {
  row["copy_floor_seconds_1thread"] = s.floor_seconds_1thread;
  if (s.variant == "copy") return;
  row["floor_ratio_1thread"] = s.floor_ratio_1thread;
  row["ops_per_memory"] = s.ops_per_memory;
  row["ops_peak"] = to_string(s.ops_peak);
  row["compute_bound_seconds"] = s.bound_seconds;
  row["peak_fraction"] = s.peak_fraction;
}

// The rows: the common fields, then the device's own, less what was not measured.
nlohmann::json rows_json(const SweepResult& r, bool on_gpu) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepRow& s : r.rows) rows.push_back(row_json(s));
  if (!on_gpu)
    for (size_t i = 0; i < rows.size(); ++i) add_cpu_row_fields(rows[i], r.rows[i]);
  if (on_gpu)
    for (size_t i = 0; i < rows.size(); ++i)
      rows[i]["copy_bandwidth_fraction"] = r.rows[i].copy_bandwidth_fraction;
  // Fields that were not measured are left out, never written as 0: the 1-thread time of
  // a run on 1 thread (its seconds are that time), the copy's speedup over sorted.
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!(r.rows[i].seconds_1thread > 0)) {
      rows[i].erase("seconds_1thread");
      rows[i].erase("thread_speedup");
    }
    if (r.rows[i].variant == "copy") rows[i].erase("speedup_vs_sorted");
  }
  return rows;
}

// The points where parallel-eps chose differently from sorted, and by how much.
nlohmann::json eps_json(const SweepResult& r) {
  nlohmann::json eps = nlohmann::json::array();
  for (const SweepPointDisagreement& d : r.disagreements)
    eps.push_back({{"seq", d.seq},
                   {"mem", d.mem},
                   {"memories", d.eps.memories},
                   {"alloc_differs", d.eps.alloc_differs},
                   {"order_differs", d.eps.order_differs},
                   {"max_abs_diff", d.eps.max_abs_diff},
                   {"threshold", EpsDisagreement::kThreshold}});
  return eps;
}

nlohmann::json to_json(const SweepResult& r) {
  nlohmann::json j;
  j["benchmark"] = "allocation";
  const bool on_gpu = r.config.device == Device::cuda;
  j["device"] = to_string(r.config.device);
  if (on_gpu) add_gpu_fields(j, r);
  add_run_fields(j, r, on_gpu);
  if (!on_gpu) add_cpu_fields(j, r);
  j["rows"] = rows_json(r, on_gpu);
  j["parallel_eps_vs_sorted"] = eps_json(r);
  return j;
}

// A CSV cell: the value, or empty where it was not measured (as the JSON leaves it out).
std::string measured(double value, bool present) {
  if (!present) return "";
  std::ostringstream os;
  os.precision(9);
  os << value;
  return os.str();
}

std::string to_csv(const SweepResult& r) {
  std::ostringstream os;
  os.precision(9);
  os << "variant,pass,seq,mem,batch,memories,bytes_processed,calls_per_repetition,repetitions,"
        "seconds,"
        "wall_seconds,cpu_seconds,seconds_min,seconds_max,copy_floor_seconds,floor_ratio,speedup_"
        "vs_sorted,"
        "gbytes_per_second,eps_alloc_differs,eps_order_differs,eps_max_abs_diff,threads,seconds_"
        "1thread,thread_speedup,copy_floor_seconds_1thread,floor_ratio_1thread,ops_per_memory,"
        "compute_bound_seconds,peak_fraction\n";
  for (const SweepRow& s : r.rows) {
    os << s.variant << "," << s.pass << "," << s.seq << "," << s.mem << "," << s.batch << ","
       << s.memories << "," << s.bytes << "," << s.calls_per_repetition << "," << s.repetitions
       << "," << s.seconds << "," << s.wall_seconds << "," << s.cpu_seconds << "," << s.seconds_min
       << "," << s.seconds_max << "," << s.floor_seconds << "," << s.floor_ratio << ","
       << measured(s.speedup_vs_sorted, s.variant != "copy") << "," << s.gbytes_per_second;
    const SweepPointDisagreement* d = nullptr;
    for (const SweepPointDisagreement& x : r.disagreements)
      if (x.seq == s.seq && x.mem == s.mem) d = &x;
    if (d && s.variant == "parallel-eps")
      os << "," << d->eps.alloc_differs << "," << d->eps.order_differs << ","
         << d->eps.max_abs_diff;
    else
      os << ",,,";
    const bool one_thread_timed = s.seconds_1thread > 0;
    const bool variant = s.variant != "copy", cpu = s.floor_seconds_1thread > 0;
    os << "," << s.threads << "," << measured(s.seconds_1thread, one_thread_timed) << ","
       << measured(s.thread_speedup, one_thread_timed) << ","
       << measured(s.floor_seconds_1thread, cpu) << ","
       << measured(s.floor_ratio_1thread, cpu && variant) << ","
       << measured(s.ops_per_memory, cpu && variant) << ","
       << measured(s.bound_seconds, cpu && variant) << ","
       << measured(s.peak_fraction, cpu && variant) << "\n";
  }
  return os.str();
}

void run_bench_allocation(const BenchAllocationOptions& o) {
  if (!o.json_path.empty()) check_writable_file(o.json_path, "--json");
  if (!o.csv_path.empty()) check_writable_file(o.csv_path, "--csv");
  SweepConfig config;
  config.device = parse_device(o.device);
  if (std::string why = device_unavailable(config.device); !why.empty())
    throw std::runtime_error("bench allocation: --device cuda: " + why);
  if (config.device == Device::cuda && o.clock_given)
    throw std::invalid_argument(
        "bench allocation: --clock applies to --device cpu only; on cuda the times are GPU time "
        "from CUDA events");
  for (const std::string& name : o.variants)
    config.variants.push_back(parse_allocation_variant(name));
  config.seqs = o.seqs;
  config.mems = o.mems;
  config.batch = o.batch;
  config.repetitions = o.repetitions;
  config.backward = !o.no_backward;
  config.cpu_clock = o.clock == "cpu";
  if (config.cpu_clock && config.device == Device::cpu && threads() > 1)
    throw std::invalid_argument(
        "bench allocation: --clock cpu times this thread only, but the kernels run on " +
        std::to_string(threads()) + " threads: add --threads 1, or use --clock wall");
  if (config.seqs.empty() || config.mems.empty())
    throw std::invalid_argument("bench allocation: --seq and --mem need at least one value");
  for (int64_t v : config.seqs)
    if (v < 1) throw std::invalid_argument("bench allocation: --seq values must be >= 1");
  for (int64_t v : config.mems)
    if (v < 1) throw std::invalid_argument("bench allocation: --mem values must be >= 1");
  if (config.batch < 1) throw std::invalid_argument("bench allocation: --batch must be >= 1");
  if (config.repetitions < 1)
    throw std::invalid_argument("bench allocation: --repetitions must be >= 1");

  // A grid of millions of points would run for days and its rows fill the memory.
  constexpr size_t kMaxPoints = 100000;
  if (config.mems.size() * config.seqs.size() > kMaxPoints)
    throw std::invalid_argument("bench allocation: " + std::to_string(config.seqs.size()) +
                                " --seq values x " + std::to_string(config.mems.size()) +
                                " --mem values make " +
                                std::to_string(config.mems.size() * config.seqs.size()) +
                                " points: expected at most " + std::to_string(kMaxPoints));
  // The largest point's five arrays of batch x seq x mem values (usage, its gradient, the
  // output, the gradient out, the free lists), before anything is allocated.
  const double seq = static_cast<double>(*std::max_element(config.seqs.begin(), config.seqs.end()));
  const double mem = static_cast<double>(*std::max_element(config.mems.begin(), config.mems.end()));
  require_memory(5.0 * 4.0 * static_cast<double>(config.batch) * seq * mem, 0,
                 "the largest point (--batch " + std::to_string(config.batch) + ", --seq " +
                     std::to_string(static_cast<int64_t>(seq)) + ", --mem " +
                     std::to_string(static_cast<int64_t>(mem)) +
                     ": five arrays of batch x seq x mem values)",
                 "smaller --seq, --mem or --batch");
  std::cerr << "mare bench allocation: " << config.mems.size() * config.seqs.size()
            << " sweep points\n";
  SweepResult result =
      run_allocation_sweep(config, [](const std::string& line) { std::cerr << line << "\n"; });
  std::cout << format_sweep_tables(result);
  if (!o.json_path.empty()) {
    atomic_write(o.json_path, json_text(to_json(result)));
    std::cout << "wrote " << o.json_path << "\n";
  }
  if (!o.csv_path.empty()) {
    atomic_write(o.csv_path, to_csv(result));
    std::cout << "wrote " << o.csv_path << "\n";
  }
}

}  // namespace

void add_bench_iteration_command(CLI::App& bench);  // bench_iteration.cpp

void add_bench_command(CLI::App& app) {
  CLI::App* bench = add_group(app, "bench", "Kernel benchmarks");
  // `mare bench SUB --threads K`: an option of `bench` that every sub-command
  // passes up (fallthrough, inherited by the sub-commands added below); its
  // function runs before any sub-command's callback.
  bench->fallthrough();
  bench
      ->add_option_function<int>(
          "--threads", [](const int& k) { set_threads(k); },
          "Kernel threads (default: MARE_THREADS, else every core)")
      ->check(whole_number(1, kMaxThreads));
  auto [alloc, opts] = add_command<BenchAllocationOptions>(
      *bench, "allocation",
      "Time the DNC allocation variants over sequence length x memory size (thesis Table 4.14), "
      "against a copy of the same bytes",
      [](const BenchAllocationOptions& given, const CLI::App& cmd) {
        BenchAllocationOptions o = given;
        o.clock_given = cmd.count("--clock") > 0;
        run_bench_allocation(o);
      });
  add_choice(alloc, "--device", opts->device,
             "cpu, or cuda (GPU kernels timed with CUDA events; needs a CUDA build and a GPU)",
             device_names());
  alloc
      ->add_option("--variants", opts->variants,
                   "Variants to time (default all): sorted, parallel, parallel-eps, rank, "
                   "parallel-block, network")
      ->delimiter(',');
  alloc->add_option("--seq", opts->seqs, "Sequence lengths (tokens per sequence)")
      ->delimiter(',')
      ->capture_default_str();
  alloc->add_option("--mem", opts->mems, "Memory sizes N (slots)")
      ->delimiter(',')
      ->capture_default_str();
  alloc->add_option("--batch", opts->batch, "Sequences per batch (M = batch x seq memories)")
      ->capture_default_str();
  alloc
      ->add_option("--repetitions", opts->repetitions,
                   "Timed repetitions per point (the median is reported)")
      ->capture_default_str();
  add_choice(alloc, "--clock", opts->clock,
             "Clock behind the medians and ratios: wall (steady_clock) or cpu (this thread's CPU "
             "time, for a shared machine); both go to JSON/CSV (cpu device only)",
             allocation_clock_names());
  alloc->add_flag("--no-backward", opts->no_backward, "Time the forward pass only");
  alloc->add_option("--json", opts->json_path, "Write the rows as JSON to FILE");
  alloc->add_option("--csv", opts->csv_path, "Write the rows as CSV to FILE");
  add_bench_iteration_command(*bench);
}

}  // namespace mare::cli
