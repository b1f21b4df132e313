// load_state_file on files torch.save writes (tests/python/torchsave_scale_cases.py): tensors that
// view one storage in the file view one storage in memory, as after Python's torch.load (a flat
// parameter buffer and an optimizer's flat momentum buffer, 2000 views of one storage, zip and
// legacy); hostile shapes end in one short error or load in linear time; a key of 600000 wrapper
// prefixes is found and described in one short line, and so are thousands of unread objects.
#include "core/state_file.h"

#include <string>

#include <torch/nn/modules/linear.h>

#include <sstream>

#include "core/model_state_finder.h"
#include "core/models.h"
#include "test_support.h"

namespace ct = crosstrain::testing;
using namespace crosstrain;

namespace {

class StateFile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("state_file_scale").string();
    auto r = ct::run_python_script("torchsave_scale_cases.py", dir_);
    ok_ = r.exit_code == 0;
    if (!ok_) std::cerr << r.output;
  }
  static std::string path(const std::string& name) { return dir_ + "/" + name; }
  static std::string error_of(const std::string& name) {
    try {
      core::load_state_file(path(name));
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  static std::string dir_;
  static bool ok_;
};
std::string StateFile::dir_;
bool StateFile::ok_ = false;

bool same_storage(const at::Tensor& a, const at::Tensor& b) { return a.storage().is_alias_of(b.storage()); }

}  // namespace

TEST_F(StateFile, ParametersSavedAsViewsOfOneFlatBufferStayViewsOfOneStorage) {
  ASSERT_TRUE(ok_);
  const auto ckpt = core::load_state_file(path("flat_params.pt")).toGenericDict();
  const auto copy = core::load_state_file(path("flat_copy.pt")).toGenericDict();
  const auto model = ckpt.at("model").toGenericDict();
  const auto model_copy = copy.at("model").toGenericDict();
  // Conv, BatchNorm and Linear weights and biases: one flat buffer of all parameters.
  const std::vector<std::string> params = {"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"};
  const at::Tensor first = model.at(params[0]).toTensor();
  int64_t numel = 0;
  for (const auto& k : params) {
    const at::Tensor t = model.at(k).toTensor();
    EXPECT_TRUE(same_storage(t, first)) << k;
    EXPECT_EQ(t.storage_offset(), numel) << k;
    EXPECT_TRUE(t.equal(model_copy.at(k).toTensor())) << k;
    numel += t.numel();
  }
  EXPECT_EQ(first.storage().nbytes(), static_cast<size_t>(numel) * 4);  // the buffer, once
  // BatchNorm's running statistics are tensors of their own.
  EXPECT_FALSE(same_storage(model.at("1.running_mean").toTensor(), first));
  // SGD's momentum buffers: views of a second flat buffer.
  const auto state = ckpt.at("optimizer").toGenericDict().at("state").toGenericDict();
  const auto state_copy = copy.at("optimizer").toGenericDict().at("state").toGenericDict();
  ASSERT_EQ(state.size(), params.size());
  const at::Tensor m0 = state.at(int64_t{0}).toGenericDict().at("momentum_buffer").toTensor();
  EXPECT_FALSE(same_storage(m0, first));
  for (int64_t i = 0; i < static_cast<int64_t>(params.size()); ++i) {
    const at::Tensor m = state.at(i).toGenericDict().at("momentum_buffer").toTensor();
    EXPECT_TRUE(same_storage(m, m0)) << i;
    EXPECT_TRUE(m.equal(state_copy.at(i).toGenericDict().at("momentum_buffer").toTensor())) << i;
  }
}

