#include "core/data/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <numeric>
#include <set>
#include <sstream>

#include "core/data/fixed_size_dataset.h"
#include "core/data/sample_files.h"
#include "test_support.h"

using namespace crosstrain::data;
using namespace crosstrain::data::testing;
namespace fs = std::filesystem;

namespace {

DatasetOptions native_uint8(Split split = Split::Train) {
  DatasetOptions o;
  o.split = split;
  o.transform.size = 0;
  o.transform.output = SampleType::UInt8;
  return o;
}

std::vector<uint8_t> decode_u8(const Dataset& d, size_t i) {
  std::vector<uint8_t> out(d.sample_layout().bytes());
  SampleRng rng(0);
  d.decode(i, rng, out.data());
  return out;
}

void gzip_file(const fs::path& from, const fs::path& to) {
  const auto bytes = read_file(from);
  gzFile gz = gzopen(to.string().c_str(), "wb");
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  fs::remove(from);
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

}  // namespace

TEST(DatasetRegistry, UnknownKindListsTheKnownOnes) {
  const std::string msg = error_of([] { open_dataset("lmdb:/x", DatasetOptions{}); });
  for (const char* kind : {"synthetic", "idx", "cifar", "imagefolder"}) EXPECT_NE(msg.find(kind), std::string::npos) << msg;
  EXPECT_THROW(open_dataset("lmdb:/x", DatasetOptions{}), std::invalid_argument);
  EXPECT_THROW(open_dataset("idx", DatasetOptions{}), std::invalid_argument);  // needs a path
  EXPECT_THROW(open_dataset("synthetic:abc", DatasetOptions{}), std::invalid_argument);
  EXPECT_THROW(open_dataset("idx:/no/such/dir", DatasetOptions{}), std::runtime_error);
}

TEST(SyntheticDataset, CountClassesAndLayout) {
  DatasetOptions o;
  o.transform.size = 16;
  auto d = open_dataset("synthetic:40", o);
  EXPECT_EQ(d->size(), 40u);
  EXPECT_EQ(d->num_classes(), 10);
  EXPECT_EQ(d->sample_layout().bytes(), 3u * 16 * 16 * 4);
  std::vector<float> a(3 * 16 * 16), b(3 * 16 * 16);
  SampleRng r1(5), r2(5);
  d->decode(7, r1, a.data());
  d->decode(7, r2, b.data());
  EXPECT_EQ(a, b);
}

TEST(IdxDataset, ReadsRawAndGzipAndBothSplits) {
  const auto dir = scratch_dir("idx");
  write_idx_pair(dir, "train", 5, 3, 4);
  write_idx_pair(dir, "t10k", 3, 3, 4);
  for (bool gz : {false, true}) {
    if (gz) {
      gzip_file(dir / "train-images-idx3-ubyte", dir / "train-images-idx3-ubyte.gz");
      gzip_file(dir / "train-labels-idx1-ubyte", dir / "train-labels-idx1-ubyte.gz");
    }
    auto d = open_dataset("idx:" + dir.string(), native_uint8());
    ASSERT_EQ(d->size(), 5u);
    EXPECT_EQ(d->source_channels(), 1);
    EXPECT_EQ(d->sample_layout().width, 4);
    EXPECT_EQ(d->sample_layout().height, 3);
    EXPECT_EQ(d->label(3), 3);
    EXPECT_EQ(decode_u8(*d, 2), std::vector<uint8_t>(12, 7));
  }
  auto val = open_dataset("idx:" + dir.string(), native_uint8(Split::Val));
  EXPECT_EQ(val->size(), 3u);
}

TEST(IdxDataset, WrongMagicMismatchAndTruncation) {
  const auto dir = scratch_dir("idx_bad");
  write_idx_pair(dir, "train", 5, 3, 4, /*image_magic=*/0x801);
  EXPECT_NE(error_of([&] { open_dataset("idx:" + dir.string(), native_uint8()); }).find("magic"), std::string::npos);

  write_idx_pair(dir, "train", 5, 3, 4);
  write_idx_pair(dir, "t10k", 4, 3, 4);
  auto labels = read_file(dir / "train-labels-idx1-ubyte");  // labels of 4 vs 5 images
  write_file(dir / "t10k-labels-idx1-ubyte", std::vector<uint8_t>(labels.begin(), labels.end()));
  EXPECT_THROW(open_dataset("idx:" + dir.string(), native_uint8(Split::Val)), std::runtime_error);

  auto images = read_file(dir / "train-images-idx3-ubyte");
  images.resize(images.size() - 5);  // the last record loses 5 of its 12 bytes
  write_file(dir / "train-images-idx3-ubyte", images);
  auto d = open_dataset("idx:" + dir.string(), native_uint8());
  EXPECT_EQ(d->size(), 4u);
  ASSERT_EQ(d->skipped().size(), 1u);
  EXPECT_NE(d->skipped()[0].reason.find("truncated"), std::string::npos);
  DatasetOptions strict = native_uint8();
  strict.strict = true;
  EXPECT_NE(error_of([&] { open_dataset("idx:" + dir.string(), strict); }).find("truncated"), std::string::npos);

  images.resize(16 + 5);  // not even one complete image: nothing usable
  write_file(dir / "train-images-idx3-ubyte", images);
  EXPECT_NE(error_of([&] { open_dataset("idx:" + dir.string(), native_uint8()); }).find("no usable samples"), std::string::npos);
}

// What gzip writes for one file, as bytes (gzopen/gzwrite: the gzip tool's member format).
std::vector<uint8_t> gzip_member(const std::vector<uint8_t>& raw, const fs::path& scratch) {
  gzFile gz = gzopen(scratch.string().c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
  auto bytes = read_file(scratch);
  fs::remove(scratch);
  return bytes;
}

// `cat a.gz b.gz > c.gz`: one file of two members, which gzip -d and Python's gzip read whole.
TEST(IdxDataset, ConcatenatedGzipMembersReadAsOneFile) {
  const auto dir = scratch_dir("idx_members");
  write_idx_pair(dir, "train", 100, 28, 28);
  for (const char* kind : {"images-idx3", "labels-idx1"}) {
    const fs::path raw_path = dir / (std::string("train-") + kind + "-ubyte");
    const auto raw = read_file(raw_path);
    // The cut falls inside record 46 of the images (and inside the label records).
    const size_t cut = std::string(kind) == "images-idx3" ? 16 + 46 * 784 + 300 : 8 + 46;
    auto joined = gzip_member({raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(cut)}, dir / "a.gz");
    const auto second = gzip_member({raw.begin() + static_cast<std::ptrdiff_t>(cut), raw.end()}, dir / "b.gz");
    joined.insert(joined.end(), second.begin(), second.end());
    write_file(fs::path(raw_path.string() + ".gz"), joined);
    fs::remove(raw_path);
  }
  auto d = open_dataset("idx:" + dir.string(), native_uint8());
  ASSERT_EQ(d->size(), 100u);
  EXPECT_TRUE(d->skipped().empty());
  EXPECT_EQ(d->label(99), 9);
  EXPECT_EQ(decode_u8(*d, 99), std::vector<uint8_t>(784, static_cast<uint8_t>(99 * 3 + 1)));
  EXPECT_EQ(decode_u8(*d, 46), std::vector<uint8_t>(784, static_cast<uint8_t>(46 * 3 + 1)));

  // Zero padding after the last member is ignored; other trailing bytes are named, not dropped.
  const fs::path labels = dir / "train-labels-idx1-ubyte.gz";
  auto bytes = read_file(labels);
  bytes.resize(bytes.size() + 512, 0);
  write_file(labels, bytes);
  EXPECT_EQ(open_dataset("idx:" + dir.string(), native_uint8())->size(), 100u);
  bytes.insert(bytes.end(), {'j', 'u', 'n', 'k'});
  write_file(labels, bytes);
  const std::string err = error_of([&] { open_dataset("idx:" + dir.string(), native_uint8()); });
  EXPECT_NE(err.find("not another gzip member"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(IdxDataset, FashionMnistFromDebian) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto train = open_dataset("idx:" + dir, native_uint8());
  auto val = open_dataset("idx:" + dir, native_uint8(Split::Val));
  EXPECT_EQ(train->size(), 60000u);
  EXPECT_EQ(val->size(), 10000u);
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->sample_layout().bytes(), 28u * 28);
  // The published training-set pixel mean is 0.2860.
  double sum = 0;
  for (size_t i = 0; i < 60000; i += 60)
    for (uint8_t v : decode_u8(*train, i)) sum += v;
  EXPECT_NEAR(sum / (1000.0 * 784 * 255), 0.286, 0.01);
}

TEST(CifarDataset, Cifar10BatchesPlanesAndTruncation) {
  const auto dir = scratch_dir("cifar10") / "cifar-10-batches-bin";
  write_file(dir / "data_batch_1.bin", cifar_records(3, 1));
  write_file(dir / "data_batch_2.bin", cifar_records(2, 1));
  write_file(dir / "test_batch.bin", cifar_records(2, 1));
  auto d = open_dataset("cifar:" + dir.parent_path().string(), native_uint8());
  ASSERT_EQ(d->size(), 5u);
  EXPECT_EQ(d->num_classes(), 10);
  EXPECT_EQ(d->label(1), 1);
  const auto px = decode_u8(*d, 1);  // CHW: R plane = label 1, G = 101, B = 200
  ASSERT_EQ(px.size(), 3u * 32 * 32);
  EXPECT_EQ(px[0], 1);
  EXPECT_EQ(px[1024 + 500], 101);
  EXPECT_EQ(px[2048 + 1023], 200);
  EXPECT_EQ(open_dataset("cifar:" + dir.string(), native_uint8(Split::Val))->size(), 2u);

  auto batch = cifar_records(2, 1);
  batch.resize(batch.size() - 100);
  write_file(dir / "data_batch_2.bin", batch);
  d = open_dataset("cifar:" + dir.string(), native_uint8());
  EXPECT_EQ(d->size(), 4u);
  ASSERT_EQ(d->skipped().size(), 1u);
  EXPECT_NE(d->skipped()[0].where.find("data_batch_2.bin#1"), std::string::npos);
  DatasetOptions strict = native_uint8();
  strict.strict = true;
  EXPECT_THROW(open_dataset("cifar:" + dir.string(), strict), std::runtime_error);
}

TEST(CifarDataset, Cifar100UsesFineLabels) {
  const auto dir = scratch_dir("cifar100");
  write_file(dir / "train.bin", cifar_records(4, 2));
  auto d = open_dataset("cifar:" + dir.string(), native_uint8());
  EXPECT_EQ(d->kind(), "cifar100");
  EXPECT_EQ(d->num_classes(), 100);
  EXPECT_EQ(d->label(3), 3);  // the coarse byte is 7 everywhere
  EXPECT_THROW(open_dataset("cifar:" + scratch_dir("cifar_none").string(), native_uint8()), std::runtime_error);
}

namespace {

// a_cls: two good files (one PNG in a subfolder); b_cls: one good JPEG and bad ones of every
// kind; c_empty: nothing usable.
fs::path make_tree(const std::string& name) {
  const auto root = scratch_dir(name);
  const Image im = textured_image(60, 40, 3, 1);
  write_file(root / "a_cls" / "1.jpg", encode_jpeg(im, 90));
  write_file(root / "a_cls" / "sub" / "2.PNG", encode_png(textured_image(30, 50, 1, 2)));
  const auto jpeg = encode_jpeg(im, 90);
  write_file(root / "b_cls" / "3.jpg", jpeg);
  const std::string text = "not an image";
  write_file(root / "b_cls" / "bad.jpg", std::vector<uint8_t>(text.begin(), text.end()));
  write_file(root / "b_cls" / "trunc.jpg", std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
  write_file(root / "b_cls" / "notes.txt", std::vector<uint8_t>(text.begin(), text.end()));  // ignored
  fs::create_symlink(root / "b_cls" / "gone.jpg", root / "b_cls" / "unreadable.jpg");  // dangling
  fs::create_directories(root / "c_empty");
  write_file(root / "c_empty" / "readme.txt", std::vector<uint8_t>(text.begin(), text.end()));
  return root;
}

DatasetOptions small_eval() {
  DatasetOptions o;
  o.transform.size = 16;
  return o;
}

}  // namespace

TEST(ImageFolderDataset, ClassesSortedBadFilesReportedWhenDecoded) {
  const auto root = make_tree("imagefolder");
  auto d = open_dataset("imagefolder:" + root.string(), small_eval());
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"a_cls", "b_cls", "c_empty"}));
  EXPECT_EQ(d->num_classes(), 3);
  ASSERT_EQ(d->size(), 6u);
  ASSERT_EQ(d->skipped().size(), 1u);
  EXPECT_NE(d->skipped()[0].where.find("c_empty"), std::string::npos);
  EXPECT_NE(d->skipped()[0].reason.find("empty class folder"), std::string::npos);
  EXPECT_EQ(d->sample_layout().channels, 3);
  std::vector<float> out(d->sample_layout().elements());
  int good = 0;
  for (size_t i = 0; i < d->size(); ++i) {
    SampleRng rng(1);
    try {
      d->decode(i, rng, out.data());
      ++good;
    } catch (const BadSample& e) {
      EXPECT_EQ(e.where(), d->describe(i));
      EXPECT_EQ(d->label(i), 1) << e.what();
      const std::string name = fs::path(e.where()).filename().string();
      EXPECT_TRUE(name == "bad.jpg" || name == "trunc.jpg" || name == "unreadable.jpg") << e.what();
    }
  }
  EXPECT_EQ(good, 3);  // 1.jpg, sub/2.PNG (gray, expanded), 3.jpg
  DatasetOptions strict = small_eval();
  strict.strict = true;
  EXPECT_NE(error_of([&] { open_dataset("imagefolder:" + root.string(), strict); }).find("c_empty"), std::string::npos);
}

TEST(ImageFolderDataset, TrainValTreesShareTheClassList) {
  const auto root = scratch_dir("imagefolder_split");
  const auto jpeg = encode_jpeg(textured_image(20, 20, 3, 3), 90);
  write_file(root / "train" / "cat" / "1.jpg", jpeg);
  write_file(root / "train" / "dog" / "1.jpg", jpeg);
  write_file(root / "val" / "dog" / "1.jpg", jpeg);  // no cat in val: dog must stay label 1
  DatasetOptions o = small_eval();
  o.split = Split::Val;
  auto val = open_dataset("imagefolder:" + root.string(), o);
  ASSERT_EQ(val->size(), 1u);
  EXPECT_EQ(val->label(0), 1);
  // Without train/ + val/ the validation root must be given.
  EXPECT_THROW(open_dataset("imagefolder:" + (root / "train").string(), o), std::invalid_argument);
  o.val_root = (root / "val").string();
  EXPECT_EQ(open_dataset("imagefolder:" + (root / "train").string(), o)->label(0), 1);
}

// Labels come from the training root; a validation class folder it lacks has no label, so its
// files are left out as one skipped item that counts them (an error with strict).
TEST(ImageFolderDataset, ValidationClassesTheTrainingRootLacksAreSkippedAndCounted) {
  const auto root = scratch_dir("imagefolder_val_only");
  const auto jpeg = encode_jpeg(textured_image(20, 20, 3, 3), 90);
  for (const char* cls : {"a", "b"}) {
    write_file(root / "train" / cls / "1.jpg", jpeg);
    write_file(root / "val" / cls / "1.jpg", jpeg);
  }
  write_file(root / "val" / "c" / "1.jpg", jpeg);
  write_file(root / "val" / "c" / "deep" / "2.png", encode_png(textured_image(8, 8, 3, 1)));
  write_file(root / "val" / "stray.jpg", jpeg);  // in no class folder: ignored, as by torchvision
  DatasetOptions o = small_eval();
  o.split = Split::Val;
  auto val = open_dataset("imagefolder:" + root.string(), o);
  EXPECT_EQ(val->size(), 2u);
  EXPECT_EQ(val->num_classes(), 2);
  ASSERT_EQ(val->skipped().size(), 1u);
  EXPECT_EQ(val->skipped()[0].where, (root / "val" / "c").string());
  EXPECT_NE(val->skipped()[0].reason.find("not in the training root: its 2 image(s) have no label"), std::string::npos)
      << val->skipped()[0].reason;
  EXPECT_EQ(val->skipped_samples(), 2);
  // The training split is not compared with anything.
  EXPECT_TRUE(open_dataset("imagefolder:" + root.string(), small_eval())->skipped().empty());
  o.strict = true;
  EXPECT_NE(error_of([&] { open_dataset("imagefolder:" + root.string(), o); }).find("/val/c: class folder not in"),
            std::string::npos);
}

// torchvision's ImageFolder sorts the class folders' names as Python strings: decoded with
// surrogateescape (a byte that is not UTF-8 becomes U+DC00 + byte) and compared by code point,
// which differs from byte order once a name is not valid UTF-8 (tests/python/imagefolder_names.py).
TEST(ImageFolderDataset, ClassOrderIsTorchvisionsForNamesThatAreNotUtf8) {
  namespace ct = crosstrain::testing;
  const auto root = scratch_dir("imagefolder_names");
  const auto r = ct::run_python_script("imagefolder_names.py", (root / "tree").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> python;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::string name;
    for (size_t i = 0; i + 1 < line.size(); i += 2) name += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
    python.push_back(name);
  }
  ASSERT_EQ(python.size(), 11u) << r.output;
  auto d = open_dataset("imagefolder:" + (root / "tree").string(), small_eval());
  EXPECT_EQ(d->class_names(), python);
  std::vector<std::string> bytes = python;
  std::sort(bytes.begin(), bytes.end());
  EXPECT_NE(bytes, python);  // the case is one where byte order would give other labels
  // Each sample's label is its folder's place in torchvision's list.
  for (size_t i = 0; i < d->size(); ++i)
    EXPECT_EQ(python.at(static_cast<size_t>(d->label(i))), fs::path(d->describe(i)).parent_path().filename().string());
}

// torchvision's ImageFolder also loads .bmp, .webp, .tif ...: crosstrain cannot decode them, and
// leaving them out silently would train on a different dataset than the user's Python script.
TEST(ImageFolderDataset, OtherTorchvisionFormatsAreReportedNotDropped) {
  const auto root = scratch_dir("imagefolder_formats");
  const auto jpeg = encode_jpeg(textured_image(20, 20, 3, 3), 90);
  write_file(root / "cat" / "1.jpg", jpeg);
  write_file(root / "cat" / "2.BMP", std::vector<uint8_t>{'B', 'M'});
  write_file(root / "dog" / "1.jpg", jpeg);
  write_file(root / "dog" / "deep" / "3.webp", std::vector<uint8_t>{'R', 'I', 'F', 'F'});
  write_file(root / "dog" / "notes.txt", std::vector<uint8_t>{'x'});  // not an image anywhere
  auto d = open_dataset("imagefolder:" + root.string(), small_eval());
  ASSERT_EQ(d->size(), 2u);
  ASSERT_EQ(d->skipped().size(), 2u);
  EXPECT_EQ(d->skipped_samples(), 2);
  std::set<std::string> names;
  for (const auto& s : d->skipped()) {
    names.insert(fs::path(s.where).filename().string());
    EXPECT_NE(s.reason.find("decodes JPEG and PNG only"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("torchvision"), std::string::npos) << s.reason;
  }
  EXPECT_EQ(names, (std::set<std::string>{"2.BMP", "3.webp"}));
  DatasetOptions strict = small_eval();
  strict.strict = true;
  EXPECT_NE(error_of([&] { open_dataset("imagefolder:" + root.string(), strict); }).find("2.BMP"), std::string::npos);
}

TEST(ImageFolderDataset, NoUsableSamplesIsAnError) {
  const auto root = scratch_dir("imagefolder_empty");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  EXPECT_NE(error_of([&] { open_dataset("imagefolder:" + root.string(), small_eval()); }).find("no usable samples"),
            std::string::npos);
  EXPECT_THROW(open_dataset("imagefolder:" + scratch_dir("imagefolder_no_classes").string(), small_eval()),
               std::runtime_error);
}

TEST(Datasets, MaxSamplesKeepsAnEvenSpread) {
  auto idx = evenly_spaced_subset(10, 4);
  EXPECT_EQ(idx, (std::vector<size_t>{0, 2, 5, 7}));
  const auto dir = scratch_dir("idx_subset");
  write_idx_pair(dir, "train", 10, 2, 2);
  DatasetOptions o = native_uint8();
  o.max_samples = 4;
  auto d = open_dataset("idx:" + dir.string(), o);
  ASSERT_EQ(d->size(), 4u);
  EXPECT_EQ(d->label(1), 2);
}
