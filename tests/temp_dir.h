// A fresh directory per test process (mkdtemp), removed with its contents when the
// object goes out of scope. Tests never use fixed /tmp/mare_* paths: two suites running
// at once (two build directories, ctest -j, CI beside a developer) would share them.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace mare::test {

class TempDir {
 public:
  // Creates $TMPDIR/mare_<name>_XXXXXX (the X's made unique by mkdtemp).
  explicit TempDir(const std::string& name = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("mare_" + name + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("TempDir: mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// One fresh directory for the whole test process, created on first use and removed at
// exit: the base for tests that name their own sub-directories.
inline const std::filesystem::path& process_temp_dir() {
  static const TempDir dir("tests");
  return dir.path();
}

}  // namespace mare::test
