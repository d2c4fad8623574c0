// Checks of the run lifecycle (experiments/run_lifecycle.h) that every trainer's tests
// share.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace mare::test {

// `killed` (the options of `whole` with another --out) is killed at its evaluation of
// epoch `kill_at` (an exception from after_evaluation, before that epoch's state is
// saved), then run again: it resumes from the state of the epoch before, evaluating the
// epochs `then` only, and ends with the result.json, metrics.jsonl and checkpoint.bin
// bytes of `whole`, run without a break, and no last.ckpt.
template <class Options, class Train>
void expect_killed_run_resumes(Train train, const Options& whole, Options killed, int64_t kill_at,
                               const std::vector<int64_t>& then) {
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  train(whole, nullptr);
  killed.after_evaluation = [kill_at](int64_t epoch) {
    if (epoch == kill_at) throw std::runtime_error("killed");
  };
  EXPECT_THROW(train(killed, nullptr), std::runtime_error);
  EXPECT_TRUE(std::filesystem::exists(killed.out / "last.ckpt"));
  std::vector<int64_t> evaluated;
  killed.after_evaluation = [&](int64_t epoch) { evaluated.push_back(epoch); };
  train(killed, nullptr);
  EXPECT_EQ(evaluated, then);
  for (const char* f : {"result.json", "metrics.jsonl", "checkpoint.bin"})
    EXPECT_EQ(bytes(whole.out / f), bytes(killed.out / f)) << f;
  EXPECT_FALSE(std::filesystem::exists(killed.out / "last.ckpt"));
}

}  // namespace mare::test
