// --weights through the binary with files Python wrote (tests/python/state_file_cases.py):
// torchvision's resnet18 as torch.save(model.state_dict()) writes it (an OrderedDict) loads
// unchanged; fp16 weights convert; truncated storage records, tensors reaching past their
// storage, integer and complex weights and a directory are refused in one line naming the file
// (and the key). Then the checkpoints of real training programs (checkpoint_layout_cases.py):
// containers, wrapper prefixes, the legacy format, through --weights and --resume.
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
    auto r = ct::run_python_script("state_file_cases.py", dir_.string());
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

TEST_F(WeightsCli, SafetensorsAndEmptyFilesAreRefusedSayingWhatTheyAre) {
  ASSERT_TRUE(ok_);
  expect_refused(file("tv.safetensors"), {"a safetensors file, which crosstrain does not read",
                                          "torch.save(safetensors.torch.load_file(PATH), 'weights.pt')"});
  expect_refused(file("empty.pt"), {"an empty file (0 bytes)"});
}

TEST_F(WeightsCli, ADirectoryOrAFifoIsRefusedInOneLine) {
  ASSERT_TRUE(ok_);
  expect_refused(dir_.string(), {"is a directory, not a regular file"});
  const auto fifo = file("fifo.pt");
  ASSERT_EQ(ct::run_command("mkfifo " + fifo).exit_code, 0);
  expect_refused(fifo, {"is a FIFO, not a regular file"});
}

namespace {

// Checkpoints as training programs write them (tests/python/checkpoint_layout_cases.py): the same
// resnet18 weights in each program's layout, zip and legacy. "sum ref S" is the float64 sum of its
// parameters, which a file saved after loading (one step at learning rate 0) must reproduce.
class WeightsLayouts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("weights_layouts");
    auto r = ct::run_python_script("checkpoint_layout_cases.py", dir_.string());
    ok_ = r.exit_code == 0;
    python_says_ = r.output;
    if (!ok_) std::cerr << r.output;
  }
  static std::string file(const std::string& name) { return (dir_ / name).string(); }
  static std::string python_sum(const std::string& which) {
    const auto at = python_says_.find("sum " + which + " ");
    if (at == std::string::npos) return "?";
    const auto from = at + 5 + which.size();
    return python_says_.substr(from, python_says_.find('\n', from) - from);
  }
  // Loads `name` as --weights, saves the weights after a step at learning rate 0 and returns
  // stderr; `sum` gets the float64 sum of the saved parameters, as Python computes it.
  static std::string load(const std::string& name, std::string* sum, int* exit_code) {
    const std::string out = file("out_" + name + ".pt");
    auto r = ct::run_command("(" + ct::binary() + kResnet18 + " --weights " + file(name) +
                             " --lr 0 --momentum 0 --weight-decay 0 --save-weights " + out + " > /dev/null)");
    *exit_code = r.exit_code;
    if (r.exit_code != 0) return r.output;
    auto s = ct::run_command(
        ct::python() + " -c \"import torch, torchvision; o = torch.load('" + out +
        "'); ks = [k for k, _ in torchvision.models.resnet18(num_classes=10).named_parameters()]; "
        "print(repr(sum(o[k].double().sum().item() for k in ks)), int(o['bn1.num_batches_tracked']))\"");
    *sum = s.output;
    return r.output;
  }
  static fs::path dir_;
  static std::string python_says_;
  static bool ok_;
};
fs::path WeightsLayouts::dir_;
std::string WeightsLayouts::python_says_;
bool WeightsLayouts::ok_ = false;

}  // namespace

