#include "core/loader_source.h"

#include <ATen/ATen.h>
#include <ATen/core/CachingHostAllocator.h>

#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace crosstrain::core {

namespace {

// Pinned host memory from libtorch's host allocator for the device type, behind the loader's
// raw allocate/release interface (the DataPtr lives in a table until released).
data::BatchAllocator pinned_allocator(c10::DeviceType type) {
  struct Table {
    std::mutex mu;
    std::unordered_map<void*, c10::DataPtr> live;
  };
  auto table = std::make_shared<Table>();
  data::BatchAllocator a;
  a.allocate = [table, type](size_t bytes) -> void* {
    c10::DataPtr dp = at::getHostAllocator(type)->allocate(bytes);
    void* p = dp.get();
    std::lock_guard<std::mutex> g(table->mu);
    table->live.emplace(p, std::move(dp));
    return p;
  };
  a.release = [table](void* p, size_t) {
    std::lock_guard<std::mutex> g(table->mu);
    table->live.erase(p);
  };
  return a;
}

}  // namespace

LoaderSource::LoaderSource(std::shared_ptr<const data::Dataset> dataset, LoaderSourceOptions options,
                           c10::Device device)
    : dataset_(std::move(dataset)), opt_(std::move(options)), device_(device) {
  data::BatchAllocator alloc = data::malloc_batch_allocator();
  if (device.is_cuda()) alloc = pinned_allocator(device.type());
  loader_ = std::make_unique<data::Loader>(dataset_, opt_.loader, alloc);
  if (opt_.normalize_on_device) {
    const int c = dataset_->sample_layout().channels;
    auto expand = [c](const std::vector<float>& v) {
      std::vector<float> out(c, v.empty() ? 0.f : v[0]);
      for (int i = 0; i < c && i < static_cast<int>(v.size()); ++i) out[i] = v[i];
      return out;
    };
    mean_ = at::tensor(expand(opt_.mean)).reshape({1, c, 1, 1}).to(device);
    std_ = at::tensor(expand(opt_.std)).reshape({1, c, 1, 1}).to(device);
  }
}

int64_t LoaderSource::num_classes() const { return dataset_->num_classes(); }

void LoaderSource::begin_epoch(int epoch) {
  epoch_ = epoch;
  delivered_ = 0;
  loader_->begin_epoch(epoch);
  started_ = true;
}

DataPosition LoaderSource::position() const {
  // The end of an epoch is the start of the next: the same batch comes next either way.
  if (started_ && delivered_ >= loader_->batches_per_epoch()) return {epoch_ + 1, 0, opt_.loader.seed};
  return {epoch_, delivered_, opt_.loader.seed};
}

void LoaderSource::seek(const DataPosition& p) {
  if (p.seed != opt_.loader.seed)
    throw std::invalid_argument("data position has seed " + std::to_string(p.seed) + ", the loader has seed " +
                                std::to_string(opt_.loader.seed) + ": the sample order would differ");
  if (p.epoch < 0 || p.epoch > std::numeric_limits<int>::max() || p.batch < 0 || p.batch > loader_->batches_per_epoch())
    throw std::invalid_argument("data position epoch " + std::to_string(p.epoch) + ", batch " +
                                std::to_string(p.batch) + " is outside the dataset (" +
                                std::to_string(loader_->batches_per_epoch()) + " batches per epoch)");
  epoch_ = static_cast<int>(p.epoch);
  delivered_ = p.batch;
  loader_->begin_epoch(epoch_, p.batch);
  started_ = true;
}

Batch LoaderSource::to_device(const data::Batch& b) {
  const auto& l = b.layout();
  const bool u8 = l.type == data::SampleType::UInt8;
  // The tensor holds the loader's buffer until it is freed, so no copy is needed on the CPU.
  std::shared_ptr<void> keep = b.buffer();
  auto host = at::from_blob(b.data(), {b.size(), l.channels, l.height, l.width}, [keep](void*) mutable { keep.reset(); },
                            at::TensorOptions().dtype(u8 ? at::kByte : at::kFloat));
  auto labels = at::tensor(b.labels(), at::TensorOptions().dtype(at::kLong));
  Batch out;
  if (device_.is_cpu()) {
    out.images = host;
  } else {
    out.images = host.to(device_, /*non_blocking=*/true);
  }
  out.labels = labels.to(device_, /*non_blocking=*/true);
  if (u8) {
    out.images = out.images.to(at::kFloat).div_(255.0);
    if (mean_.defined()) out.images.sub_(mean_).div_(std_);
  }
  if (opt_.channels_last) out.images = out.images.contiguous(at::MemoryFormat::ChannelsLast);
  held_ = b;
  return out;
}

std::optional<Batch> LoaderSource::next_in_epoch() {
  if (!started_) begin_epoch(epoch_);
  auto b = loader_->next();
  if (!b) return std::nullopt;
  ++delivered_;
  return to_device(*b);
}

Batch LoaderSource::next() {
  if (!started_) begin_epoch(0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (auto b = loader_->next()) {
      ++delivered_;
      return to_device(*b);
    }
    if (!opt_.roll_over_epochs) throw std::out_of_range("end of epoch");
    begin_epoch(epoch_ + 1);
  }
  throw std::runtime_error("the data loader produced an empty epoch (dataset smaller than one batch?)");
}

}  // namespace crosstrain::core
