// `mare inspect step` (experiments/inspect_step.h): the NPY files are what NumPy reads
// (header, shape, bytes), the dump holds every parameter and the gradients of the loss
// it reports, the same seed gives the same bytes, and a bad request is refused. The
// numbers themselves are checked against an independent implementation by
// tests/peers/check_models.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/data/generators.h"
#include "experiments/inspect_step.h"
#include "tests/temp_dir.h"

namespace mare {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The header dictionary of an NPY v1.0 file, and where its data starts.
std::string npy_header(const std::string& bytes, size_t& data_at) {
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], '\x01');
  EXPECT_EQ(bytes[7], '\x00');
  const size_t len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  data_at = 10 + len;
  EXPECT_EQ(data_at % 64, 0u) << "the data starts on a 64-byte boundary";
  EXPECT_EQ(bytes[data_at - 1], '\n');
  return bytes.substr(10, len);
}

TEST(InspectStep, NpyFilesAreWhatNumpyReads) {
  test::TempDir dir("npy");
  const Tensor f = Tensor::from_vector({1, -2, 3.5f, 0, 5, 6}, {2, 3});
  write_npy(dir.path() / "f.npy", f);
  size_t at = 0;
  std::string bytes = slurp(dir.path() / "f.npy");
  std::string header = npy_header(bytes, at);
  EXPECT_EQ(header.substr(0, header.find('}') + 1),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  ASSERT_EQ(bytes.size(), at + 6 * sizeof(float));
  EXPECT_EQ(std::memcmp(bytes.data() + at, f.f32(), 6 * sizeof(float)), 0);

  write_npy(dir.path() / "i.npy", Tensor::from_indices({7, -1, 3, 0}, {4}));
  bytes = slurp(dir.path() / "i.npy");
  header = npy_header(bytes, at);
  EXPECT_EQ(header.substr(0, header.find('}') + 1),
            "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }");
  ASSERT_EQ(bytes.size(), at + 4 * sizeof(int32_t));
  int32_t second = 0;
  std::memcpy(&second, bytes.data() + at + 4, 4);
  EXPECT_EQ(second, -1);
}

TEST(InspectStep, DumpsEveryParameterAndItsGradient) {
  test::TempDir dir("inspect_step");
  data::GenerateOptions g;
  g.seed = 2;
  g.docs = 4;
  data::generate_synth_cdr((dir.path() / "cdr").string(), g);
  InspectStepOptions o;
  o.model = "NTCRE-CPD+d=8+heads=2+dropout=0+ner_prob=0+biaffine_init=glorot";
  o.data = "synth-cdr:" + (dir.path() / "cdr").string();
  o.batch = 3;
  o.max_tokens = 60;
  o.out = dir.path() / "a";
  const InspectStepResult r = inspect_step(o);
  const nlohmann::json& j = r.index;
  EXPECT_EQ(j.at("task"), "re");
  EXPECT_EQ(j.at("config").at("d"), 8);
  EXPECT_EQ(j.at("config").at("cpd"), true);
  EXPECT_EQ(j.at("config").at("entity_tag_input"), true);
  const double loss = j.at("loss"), task = j.at("task_loss"), aux = j.at("aux_loss");
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(aux, 0.0);  // ponder cost and the memory's gate regulariser
  EXPECT_NEAR(loss, task + aux, 1e-6 * std::fabs(loss));
  // Every parameter has a file; all but the NER head (an RE step) a gradient.
  const nlohmann::json& files = j.at("files");
  EXPECT_EQ(j.at("parameters_without_gradient"), (nlohmann::json{"ner.w", "ner.b"}));
  EXPECT_EQ(files.at("grads").size() + 2, files.at("params").size());
  for (const auto& [name, f] : files.at("params").items()) {
    EXPECT_TRUE(fs::exists(o.out / f.at("file").get<std::string>())) << name;
    if (name != "ner.w" && name != "ner.b") EXPECT_TRUE(files.at("grads").contains(name)) << name;
  }
  for (const char* t : {"words", "mask", "ngrams", "entity_tags", "labels", "head_rows"})
    EXPECT_TRUE(files.at("batch").contains(t)) << t;
  EXPECT_TRUE(files.at("outputs").contains("pair_logits"));
  EXPECT_TRUE(files.at("buffers").contains("input.norm.running_mean"));

  // The same seed: the same bytes.
  o.out = dir.path() / "b";
  inspect_step(o);
  for (const auto& [name, f] : files.at("grads").items())
    EXPECT_EQ(slurp(dir.path() / "a" / f.at("file").get<std::string>()),
              slurp(dir.path() / "b" / f.at("file").get<std::string>()))
        << name;

  // A NER step needs a model that trains NER.
  o.task = "ner";
  EXPECT_THROW(inspect_step(o), std::invalid_argument);
  o.model = "NTCRE-CPD+d=8+heads=2+dropout=0";
  o.out = dir.path() / "ner";
  const InspectStepResult ner = inspect_step(o);
  EXPECT_EQ(ner.index.at("config").at("entity_tag_input"), false);
  EXPECT_TRUE(ner.index.at("files").at("outputs").contains("ner_logits"));
  o.task = "both";
  EXPECT_THROW(inspect_step(o), std::invalid_argument);
}

}  // namespace
}  // namespace mare
