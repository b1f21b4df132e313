// make-imagefolder and data-bench through the binary: exit codes, output and JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

struct CommandResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("crosstrain_cli_data_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

CommandResult run(const std::string& args) {
  static const fs::path io = scratch("io");
  const std::string cmd = std::string(CROSSTRAIN_BINARY) + " " + args + " >" + (io / "out").string() + " 2>" + (io / "err").string();
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(io / "out");
  r.err = slurp(io / "err");
  return r;
}

size_t count_files(const fs::path& dir, const std::string& ext) {
  size_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ext) ++n;
  return n;
}

}  // namespace

TEST(DataCommands, MakeImageFolderThenDataBench) {
  const auto root = scratch("tree");
  CommandResult r = run("make-imagefolder --out " + root.string() + " --train 30 --val 10 --classes 3 --size 64x48 --threads 2 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["train_images"], 30);
  EXPECT_EQ(doc["width"], 64);
  EXPECT_EQ(count_files(root / "train", ".jpg"), 30u);
  EXPECT_EQ(count_files(root / "val", ".jpg"), 10u);
  EXPECT_TRUE(fs::is_directory(root / "train" / "02"));

  // Refuses to write over an existing tree unless asked.
  EXPECT_EQ(run("make-imagefolder --out " + root.string() + " --train 3 --val 1").code, 1);

  const auto json = root / "bench.json";
  r = run("data-bench --data imagefolder:" + root.string() + " --workers 0,2 --images 40 --batch-size 8 --size 32 --json " +
          json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("img/s"), std::string::npos);
  doc = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["dataset_size"], 30);
  ASSERT_EQ(doc["rows"].size(), 2u);
  EXPECT_EQ(doc["rows"][1]["workers"], 2);
  EXPECT_GT(doc["rows"][1]["images_per_s"].template get<double>(), 0);
  EXPECT_EQ(doc["sample"]["height"], 32);

  r = run("data-bench --data imagefolder:" + root.string() + " --split val --workers 1 --images 10 --size 32 --uint8 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["mode"], "eval");
  EXPECT_EQ(doc["sample"]["dtype"], "uint8");
}

TEST(DataCommands, BadFilesAreSkippedOrStopTheRunWithStrict) {
  const auto root = scratch("bad");
  ASSERT_EQ(run("make-imagefolder --out " + root.string() + " --train 12 --val 2 --classes 2 --size 40x30").code, 0);
  std::ofstream(root / "train" / "00" / "zz_corrupt.jpg") << "this is not a JPEG";
  CommandResult r = run("data-bench --data imagefolder:" + root.string() + " --workers 1 --images 26 --batch-size 13 --size 16");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped 1 bad item"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("zz_corrupt.jpg"), std::string::npos) << r.out;
  r = run("data-bench --strict --data imagefolder:" + root.string() + " --workers 1 --images 26 --batch-size 13 --size 16");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("zz_corrupt.jpg"), std::string::npos) << r.err;
}

// Labels come from the training root: a validation class folder the training root lacks cannot
// be labelled, and is said with its image count (an error with --strict), never dropped silently.
TEST(DataCommands, AValidationClassMissingFromTrainingIsReported) {
  const auto root = scratch("val_only_class");
  ASSERT_EQ(run("make-imagefolder --out " + root.string() + " --train 4 --val 4 --classes 2 --size 40x30").code, 0);
  fs::create_directories(root / "val" / "zz_extra");
  for (const char* name : {"a.jpg", "b.jpg", "c.jpg"})
    fs::copy_file(root / "val" / "01" / fs::directory_iterator(root / "val" / "01")->path().filename(),
                  root / "val" / "zz_extra" / name);
  fs::copy_file(root / "val" / "zz_extra" / "a.jpg", root / "val" / "stray.jpg");  // no class: ignored, as torchvision does
  CommandResult r = run("data-bench --data imagefolder:" + root.string() + " --split val --workers 1 --size 16 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["dataset_size"], 4);
  EXPECT_EQ(doc["num_classes"], 2);
  EXPECT_EQ(doc["skipped_at_open"], 3);
  ASSERT_EQ(doc["first_bad"].size(), 1u) << r.out;
  EXPECT_EQ(doc["first_bad"][0]["where"], (root / "val" / "zz_extra").string());
  EXPECT_NE(doc["first_bad"][0]["reason"].get<std::string>().find("not in the training root: its 3 image(s) have no label"),
            std::string::npos)
      << r.out;
  r = run("data-bench --data imagefolder:" + root.string() + " --split val --workers 1 --size 16");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped 3 bad item(s)"), std::string::npos) << r.out;
  r = run("data-bench --strict --data imagefolder:" + root.string() + " --split val --workers 1 --size 16");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("zz_extra: class folder not in the training root"), std::string::npos) << r.err;
}

