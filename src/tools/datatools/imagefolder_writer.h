#pragma once
// Writes an ImageFolder tree of JPEG files (ROOT/train/<class>/NNNNNN.jpg and ROOT/val/...)
// from a fixed-size dataset (idx, cifar) or from synthetic patterns, at a chosen size, so tests
// and benchmarks get realistic JPEG input without downloading anything.
#include <cstdint>
#include <functional>
#include <string>

namespace crosstrain::datatools {

struct ImageFolderWriteOptions {
  std::string source = "synthetic";  // synthetic | idx:DIR | cifar:DIR
  std::string root;                  // output; must not already hold train/ or val/ unless overwrite
  int width = 500, height = 375;     // 0 x 0 = the source's size (synthetic: 500x375)
  int quality = 90;
  int64_t train_count = 0;           // 0 = all (synthetic: 1000)
  int64_t val_count = 0;             // 0 = all (synthetic: 200)
  int classes = 10;                  // synthetic only
  int threads = 0;                   // 0 = hardware concurrency
  bool overwrite = false;

  void validate() const;  // std::invalid_argument
};

struct ImageFolderWriteResult {
  std::string root;
  int64_t train_images = 0;
  int64_t val_images = 0;
  int classes = 0;
  int width = 0, height = 0;
  int64_t bytes = 0;  // JPEG bytes written
  double seconds = 0;
};

// `progress(done, total)` is called from worker threads, serialized, at most every few images.
ImageFolderWriteResult write_imagefolder(const ImageFolderWriteOptions& options,
                                         const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace crosstrain::datatools
