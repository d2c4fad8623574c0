// Runs the real `mare` binary (MARE_CLI_BINARY) as a separate process and captures its
// exit status, stdout and stderr, as a user or a script sees them.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/cli_binary.h"

#ifndef MARE_CLI_BINARY
#error "MARE_CLI_BINARY (path of the mare binary) must be defined by the build"
#endif

namespace mare::test {

struct MareOutcome {
  int status = -1;  // exit status; -1 when the process did not exit normally
  std::string out, err;
};

inline std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `mare args...` run in the directory `cwd`; stdout and stderr go to files there.
inline MareOutcome run_mare_in(const std::filesystem::path& cwd,
                               const std::vector<std::string>& args) {
  std::string cmd =
      "cd " + shell_quoted(cwd.string()) + " && " + shell_quoted(::mare::test::cli_binary());
  for (const std::string& a : args) cmd += " " + shell_quoted(a);
  cmd += " >" + shell_quoted((cwd / "mare.stdout").string()) + " 2>" +
         shell_quoted((cwd / "mare.stderr").string());
  const int raw = std::system(cmd.c_str());
  MareOutcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.out = slurp_file(cwd / "mare.stdout");
  o.err = slurp_file(cwd / "mare.stderr");
  return o;
}

}  // namespace mare::test
