#pragma once
// Where the trainer's batches come from. The trainer only sees this interface; synthetic data
// lives here, real datasets plug in behind the same interface.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

namespace crosstrain::core {

struct Batch {
  at::Tensor images;  // N x C x H x W on the training device (float, or uint8 to normalise there)
  at::Tensor labels;  // N, int64, on the training device
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch; blocks until one is ready.
  virtual Batch next() = 0;
  virtual int64_t num_classes() const = 0;
};

struct SyntheticOptions {
  int64_t batch_size = 32;
  int64_t channels = 3;
  int64_t image_size = 224;
  int64_t num_classes = 1000;
  int64_t distinct_batches = 2;  // generated once from the seed, then cycled
  uint64_t seed = 0;
  bool channels_last = false;
};

// Fixed random images (standard normal) and labels generated once on `device` and reused, so the
// measurement is of the model and not of data generation.
std::unique_ptr<BatchSource> make_synthetic_source(const SyntheticOptions& options, c10::Device device);

}  // namespace crosstrain::core
