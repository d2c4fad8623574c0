// `mare doctor`: what this machine and this build offer.
#include <Eigen/Core>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "experiments/cli/commands.h"
#include "kernels/ops/exp.h"
#include "kernels/parallel.h"
#include "kernels/tensor.h"
#include "mare_build_info.h"
#ifdef MARE_WITH_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace mare::cli {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// "not compiled ...", or the toolkit and then one line per visible GPU.
std::string cuda_report() {
#ifndef MARE_WITH_CUDA
  return "not compiled into this build (configure with -DMARE_CUDA=ON and nvcc)\n";
#else
  std::ostringstream s;
  s << "compiled (nvcc " << MARE_CUDA_COMPILER_VERSION << ", architectures "
    << MARE_CUDA_ARCHITECTURES << ")";
  int n = cuda::device_count();
  if (n == 0) {
    s << "; no GPU found (" << cuda::no_device_reason() << ")\n";
    return s.str();
  }
  s << "; " << n << " GPU" << (n > 1 ? "s" : "") << ", ops run on device " << cuda::current_device()
    << " (MARE_CUDA_DEVICE)\n";
  for (int i = 0; i < n; ++i) {
    cuda::DeviceInfo d = cuda::device_info(i);
    s << "gpu " << i << "          " << d.name << ", " << std::fixed << std::setprecision(1)
      << static_cast<double>(d.total_memory) / (1 << 30) << " GiB, compute capability "
      << d.compute_major << "." << d.compute_minor << ", " << d.multiprocessors << " SMs, driver "
      << d.driver_version / 1000 << "." << (d.driver_version % 1000) / 10 << ", runtime "
      << d.runtime_version / 1000 << "." << (d.runtime_version % 1000) / 10 << "\n";
  }
  return s.str();
#endif
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor", "Report CPU, threads, CUDA and library versions");
  cmd->callback([] {
    const int kernel_threads = threads();  // a bad MARE_THREADS is refused before any output
    std::cout << "cpu            " << cpu_model() << "\n"
              << "threads        " << kernel_threads << " kernel threads ("
              << (std::getenv("MARE_THREADS") ? "MARE_THREADS" : "every core") << "; "
              << std::thread::hardware_concurrency()
              << " hardware; --threads K on train and bench); results are the same bytes at "
                 "any count\n"
              << "simd           " << Eigen::SimdInstructionSetsInUse() << "\n"
              << "exp            " << detail::exp_path()
              << " (softmax exps with the bits of the C library's expf)\n"
              << "cuda           " << cuda_report() << "eigen          " << MARE_EIGEN_VERSION
              << "\n"
              << "cli11          " << MARE_CLI11_VERSION << "\n"
              << "nlohmann_json  " << MARE_JSON_VERSION << "\n"
              << "yaml-cpp       " << MARE_YAML_CPP_VERSION << "\n"
              << "boost          " << MARE_BOOST_VERSION << "\n"
              << "compiler       " << MARE_CXX_COMPILER << "\n"
              << "mare           " << MARE_VERSION << " (" << MARE_GIT_COMMIT << ")\n";
  });
}

}  // namespace mare::cli
