// --weights through the binary with files Python wrote (tests/python/state_file_cases.py):
// torchvision's resnet18 as torch.save(model.state_dict()) writes it (an OrderedDict) loads
// unchanged; fp16 weights convert; truncated storage records, tensors reaching past their
// storage, integer and complex weights and a directory are refused in one line naming the file
// (and the key).
#include <fstream>

#include "test_support.h"

namespace ct = crosstrain::testing;
namespace fs = std::filesystem;

namespace {

const std::string kResnet18 =
    " train --model resnet18 --num-classes 10 --image-size 32 --batch-size 2 --threads 1 --steps 1 --warmup-steps 0";

class WeightsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("weights_cli");
    auto r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/state_file_cases.py " +
                             dir_.string());
    ok_ = r.exit_code == 0;
    if (!ok_) std::cerr << r.output;
  }
  static std::string file(const std::string& name) { return (dir_ / name).string(); }
  // stderr only: a refusal is exactly one line.
  static ct::CommandResult run(const std::string& args) {
    return ct::run_command("(" + ct::binary() + kResnet18 + " " + args + " > /dev/null)");
  }
  static void expect_refused(const std::string& weights, const std::vector<std::string>& parts) {
    auto r = run("--weights " + weights);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(r.output.rfind("crosstrain: error: weights file " + weights, 0), 0u) << r.output;
    for (const auto& part : parts) EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  }
  static fs::path dir_;
  static bool ok_;
};
fs::path WeightsCli::dir_;
bool WeightsCli::ok_ = false;

}  // namespace

TEST_F(WeightsCli, ModelStateDictAsTorchSaveWritesItLoadsUnchanged) {
  ASSERT_TRUE(ok_);
  // lr 0 without momentum or decay: one step leaves the parameters as loaded (BN statistics move).
  auto r = run("--weights " + file("tv.pt") + " --lr 0 --momentum 0 --weight-decay 0 --save-weights " + file("out.pt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/checkpoint_interop.py same " +
                      file("tv.pt") + " " + file("out.pt") + " params");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "equal 62\n");
}

TEST_F(WeightsCli, HalfPrecisionWeightsConvertToTheModelsFloat) {
  ASSERT_TRUE(ok_);
  auto r = run("--weights " + file("half.pt") + " --lr 0 --momentum 0 --weight-decay 0 --save-weights " +
               file("out_half.pt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = ct::run_command(ct::python() + " -c \"import torch, torchvision; h = torch.load('" + file("half.pt") +
                      "'); o = torch.load('" + file("out_half.pt") +
                      "'); ks = [k for k, _ in torchvision.models.resnet18(num_classes=10).named_parameters()]; "
                      "assert all(o[k].dtype == torch.float32 and torch.equal(o[k], h[k].float()) for k in ks); "
                      "print(len(ks))\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "62\n");
}

TEST_F(WeightsCli, StorageShorterThanItsTensorIsRefusedNamingTheKey) {
  ASSERT_TRUE(ok_);
  expect_refused(file("short.pt"), {"tensor ['fc.weight']: storage record data/120 holds 10240 bytes, fewer than its "
                                    "5120 float32 elements need (truncated or corrupt)"});
  expect_refused(file("reach.pt"), {"tensor ['conv1.weight'] of size [8], stride [1] and offset 2 reaches past"});
}

TEST_F(WeightsCli, IntegerAndComplexWeightsAreRefusedNamingBothTypes) {
  ASSERT_TRUE(ok_);
  expect_refused(file("int64.pt"), {"key 'conv1.weight' holds int64, model expects float32"});
  expect_refused(file("complex.pt"), {"key 'conv1.weight' holds complex64, model expects float32"});
}

TEST_F(WeightsCli, ADirectoryOrAFifoIsRefusedInOneLine) {
  ASSERT_TRUE(ok_);
  expect_refused(dir_.string(), {"is a directory, not a regular file"});
  const auto fifo = file("fifo.pt");
  ASSERT_EQ(ct::run_command("mkfifo " + fifo).exit_code, 0);
  expect_refused(fifo, {"is a FIFO, not a regular file"});
}
