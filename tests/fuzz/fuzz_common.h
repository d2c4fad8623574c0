// Shared checks of the loader fuzz targets.
//
// Rule: a loader either returns documents or throws DataError; anything else (a crash,
// a sanitizer report, another exception type, a hang) is a bug. When loading succeeds,
// writing and loading again must give the same bytes (the writer is a fixed point).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define MARE_FUZZ_CHECK(cond)                                                             \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