TEST_F(WeightsLayouts, EveryCommonCheckpointLayoutLoadsTheSameWeights) {
  ASSERT_TRUE(ok_);
  // Python's torch.load(weights_only=True) refuses the files with an argparse.Namespace.
  EXPECT_NE(python_says_.find("tvref.pth refused: Unsupported global: GLOBAL argparse.Namespace"), std::string::npos)
      << python_says_;
  const std::string ref = python_sum("ref");
  ASSERT_NE(ref, "?") << python_says_;
  // The file's num_batches_tracked is 10: 11 after the step.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ref.pt", ""},
      {"tvref.pth", "loaded ['model'] (122 tensors); not read: ['args'] (argparse.Namespace)"},
      {"imagenet.pth.tar", "loaded ['state_dict'] (122 tensors), prefix 'module.' stripped"},
      {"timm.pth.tar", "loaded ['state_dict'] (122 tensors); not read: ['args'] (argparse.Namespace)"},
      {"tutorial.pt", "loaded ['model_state_dict'] (122 tensors)\n"},
      {"compiled.pt", "loaded the root (122 tensors), prefix 'module._orig_mod.' stripped"},
      {"lightning.ckpt", "loaded ['state_dict'] (122 tensors), prefix 'model.' stripped"},
      {"legacy.pt", ""},
      {"legacy_p3.pt", ""},  // pickle_protocol=3
      {"legacy_tvref.pth.tar",
       "loaded ['model'] (122 tensors), prefix 'module.' stripped; not read: ['args'] (argparse.Namespace)"},
      {"legacy_cuda.pt", ""},
  };
  for (const auto& [name, note] : cases) {
    std::string sum;
    int code = 0;
    const std::string err = load(name, &sum, &code);
    ASSERT_EQ(code, 0) << name << ": " << err;
    EXPECT_EQ(sum, ref + " 11\n") << name;
    if (note.empty()) {  // a bare state dict, loaded as it is: nothing to say
      EXPECT_EQ(err.find("note: weights file"), std::string::npos) << name << ": " << err;
    } else {
      EXPECT_NE(err.find("note: weights file " + file(name) + ": " + note), std::string::npos) << name << ": " << err;
    }
  }
}

TEST_F(WeightsLayouts, MovingAveragesLoadWhenTheyAreTheOnlyWeights) {
  ASSERT_TRUE(ok_);
  std::string sum;
  int code = 0;
  // AveragedModel's state dict: 'n_averaged' and the network under 'module.'.
  const std::string err = load("ema.pt", &sum, &code);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(sum, python_sum("ema") + " 11\n");
  EXPECT_NE(err.find("loaded ['model_ema'] (122 tensors), prefix 'module.' stripped, 'n_averaged' dropped"),
            std::string::npos)
      << err;
}

TEST_F(WeightsLayouts, OldCheckpointsWithoutBatchNormCountersKeepTheModels) {
  ASSERT_TRUE(ok_);
  std::string sum;
  int code = 0;
  const std::string err = load("legacy_old_bn.pt", &sum, &code);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(sum, python_sum("ref") + " 1\n");  // the fresh model's 0, then one step
  EXPECT_NE(err.find("20 BatchNorm num_batches_tracked absent (the model's kept)"), std::string::npos) << err;
  // fp16 in the legacy format converts as in a zip.
  load("legacy_half.pt", &sum, &code);
  EXPECT_EQ(code, 0);
}

TEST_F(WeightsLayouts, ACheckpointWithoutTheModelsWeightsIsOneErrorListingWhatItHolds) {
  ASSERT_TRUE(ok_);
  auto refused = [](const std::string& name, const std::vector<std::string>& parts) {
    auto r = ct::run_command("(" + ct::binary() + kResnet18 + " --weights " + file(name) + " > /dev/null)");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(r.output.rfind("crosstrain: error: weights file " + file(name), 0), 0u) << r.output;
    for (const auto& part : parts) EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  };
  refused("mismatch.pt", {"no state dict for this model found (top-level keys 'model', 'epoch';",
                          "closest: ['model'] (122 tensors), missing 2: 'fc.weight', 'fc.bias', "
                          "unexpected 2: 'classifier.weight', 'classifier.bias'"});
  refused("module.pt", {"['model'] is a torchvision.models.resnet.ResNet object, not a state dict"});
  refused("legacy_tar.pt", {"a tar archive, torch.save's format before PyTorch 0.4"});
  refused("legacy_short.pt", {"(truncated)"});
}

