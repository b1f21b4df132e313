// CIFAR-10 and CIFAR-100 "binary version" batches. A record is the label byte(s) followed by
// 3072 bytes: the 32x32 red plane, then green, then blue.
//   CIFAR-10:  data_batch_1..5.bin (train), test_batch.bin (val); 1 label byte, 10 classes
//   CIFAR-100: train.bin, test.bin; coarse then fine label byte; we use the fine one (100 classes)
#include <algorithm>
#include <filesystem>

#include "core/data/fixed_size_dataset.h"

namespace crosstrain::data {
namespace {

namespace fs = std::filesystem;

constexpr int kSide = 32;
constexpr size_t kPixels = kSide * kSide * 3;

// Present under the name, whatever it is: a FIFO or a link loop named data_batch_1.bin is then
// opened by the reader, which refuses it naming its kind, instead of "no CIFAR files" here.
bool is_file(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  return fs::exists(st) && !fs::is_directory(p, ec);
}

// The folder holding the batches: PATH itself or the folder the official archives unpack to.
fs::path batches_dir(const fs::path& root) {
  for (const fs::path& d : {root, root / "cifar-10-batches-bin", root / "cifar-100-binary"})
    if (is_file(d / "test_batch.bin") || is_file(d / "data_batch_1.bin") || is_file(d / "test.bin") || is_file(d / "train.bin"))
      return d;
  throw std::runtime_error("cifar dataset: no CIFAR-10 (data_batch_N.bin, test_batch.bin) or CIFAR-100 (train.bin, test.bin) files in " +
                           root.string());
}

}  // namespace

std::unique_ptr<Dataset> open_cifar_dataset(const std::string& path, const DatasetOptions& options) {
  const fs::path dir = batches_dir(path);
  const bool cifar100 = is_file(dir / "train.bin") || is_file(dir / "test.bin");
  std::vector<std::string> files;
  if (cifar100) {
    files.push_back((dir / (options.split == Split::Train ? "train.bin" : "test.bin")).string());
  } else if (options.split == Split::Val) {
    files.push_back((dir / "test_batch.bin").string());
  } else {
    for (int i = 1; i <= 5; ++i)
      if (is_file(dir / ("data_batch_" + std::to_string(i) + ".bin"))) files.push_back((dir / ("data_batch_" + std::to_string(i) + ".bin")).string());
  }
  const size_t label_bytes = cifar100 ? 2 : 1;
  const size_t record = label_bytes + kPixels;
  const int classes = cifar100 ? 100 : 10;

  auto dataset = std::make_unique<FixedSizeImageDataset>(cifar100 ? "cifar100" : "cifar10", dir.string(), kSide, kSide,
                                                         3, options.transform);
  dataset->set_num_classes(classes);
  std::vector<uint8_t> hwc(kPixels);
  for (const std::string& file : files) {
    std::vector<uint8_t> bytes;
    try {
      bytes = read_file_bytes(file, options.max_file_bytes);
    } catch (const BadSample& e) {
      if (options.strict) throw std::runtime_error(std::string("cifar dataset: ") + e.what());
      dataset->add_skipped({e.where(), e.reason()});
      continue;
    }
    const size_t records = bytes.size() / record;
    if (bytes.size() % record != 0) {
      const std::string where = file + "#" + std::to_string(records);
      const std::string reason = "truncated record (" + std::to_string(bytes.size() % record) + " of " +
                                 std::to_string(record) + " bytes)";
      if (options.strict) throw std::runtime_error("cifar dataset: " + where + ": " + reason);
      dataset->add_skipped({where, reason});
    }
    for (size_t r = 0; r < records; ++r) {
      const uint8_t* rec = bytes.data() + r * record;
      const int label = rec[label_bytes - 1];
      if (label >= classes) {
        const std::string where = file + "#" + std::to_string(r);
        const std::string reason = "label " + std::to_string(label) + " out of range";
        if (options.strict) throw std::runtime_error("cifar dataset: " + where + ": " + reason);
        dataset->add_skipped({where, reason});
        continue;
      }
      const uint8_t* planes = rec + label_bytes;
      for (size_t p = 0; p < kSide * kSide; ++p) {
        hwc[3 * p] = planes[p];
        hwc[3 * p + 1] = planes[kSide * kSide + p];
        hwc[3 * p + 2] = planes[2 * kSide * kSide + p];
      }
      dataset->add(hwc.data(), label);
    }
  }
  dataset->set_num_classes(classes);
  dataset->finish(options.max_samples);
  return dataset;
}

}  // namespace crosstrain::data
