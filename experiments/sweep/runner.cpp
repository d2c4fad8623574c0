#include "experiments/sweep/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <thread>

#include "experiments/run_dir.h"
#include "experiments/run_lifecycle.h"
#include "stats/result_metrics.h"

extern char** environ;

namespace mare::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kTailLines = 20;
constexpr size_t kTailBytes = 4000;

std::string errno_text() {
  return std::strerror(errno);
}

nlohmann::json read_json_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(p.string() + ": not valid JSON: " + e.what());
  }
}

// A JSON file that may be absent or half-written by a killed process: nullopt then.
std::optional<nlohmann::json> try_read_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string duration_text(double s) {
  if (s < 0) s = 0;
  long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

// The last lines of a file from byte `from` on (the current attempt's stderr).
std::string file_tail(const fs::path& p, std::uintmax_t from) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::uintmax_t size = static_cast<std::uintmax_t>(in.tellg());
  if (from > size) from = 0;
  std::uintmax_t start =
      std::max<std::uintmax_t>(from, size > 4 * kTailBytes ? size - 4 * kTailBytes : 0);
  in.seekg(static_cast<std::streamoff>(start));
  std::string s(size - start, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  while (!s.empty() && s.back() == '\n') s.pop_back();
  size_t pos = s.size(), lines = 0;
  while (pos > 0 && lines < kTailLines) {
    size_t nl = s.rfind('\n', pos - 1);
    ++lines;
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  std::string tail = s.substr(pos == 0 ? 0 : pos + 1);
  if (tail.size() > kTailBytes) tail = tail.substr(tail.size() - kTailBytes);
  return tail;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789@%+=:,./_-") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string command_text(const std::string& binary, const std::vector<std::string>& args) {
  std::string s = shell_quote(binary);
  for (const auto& a : args) {
    s += ' ';
    s += shell_quote(a);
  }
  return s;
}

int64_t count_lines(const fs::path& p) {
  std::ifstream in(p);
  int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// ---- signals --------------------------------------------------------------

volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_stop_count = 0;
int g_wake[2] = {-1, -1};

void wake() {
  if (g_wake[1] >= 0) {
    int saved = errno;
    char c = 'x';
    [[maybe_unused]] ssize_t n = ::write(g_wake[1], &c, 1);
    errno = saved;
  }
}

void on_stop(int sig) {
  if (g_stop_signal == 0) g_stop_signal = sig;
  g_stop_count = g_stop_count + 1;
  wake();
}

void on_child(int) {
  wake();
}

// Installs the handlers for the sweep's lifetime and restores the old ones after.
class SignalScope {
 public:
  SignalScope() {
    g_stop_signal = 0;
    g_stop_count = 0;
    if (::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error("mare sweep: cannot create a pipe: " + errno_text());
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;  // file writes between polls are not cut short
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    ::sigaction(SIGCHLD, &sa, &old_chld_);
  }
  ~SignalScope() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    ::close(g_wake[0]);
    ::close(g_wake[1]);
    g_wake[0] = g_wake[1] = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Sleeps until a signal or the timeout.
  static void wait(int timeout_ms) {
    struct pollfd p {};
    p.fd = g_wake[0];
    p.events = POLLIN;
    ::poll(&p, 1, timeout_ms);
    char buf[64];
    while (::read(g_wake[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_chld_ {};
};

// ---- child processes ------------------------------------------------------

struct Child {
  pid_t pid = -1;
  Clock::time_point started;
};

// Starts `binary args` with stdout/stderr appended to the given files (or inherited when
// empty) and MARE_THREADS in the environment. The child gets its own process group (a
// terminal's ^C reaches the sweep only, which forwards it) and dies with the sweep
// (PR_SET_PDEATHSIG), so a killed sweep leaves no run writing behind it.
Child spawn(const std::string& binary, const std::vector<std::string>& args,
            const fs::path& stdout_path, const fs::path& stderr_path, int threads,
            double time_limit) {
  // Everything the child needs is built before fork: only async-signal-safe calls after.
  std::vector<std::string> argv_s;
  argv_s.push_back(binary);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "MARE_THREADS=", 13) != 0 &&
        (time_limit <= 0 || std::strncmp(*e, "MARE_TIME_LIMIT=", 16) != 0))
      env_s.emplace_back(*e);
  env_s.push_back("MARE_THREADS=" + std::to_string(threads));
  if (time_limit > 0) {
    char limit[64];
    std::snprintf(limit, sizeof limit, "MARE_TIME_LIMIT=%.3fs", std::max(time_limit, 1e-3));
    env_s.emplace_back(limit);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  auto open_log = [](const fs::path& p) {
    if (p.empty()) return -1;
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error(p.string() + ": cannot open for writing: " + errno_text());
    return fd;
  };
  int out = open_log(stdout_path);
  int err = open_log(stderr_path);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGCHLD, &dfl, nullptr);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    if (::getppid() != parent) ::_exit(137);  // the sweep died before prctl
    if (null_fd >= 0) ::dup2(null_fd, 0);
    if (out >= 0) ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "mare sweep: cannot execute the mare binary\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) ::setpgid(pid, pid);  // also here: no window where a kill(-pid) misses it
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  for (int fd : {out, err, null_fd})
    if (fd >= 0) ::close(fd);
  if (pid < 0)
    throw std::runtime_error("mare sweep: fork failed: " + std::string(std::strerror(fork_errno)));
  return {pid, Clock::now()};
}

// ---- data -----------------------------------------------------------------

bool need_used(const DataNeed& need, const SweepPlan& plan, const std::vector<size_t>& runs) {
  bool referenced_anywhere = false;
  for (size_t k = 0; k < plan.runs.size(); ++k)
    for (const auto& a : plan.runs[k].command)
      if (a.find(need.dir) != std::string::npos) {
        referenced_anywhere = true;
        if (std::find(runs.begin(), runs.end(), k) != runs.end()) return true;
      }
  // A need no run names (a spec passing it another way) is generated by every sweep.
  return !referenced_anywhere;
}

}  // namespace

// ---- plan ----------------------------------------------------------------

Shard parse_shard(const std::string& text) {
  auto bad = [&] {
    return std::invalid_argument("--shard: expected i/n with 1 <= i <= n (e.g. 2/8), got '" + text +
                                 "'");
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad();
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    return std::stoi(s);
  };
  Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (s.count < 1 || s.index < 1 || s.index > s.count) throw bad();
  return s;
}

std::vector<size_t> shard_runs(size_t runs, Shard shard) {
  std::vector<size_t> out;
  for (size_t k = static_cast<size_t>(shard.index - 1); k < runs;
       k += static_cast<size_t>(shard.count))
    out.push_back(k);
  return out;
}

nlohmann::json plan_json(const SweepPlan& plan) {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& d : plan.data)
    data.push_back({{"generator", d.generator},
                    {"seed", d.seed},
                    {"docs", d.docs},
                    {"dir", d.dir},
                    {"command", d.command}});
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : plan.runs)
    runs.push_back({{"cell", r.cell},
                    {"seed", r.seed},
                    {"id", r.id},
                    {"dir", r.dir},
                    {"kind", r.kind},
                    {"params", r.params},
                    {"command", r.command},
                    {"done_file", r.done_file}});
  return {{"spec", plan.spec_path},
          {"sweep", plan.name},
          {"table", plan.table},
          {"profile", plan.profile},
          {"description", plan.description},
          {"data", std::move(data)},
          {"runs", std::move(runs)}};
}

SweepPlan plan_from_json(const nlohmann::json& j, const std::string& file) {
  try {
    SweepPlan p;
    p.spec_path = j.at("spec").get<std::string>();
    p.name = j.at("sweep").get<std::string>();
    p.table = j.value("table", "");
    p.profile = j.at("profile").get<std::string>();
    p.description = j.value("description", "");
    for (const auto& d : j.value("data", nlohmann::json::array())) {
      DataNeed n;
      n.generator = d.at("generator").get<std::string>();
      n.seed = d.value("seed", int64_t{1});
      n.docs = d.value("docs", int64_t{0});
      n.dir = d.at("dir").get<std::string>();
      n.command = d.at("command").get<std::vector<std::string>>();
      p.data.push_back(std::move(n));
    }
    for (const auto& r : j.at("runs")) {
      RunPlan run;
      run.cell = r.at("cell").get<std::string>();
      run.seed = r.at("seed").get<int64_t>();
      run.id = r.at("id").get<std::string>();
      run.dir = r.at("dir").get<std::string>();
      run.kind = r.value("kind", "train");
      run.params = r.value("params", nlohmann::json::object());
      run.command = r.at("command").get<std::vector<std::string>>();
      run.done_file = r.value("done_file", run.kind == "bench" ? "bench.json" : "result.json");
      if (run.dir.empty() || fs::path(run.dir).is_absolute() ||
          run.dir.find("..") != std::string::npos)
        throw std::invalid_argument("run dir '" + run.dir +
                                    "' must be a relative path inside the sweep root");
      p.runs.push_back(std::move(run));
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(file +
                                ": not a sweep plan (expected sweep.json's spec, sweep, "
                                "profile, runs[{cell, seed, id, dir, command}]): " +
                                e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(file + ": " + e.what());
  }
}

// A sweep root belongs to the spec and profile of its sweep.json: another is
// refused before anything is written (its plan would replace the one that ran
// and orphan its runs), as `mare train` refuses another configuration in its run
// directory. A changed version of the same spec (same name and profile) may
// replace the plan; collect names the runs it leaves.
void claim_root(const SweepPlan& plan, const fs::path& root) {
  const fs::path p = root / "sweep.json";
  if (!fs::exists(p)) return;
  const SweepPlan held = plan_from_json(read_json_file(p), p.string());
  if (held.name == plan.name && held.profile == plan.profile) return;
  throw std::invalid_argument(p.string() + ": this directory holds the sweep '" + held.name +
                              "' (profile " + held.profile + ", spec " + held.spec_path +
                              "); expected '" + plan.name + "' (profile " + plan.profile +
                              ") only in a directory of its own: give it another --out");
}

SweepPlan load_plan(const std::string& path, const std::string& profile) {
  if (fs::path(path).extension() == ".json") {
    SweepPlan p = plan_from_json(read_json_file(path), path);
    if (!profile.empty() && profile != p.profile)
      throw std::invalid_argument(path + ": a plan of profile '" + p.profile + "', not '" +
                                  profile + "' (leave --profile out for a plan)");
    return p;
  }
  return load_sweep(path, profile.empty() ? "default" : profile);
}

std::string substitute(std::string arg, const std::string& run, const std::string& root,
                       const std::string& out) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"{run}", run},
                                   std::pair<std::string, std::string>{"{root}", root},
                                   std::pair<std::string, std::string>{"{out}", out}}) {
    size_t pos = 0;
    while ((pos = arg.find(key, pos)) != std::string::npos) {
      arg.replace(pos, key.size(), value);
      pos += value.size();
    }
  }
  return arg;
}

// ---- state on disk ------------------------------------------------------------

namespace {

bool done_status(const std::string& s) {
  return s == "completed" || s == "diverged";
}

// The status the run's own output claims, "" when it has none (yet).
std::string output_status(const fs::path& dir, const RunPlan& run) {
  auto j = try_read_json(dir / run.done_file);
  if (!j) return "";
  if (run.done_file == "result.json") {
    if (!j->is_object() || !j->contains("status") || !(*j)["status"].is_string()) return "";
    std::string s = (*j)["status"].get<std::string>();
    return done_status(s) ? s : "";
  }
  return "completed";
}

RunOnDisk inspect_state(const fs::path& dir, const RunPlan& run, bool retry_failed);

// What makes a finished run's output one that no run writes ("" when it is whole): JSON
// cut short, a completed result.json without a test score or with a value no metric can
// have, a benchmark of negative seconds (stats/result_metrics.h). Such a run runs again.
std::string damaged_output(const fs::path& dir, const RunPlan& run) {
  const fs::path p = dir / run.done_file;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "";  // not there: nothing finished
  const auto j = try_read_json(p);
  if (!j || !j->is_object()) return p.string() + ": not a JSON object (cut short?)";
  std::string why;
  if (run.done_file != "result.json")
    why = stats::impossible_value(*j);
  else if (const auto st = j->find("status"); st == j->end() || *st == "completed")
    why = stats::completed_result_problem(*j);
  // A diverged run's result.json says what went wrong ("loss": "-nan"): not held to values.
  return why.empty() ? "" : p.string() + ": " + why;
}

}  // namespace

RunOnDisk inspect_run(const fs::path& dir, const RunPlan& run, bool retry_failed) {
  RunOnDisk d = inspect_state(dir, run, retry_failed);
  if (d.state == RunState::done) {
    d.damaged = damaged_output(dir, run);
    if (!d.damaged.empty()) d.state = RunState::todo;
  }
  return d;
}

namespace {

RunOnDisk inspect_state(const fs::path& dir, const RunPlan& run, bool retry_failed) {
  RunOnDisk d;
  if (auto st = try_read_json(dir / "status.json");
      st && st->is_object() && st->contains("status") && (*st)["status"].is_string()) {
    d.status = (*st)["status"].get<std::string>();
    d.status_json = *st;
    // Done only while its output is there: a run whose result file went missing (a
    // cleanup, a partial copy) runs again rather than count as finished with nothing.
    if (done_status(d.status) && fs::exists(dir / run.done_file)) {
      d.state = RunState::done;
      return d;
    }
    if ((d.status == "failed" || d.status == "crashed") && !retry_failed) {
      d.state = RunState::failed;
      return d;
    }
  }
  // The child finished but the sweep died before status.json: its output says so.
  if (std::string s = output_status(dir, run); !s.empty()) {
    d.state = RunState::done;
    d.status = s;
    d.status_json = nullptr;
    return d;
  }
  d.state = RunState::todo;
  return d;
}

}  // namespace

int SweepSummary::exit_status() const {
  if (stop_signal) return 128 + stop_signal;
  if (!failed.empty()) return 1;
  return paused > 0 || (out_of_time && not_started > 0) ? kExitPaused : 0;
}

int available_cores() {
  for (const char* var : {"MARE_THREADS", "SLURM_CPUS_PER_TASK"})
    if (const char* v = std::getenv(var)) {
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && n > 0) return static_cast<int>(n);
    }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("/proc/self/exe: cannot read the mare binary's path: " + ec.message());
  return p.string();
}

