#include "core/batch_source.h"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <vector>

namespace crosstrain::core {

namespace {

class SyntheticSource final : public BatchSource {
 public:
  SyntheticSource(const SyntheticOptions& o, c10::Device device) : num_classes_(o.num_classes), seed_(o.seed) {
    if (o.batch_size < 1 || o.image_size < 1 || o.num_classes < 1 || o.distinct_batches < 1)
      throw std::invalid_argument("synthetic data: batch size, image size and class count must be >= 1");
    // Generated on the CPU from a private generator: the same values whatever the device.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed ^ 0x5eedda7aULL);
    for (int64_t i = 0; i < o.distinct_batches; ++i) {
      auto images = at::normal(0.0, 1.0, {o.batch_size, o.channels, o.image_size, o.image_size}, gen);
      auto labels = at::randint(o.num_classes, {o.batch_size}, gen, at::TensorOptions().dtype(at::kLong));
      if (o.channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
      batches_.push_back({images.to(device), labels.to(device)});
    }
  }
  Batch next() override { return batches_[next_++ % batches_.size()]; }
  int64_t num_classes() const override { return num_classes_; }
  // One endless epoch that cycles the distinct batches.
  DataPosition position() const override { return {0, static_cast<int64_t>(next_), seed_}; }
  void seek(const DataPosition& p) override {
    if (p.seed != seed_ || p.epoch != 0 || p.batch < 0)
      throw std::invalid_argument("synthetic data: cannot resume at epoch " + std::to_string(p.epoch) + ", batch " +
                                  std::to_string(p.batch) + " with seed " + std::to_string(p.seed) +
                                  " (this source has seed " + std::to_string(seed_) + ")");
    next_ = static_cast<size_t>(p.batch);
  }

 private:
  std::vector<Batch> batches_;
  size_t next_ = 0;
  int64_t num_classes_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<BatchSource> make_synthetic_source(const SyntheticOptions& options, c10::Device device) {
  return std::make_unique<SyntheticSource>(options, device);
}

}  // namespace crosstrain::core