TEST(DataCommands, MakeImageFolderFromIdx) {
  const auto dir = scratch("idx");
  // Two 2x3 images per split.
  auto write = [&](const std::string& name, std::vector<uint8_t> bytes) {
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  for (const std::string split : {"train", "t10k"}) {
    write(split + "-images-idx3-ubyte", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 9, 9, 9, 9, 9, 9});
    write(split + "-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 2, 0, 1});
  }
  CommandResult r = run("make-imagefolder --from idx:" + dir.string() + " --out " + (dir / "tree").string() + " --size source --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["train_images"], 2);
  EXPECT_EQ(doc["classes"], 2);
  EXPECT_EQ(doc["width"], 3);
  EXPECT_TRUE(fs::exists(dir / "tree" / "train" / "01" / "000001.jpg"));
}

TEST(DataCommands, ExitCodes) {
  EXPECT_EQ(run("data-bench --help").code, 0);
  EXPECT_EQ(run("make-imagefolder --help").code, 0);
  CommandResult r = run("data-bench --data lmdb:/x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("imagefolder"), std::string::npos) << r.err;  // the known kinds are listed
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(run("data-bench --workers=-1").code, 2);
  EXPECT_EQ(run("data-bench --split test").code, 2);
  EXPECT_EQ(run("data-bench --mean 1,2").code, 2);
  EXPECT_EQ(run("data-bench --batch-size x").code, 2);
  EXPECT_EQ(run("data-bench --data idx:/no/such/dir").code, 1);
  EXPECT_EQ(run("make-imagefolder").code, 2);  // --out is required
  EXPECT_EQ(run("make-imagefolder --out /tmp/x --size 12").code, 2);
  EXPECT_EQ(run("make-imagefolder --out /tmp/x --quality 0").code, 2);
  EXPECT_EQ(run("make-imagefolder --out /tmp/x --from imagefolder:/tmp").code, 2);
}

TEST(DataCommands, ImagePixelLimitIsAFlag) {
  const auto root = scratch("limit");
  ASSERT_EQ(run("make-imagefolder --out " + root.string() + " --train 4 --val 2 --classes 2 --size 40x30").code, 0);
  const std::string bench = "data-bench --strict --data imagefolder:" + root.string() + " --workers 1 --images 4 --batch-size 2 --size 16";
  CommandResult r = run(bench + " --max-image-pixels 1200");  // 40x30: at the limit
  EXPECT_EQ(r.code, 0) << r.err;
  r = run(bench + " --max-image-pixels 1199");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("limit of 1199"), std::string::npos) << r.err;
}

// Progressive JPEGs in a dataset are counted and the console names the flag that speeds them up;
// with --jpeg-cache they are read as baseline rewrites, one per file, and nothing is said.
TEST(DataCommands, ProgressiveJpegsAreNamedAndCached) {
  const auto dir = scratch("progressive");
  const auto root = dir / "images";
  ASSERT_EQ(run("make-imagefolder --out " + root.string() + " --train 6 --val 2 --classes 2 --size 40x30").code, 0);
  const fs::path progressive = fs::path(CROSSTRAIN_SOURCE_DIR) / "tests/fuzz/corpus/image/progressive_420.jpg";
  fs::copy_file(progressive, root / "train" / "00" / "p1.jpg");
  fs::copy_file(progressive, root / "train" / "01" / "p2.jpg");
  const std::string bench = "data-bench --data imagefolder:" + root.string() + " --workers 1 --images 16 --batch-size 8 --size 16";
  CommandResult r = run(bench + " --json " + (dir / "plain.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("progressive JPEGs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--jpeg-cache DIR"), std::string::npos) << r.out;
  // 8 samples, read 24 times (a warm-up batch, then 16): each progressive file at least twice.
  EXPECT_GE(nlohmann::json::parse(slurp(dir / "plain.json"))["progressive_jpeg_reads"].get<int64_t>(), 4);

  r = run(bench + " --jpeg-cache " + (dir / "cache").string() + " --json " + (dir / "cached.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("progressive JPEGs"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "cached.json"))["progressive_jpeg_reads"], 0);
  EXPECT_EQ(count_files(dir / "cache", ".jpg"), 2u);
  fs::remove_all(dir);
}