TEST_F(WeightsLayouts, ResumeFindsTheModelInAScriptsCheckpoint) {
  ASSERT_TRUE(ok_);
  // Legacy format, 'module.' keys, an argparse.Namespace, SGD momentum: epoch 3 finished, so a run
  // with 4 batches an epoch resumes at step 16 and with --steps 16 trains no further: every tensor
  // saved is the file's.
  const std::string imgs = file("imgs"), out = file("resumed.pt");
  auto r = ct::run_command(ct::binary() + " make-imagefolder --out " + imgs +
                           " --train 20 --val 10 --classes 10 --size 32x32 --threads 1 > /dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = ct::run_command("(" + ct::binary() + " train --data imagefolder:" + imgs +
                      " --model resnet18 --num-classes 10 --image-size 32 --batch-size 5 --threads 1 --steps 16"
                      " --no-final-eval --resume " + file("legacy_tvref.pth.tar") + " --save-weights " + out +
                      " > /dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: checkpoint: loaded ['model'] (122 tensors), prefix 'module.' stripped"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("note: checkpoint: 'epoch' 3 read as torchvision's classification reference writes it"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("at step 16"), std::string::npos) << r.output;
  r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/checkpoint_interop.py same " +
                      file("ref.pt") + " " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "equal 122\n");
}

// Each script reads its own 'epoch' differently: pytorch/examples' imagenet saves epoch + 1 and
// resumes at 'epoch', timm (version 2) and torchvision's reference save the finished epoch and
// resume at 'epoch' + 1. With 4 batches an epoch, imagenet.pth.tar ('epoch' 4) resumes at step 16,
// timm.pth.tar ('epoch' 4) at step 20; a resume at the run's last step runs nothing, and says so.
TEST_F(WeightsLayouts, ResumeReadsEpochAsTheScriptThatWroteItDoes) {
  ASSERT_TRUE(ok_);
  const std::string imgs = file("imgs_epoch");
  auto r = ct::run_command(ct::binary() + " make-imagefolder --out " + imgs +
                           " --train 20 --val 10 --classes 10 --size 32x32 --threads 1 > /dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto resume = [&](const std::string& name, int steps) {
    return ct::run_command(ct::binary() + " train --data imagefolder:" + imgs +
                           " --model resnet18 --num-classes 10 --image-size 32 --batch-size 5 --threads 1 --steps " +
                           std::to_string(steps) + " --no-final-eval --resume " + file(name) + " 2>&1");
  };
  r = resume("imagenet.pth.tar", 16);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: checkpoint: 'epoch' 4 read as pytorch/examples' imagenet writes it (keys "
                          "'state_dict', 'best_acc1'): the epoch to run next; resuming at the start of epoch 4 (step 16)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("at step 16"), std::string::npos) << r.output;
  const auto row = r.output.find("final loss");
  ASSERT_NE(row, std::string::npos) << r.output;
  EXPECT_NE(r.output.substr(row, r.output.find('\n', row) - row).find("n/a (nothing to run: resumed at step 16 of 16)"),
            std::string::npos)
      << r.output;
  r = resume("imagenet.pth.tar", 17);  // one step of epoch 4
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at step 16"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("nothing to run"), std::string::npos) << r.output;
  r = resume("timm.pth.tar", 20);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: checkpoint: 'epoch' 4 read as timm writes it (keys 'state_dict', 'version' 2): the "
                          "last finished epoch; resuming at the start of epoch 5 (step 20)"),
            std::string::npos)
      << r.output;
  r = resume("tutorial.pt", 12);  // 'epoch' 2: the layout does not say; the reference's reading
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("'epoch' 2 taken as the last finished epoch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 12"), std::string::npos) << r.output;
}

namespace {

// Hostile shapes torch.save can write (tests/python/torchsave_scale_cases.py): through --weights and
// --resume auto they end in one short line, in linear time.
class WeightsHostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ct::scratch_dir("weights_hostile");
    auto r = ct::run_python_script("torchsave_scale_cases.py", dir_.string() + " --only module_key,deep");
    ok_ = r.exit_code == 0;
    if (!ok_) std::cerr << r.output;
  }
  static std::string file(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
  static bool ok_;
};
fs::path WeightsHostile::dir_;
bool WeightsHostile::ok_ = false;

}  // namespace

TEST_F(WeightsHostile, AKeyOf600000WrapperPrefixesIsOneShortErrorLine) {
  ASSERT_TRUE(ok_);
  // {"module." * 600000 + "weight": tensor}, a 4.2 MB key: stripped in linear time, shown shortened.
  auto r = ct::run_command("(" + ct::binary() + kResnet18 + " --weights " + file("module_key.pt") + " > /dev/null)");
  EXPECT_EQ(r.exit_code, 1) << r.output.substr(0, 2000);
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 1000u) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("prefix 'module.module."), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("unexpected 1: 'weight'"), std::string::npos) << r.output.substr(0, 2000);
}

TEST_F(WeightsHostile, ResumeAutoSkipsACheckpointNestedAMillionDeep) {
  ASSERT_TRUE(ok_);
  const std::string base = ct::binary() +
                           " train --model resnet18 --small-stem --base-width 8 --num-classes 10 --image-size 16"
                           " --batch-size 4 --threads 1 --no-final-eval --checkpoint-dir " + file("ck");
  auto r = ct::run_command("(" + base + " --steps 2 --checkpoint-every 2 > /dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The newest name holds a tensor inside a tuple nested 10^6 deep.
  fs::copy_file(dir_ / "deep.pt", dir_ / "ck" / "checkpoint_000000009.pt");
  r = ct::run_command("(" + base + " --steps 3 --resume auto > /dev/null)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: skipping checkpoint " + file("ck/checkpoint_000000009.pt") +
                          ": " + file("ck/checkpoint_000000009.pt") + ": containers nested deeper than 256\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("at step 2"), std::string::npos) << r.output;
}
