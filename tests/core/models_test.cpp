#include "core/models.h"

#include <torch/serialize.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "core/state_file.h"
#include "test_support.h"

using namespace crosstrain;
using crosstrain::testing::run_command;

TEST(Models, ParameterCountsMatchTorchvision) {
  // torchvision's published sizes for 1000 classes.
  const std::vector<std::pair<std::string, int64_t>> expected = {{"resnet18", 11689512}, {"resnet34", 21797672},
                                                                 {"resnet50", 25557032}, {"resnet101", 44549160},
                                                                 {"resnet152", 60192808}};
  for (const auto& [name, count] : expected) {
    auto m = core::create_model(name, {});
    EXPECT_EQ(core::parameter_count(*m), count) << name;
  }
  core::ModelOptions ten;
  ten.num_classes = 10;
  EXPECT_EQ(core::parameter_count(*core::create_model("resnet50", ten)), 25557032 - 2048 * 990 - 990);
}

TEST(Models, UnknownNameListsTheRegistry) {
  try {
    core::create_model("resnet51", {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18, resnet34, resnet50, resnet101, resnet152"), std::string::npos);
  }
}

TEST(Models, ForwardMacsMatchPublishedFigures) {
  // torchvision lists 1.81 and 4.09 GMACs ("GFLOPS" in its tables) at 224 px.
  EXPECT_NEAR(core::forward_macs("resnet18", {}, 224) / 1e9, 1.814, 0.005);
  EXPECT_NEAR(core::forward_macs("resnet50", {}, 224) / 1e9, 4.089, 0.005);
}

TEST(Models, OutputShapesForStems) {
  core::ModelOptions small;
  small.small_stem = true;
  small.num_classes = 10;
  auto m = core::create_model("resnet18", small);
  m->eval();
  torch::NoGradGuard ng;
  EXPECT_EQ(m->forward(at::randn({2, 3, 28, 28})).sizes(), (std::vector<int64_t>{2, 10}));
  auto big = core::create_model("resnet50", {});
  big->eval();
  EXPECT_EQ(big->forward(at::randn({1, 3, 64, 64})).sizes(), (std::vector<int64_t>{1, 1000}));
}

TEST(Models, ZeroInitResidualZeroesLastBatchNorm) {
  core::ModelOptions o;
  o.zero_init_residual = true;
  auto m = core::create_model("resnet50", o);
  int zeroed = 0;
  for (const auto& p : m->named_parameters()) {
    if (p.key().find(".bn3.weight") != std::string::npos) {
      EXPECT_EQ(p.value().abs().sum().item<double>(), 0.0) << p.key();
      ++zeroed;
    }
  }
  EXPECT_EQ(zeroed, 16);
}

class TorchvisionReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = crosstrain::testing::scratch_dir("tv_ref").string();
    auto r = run_command(crosstrain::testing::python() + " " + crosstrain::testing::source_dir() +
                         "/tests/python/torchvision_reference.py " + dir_ + " resnet50 10 64");
    ok_ = r.exit_code == 0;
    if (!ok_) std::cerr << r.output;
  }
  static std::string dir_;
  static bool ok_;
};
std::string TorchvisionReference::dir_;
bool TorchvisionReference::ok_ = false;

