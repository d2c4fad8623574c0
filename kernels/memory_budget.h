// How much host memory a process's tensors may hold, so that a size nobody's machine can
// hold (a batch of two billion, a memory of 10^8 slots) is refused with what it needs and
// what there is, before the allocation, instead of growing until the kernel's OOM killer
// ends the process.
//
// The budget: MARE_MEMORY_LIMIT when set (bytes, or a number with K, M, G or T for powers
// of 1024: "8G"); otherwise nine tenths of the memory available when the process first
// asked (Linux's MemAvailable, or the cgroup's memory.max or the address-space limit of
// `ulimit -v` when lower): a tenth is left for what is not a tensor. Every CPU tensor storage
// counts against it while it lives (Storage in tensor.h).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace mare {

// A request beyond the budget: the message names the bytes asked, those held, the budget
// and where it came from.
struct OutOfMemoryBudget : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The budget in bytes (read once; a malformed MARE_MEMORY_LIMIT throws
// std::invalid_argument naming it).
std::size_t memory_budget_bytes();
// Where the budget came from: "MARE_MEMORY_LIMIT=8G" or "MemAvailable when the process
// started" (or the cgroup's limit).
std::string memory_budget_source();

// "1.5 GiB", "320 MiB", "12 KiB", "900 B".
std::string format_bytes(double bytes);

// Throws OutOfMemoryBudget when `bytes` for `what` ("a tensor", "a synth-ctd corpus of
// 100000 documents (estimated)") beside `held` bytes already held exceed the budget;
// `advice` ends the message (which options to lower).
void require_memory(double bytes, double held, const std::string& what, const std::string& advice);

}  // namespace mare
