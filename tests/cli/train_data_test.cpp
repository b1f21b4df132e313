// Training on real datasets through the binary: the loader, evaluation and accuracy.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "test_support.h"

using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {

nlohmann::json train_json(const std::string& args, const std::string& json_path, int* exit_code = nullptr,
                          std::string* output = nullptr) {
  auto r = run_command(binary() + " train --device cpu --no-progress " + args + " --json " + json_path);
  if (exit_code) *exit_code = r.exit_code;
  if (output) *output = r.output;
  if (r.exit_code != 0) return {};
  std::ifstream in(json_path);
  return nlohmann::json::parse(in);
}

// What `doctor` says of this CPU's bf16 (core/cpu_features.h): native, or emulated and several
// times slower than fp32.
bool cpu_bf16_is_native() {
  auto r = run_command(binary() + " doctor --python '' --json -", /*merge_stderr=*/false);
  const auto j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("cpu") && j["cpu"]["bf16"]["native"] == true;
}

}  // namespace

// IDX files of a separable problem: class c is a 16x16 stripe texture with its own orientation
// (5) and frequency (2), at a random phase, plus noise.
void write_idx(const std::string& images, const std::string& labels, int n, unsigned seed) {
  auto be32 = [](std::ofstream& f, uint32_t v) {
    const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                                static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
    f.write(reinterpret_cast<const char*>(b), 4);
  };
  std::ofstream img(images, std::ios::binary), lab(labels, std::ios::binary);
  be32(img, 0x803), be32(img, n), be32(img, 16), be32(img, 16);
  be32(lab, 0x801), be32(lab, n);
  std::srand(seed);
  for (int i = 0; i < n; ++i) {
    const int c = i % 10;
    lab.put(static_cast<char>(c));
    const double angle = M_PI * (c % 5) / 5.0, freq = (c < 5 ? 2.0 : 4.0) / 16.0;
    const double phase = 2 * M_PI * (std::rand() % 1000) / 1000.0;
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 16; ++x) {
        const double t = 2 * M_PI * freq * (x * std::cos(angle) + y * std::sin(angle)) + phase;
        img.put(static_cast<char>(static_cast<unsigned char>(128 + 90 * std::sin(t) + std::rand() % 21 - 10)));
      }
  }
}

