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

// Where a source stands: the batch next() returns next is batch `batch` of epoch `epoch` of the
// order drawn from `seed`. Sources promise that seek(position()) on a fresh source with the same
// configuration continues with the same batches, bit for bit (exact resume).
struct DataPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  uint64_t seed = 0;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch; blocks until one is ready.
  virtual Batch next() = 0;
  virtual int64_t num_classes() const = 0;
  virtual DataPosition position() const = 0;
  // std::invalid_argument when the position does not fit this source (other seed, past the end).
  virtual void seek(const DataPosition& position) = 0;
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
