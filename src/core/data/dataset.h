#pragma once
// Datasets for training and evaluation, chosen on the command line as `--data KIND:PATH`:
//
//   synthetic[:COUNT]   generated patterns, COUNT samples (default 1024), 10 classes, 3 channels
//   idx:DIR             MNIST-format IDX files, raw or .gz (train-images-idx3-ubyte, t10k-...)
//   cifar:DIR           CIFAR-10 (data_batch_N.bin, test_batch.bin) or CIFAR-100 (train.bin, test.bin)
//   imagefolder:ROOT    one subfolder per class, JPEG/PNG files; ROOT/train + ROOT/val when both
//                       exist, else ROOT is the training root and DatasetOptions::val_root the other
//
// A Dataset decodes sample i straight into a caller's batch slot through its TransformSpec
// (transform.h); decode() is const and thread-safe, so loader workers share one instance.
//
// Bad input: whole-dataset problems (missing files, wrong IDX magic, no usable samples) throw
// std::runtime_error when the dataset is opened. Per-sample problems (a corrupt JPEG, a truncated
// CIFAR record, an empty class folder) are either recorded in skipped() and left out (default),
// or, with strict, thrown at once. A decode() of a sample that turns out to be bad throws
// BadSample; the Loader counts it and takes a replacement sample (loader.h).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/data/image_codec.h"
#include "core/data/sample_rng.h"
#include "core/data/transform.h"

namespace crosstrain::data {

// Default limits (DatasetOptions): PIL refuses images above 89,478,485 pixels as decompression
// bombs; image files above 256 MiB and dataset files above 4 GiB are not what these formats hold.
constexpr int64_t kDefaultMaxImagePixels = 89'478'485;
constexpr uint64_t kDefaultMaxImageBytes = uint64_t{256} << 20;
constexpr uint64_t kDefaultMaxDataFileBytes = uint64_t{4} << 30;

enum class Split { Train, Val };

struct DatasetOptions {
  Split split = Split::Train;
  TransformSpec transform;
  bool strict = false;        // stop at the first bad sample instead of skipping it
  std::string val_root;       // imagefolder: validation root when ROOT has no train/ + val/
  int64_t max_samples = 0;    // 0 = all; otherwise the first N (subsets for quick runs)
  std::string jpeg_cache;     // imagefolder: progressive JPEGs decoded from their baseline rewrites
                              // kept in this folder (jpeg_cache.h); "" = none
  // Limits on untrusted input (each refused above its limit, with a message naming it):
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // width*height of one image (PIL's bomb limit)
  uint64_t max_image_bytes = kDefaultMaxImageBytes;   // one image file
  uint64_t max_file_bytes = kDefaultMaxDataFileBytes; // one IDX (after gunzip) or CIFAR batch file
};

// One item that was left out, with why. A truncated file can leave out many records at once.
struct SkippedItem {
  std::string where;   // path, or path#record
  std::string reason;
  int64_t samples = 1; // samples this item stands for
};

// A sample that cannot be decoded: carries where it came from and why.
class BadSample : public std::runtime_error {
 public:
  BadSample(std::string where, std::string reason)
      : std::runtime_error(where + ": " + reason), where_(std::move(where)), reason_(std::move(reason)) {}
  const std::string& where() const { return where_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string where_, reason_;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::string kind() const = 0;
  virtual size_t size() const = 0;
  virtual int num_classes() const = 0;
  // Channels of the stored images (1 or 3), before the transform's conversion.
  virtual int source_channels() const = 0;
  // Shape and type of one decoded sample (the transform's output).
  virtual SampleLayout sample_layout() const = 0;
  virtual int64_t label(size_t index) const = 0;
  // Path or path#record of sample `index`, for error reports.
  virtual std::string describe(size_t index) const = 0;
  // Decodes sample `index` into `dest` (sample_layout().bytes() bytes). Throws BadSample.
  virtual void decode(size_t index, SampleRng& rng, void* dest) const = 0;

  // Items left out when the dataset was opened (non-strict mode).
  const std::vector<SkippedItem>& skipped() const { return skipped_; }
  // Samples left out when the dataset was opened: the sum of skipped()'s counts.
  int64_t skipped_samples() const;
  // Class names in label order (folder names, or "0".."N-1").
  virtual std::vector<std::string> class_names() const;
  // Samples decoded so far from progressive JPEG files themselves (no --jpeg-cache): each one was
  // entropy-decoded whole, whatever its crop (docs/DATA.md). Thread-safe; 0 for other kinds.
  virtual int64_t progressive_jpeg_reads() const { return 0; }

 protected:
  std::vector<SkippedItem> skipped_;
};

using DatasetFactory = std::function<std::unique_ptr<Dataset>(const std::string& path, const DatasetOptions&)>;

// `KIND:PATH` (or just KIND where the kind needs no path) -> dataset. An unknown kind throws
// std::invalid_argument listing the known ones; a dataset that cannot be read throws
// std::runtime_error naming the path.
std::unique_ptr<Dataset> open_dataset(const std::string& spec, const DatasetOptions& options);
std::vector<std::string> dataset_kinds();
// For tests and extensions: adds or replaces a kind.
void register_dataset_kind(const std::string& kind, DatasetFactory factory);

// Factories of the built-in kinds (one file each).
std::unique_ptr<Dataset> open_synthetic_dataset(const std::string& path, const DatasetOptions& options);
std::unique_ptr<Dataset> open_idx_dataset(const std::string& path, const DatasetOptions& options);
std::unique_ptr<Dataset> open_cifar_dataset(const std::string& path, const DatasetOptions& options);
std::unique_ptr<Dataset> open_imagefolder_dataset(const std::string& path, const DatasetOptions& options);

// Reads a whole regular file of at most `max_bytes`; throws BadSample(path, reason) when it cannot
// (FIFOs, devices and directories are refused without blocking). The second form reuses `out`'s
// capacity.
std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes = kDefaultMaxDataFileBytes);
void read_file_bytes(const std::string& path, std::vector<uint8_t>& out, uint64_t max_bytes = kDefaultMaxDataFileBytes);

// Deterministic class-dependent test pattern (gradients, stripes, a disc, mild noise) of w x h,
// shared by the synthetic dataset and make-imagefolder.
Image synthetic_pattern(uint64_t index, int label, int num_classes, int width, int height, int channels);

}  // namespace crosstrain::data