TEST(TrainData, SeparableSetIsLearnedAndEvaluated) {
  auto dir = crosstrain::testing::scratch_dir("train_separable");
  write_idx((dir / "train-images-idx3-ubyte").string(), (dir / "train-labels-idx1-ubyte").string(), 640, 1);
  write_idx((dir / "t10k-images-idx3-ubyte").string(), (dir / "t10k-labels-idx1-ubyte").string(), 200, 2);
  int rc = 0;
  std::string out;
  auto j = train_json("--data idx:" + dir.string() + " --model resnet18 --small-stem --base-width 8 "
                      "--batch-size 32 --epochs 5 --workers 2 --lr 0.05 --threads 1 --eval-every-epochs 1 --min-crop-scale 1 --no-flip --schedule cosine",
                      (dir / "r.json").string(), &rc, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(j["image_size"], 16);  // the stored size
  EXPECT_EQ(j["steps"], 100);      // 5 epochs x 640 / 32
  ASSERT_EQ(j["evals"].size(), 5u);
  EXPECT_EQ(j["evals"][4]["samples"], 200);
  EXPECT_GE(j["final_top1"].get<double>(), 0.95) << out;
  EXPECT_GE(j["final_top5"].get<double>(), j["final_top1"].get<double>());
  EXPECT_TRUE(j["step_log"][0].contains("data_wait_ms"));
  EXPECT_GE(j["data_wait_share"].get<double>(), 0.0);
  EXPECT_LT(j["data_wait_share"].get<double>(), 1.0);
}

TEST(TrainData, ImageFolderWithABadFileSkipsAndReportsIt) {
  auto dir = crosstrain::testing::scratch_dir("train_folder");
  const std::string root = (dir / "tree").string();
  auto made = run_command(binary() + " make-imagefolder --out " + root + " --size 40x30 --train 48 --val 16 --classes 2");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  { std::ofstream(root + "/train/00/broken.jpg") << "this is not a jpeg"; }
  int rc = 0;
  std::string out;
  auto j = train_json("--data imagefolder:" + root + " --image-size 24 --model resnet18 --small-stem --base-width 8 "
                      "--batch-size 8 --epochs 1 --workers 2 --threads 1 --normalize-on-device",
                      (dir / "r.json").string(), &rc, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(j["image_size"], 24);
  EXPECT_EQ(j["bad_samples"], 1);
  ASSERT_EQ(j["first_bad_samples"].size(), 1u);
  EXPECT_NE(j["first_bad_samples"][0].get<std::string>().find("broken.jpg"), std::string::npos);
  ASSERT_EQ(j["evals"].size(), 1u);
  EXPECT_EQ(j["evals"][0]["samples"], 16);
  // --strict stops at the broken file, naming it.
  auto strict = run_command(binary() + " train --device cpu --no-progress --data imagefolder:" + root +
                            " --image-size 24 --model resnet18 --small-stem --base-width 8 --batch-size 8 --epochs 1"
                            " --threads 1 --strict");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.output.find("broken.jpg"), std::string::npos) << strict.output;
}

// The validation split takes the training root's labels: a validation class folder that the
// training root lacks is left out of the evaluation and said, with its image count.
TEST(TrainData, AValidationClassTheTrainingRootLacksIsNoted) {
  auto dir = crosstrain::testing::scratch_dir("train_val_only_class");
  const std::string root = (dir / "tree").string();
  auto made = run_command(binary() + " make-imagefolder --out " + root + " --size 40x30 --train 8 --val 4 --classes 2");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::filesystem::create_directories(root + "/val/zz_extra");
  const auto one = std::filesystem::directory_iterator(root + "/val/01")->path();
  std::filesystem::copy_file(one, root + "/val/zz_extra/x.jpg");
  int rc = 0;
  std::string out;
  auto j = train_json("--data imagefolder:" + root + " --image-size 24 --model resnet18 --small-stem --base-width 8 "
                      "--batch-size 4 --steps 1 --workers 0 --threads 1",
                      (dir / "r.json").string(), &rc, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("note: validation data: " + root + "/val/zz_extra: class folder not in the training root: its 1 "
                     "image(s) have no label"),
            std::string::npos)
      << out;
  ASSERT_EQ(j["evals"].size(), 1u);
  EXPECT_EQ(j["evals"][0]["samples"], 4);
}

// Progressive JPEGs in the training set are named in train's notes (console and JSON) with the flag
// that decodes them once; with --jpeg-cache they are rewritten on first read and nothing is said.
TEST(TrainData, ProgressiveJpegsAreNamedUnlessCached) {
  auto dir = crosstrain::testing::scratch_dir("train_progressive");
  const std::string root = (dir / "tree").string();
  auto made = run_command(binary() + " make-imagefolder --out " + root + " --size 40x30 --train 14 --val 4 --classes 2");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::filesystem::path progressive =
      std::filesystem::path(CROSSTRAIN_SOURCE_DIR) / "tests/fuzz/corpus/image/progressive_420.jpg";
  std::filesystem::copy_file(progressive, root + "/train/00/p1.jpg");
  std::filesystem::copy_file(progressive, root + "/train/01/p2.jpg");
  const std::string args = "--data imagefolder:" + root + " --image-size 16 --model resnet18 --small-stem "
                           "--base-width 8 --batch-size 8 --epochs 1 --workers 1 --threads 1";
  auto has_note = [](const nlohmann::json& j) {
    for (const auto& n : j["notes"])
      if (n.get<std::string>().find("progressive JPEGs") != std::string::npos &&
          n.get<std::string>().find("--jpeg-cache DIR") != std::string::npos)
        return true;
    return false;
  };
  int rc = 0;
  std::string out;
  auto j = train_json(args, (dir / "plain.json").string(), &rc, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(has_note(j)) << j["notes"].dump();
  EXPECT_NE(out.find("progressive JPEGs"), std::string::npos) << out;
  j = train_json(args + " --jpeg-cache " + (dir / "cache").string(), (dir / "cached.json").string(), &rc, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_FALSE(has_note(j)) << j["notes"].dump();
  std::filesystem::remove_all(dir);
}

TEST(TrainData, BadDataSpecsAreUsageErrors) {
  for (const std::string args : {"--data tfrecord:/x", "--epochs 2", "--eval-every 5"}) {
    auto r = run_command(binary() + " train --device cpu " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
  auto missing = run_command(binary() + " train --device cpu --data idx:/nonexistent/dir");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent/dir"), std::string::npos);
}

// Fashion-MNIST from Debian's dataset-fashion-mnist: a real dataset, a real result. The fp32 and
// bf16 runs go side by side, one core each; each takes a couple of minutes on a 2-core machine
// with native bf16. Where this CPU emulates bf16 (an AVX2-only CPU) the bf16 run would take
// several times longer: only fp32 runs there, and the test says so.
TEST(Accuracy, FashionMnistReaches85PercentAndBf16StaysWithinOnePoint) {
  const std::string fm = "/usr/share/datasets/fashion-mnist";
  if (!std::ifstream(fm + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto dir = crosstrain::testing::scratch_dir("fmnist");
  const std::string args = "--data idx:" + fm + " --max-samples 16000 --model resnet18 --small-stem --base-width 16 "
                           "--batch-size 64 --epochs 2 --workers 1 --threads 1 --lr 0.1 --schedule cosine "
                           "--lr-warmup-steps 30 --nesterov --min-crop-scale 1 --seed 3";
  nlohmann::json fp32, bf16;
  int rc32 = -1, rc16 = -1;
  std::string out32, out16;
  const bool with_bf16 = cpu_bf16_is_native();
  std::thread a([&] { fp32 = train_json(args + " --precision fp32", (dir / "fp32.json").string(), &rc32, &out32); });
  if (with_bf16) {
    std::thread b([&] { bf16 = train_json(args + " --precision bf16", (dir / "bf16.json").string(), &rc16, &out16); });
    b.join();
  }
  a.join();
  ASSERT_EQ(rc32, 0) << out32;
  if (!with_bf16) {
    std::cout << "[accuracy] bf16 is emulated on this CPU (crosstrain doctor): fp32 only\n";
    EXPECT_EQ(fp32["evals"][0]["samples"], 10000);
    EXPECT_GE(fp32["final_top1"].get<double>(), 0.85);
    return;
  }
  ASSERT_EQ(rc16, 0) << out16;
  const double acc32 = fp32["final_top1"], acc16 = bf16["final_top1"];
  std::cout << "Fashion-MNIST test accuracy: fp32 " << acc32 << ", bf16 " << acc16 << "\n";
  EXPECT_EQ(fp32["evals"][0]["samples"], 10000);
  EXPECT_GE(acc32, 0.85);
  EXPECT_GE(acc16, 0.85);
  EXPECT_LE(std::abs(acc32 - acc16), 0.01);
}
