#include "reports/src/gnuplot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>

namespace mare::report::gnuplot {
namespace fs = std::filesystem;

namespace {

struct Captured {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr together, tail kept
  std::string start_error;
};

constexpr std::size_t kMaxOutput = 64 * 1024;

// fork + exec with stdout/stderr into one pipe, read until EOF or the deadline. Between fork
// and exec the child calls only async-signal-safe functions (the report may run threads).
Captured capture(const fs::path& binary, const std::vector<std::string>& args, const fs::path& dir,
                 double timeout_s) {
  Captured c;
  std::vector<std::string> storage;
  storage.push_back(binary.string());
  for (const auto& a : args) storage.push_back(a);
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string cwd = dir.string();

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    c.start_error = std::string("pipe: ") + std::strerror(errno);
    return c;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    c.start_error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return c;
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  c.started = true;
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      c.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      c.output.append(buf, static_cast<std::size_t>(n));
      if (c.output.size() > 2 * kMaxOutput) c.output.erase(0, c.output.size() - kMaxOutput);
    } else if (n == 0) {
      break;  // EOF: the child closed its output (exited)
    } else if (errno != EAGAIN && errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  if (c.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) c.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) c.signal = WTERMSIG(status);
  if (c.output.size() > kMaxOutput) c.output.erase(0, c.output.size() - kMaxOutput);
  return c;
}

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::optional<fs::path> search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return fs::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string d = dirs.substr(start, end - start);
    const fs::path candidate = fs::path(d.empty() ? "." : d) / name;
    if (executable(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::string tail_lines(const std::string& s, std::size_t max_chars = 2000) {
  std::string t = s.size() > max_chars ? "..." + s.substr(s.size() - max_chars) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

}  // namespace

std::optional<fs::path> find_binary() {
  if (const char* env = std::getenv("MARE_GNUPLOT")) {
    if (*env == '\0') return std::nullopt;
    return search_path(env);
  }
  return search_path("gnuplot");
}

Terminals terminals(const fs::path& binary) {
  static std::mutex mutex;
  static std::map<std::string, Terminals> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(binary.string());
  if (it != cache.end()) return it->second;
  Terminals t;
  const Captured list = capture(binary, {"-d", "-e", "set terminal"}, {}, 60.0);
  // The listing is one terminal per line, its name first: match whole names only.
  auto has = [&](const std::string& name) {
    std::size_t pos = 0;
    while ((pos = list.output.find(name, pos)) != std::string::npos) {
      const bool start_ok = pos == 0 || list.output[pos - 1] == ' ' || list.output[pos - 1] == '\n';
      const std::size_t end = pos + name.size();
      const bool end_ok = end < list.output.size() && list.output[end] == ' ';
      if (start_ok && end_ok) return true;
      pos = end;
    }
    return false;
  };
  if (has("pngcairo"))
    t.png = "pngcairo";
  else if (has("png"))
    t.png = "png";
  t.svg = has("svg");
  const Captured version = capture(binary, {"--version"}, {}, 60.0);
  t.version = version.output.substr(0, version.output.find('\n'));
  cache[binary.string()] = t;
  return t;
}

RunResult run(const fs::path& binary, const fs::path& dir, const std::string& script,
              double timeout_s) {
  RunResult r;
  const Captured c = capture(binary, {"-d", script}, dir, timeout_s);
  if (!c.started) {
    r.error = "could not start " + binary.string() + ": " + c.start_error;
    return r;
  }
  if (c.timed_out) {
    r.error = binary.string() + " " + script + " did not finish within " + num(timeout_s) +
              " s (killed); output: " + tail_lines(c.output);
    return r;
  }
  if (c.exit_code == 127 || c.exit_code == 126) {
    r.error = "could not execute " + binary.string() + " in " + dir.string();
    return r;
  }
  if (c.exit_code != 0) {
    r.error = binary.string() + " " + script + " failed (" +
              (c.signal ? "signal " + std::to_string(c.signal)
                        : "exit status " + std::to_string(c.exit_code)) +
              "): " + tail_lines(c.output);
    return r;
  }
  r.ok = true;
  return r;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "NaN";
  if (v == 0) return "0";  // also for -0
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '\\' || ch == '"') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string comment(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return out;
}

void atomic_write(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp" +
                                             std::to_string(static_cast<long>(::getpid())));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot open for writing");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) throw std::runtime_error(tmp.string() + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(path.string() + ": cannot rename the written file into place");
  }
}

std::string line_style(int k, double line_width) {
  // Okabe-Ito colours (distinct for colour-blind readers) ordered so that neighbours differ
  // in lightness; dash patterns and point types cycle with other periods (8, 5, 10), so no
  // two of the first 40 styles look alike in grey.
  static const char* const colours[] = {"#000000", "#0072B2", "#D55E00", "#009E73",
                                        "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F"};
  static const char* const dashes[] = {"1", "(10,5)", "(2,4)", "(10,4,2,4)", "(18,6,4,6,4,6)"};
  static const int points[] = {7, 5, 9, 13, 6, 4, 8, 12, 2, 3};
  const int i = k - 1;
  return "set style line " + std::to_string(k) + " lc rgb \"" + colours[i % 8] + "\" lw " +
         num(line_width) + " dt " + dashes[i % 5] + " pt " + std::to_string(points[i % 10]) +
         " ps 1.3";
}

}  // namespace mare::report::gnuplot
