// Run directories: atomic writes, finished runs, metrics appended line by line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "experiments/run_dir.h"
#include "experiments/run_lifecycle.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = ::mare::test::process_temp_dir() / ("rundir_" + name);  // unique per process
  std::filesystem::remove_all(d);
  return d;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RunDir, AtomicWriteReplacesWholeFileAndLeavesNoTemporary) {
  auto d = fresh_dir("atomic");
  std::filesystem::create_directories(d);
  atomic_write(d / "f.json", "old\n");
  atomic_write(d / "f.json", "new\n");
  EXPECT_EQ(slurp(d / "f.json"), "new\n");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(d)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_THROW(atomic_write(d / "no" / "such" / "dir.json", "x"), std::runtime_error);
  std::filesystem::remove_all(d);
}

TEST(RunDir, ResultMarksTheRunFinished) {
  auto d = fresh_dir("finished");
  RunDir run(d);
  EXPECT_FALSE(run.finished());
  run.write_manifest({{"seed", 1}});
  run.append_metrics({{"epoch", 1}});
  run.append_metrics({{"epoch", 2}});
  EXPECT_FALSE(run.finished());
  run.write_result({{"status", "completed"}});
  EXPECT_TRUE(run.finished());
  EXPECT_EQ(slurp(d / "metrics.jsonl"), "{\"epoch\":1}\n{\"epoch\":2}\n");
  EXPECT_EQ(slurp(d / "result.json"), "{\n  \"status\": \"completed\"\n}\n");
  run.reset();
  EXPECT_FALSE(run.finished());
  EXPECT_FALSE(std::filesystem::exists(d / "metrics.jsonl"));
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace mare

namespace mare {
namespace {

// A run is neither resumed nor taken as finished on another device: the device is part
// of the configuration (recorded where it is not the CPU, so earlier CPU manifests match).
TEST(RunLifecycle, AnotherDeviceIsAnotherConfiguration) {
  const std::filesystem::path d = fresh_dir("device");
  const nlohmann::json config = {{"model", "mlp"}, {"seed", 1}};
  {
    RunLifecycle gpu(d, config, false, Device::cuda);
    ASSERT_EQ(gpu.begin({}), RunLifecycle::Start::fresh);  // writes the manifest, no GPU work
    gpu.finish({{"status", "completed"}});
  }
  EXPECT_EQ(RunLifecycle(d, config, false, Device::cuda).begin({}), RunLifecycle::Start::finished);
  try {
    RunLifecycle(d, config, false, Device::cpu).begin({});
    ADD_FAILURE() << "a finished GPU run was taken for a CPU one";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "finished run of another configuration (device: \"cuda\" there, the default now)"),
        std::string::npos)
        << e.what();
  }
  // A CPU run's manifest holds no device, as before: a CPU run of an earlier version
  // is the same configuration.
  const std::filesystem::path c = fresh_dir("device_cpu");
  RunLifecycle cpu(c, config, false, Device::cpu);
  ASSERT_EQ(cpu.begin({}), RunLifecycle::Start::fresh);
  EXPECT_FALSE(nlohmann::json::parse(slurp(c / "manifest.json"))["config"].contains("device"));
}

TEST(RunDir, FloatsPrintInTheirShortDecimalForm) {
  EXPECT_EQ(nlohmann::json(decimal(0.01f)).dump(), "0.01");
  EXPECT_EQ(nlohmann::json(decimal(1e-4f)).dump(), "0.0001");
  EXPECT_EQ(decimal(0.0f), 0.0);
}

}  // namespace
}  // namespace mare