TEST_F(StateFile, TwoThousandViewsOfOneStorageShareItInZipAndLegacyFiles) {
  ASSERT_TRUE(ok_);
  const auto d = core::load_state_file(path("views.pt")).toGenericDict();
  const at::Tensor flat = d.at("flat").toTensor();
  ASSERT_EQ(flat.numel(), 16384);
  const auto zip_views = d.at("views").toList();
  const auto legacy_views = core::load_state_file(path("legacy_views.pt")).toList();
  for (const auto& views : {zip_views, legacy_views}) {
    ASSERT_EQ(views.size(), 2000u);
    const at::Tensor v0 = views.get(0).toTensor();
    for (size_t j = 0; j < views.size(); ++j) {
      const at::Tensor v = views.get(j).toTensor();
      ASSERT_TRUE(same_storage(v, v0)) << j;
      ASSERT_TRUE(v.equal(flat.slice(0, 8 * static_cast<int64_t>(j), 8 * static_cast<int64_t>(j) + 8))) << j;
    }
    EXPECT_EQ(v0.storage().nbytes(), 16384u * 4);
  }
  EXPECT_TRUE(same_storage(zip_views.get(0).toTensor(), flat));
  const at::Tensor t = d.at("t").toTensor();  // flat[:64].view(8, 8).t()
  EXPECT_TRUE(same_storage(t, flat));
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(t.equal(flat.slice(0, 0, 64).view({8, 8}).t()));
}

TEST_F(StateFile, HostileShapesEndInOneShortLineOrLoadInLinearTime) {
  ASSERT_TRUE(ok_);
  // A tensor inside a tuple nested 10^6 deep: refused at once, in one line.
  const std::string deep = error_of("deep.pt");
  EXPECT_EQ(deep, path("deep.pt") + ": containers nested deeper than 256");
  // One memoised 1 MiB key set 100000 times: one entry, as in Python.
  const auto repeated = core::load_state_file(path("repeated_key.pt")).toGenericDict();
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_EQ(repeated.begin()->key().toStringRef(), std::string(1 << 20, 'k'));
  EXPECT_TRUE(repeated.begin()->value().toTensor().equal(at::arange(4, at::kFloat)));
  // {1 MiB key: [None] * 50000}
  const auto long_key = core::load_state_file(path("long_key.pt")).toGenericDict();
  ASSERT_EQ(long_key.size(), 1u);
  EXPECT_EQ(long_key.begin()->value().toList().size(), 50000u);
}

TEST_F(StateFile, AKeyOf600000WrapperPrefixesIsFoundAndDescribedInOneShortLine) {
  ASSERT_TRUE(ok_);
  // {"module." * 600000 + "weight": tensor}: stripping is linear in the key's length.
  const c10::IValue root = core::load_state_file(path("module_key.pt"));
  const auto found = core::find_model_state(root, {{"weight", at::zeros({2})}}, {}, "weights file x");
  EXPECT_EQ(found.tensors.size(), 1u);
  EXPECT_EQ(found.stripped.size(), 600000u * 7);
  const std::string said = found.describe();
  EXPECT_LT(said.size(), 200u) << said.substr(0, 200);
  EXPECT_EQ(said.rfind("the root (1 tensors), prefix 'module.module.", 0), 0u) << said.substr(0, 200);
  try {
    core::find_model_state(root, {{"bias", at::zeros({2})}}, {}, "weights file x");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_LT(what.size(), 600u) << what.substr(0, 600);
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_NE(what.find("missing 1: 'bias', unexpected 1: 'weight'"), std::string::npos) << what.substr(0, 600);
  }
}

TEST_F(StateFile, ThousandsOfUnreadObjectsMakeOneShortNote) {
  ASSERT_TRUE(ok_);
  // {"model": a Linear's state dict, "args": 3000 argparse.Namespace objects}: the weights load and
  // the note names the first few objects, not all of them.
  torch::nn::Linear linear(2, 2);
  std::ostringstream notes;
  core::load_weights(*linear, path("objects.pt"), &notes);
  const std::string note = notes.str();
  EXPECT_LT(note.size(), 600u) << note.substr(0, 600);
  EXPECT_EQ(std::count(note.begin(), note.end(), '\n'), 1) << note.substr(0, 600);
  EXPECT_NE(note.find("loaded ['model'] (2 tensors); not read: ['args'][0] (argparse.Namespace), "
                      "['args'][1] (argparse.Namespace)"),
            std::string::npos)
      << note.substr(0, 600);
}
