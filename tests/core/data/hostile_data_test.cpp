// Datasets from hostile or broken trees: symlink cycles, FIFOs named like inputs, truncated
// headers, gzip bombs, oversized images; each at its documented limit and one past it.
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <zlib.h>

#include "core/data/dataset.h"
#include "core/data/sample_files.h"

using namespace crosstrain::data;
using namespace crosstrain::data::testing;
namespace fs = std::filesystem;

namespace {

DatasetOptions folder_options() {
  DatasetOptions o;
  o.transform.size = 8;
  o.transform.output = SampleType::UInt8;
  o.transform.mode = TransformSpec::Mode::Eval;
  return o;
}

DatasetOptions idx_options() {
  DatasetOptions o;
  o.transform.size = 0;
  o.transform.output = SampleType::UInt8;
  return o;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void decode_one(const Dataset& d, size_t i) {
  std::vector<uint8_t> out(d.sample_layout().bytes());
  SampleRng rng(0);
  d.decode(i, rng, out.data());
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size())) + 64;
  std::vector<uint8_t> out(size);
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace

TEST(HostileData, ImageFolderLinksBackUpAreWalkedOnce) {
  const auto root = scratch_dir("folder_cycle");
  for (const char* cls : {"a", "b"})
    for (int i = 0; i < 2; ++i)
      write_file(root / cls / ("img" + std::to_string(i) + ".png"), encode_png(textured_image(12, 10, 3, i)));
  fs::create_directory_symlink("..", root / "a" / "up");     // the class folder's parent
  fs::create_directory_symlink(".", root / "b" / "self");    // a "." link, twice
  fs::create_directory_symlink(".", root / "b" / "self2");
  fs::create_directory_symlink(root / "b", root / "b" / "again");
  auto d = open_dataset("imagefolder:" + root.string(), folder_options());
  ASSERT_EQ(d->size(), 4u);
  EXPECT_EQ(d->label(0), 0);
  EXPECT_EQ(d->label(1), 0);
  EXPECT_EQ(d->label(2), 1);
  EXPECT_EQ(d->label(3), 1);
  fs::remove_all(root);
}

TEST(HostileData, FifosNamedLikeInputsAreRefusedWithoutBlocking) {
  const auto root = scratch_dir("fifo_inputs");
  write_file(root / "a" / "ok.png", encode_png(textured_image(12, 10, 3, 1)));
  ASSERT_EQ(::mkfifo((root / "a" / "pipe.png").c_str(), 0600), 0);
  auto d = open_dataset("imagefolder:" + root.string(), folder_options());
  EXPECT_EQ(d->size(), 1u);
  ASSERT_EQ(d->skipped().size(), 1u);
  EXPECT_NE(d->skipped()[0].reason.find("not a regular file"), std::string::npos);
  EXPECT_THROW(read_file_bytes((root / "a" / "pipe.png").string()), BadSample);
  DatasetOptions strict = folder_options();
  strict.strict = true;
  EXPECT_NE(error_of([&] { open_dataset("imagefolder:" + root.string(), strict); }).find("pipe.png"), std::string::npos);
  EXPECT_THROW(read_file_bytes("/dev/zero"), BadSample);

  const auto idx = scratch_dir("fifo_idx");
  write_idx_pair(idx, "train", 3, 2, 2);
  fs::remove(idx / "train-labels-idx1-ubyte");
  ASSERT_EQ(::mkfifo((idx / "train-labels-idx1-ubyte").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { open_dataset("idx:" + idx.string(), idx_options()); }).find("FIFO"), std::string::npos);

  const auto cifar = scratch_dir("fifo_cifar");
  ASSERT_EQ(::mkfifo((cifar / "test_batch.bin").c_str(), 0600), 0);
  write_file(cifar / "data_batch_1.bin", cifar_records(2, 1));
  DatasetOptions val = idx_options();
  val.split = Split::Val;
  EXPECT_NE(error_of([&] { open_dataset("cifar:" + cifar.string(), val); }).find("FIFO"), std::string::npos);
  for (const auto& p : {root, idx, cifar}) fs::remove_all(p);
}

TEST(HostileData, IdxTruncatedHeaderAndDroppedRecordsAreReportedAsSuch) {
  const auto dir = scratch_dir("idx_hostile");
  write_idx_pair(dir, "train", 60, 2, 2);
  auto images = read_file(dir / "train-images-idx3-ubyte");
  images.resize(16 + 6 * 4);  // 6 of 60 records
  write_file(dir / "train-images-idx3-ubyte", images);
  auto d = open_dataset("idx:" + dir.string(), idx_options());
  EXPECT_EQ(d->size(), 6u);
  EXPECT_EQ(d->skipped_samples(), 54);

  images.resize(10);  // magic and half a header
  write_file(dir / "train-images-idx3-ubyte", images);
  const std::string err = error_of([&] { open_dataset("idx:" + dir.string(), idx_options()); });
  EXPECT_NE(err.find("truncated header"), std::string::npos) << err;
  EXPECT_EQ(err.find("magic"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(HostileData, IdxInflatedSizeLimitHoldsAtLimitAndRefusesOnePast) {
  const auto dir = scratch_dir("idx_bomb");
  const uint32_t n = 65535;  // 16 + 65535 * 16 bytes = exactly 1 MiB of 4x4 images
  write_idx_pair(dir, "train", n, 4, 4);
  auto images = read_file(dir / "train-images-idx3-ubyte");
  ASSERT_EQ(images.size(), size_t{1} << 20);
  DatasetOptions o = idx_options();
  o.max_file_bytes = size_t{1} << 20;
  write_file(dir / "train-images-idx3-ubyte.gz", gzip_bytes(images));
  fs::remove(dir / "train-images-idx3-ubyte");
  EXPECT_EQ(open_dataset("idx:" + dir.string(), o)->size(), n);

  images.push_back(0);  // limit + 1 after inflating
  auto gz = gzip_bytes(images);
  write_file(dir / "train-images-idx3-ubyte.gz", gz);
  EXPECT_NE(error_of([&] { open_dataset("idx:" + dir.string(), o); }).find("limit"), std::string::npos);
  // A trailer that claims a small size changes nothing: the limit is checked as bytes come out.
  images.resize(images.size() + (size_t{8} << 20));
  gz = gzip_bytes(images);
  for (int i = 1; i <= 4; ++i) gz[gz.size() - i] = 0;
  write_file(dir / "train-images-idx3-ubyte.gz", gz);
  EXPECT_NE(error_of([&] { open_dataset("idx:" + dir.string(), o); }).find("limit"), std::string::npos);
  fs::remove_all(dir);
}

TEST(HostileData, ImagePixelAndByteLimitsHoldAtLimitAndRefuseOnePast) {
  const auto root = scratch_dir("pixel_limit");
  write_file(root / "a" / "at.png", encode_png(textured_image(100, 100, 3, 1)));     // 10000 pixels
  write_file(root / "a" / "past.png", encode_png(textured_image(73, 137, 3, 2)));    // 10001 pixels
  DatasetOptions o = folder_options();
  o.max_image_pixels = 10000;
  auto d = open_dataset("imagefolder:" + root.string(), o);
  ASSERT_EQ(d->describe(0), (root / "a" / "at.png").string());
  EXPECT_NO_THROW(decode_one(*d, 0));
  const std::string err = error_of([&] { decode_one(*d, 1); });
  EXPECT_NE(err.find("limit of 10000"), std::string::npos) << err;

  o.max_image_pixels = kDefaultMaxImagePixels;
  const auto at_size = fs::file_size(root / "a" / "at.png");
  o.max_image_bytes = at_size;
  d = open_dataset("imagefolder:" + root.string(), o);
  EXPECT_NO_THROW(decode_one(*d, 0));
  o.max_image_bytes = at_size - 1;
  d = open_dataset("imagefolder:" + root.string(), o);
  EXPECT_THROW(decode_one(*d, 0), BadSample);
  fs::remove_all(root);
}
