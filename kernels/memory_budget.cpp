#include "kernels/memory_budget.h"

#include <sys/resource.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

namespace mare {
namespace {

struct Budget {
  std::size_t bytes = 0;
  std::string source;
};

// "8G", "512M", "1000000": bytes; throws on anything else.
std::size_t parse_limit(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  double scale = 1;
  if (end != s && *end) {
    switch (*end) {
      case 'K':
      case 'k':
        scale = 1024.0;
        break;
      case 'M':
      case 'm':
        scale = 1024.0 * 1024;
        break;
      case 'G':
      case 'g':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 'T':
      case 't':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        scale = 0;
    }
    ++end;
  }
  if (end == s || *end || scale == 0 || errno || !(v > 0) || !std::isfinite(v * scale) ||
      v * scale > 1e18)
    throw std::invalid_argument(
        "MARE_MEMORY_LIMIT: expected a size in bytes such as 8G, 512M "
        "or 1000000, found '" +
        text + "'");
  return static_cast<std::size_t>(v * scale);
}

// /proc/meminfo's MemAvailable in bytes, 0 when unknown.
std::size_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// The cgroup v2 limit of this process (memory.max), 0 when none.
std::size_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string v;
  if (!(in >> v) || v == "max") return 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  return end && !*end ? static_cast<std::size_t>(n) : 0;
}

const Budget& budget() {
  static const Budget b = [] {
    Budget r;
    if (const char* env = std::getenv("MARE_MEMORY_LIMIT"); env && *env) {
      r.bytes = parse_limit(env);
      r.source = std::string("MARE_MEMORY_LIMIT=") + env;
      return r;
    }
    // A tenth is left for what is not a tensor (the heap's slack, the corpus, the code).
    r.bytes = mem_available() / 10 * 9;
    r.source = "nine tenths of MemAvailable when the process started";
    const std::size_t cg = cgroup_limit();
    if (cg && (r.bytes == 0 || cg < r.bytes)) {
      r.bytes = cg / 10 * 9;
      r.source = "nine tenths of the cgroup's memory.max";
    }
    // An address-space limit (ulimit -v) caps what the process can map at all.
    if (rlimit as{}; ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
      const std::size_t cap = static_cast<std::size_t>(as.rlim_cur) / 10 * 9;
      if (r.bytes == 0 || cap < r.bytes) {
        r.bytes = cap;
        r.source = "nine tenths of the address-space limit (ulimit -v)";
      }
    }
    if (r.bytes == 0) {  // nothing to read: no budget
      r.bytes = static_cast<std::size_t>(-1);
      r.source = "no limit known";
    }
    return r;
  }();
  return b;
}

}  // namespace

std::size_t memory_budget_bytes() {
  return budget().bytes;
}

std::string memory_budget_source() {
  return budget().source;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return buf;
}

void require_memory(double bytes, double held, const std::string& what, const std::string& advice) {
  const double limit = static_cast<double>(memory_budget_bytes());
  if (bytes + held <= limit) return;
  std::ostringstream m;
  m << what << " needs " << format_bytes(bytes);
  if (held > 0) m << " beside the " << format_bytes(held) << " already held";
  const std::string source = memory_budget_source();
  m << ", more than the " << format_bytes(limit) << " this process may use (" << source
    << (source.rfind("MARE_MEMORY_LIMIT", 0) == 0 ? "" : "; MARE_MEMORY_LIMIT sets another") << ")";
  if (!advice.empty()) m << ": " << advice;
  throw OutOfMemoryBudget(m.str());
}

}  // namespace mare
