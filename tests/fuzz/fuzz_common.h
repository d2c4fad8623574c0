// Shared checks of the loader fuzz targets.
//
// Rule: a loader either returns documents or throws DataError; anything else (a crash,
// a sanitizer report, another exception type, a hang) is a bug. When loading succeeds,
// writing and loading again must give the same bytes (the writer is a fixed point).
// Only the first parse, of the fuzzer's bytes, may refuse its input: the write and the
// re-parse of the writer's own output run outside that catch (mare_fuzz_round_trip),
// where any exception, DataError included, aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "experiments/data/error.h"

#define MARE_FUZZ_CHECK(cond)                                                             \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// The first parse: the loader's result, or nullopt when it refused the input with a
// DataError (any other exception escapes and libFuzzer reports it).
template <class Parse>
auto mare_fuzz_parse(Parse&& parse) -> std::optional<decltype(parse())> {
  try {
    return std::optional<decltype(parse())>(std::forward<Parse>(parse)());
  } catch (const mare::data::DataError&) {
    return std::nullopt;
  }
}

// Write, re-parse and compare, on data the loader accepted: every exception is a bug
// (the writer emitted something its own loader refuses, or threw on loaded data).
template <class RoundTrip>
void mare_fuzz_round_trip(const char* format, RoundTrip&& round_trip) {
  try {
    std::forward<RoundTrip>(round_trip)();
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "fuzz check failed: %s: write + re-parse of the writer's own output threw: %s\n",
                 format, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz check failed: %s: write + re-parse threw a non-std exception\n",
                 format);
    std::abort();
  }
}