TEST_F(TorchvisionReference, KeysAndShapesMatch) {
  ASSERT_TRUE(ok_);
  core::ModelOptions o;
  o.num_classes = 10;
  auto m = core::create_model("resnet50", o);
  std::map<std::string, std::string> ours;
  auto shape = [](const at::Tensor& t) {
    std::string s;
    for (auto d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s.empty() ? std::string("scalar") : s;
  };
  for (const auto& p : m->named_parameters()) ours[p.key()] = shape(p.value());
  for (const auto& b : m->named_buffers()) ours[b.key()] = shape(b.value());
  std::ifstream keys(dir_ + "/keys.txt");
  std::string key, dims;
  size_t n = 0;
  while (keys >> key >> dims) {
    ++n;
    ASSERT_TRUE(ours.count(key)) << "missing " << key;
    EXPECT_EQ(ours[key], dims) << key;
  }
  EXPECT_EQ(n, ours.size());
}

TEST_F(TorchvisionReference, SameWeightsGiveTorchvisionLogits) {
  ASSERT_TRUE(ok_);
  core::ModelOptions o;
  o.num_classes = 10;
  auto m = core::create_model("resnet50", o);
  core::load_weights(*m, dir_ + "/weights.pt");
  m->eval();
  std::ifstream in(dir_ + "/io.pt", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto io = torch::pickle_load(bytes).toGenericDict();
  at::Tensor x = io.at("x").toTensor(), y = io.at("y").toTensor();
  torch::NoGradGuard ng;
  at::Tensor ours = m->forward(x);
  const double err = (ours - y).abs().max().item<double>();
  EXPECT_LE(err, 1e-4);
  // channels-last sums in another order: the same logits up to float rounding.
  core::to_channels_last(*m);
  EXPECT_LE((m->forward(x.contiguous(at::MemoryFormat::ChannelsLast)) - y).abs().max().item<double>(), 5e-4);
}

TEST(TorchvisionResnet18, ModelStateDictFileGivesTorchvisionLogits) {
  // torch.save(model.state_dict()) as Python scripts write it: an OrderedDict with _metadata.
  const auto dir = crosstrain::testing::scratch_dir("tv_ref18").string();
  auto r = run_command(crosstrain::testing::python() + " " + crosstrain::testing::source_dir() +
                       "/tests/python/torchvision_reference.py " + dir + " resnet18 10 32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  core::ModelOptions o;
  o.num_classes = 10;
  auto m = core::create_model("resnet18", o);
  core::load_weights(*m, dir + "/weights.pt");
  m->eval();
  auto io = core::load_state_file(dir + "/io.pt").toGenericDict();
  torch::NoGradGuard ng;
  const at::Tensor y = io.at("y").toTensor();
  EXPECT_LE((m->forward(io.at("x").toTensor()) - y).abs().max().item<double>(), 1e-4);
  EXPECT_GT(y.abs().max().item<double>(), 1e-2);  // logits that say something
}

TEST_F(TorchvisionReference, SavedWeightsLoadInTorchvision) {
  ASSERT_TRUE(ok_);
  core::ModelOptions o;
  o.num_classes = 10;
  auto m = core::create_model("resnet50", o);
  core::load_weights(*m, dir_ + "/weights.pt");
  const std::string path = dir_ + "/roundtrip.pt";
  core::save_weights(*m, path);
  auto r = run_command(crosstrain::testing::python() + " " + crosstrain::testing::source_dir() +
                       "/tests/python/check_saved_weights.py " + path + " resnet50 10");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("ok 320 tensors", 0), 0u) << r.output;
}

TEST_F(TorchvisionReference, BadWeightFilesNameTheProblem) {
  ASSERT_TRUE(ok_);
  core::ModelOptions o;
  o.num_classes = 10;
  auto wrong_classes = core::create_model("resnet50", {});  // 1000 classes vs 10 in the file
  try {
    core::load_weights(*wrong_classes, dir_ + "/weights.pt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'fc.weight' has shape [10, 2048], model expects [1000, 2048]"),
              std::string::npos)
        << e.what();
  }
  auto resnet18 = core::create_model("resnet18", o);
  try {
    core::load_weights(*resnet18, dir_ + "/weights.pt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("weights.pt"), std::string::npos);
  }
  { std::ofstream(dir_ + "/garbage.pt") << "not a pickle"; }
  EXPECT_THROW(core::load_weights(*resnet18, dir_ + "/garbage.pt"), std::runtime_error);
  EXPECT_THROW(core::load_weights(*resnet18, dir_ + "/absent.pt"), std::runtime_error);
}
