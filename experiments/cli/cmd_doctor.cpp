// `mare doctor`: what this machine and this build offer.
#include <Eigen/Core>
#include <fstream>
#include <iostream>
#include <thread>

#include "experiments/cli/commands.h"
#include "kernels/tensor.h"
#include "mare_build_info.h"

namespace mare::cli {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor", "Report CPU, threads, CUDA and library versions");
  cmd->callback([] {
    std::cout << "cpu            " << cpu_model() << "\n"
              << "threads        " << std::thread::hardware_concurrency()
              << " hardware; kernels run single-threaded (deterministic)\n"
              << "simd           " << Eigen::SimdInstructionSetsInUse() << "\n"
              << "cuda           "
              << (!cuda_compiled() ? "not compiled into this build"
                                   : (cuda_available() ? "available" : "compiled, no GPU found"))
              << "\n"
              << "eigen          " << MARE_EIGEN_VERSION << "\n"
              << "cli11          " << MARE_CLI11_VERSION << "\n"
              << "nlohmann_json  " << MARE_JSON_VERSION << "\n"
              << "yaml-cpp       " << MARE_YAML_CPP_VERSION << "\n"
              << "boost          " << MARE_BOOST_VERSION << "\n"
              << "compiler       " << MARE_CXX_COMPILER << "\n"
              << "mare           " << MARE_VERSION << " (" << MARE_GIT_COMMIT << ")\n";
  });
}

}  // namespace mare::cli