// ---- lock -----------------------------------------------------------------

namespace {

std::string lock_holder(int fd) {
  char buf[256] = {0};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return "";
  size_t sp = s.find(' ');
  if (sp == std::string::npos) return "pid " + s;
  return "pid " + s.substr(0, sp) + " on " + s.substr(sp + 1);
}

void write_holder(int fd) {
  std::string s = std::to_string(::getpid()) + " " + host_name() + "\n";
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] ssize_t n = ::pwrite(fd, s.data(), s.size(), 0);
  }
}

int open_lock(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(p.string() + ": cannot open the sweep lock: " + errno_text());
  return fd;
}

// The shard sweeps holding their locks now, as "i/n (pid …)".
std::string running_shards(const fs::path& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".sweep-", 0) != 0 || e.path().extension() != ".lock") continue;
    int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0)
      found.push_back(e.path().string() + " (" + lock_holder(fd) + ")");
    ::close(fd);
  }
  std::sort(found.begin(), found.end());
  std::string s;
  for (const auto& f : found) s += (s.empty() ? "" : ", ") + f;
  return s;
}

}  // namespace

SweepLock::SweepLock(const fs::path& root, Shard shard) {
  const fs::path root_lock = root / ".sweep.lock";
  root_fd_ = open_lock(root_lock);
  const int how = shard.whole() ? LOCK_EX : LOCK_SH;
  if (::flock(root_fd_, how | LOCK_NB) != 0) {
    std::string holder = lock_holder(root_fd_);
    std::string msg = root_lock.string() + ": another `mare sweep` is running on " + root.string();
    if (shard.whole()) {
      std::string shards = running_shards(root);
      msg += !holder.empty()   ? " (" + holder + ")"
             : !shards.empty() ? " (shard sweeps: " + shards + ")"
                               : "";
    } else if (!holder.empty()) {
      msg += " (" + holder + ")";
    }
    ::close(root_fd_);
    root_fd_ = -1;
    throw SweepLocked(msg + "; wait for it to end or stop it");
  }
  if (shard.whole()) {
    write_holder(root_fd_);
    return;
  }
  // Shards share the root lock: no exclusive holder exists, so its pid is stale.
  [[maybe_unused]] int r = ::ftruncate(root_fd_, 0);
  const fs::path shard_lock = root / (".sweep-" + std::to_string(shard.index) + "of" +
                                      std::to_string(shard.count) + ".lock");
  shard_fd_ = open_lock(shard_lock);
  if (::flock(shard_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder = lock_holder(shard_fd_);
    ::close(shard_fd_);
    ::close(root_fd_);
    shard_fd_ = root_fd_ = -1;
    throw SweepLocked(shard_lock.string() + ": shard " + shard.text() + " of the sweep on " +
                      root.string() + " is running" + (holder.empty() ? "" : " (" + holder + ")") +
                      "; wait for it to end or stop it");
  }
  write_holder(shard_fd_);
}

SweepLock::~SweepLock() {
  if (shard_fd_ >= 0) ::close(shard_fd_);
  if (root_fd_ >= 0) ::close(root_fd_);
}

// ---- the sweep ------------------------------------------------------------

namespace {

struct Running {
  size_t index = 0;  // in plan.runs
  Child child;
  int attempt = 1;
  std::uintmax_t stderr_from = 0;
};

class Sweep {
 public:
  Sweep(const SweepPlan& plan, const RunnerOptions& o)
      : plan_(plan), o_(o), binary_(o.mare_binary.empty() ? self_executable() : o.mare_binary) {
    root_ = fs::absolute(o.root).lexically_normal();
    if (root_.has_filename() == false) root_ = root_.parent_path();
    jobs_ = std::max(1, o.jobs);
    threads_ = std::max(1, (o.cores > 0 ? o.cores : available_cores()) / jobs_);
  }

  SweepSummary run();

 private:
  // The steps of run(): what the root holds of each run (done, failed, to run; a damaged
  // run set aside, a lost run.json written again), the queue run jobs_ at a time until it
  // is empty or a signal stops it, and the summary.
  std::deque<size_t> take_stock(const std::vector<size_t>& mine);
  void run_queue(std::deque<size_t>& queue);
  void print_summary();
  void log_line(const std::string& s);
  void progress();
  void generate_data(const std::vector<size_t>& todo);
  void start(size_t index);
  void finish(Running& r, int wait_status);
  void write_status(const fs::path& dir, const std::string& status, std::optional<int> code,
                    std::optional<int> sig, double wall, int attempt, const std::string& tail);
  fs::path run_dir(size_t k) const { return root_ / plan_.runs[k].dir; }
  int wait_children(bool block);
  // Seconds left of o_.time_limit (0 when there is no limit; ≤ 0 once it is spent).
  double time_left() const {
    if (o_.time_limit <= 0) return 0;
    const double used = std::chrono::duration<double>(Clock::now() - t0_).count();
    return std::max(o_.time_limit - used, -1.0);
  }

  const SweepPlan& plan_;
  const RunnerOptions& o_;
  std::string binary_;
  fs::path root_;
  int jobs_ = 1;
  int threads_ = 1;
  SweepSummary s_;
  std::vector<Running> running_;
  bool forwarded_ = false;
  int forwarded_count_ = 0;
  Clock::time_point t0_ = Clock::now();
  size_t finished_now_ = 0;
  bool progress_shown_ = false;
};

void Sweep::log_line(const std::string& s) {
  if (!o_.log) return;
  if (o_.tty && progress_shown_) *o_.log << "\r\033[K";
  *o_.log << "mare sweep: " << s << "\n";
  progress_shown_ = false;
  if (o_.tty) progress();
  o_.log->flush();
}

std::string counts(const SweepSummary& s, size_t running, double elapsed, size_t finished_now,
                   size_t queued) {
  const size_t done = s.skipped + s.completed + s.diverged;
  std::ostringstream os;
  os << done << "/" << s.total << " done, " << running << " running, " << s.failed.size()
     << " failed, " << duration_text(elapsed) << " elapsed";
  if (finished_now > 0 && (queued + running) > 0)
    os << ", ETA "
       << duration_text(elapsed / static_cast<double>(finished_now) *
                        static_cast<double>(queued + running));
  return os.str();
}

void Sweep::progress() {
  if (!o_.log || !o_.tty) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
  *o_.log << "\r\033[K[sweep" << (o_.shard.whole() ? "" : " " + o_.shard.text()) << "] "
          << counts(s_, running_.size(), elapsed, finished_now_, s_.not_started);
  o_.log->flush();
  progress_shown_ = true;
}

void Sweep::write_status(const fs::path& dir, const std::string& status, std::optional<int> code,
                         std::optional<int> sig, double wall, int attempt,
                         const std::string& tail) {
  nlohmann::json j = {{"status", status},
                      {"exit_code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)},
                      {"signal", sig ? nlohmann::json(*sig) : nlohmann::json(nullptr)},
                      {"wall_s", wall},
                      {"attempt", attempt},
                      {"stderr_tail", tail}};
  atomic_write(dir / "status.json", json_text(j));
}

// Waits for every child in the list; returns the number reaped.
int Sweep::wait_children(bool block) {
  int reaped = 0;
  for (size_t i = 0; i < running_.size();) {
    int st = 0;
    pid_t r = ::waitpid(running_[i].child.pid, &st, block ? 0 : WNOHANG);
    if (r == running_[i].child.pid) {
      Running done = running_[i];
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      finish(done, st);
      ++reaped;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    ++i;
  }
  return reaped;
}

void Sweep::generate_data(const std::vector<size_t>& todo) {
  for (const DataNeed& need : plan_.data) {
    if (!need_used(need, plan_, todo)) continue;
    const fs::path final_dir = root_ / need.dir;
    if (fs::exists(final_dir)) continue;
    fs::create_directories(final_dir.parent_path());
    // A unique temporary sibling: shards generating the same data at once each write
    // their own, and the first rename wins (the others find the target and discard theirs).
    const fs::path tmp =
        final_dir.string() + ".tmp-" + host_name() + "-" + std::to_string(::getpid());
    fs::remove_all(tmp);
    const fs::path log = tmp.string() + ".log";
    std::vector<std::string> args;
    for (const auto& a : need.command)
      args.push_back(substitute(a, "", root_.string(), tmp.string()));
    log_line("generating " + need.dir + ": " + command_text(binary_, args));
    Child c = spawn(binary_, args, log, log, threads_ * jobs_, 0);
    int st = 0;
    bool forwarded = false;
    for (;;) {
      pid_t r = ::waitpid(c.pid, &st, WNOHANG);
      if (r == c.pid) break;
      if (g_stop_signal && !forwarded) {
        ::kill(-c.pid, g_stop_signal);
        forwarded = true;
      }
      SignalScope::wait(200);
    }
    if (g_stop_signal) {
      fs::remove_all(tmp);
      fs::remove(log);
      return;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::string tail = file_tail(log, 0);
      fs::remove_all(tmp);
      throw std::runtime_error("generating " + final_dir.string() + " failed (" +
                               (WIFEXITED(st) ? "exit " + std::to_string(WEXITSTATUS(st))
                                              : "signal " + std::to_string(WTERMSIG(st))) +
                               "; log " + log.string() + "):\n" + tail);
    }
    std::error_code ec;
    fs::rename(tmp, final_dir, ec);
    if (ec) {
      // Another shard got there first (ENOTEMPTY/EEXIST): its copy is the same bytes.
      if (!fs::exists(final_dir))
        throw std::runtime_error(tmp.string() + ": cannot rename to " + final_dir.string() + ": " +
                                 ec.message());
      fs::remove_all(tmp);
      fs::remove(log);
    } else {
      fs::rename(log, final_dir.string() + ".log", ec);
    }
  }
}

void Sweep::start(size_t k) {
  const RunPlan& run = plan_.runs[k];
  const fs::path dir = run_dir(k);
  fs::create_directories(dir);
  // A stale status.json (interrupted, or failed under --retry-failed) would describe the
  // previous attempt while this one runs.
  fs::remove(dir / "status.json");
  atomic_write(dir / "run.json", json_text(plan_.run_json(run)));
  const int attempt = static_cast<int>(count_lines(dir / "attempts.jsonl")) + 1;
  std::vector<std::string> args;
  for (const auto& a : run.command) args.push_back(substitute(a, dir.string(), root_.string()));
  const double time_limit = time_left();
  {
    nlohmann::json line = {{"attempt", attempt}, {"started", utc_now()},     {"host", host_name()},
                           {"pid", ::getpid()},  {"shard", o_.shard.text()}, {"threads", threads_}};
    if (time_limit > 0) line["time_limit_s"] = time_limit;  // its MARE_TIME_LIMIT
    std::ofstream att(dir / "attempts.jsonl", std::ios::app);
    att << line.dump() << "\n";
    if (!att) throw std::runtime_error((dir / "attempts.jsonl").string() + ": cannot append");
  }
  const std::string header = "== mare sweep: attempt " + std::to_string(attempt) + ", " +
                             utc_now() + ", MARE_THREADS=" + std::to_string(threads_) + ": " +
                             command_text(binary_, args) + "\n";
  for (const char* f : {"stdout.log", "stderr.log"}) {
    std::ofstream h(dir / f, std::ios::app | std::ios::binary);
    h << header;
  }
  std::error_code ec;
  const std::uintmax_t from = fs::file_size(dir / "stderr.log", ec);
  Running r;
  r.index = k;
  r.attempt = attempt;
  r.stderr_from = ec ? 0 : from;
  r.child = spawn(binary_, args, dir / "stdout.log", dir / "stderr.log", threads_, time_limit);
  running_.push_back(r);
  if (!o_.tty)
    log_line("started " + run.dir + " (attempt " + std::to_string(attempt) + ", pid " +
             std::to_string(r.child.pid) + ")");
}

void Sweep::finish(Running& r, int st) {
  const RunPlan& run = plan_.runs[r.index];
  const fs::path dir = run_dir(r.index);
  const double wall = std::chrono::duration<double>(Clock::now() - r.child.started).count();
  std::optional<int> code, sig;
  std::string status;
  if (WIFEXITED(st)) {
    code = WEXITSTATUS(st);
    if (*code == 0) {
      status = output_status(dir, run);
      if (status.empty()) status = "failed";  // exit 0 without its result file
    } else if (*code == kExitPaused) {
      status = "paused";  // at its time limit, with last.ckpt: the next sweep goes on
    } else {
      status = forwarded_ ? "interrupted" : "failed";
    }
  } else if (WIFSIGNALED(st)) {
    sig = WTERMSIG(st);
    status = forwarded_ ? "interrupted" : "crashed";
  } else {
    status = "crashed";
  }
  // A stopped sweep may see a run finish anyway: keep what it wrote.
  if (forwarded_ && status == "failed" && !output_status(dir, run).empty())
    status = output_status(dir, run);
  const std::string tail = file_tail(dir / "stderr.log", r.stderr_from);
  write_status(dir, status, code, sig, wall, r.attempt, tail);
  std::ostringstream msg;
  msg << run.dir << ": " << status;
  if (status == "failed" && code) msg << " (exit " << *code << ")";
  if (sig) msg << " (signal " << *sig << ")";
  msg << " in " << std::fixed << std::setprecision(1) << wall << " s";
  if (status == "completed") ++s_.completed;
  if (status == "diverged") ++s_.diverged;
  if (status == "interrupted") ++s_.interrupted;
  if (status == "paused") ++s_.paused;
  if (status == "failed" || status == "crashed")
    s_.failed.push_back({dir.string(), status, code, sig, tail});
  if (status != "interrupted" && status != "paused") ++finished_now_;
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
  if (!o_.tty)
    msg << " [" << counts(s_, running_.size(), elapsed, finished_now_, s_.not_started) << "]";
  log_line(msg.str());
}

SweepSummary Sweep::run() {
  const std::vector<size_t> mine = shard_runs(plan_.runs.size(), o_.shard);
  s_.total = mine.size();
  fs::create_directories(root_);
  SweepLock lock(root_, o_.shard);
  claim_root(plan_, root_);
  atomic_write(root_ / "sweep.json", json_text(plan_json(plan_)));
  std::deque<size_t> queue = take_stock(mine);
  {
    std::ostringstream os;
    os << plan_.name << " (" << plan_.profile << ")"
       << (o_.shard.whole() ? "" : ", shard " + o_.shard.text()) << ": " << s_.total << " runs, "
       << s_.skipped << " done before, " << s_.failed.size() << " failed before (kept"
       << (o_.retry_failed ? "" : "; --retry-failed reruns them") << "), " << queue.size()
       << " to run, " << jobs_ << " at once, MARE_THREADS=" << threads_ << "; root "
       << root_.string();
    log_line(os.str());
  }
  SignalScope signals;
  if (!queue.empty()) generate_data(std::vector<size_t>(queue.begin(), queue.end()));
  run_queue(queue);
  if (o_.tty && progress_shown_ && o_.log) *o_.log << "\r\033[K";
  if (o_.log) print_summary();
  return s_;
}

std::deque<size_t> Sweep::take_stock(const std::vector<size_t>& mine) {
  std::deque<size_t> queue;
  for (size_t k : mine) {  // before anything is changed
    const fs::path dir = run_dir(k);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      throw std::runtime_error(dir.string() +
                               ": a planned run directory is not a directory (move it away: the "
                               "sweep makes the run there)");
  }
  for (size_t k : mine) {
    const fs::path dir = run_dir(k);
    RunOnDisk d = inspect_run(dir, plan_.runs[k], o_.retry_failed);
    if (!d.damaged.empty()) {
      // Kept beside the run for a look, out of the way of the attempt that replaces it.
      const fs::path done = dir / plan_.runs[k].done_file;
      fs::rename(done, done.string() + ".damaged");
      log_line(d.damaged + ": runs again (the file is kept as " + done.filename().string() +
               ".damaged)");
    }
    if (d.state == RunState::done) {
      ++s_.skipped;
      // run.json says which run a directory holds (collect and report read it): a done run
      // that lost it gets it back from the plan.
      if (!try_read_json(dir / "run.json")) {
        atomic_write(dir / "run.json", json_text(plan_.run_json(plan_.runs[k])));
        log_line((dir / "run.json").string() +
                 ": missing or unreadable: written again from the plan");
      }
      if (d.status_json.is_null()) {
        // Finished, but the sweep that ran it died before status.json.
        write_status(dir, d.status, std::nullopt, std::nullopt, 0.0,
                     static_cast<int>(count_lines(dir / "attempts.jsonl")), "");
      }
    } else if (d.state == RunState::failed) {
      const auto& j = d.status_json;
      RunRecord rec{dir.string(), d.status, std::nullopt, std::nullopt,
                    j.value("stderr_tail", std::string())};
      if (j.contains("exit_code") && j["exit_code"].is_number_integer())
        rec.exit_code = j["exit_code"].get<int>();
      if (j.contains("signal") && j["signal"].is_number_integer())
        rec.signal = j["signal"].get<int>();
      s_.failed.push_back(rec);
    } else {
      queue.push_back(k);
    }
  }
  return queue;
}

void Sweep::run_queue(std::deque<size_t>& queue) {
  s_.not_started = queue.size();
  while (true) {
    wait_children(false);
    if (g_stop_signal) {
      if (!forwarded_ || (g_stop_count > forwarded_count_ && forwarded_count_ == 1)) {
        // First signal: passed on; a second one: SIGKILL.
        const int sig = forwarded_ ? SIGKILL : static_cast<int>(g_stop_signal);
        for (const auto& r : running_) ::kill(-r.child.pid, sig);
        if (!forwarded_ && !running_.empty())
          log_line(std::string("stopping: ") + strsignal(sig) + " passed on to " +
                   std::to_string(running_.size()) + " run(s); another one kills them");
        forwarded_ = true;
        forwarded_count_ = static_cast<int>(g_stop_count);
      }
    } else {
      if (!queue.empty() && o_.time_limit > 0 && time_left() < 1e-3) s_.out_of_time = true;
      while (!s_.out_of_time && static_cast<int>(running_.size()) < jobs_ && !queue.empty()) {
        size_t k = queue.front();
        queue.pop_front();
        s_.not_started = queue.size();
        start(k);
      }
    }
    if (running_.empty() && (queue.empty() || g_stop_signal || s_.out_of_time)) break;
    progress();
    SignalScope::wait(running_.empty() ? 10 : 1000);
  }
  s_.not_started = queue.size();
  s_.stop_signal = g_stop_signal;
}

void Sweep::print_summary() {
  std::ostream& out = *o_.log;
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
  out << "mare sweep: "
      << (s_.stop_signal ? "stopped by " + std::string(strsignal(s_.stop_signal)) : "finished")
      << " after " << duration_text(elapsed) << ": " << s_.total << " runs"
      << (o_.shard.whole() ? "" : " in shard " + o_.shard.text()) << ", "
      << s_.completed + s_.diverged << " done now (" << s_.diverged << " diverged), " << s_.skipped
      << " skipped (done before), " << s_.failed.size() << " failed";
  if (s_.interrupted) out << ", " << s_.interrupted << " interrupted";
  if (s_.paused) out << ", " << s_.paused << " paused at the time limit";
  if (s_.not_started) out << ", " << s_.not_started << " not started";
  out << "\n";
  // Throughput, to compare --jobs settings on one machine or one GPU: the runs that
  // finished now over the sweep's wall time.
  if (const size_t now = s_.completed + s_.diverged; now > 0 && elapsed > 0) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.4g", static_cast<double>(now) * 3600.0 / elapsed);
    out << "mare sweep: " << rate << " runs an hour (" << now << " in " << duration_text(elapsed)
        << ", " << jobs_ << " at once)\n";
  }
  for (const auto& f : s_.failed) {
    out << "  " << f.status;
    if (f.exit_code) out << " (exit " << *f.exit_code << ")";
    if (f.signal) out << " (signal " << *f.signal << ")";
    out << ": " << f.dir << "\n";
    std::istringstream tail(f.stderr_tail);
    for (std::string line; std::getline(tail, line);) out << "    | " << line << "\n";
  }
  if ((s_.stop_signal && (s_.interrupted || s_.not_started)) || s_.paused ||
      (s_.out_of_time && s_.not_started))
    out << "mare sweep: run the same command again to resume\n";
  out.flush();
}

}  // namespace

SweepSummary run_sweep(const SweepPlan& plan, const RunnerOptions& options) {
  return Sweep(plan, options).run();
}

void print_plan(const SweepPlan& plan, const RunnerOptions& o, std::ostream& out) {
  const fs::path root = fs::absolute(o.root).lexically_normal();
  claim_root(plan, root);
  const std::string binary = o.mare_binary.empty() ? self_executable() : o.mare_binary;
  const auto mine = shard_runs(plan.runs.size(), o.shard);
  size_t done = 0, failed = 0;
  out << "# " << plan.name << " (" << plan.profile << ")"
      << (plan.table.empty() ? "" : ", table " + plan.table) << ", spec " << plan.spec_path
      << (o.shard.whole() ? "" : ", shard " + o.shard.text()) << ", root " << root.string() << "\n";
  for (const DataNeed& d : plan.data) {
    std::vector<std::string> args;  // into the data's own folder (the sweep writes a sibling)
    for (const auto& a : d.command)
      args.push_back(substitute(a, "", root.string(), (root / d.dir).string()));
    out << "data\t" << d.dir << "\t" << (fs::exists(root / d.dir) ? "done" : "todo") << "\t"
        << command_text(binary, args) << "\n";
  }
  out << "cell\tseed\tdir\tstate\tcommand\n";
  for (size_t k : mine) {
    const RunPlan& r = plan.runs[k];
    const fs::path dir = root / r.dir;
    RunOnDisk d = inspect_run(dir, r, o.retry_failed);
    const char* state = d.state == RunState::done     ? "done"
                        : d.state == RunState::failed ? "failed"
                        : !d.damaged.empty()          ? "damaged"
                                                      : "todo";
    done += d.state == RunState::done;
    failed += d.state == RunState::failed;
    std::vector<std::string> args;
    for (const auto& a : r.command) args.push_back(substitute(a, dir.string(), root.string()));
    out << r.cell << "\t" << r.seed << "\t" << r.dir << "\t" << state << "\t"
        << command_text(binary, args) << "\n";
  }
  out << "# " << mine.size() << " runs: " << done << " done, " << failed << " failed (kept"
      << (o.retry_failed ? ", rerun: --retry-failed" : "") << "), " << mine.size() - done - failed
      << " to run\n";
}

std::filesystem::path emit_slurm(const SweepPlan& plan, const fs::path& root_in,
                                 const std::string& mare_binary, const SlurmOptions& so) {
  const fs::path root = fs::absolute(root_in).lexically_normal();
  const int n =
      so.tasks > 0
          ? std::min<int>(so.tasks, static_cast<int>(std::max<size_t>(1, plan.runs.size())))
          : static_cast<int>(std::max<size_t>(1, plan.runs.size()));
  claim_root(plan, root);
  fs::create_directories(root / "slurm");
  atomic_write(root / "sweep.json", json_text(plan_json(plan)));
  std::string job = "mare-" + plan.name + "-" + plan.profile;
  for (char& c : job)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# " << plan.runs.size() << " runs of " << plan.spec_path << " (profile " << plan.profile
    << ") as a Slurm array of " << n << " tasks; task i runs shard i/" << n
    << ".\n# Written by `mare sweep --emit slurm`. Submit: sbatch "
    << shell_quote((root / "sweep.sbatch").string()) << "\n"
    << "#SBATCH --job-name=" << job << "\n"
    << "#SBATCH --array=1-" << n << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=" << so.cpus_per_task << "\n"
    << "#SBATCH --output=" << (root / "slurm" / "%A_%a.out").string() << "\n"
    << "#SBATCH --error=" << (root / "slurm" / "%A_%a.err").string() << "\n";
  for (const auto& e : so.extra) s << "#SBATCH " << e << "\n";
  s << "set -eu\n"
    << "exec " << shell_quote(mare_binary) << " sweep " << shell_quote(so.spec) << " --out "
    << shell_quote(root.string()) << " --profile " << shell_quote(so.profile)
    << " --jobs 1 --shard \"${SLURM_ARRAY_TASK_ID}/" << n << "\""
    << (so.retry_failed ? " --retry-failed" : "") << "\n";
  const fs::path script = root / "sweep.sbatch";
  atomic_write(script, s.str());
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  return script;
}

}  // namespace mare::sweep
