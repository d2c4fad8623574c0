#include "experiments/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace mare {

void atomic_write(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    const int e = errno;
    const std::filesystem::path dir =
        path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    throw std::runtime_error(path.string() + ": cannot be written (" + std::strerror(e) +
                             (std::filesystem::is_directory(dir)
                                  ? std::string(")")
                                  : "; its directory " + dir.string() + " does not exist)"));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      std::filesystem::remove(tmp);
      throw std::runtime_error(path.string() + ": cannot be written (" + std::strerror(e) + ")");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int e = errno;
    std::filesystem::remove(tmp);
    throw std::runtime_error(path.string() +
                             ": cannot be written (flushing to disk: " + std::strerror(e) + ")");
  }
  // A failed rename (the target is a directory) leaves no temporary behind and names
  // the user's path, not FILE.tmp.PID.
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error(path.string() + ": cannot be written (" +
                             (std::filesystem::is_directory(path, ignored)
                                  ? std::string("it is a directory; expected a file name")
                                  : ec.message()) +
                             ")");
  }
}

void check_writable_file(const std::filesystem::path& path, const std::string& option,
                         bool creates_parents) {
  const std::string what = option + " " + path.string() + ": cannot be written: ";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) || (!path.empty() && path.string().back() == '/'))
    throw std::invalid_argument(what + "it is a directory; expected a file name");
  std::filesystem::path dir =
      path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (creates_parents)
    while (!std::filesystem::exists(dir, ec) && dir != dir.parent_path())
      dir = dir.parent_path().empty() ? std::filesystem::path(".") : dir.parent_path();
  if (!std::filesystem::is_directory(dir, ec))
    throw std::invalid_argument(what + "expected a file in an existing directory, and " +
                                dir.string() + " is not one");
  if (::access(dir.c_str(), W_OK) != 0)
    throw std::invalid_argument(what + "the directory " + dir.string() + " is not writable (" +
                                std::strerror(errno) + ")");
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2) + "\n";
}

double decimal(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

RunDir::RunDir(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
}

void RunDir::reset() {
  std::filesystem::remove(dir_ / "result.json");
  std::filesystem::remove(dir_ / "metrics.jsonl");
  std::filesystem::remove(dir_ / "timing.json");
}

void RunDir::write_manifest(const nlohmann::json& j) {
  atomic_write(dir_ / "manifest.json", json_text(j));
}

void RunDir::append_metrics(const nlohmann::json& j) {
  if (!metrics_.is_open()) {
    metrics_.open(dir_ / "metrics.jsonl", std::ios::app);
    if (!metrics_) throw std::runtime_error((dir_ / "metrics.jsonl").string() + ": cannot open");
  }
  metrics_ << j.dump() << '\n';
  metrics_.flush();
}

void RunDir::write_timing(const nlohmann::json& j) {
  atomic_write(dir_ / "timing.json", json_text(j));
}

void RunDir::write_training_timing(double wall_seconds, int64_t steps,
                                   const std::vector<double>& seconds_per_epoch) {
  write_timing({{"wall_seconds", wall_seconds},
                {"steps", steps},
                {"seconds_per_step", steps ? wall_seconds / steps : 0.0},
                {"seconds_per_epoch", seconds_per_epoch}});
}

void RunDir::write_result(const nlohmann::json& j) {
  if (metrics_.is_open()) metrics_.close();
  atomic_write(dir_ / "result.json", json_text(j));
}

}  // namespace mare
