// CIFAR-10 and CIFAR-100, in the "binary version" and in the "python version" torchvision
// downloads. A binary record is the label byte(s) followed by 3072 bytes: the 32x32 red plane,
// then green, then blue.
//   CIFAR-10:  data_batch_1..5.bin (train), test_batch.bin (val); 1 label byte, 10 classes
//   CIFAR-100: train.bin, test.bin; coarse then fine label byte; we use the fine one (100 classes)
// A python batch (data_batch_1..5 and test_batch, or train and test) is a pickled dict: "data", a
// uint8 numpy array of N x 3072 rows in the same plane order, and "labels" (CIFAR-10) or
// "fine_labels" (CIFAR-100), a list of N ints. It is read by the restricted pickle machine of
// torch.save files, which builds nothing but containers, numbers, strings and numeric arrays.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/data/fixed_size_dataset.h"
#include "core/torchsave/pickle_reader.h"
#include "core/torchsave/zip_archive.h"

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

// Which of the four layouts a folder holds; ".bin" or "" is the files' suffix.
struct Layout {
  fs::path dir;
  bool cifar100 = false;
  std::string suffix;
};

bool holds(const fs::path& d, const std::string& suffix, Layout& out) {
  if (is_file(d / ("train" + suffix)) || is_file(d / ("test" + suffix))) {
    out = {d, true, suffix};
    return true;
  }
  if (is_file(d / ("test_batch" + suffix)) || is_file(d / ("data_batch_1" + suffix))) {
    out = {d, false, suffix};
    return true;
  }
  return false;
}

// The folder holding the batches: PATH itself or the folder the official archives unpack to.
Layout find_layout(const fs::path& root) {
  Layout l;
  for (const fs::path& d : {root, root / "cifar-10-batches-bin", root / "cifar-100-binary"})
    if (holds(d, ".bin", l)) return l;
  for (const fs::path& d : {root / "cifar-10-batches-py", root / "cifar-100-python", root})
    if (holds(d, "", l)) return l;
  throw std::runtime_error(
      "cifar dataset: no CIFAR-10 (data_batch_N[.bin], test_batch[.bin]) or CIFAR-100 (train[.bin], test[.bin]) "
      "files in " + root.string() + " (nor in its cifar-10-batches-bin/, cifar-10-batches-py/, cifar-100-binary/ "
      "or cifar-100-python/)");
}

// The value of dict[key] (a String key), or nullptr.
const uint32_t* dict_entry(const torchsave::Pickle& p, uint32_t dict, const std::string& key) {
  const auto& items = p.items(dict);
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (p.node(items[i]).kind == torchsave::NodeKind::String && p.text(items[i]) == key) return &items[i + 1];
  return nullptr;
}

// A python batch as binary records (label byte(s), then 3072 pixel bytes), so that both versions
// share the checks below. Labels outside 0..255 become 255, which the range check then refuses.
std::vector<uint8_t> python_batch_records(const std::vector<uint8_t>& bytes, bool cifar100, size_t pixels) {
  using torchsave::NodeKind;
  torchsave::PickleOptions options;
  options.name = "pickle";
  const auto p =
      torchsave::read_pickle(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), options);
  if (p.node(p.root).kind != NodeKind::Dict) throw torchsave::FormatError("not a pickled dict");
  const char* label_key = cifar100 ? "fine_labels" : "labels";
  const uint32_t* data = dict_entry(p, p.root, "data");
  const uint32_t* labels = dict_entry(p, p.root, label_key);
  if (!data || !labels) throw torchsave::FormatError(std::string("no 'data' and '") + label_key + "' entries");
  const auto& array = p.node(*data);
  if (array.kind != NodeKind::Array || array.dtype != torchsave::DType::UInt8 || array.flag ||
      p.array(*data).sizes.size() != 2 || static_cast<size_t>(p.array(*data).sizes[1]) != pixels)
    throw torchsave::FormatError("'data' is not a uint8 array of N x " + std::to_string(pixels) + " rows");
  const size_t n = static_cast<size_t>(p.array(*data).sizes[0]);
  const std::string_view pixel_bytes = p.text(*data);
  const auto& label_items = p.items(*labels);
  if (p.node(*labels).kind != NodeKind::List || label_items.size() != n)
    throw torchsave::FormatError(std::string("'") + label_key + "' is not a list of " + std::to_string(n) + " labels");
  const size_t label_bytes = cifar100 ? 2 : 1;
  std::vector<uint8_t> records(n * (label_bytes + pixels));
  for (size_t r = 0; r < n; ++r) {
    const auto& l = p.node(label_items[r]);
    if (l.kind != NodeKind::Int) throw torchsave::FormatError("label " + std::to_string(r) + " is not an integer");
    uint8_t* rec = records.data() + r * (label_bytes + pixels);
    rec[label_bytes - 1] = static_cast<uint8_t>(l.integer < 0 || l.integer > 255 ? 255 : l.integer);
    std::memcpy(rec + label_bytes, pixel_bytes.data() + r * pixels, pixels);
  }
  return records;
}

}  // namespace

std::unique_ptr<Dataset> open_cifar_dataset(const std::string& path, const DatasetOptions& options) {
  const Layout layout = find_layout(path);
  const fs::path& dir = layout.dir;
  const bool cifar100 = layout.cifar100;
  const bool python = layout.suffix.empty();
  std::vector<std::string> files;
  if (cifar100) {
    files.push_back((dir / ((options.split == Split::Train ? "train" : "test") + layout.suffix)).string());
  } else if (options.split == Split::Val) {
    files.push_back((dir / ("test_batch" + layout.suffix)).string());
  } else {
    for (int i = 1; i <= 5; ++i)
      if (is_file(dir / ("data_batch_" + std::to_string(i) + layout.suffix)))
        files.push_back((dir / ("data_batch_" + std::to_string(i) + layout.suffix)).string());
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
      if (python) bytes = python_batch_records(bytes, cifar100, kPixels);
    } catch (const BadSample& e) {
      if (options.strict) throw std::runtime_error(std::string("cifar dataset: ") + e.what());
      dataset->add_skipped({e.where(), e.reason()});
      continue;
    } catch (const torchsave::FormatError& e) {
      const std::string reason = std::string("not a CIFAR python batch: ") + e.what();
      if (options.strict) throw std::runtime_error("cifar dataset: " + file + ": " + reason);
      dataset->add_skipped({file, reason});
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
