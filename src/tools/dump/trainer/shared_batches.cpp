#include "tools/dump/trainer/shared_batches.h"

#include <cstring>
#include <stdexcept>

#include "tools/dump/npy.h"

namespace crosstrain::dump {

namespace {

// One fixed batch, already on the device.
class FixedBatchSource final : public core::BatchSource {
 public:
  FixedBatchSource(core::Batch batch, int64_t num_classes) : batch_(std::move(batch)), num_classes_(num_classes) {}
  core::Batch next() override {
    ++served_;
    return batch_;
  }
  int64_t num_classes() const override { return num_classes_; }
  core::DataPosition position() const override { return {0, served_, 0}; }
  void seek(const core::DataPosition& p) override { served_ = p.batch; }  // every batch is the same

 private:
  core::Batch batch_;
  int64_t num_classes_;
  int64_t served_ = 0;
};

class HostCopySource final : public core::BatchSource {
 public:
  HostCopySource(std::unique_ptr<core::BatchSource> host, c10::Device device, bool channels_last)
      : host_(std::move(host)), device_(device), channels_last_(channels_last) {}
  core::Batch next() override {
    core::Batch b = host_->next();
    b.images = b.images.to(device_);
    if (channels_last_) b.images = b.images.contiguous(at::MemoryFormat::ChannelsLast);
    b.labels = b.labels.to(device_);
    return b;
  }
  int64_t num_classes() const override { return host_->num_classes(); }
  core::DataPosition position() const override { return host_->position(); }
  void seek(const core::DataPosition& p) override { host_->seek(p); }

 private:
  std::unique_ptr<core::BatchSource> host_;
  c10::Device device_;
  bool channels_last_;
};

at::Tensor read_npy(const std::string& path, dump::DType want) {
  auto a = dump::NpyArray::open(path);
  if (a.dtype() != want)
    throw std::runtime_error(path + ": expected " + dump::dtype_name(want) + ", found " + dump::dtype_name(a.dtype()));
  at::Tensor t = at::empty(a.shape(), want == dump::DType::Float32 ? at::kFloat : at::kLong);
  std::memcpy(t.data_ptr(), a.data(), a.numel() * dump::dtype_size(want));
  return t;
}

}  // namespace

std::unique_ptr<core::BatchSource> make_npy_batch_source(const std::string& dir, const std::string& device,
                                                         int64_t num_classes, bool channels_last) {
  core::Batch b;
  b.images = read_npy(dir + "/images.npy", dump::DType::Float32);
  b.labels = read_npy(dir + "/labels.npy", dump::DType::Int64);
  if (b.images.dim() != 4 || b.labels.dim() != 1 || b.labels.size(0) != b.images.size(0))
    throw std::runtime_error(dir + ": images.npy must be N x C x H x W and labels.npy N long");
  if (b.labels.numel() > 0 && (b.labels.min().item<int64_t>() < 0 || b.labels.max().item<int64_t>() >= num_classes))
    throw std::runtime_error(dir + "/labels.npy: labels must be in [0, " + std::to_string(num_classes) + ")");
  b.images = b.images.to(c10::Device(device));
  if (channels_last) b.images = b.images.contiguous(at::MemoryFormat::ChannelsLast);
  b.labels = b.labels.to(c10::Device(device));
  return std::make_unique<FixedBatchSource>(std::move(b), num_classes);
}

std::unique_ptr<core::BatchSource> make_host_synthetic_source(const core::SyntheticOptions& options,
                                                              const std::string& device) {
  core::SyntheticOptions host = options;
  host.channels_last = false;
  return std::make_unique<HostCopySource>(core::make_synthetic_source(host, c10::Device(c10::kCPU)),
                                          c10::Device(device), options.channels_last);
}

}  // namespace crosstrain::dump
