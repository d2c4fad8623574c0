// `mare`: the command line of the harness. Sub-commands live one per file
// (experiments/cli/cmd_*.cpp) and register themselves here.
//
// Exit status: 0 on success and for --help, --help-all and --version; 2 for every
// error, whether CLI11 rejects the arguments (missing, unknown or out-of-range
// options: CLI11's own codes 100-120 are not passed on) or a sub-command throws.
// Errors go to stderr as one line "mare: error: <message>" (a hint may follow).
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>

#include "experiments/cli/commands.h"
#include "mare_build_info.h"

namespace {

constexpr int kErrorStatus = 2;

// The sub-command chain that was being parsed, e.g. "mare stats signed-rank", for the hint.
std::string command_path(const CLI::App& app) {
  std::string path = "mare";
  const CLI::App* at = &app;
  for (;;) {
    const auto subs = at->get_subcommands();
    if (subs.empty()) break;
    at = subs.front();
    path += " " + at->get_name();
  }
  return path;
}

// An error message as printed: whole up to 1 000 bytes; a longer one (a 10 MB argument
// quoted back) keeps its first 700 and last 200 bytes, cut at character boundaries, and
// says how much was left out.
std::string short_message(const std::string& m) {
  constexpr std::size_t kWhole = 1000, kHead = 700, kTail = 200;
  if (m.size() <= kWhole) return m;
  auto boundary = [&](std::size_t i) {  // back to the first byte of a UTF-8 character
    while (i > 0 && i < m.size() && (static_cast<unsigned char>(m[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const std::size_t head = boundary(kHead), tail = boundary(m.size() - kTail);
  return m.substr(0, head) + " [... " + std::to_string(tail - head) + " bytes left out ...] " +
         m.substr(tail);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mare — memory-augmented neural networks for relation extraction: a research harness"};
  app.require_subcommand(0, 1);
  app.set_help_all_flag("--help-all", "Print help for every sub-command");
  bool version = false;
  app.add_flag("--version", version, "Print version, git commit and build flags");

  // Every sub-command, in `mare --help`'s order; one file each (experiments/cli/cmd_*.cpp).
  using namespace mare::cli;
  for (auto add : {add_doctor_command, add_list_command, add_train_command, add_stats_command,
                   add_data_command, add_bench_command, add_sweep_command, add_collect_command,
                   add_compare_command, add_report_command, add_inspect_command, add_score_command})
    add(app);

  try {
    app.parse(argc, argv);
    if (version) {
#ifdef MARE_WITH_CUDA
      const char* kCudaBuilt = "built";
#else
      const char* kCudaBuilt = "not built";
#endif
      std::cout << "mare " << MARE_VERSION << "\n"
                << "commit " << MARE_GIT_COMMIT << "\n"
                << "build " << MARE_BUILD_TYPE << ", " << MARE_CXX_COMPILER << "\n"
                << "flags " << MARE_CXX_FLAGS << "\n"
                << "sanitizers " << (*MARE_SANITIZE_FLAGS ? MARE_SANITIZE_FLAGS : "none") << "\n"
                << "cuda " << kCudaBuilt << " (option " << MARE_CUDA_OPTION << ")\n";
      return 0;
    }
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return 0;
    }
  } catch (const CLI::ParseError& e) {
    // --help and --help-all arrive as ParseErrors with exit code 0: CLI11 prints the help.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "mare: error: " << short_message(e.what()) << "\n"
              << "Run '" << command_path(app) << " --help' for the options.\n";
    return kErrorStatus;
  } catch (const std::filesystem::filesystem_error& e) {
    // "filesystem error: cannot create directories: Not a directory [afile]": the path first,
    // then what went wrong, then what was expected.
    std::cerr << "mare: error: " << (e.path1().empty() ? std::string("a path") : e.path1().string())
              << ": " << e.code().message()
              << " (expected a path where a directory or file can be made, e.g. --out DIR)\n";
    return kErrorStatus;
  } catch (const std::bad_alloc&) {
    // Sizes past what this machine holds (+d=1048576, --batch 100000, --seq 99999999999):
    // say so rather than print std::bad_alloc.
    std::cerr << "mare: error: out of memory: the sizes asked for (model switches, --batch, "
                 "--seq, --mem, --docs) need more memory than this machine gave; expected "
                 "smaller ones\n";
    return kErrorStatus;
  } catch (const std::exception& e) {
    std::cerr << "mare: error: " << short_message(e.what()) << "\n";
    return kErrorStatus;
  } catch (...) {
    std::cerr << "mare: error: unknown exception\n";
    return kErrorStatus;
  }
  return 0;
}
