// The `mare` binary the CLI tests run: MARE_CLI from the environment when set
// (a packed folder's env.sh sets it: reports/devices/pack.sh), else the path
// the build compiled in (MARE_CLI_BINARY, defined by the test's CMakeLists.txt).
#pragma once

#include <cstdlib>
#include <string>

namespace mare::test {

inline std::string cli_binary() {
  const char* env = std::getenv("MARE_CLI");
  if (env != nullptr && *env != '\0') return env;
#ifdef MARE_CLI_BINARY
  return MARE_CLI_BINARY;
#else
  return "mare";
#endif
}

}  // namespace mare::test
