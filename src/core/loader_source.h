#pragma once
// Real datasets behind the trainer's BatchSource: the threaded Loader (core/data, torch-free)
// fills host buffers; this unit turns them into device tensors.
//
// - On CUDA the buffers come from libtorch's pinned host allocator and are copied with
//   non_blocking; the last batch's buffer is held until the next next() call (the training step
//   synchronises before that), so the loader never refills memory a copy still reads.
// - uint8 batches are normalised on the device ((x/255 - mean) / std): 4x less host-to-device
//   traffic than float32.
// - Epochs roll over by themselves: when one ends the next begins (shuffle from (seed, epoch)).
#include <memory>
#include <string>
#include <vector>

#include "core/batch_source.h"
#include "core/data/loader.h"

namespace crosstrain::core {

struct LoaderSourceOptions {
  data::LoaderOptions loader;
  bool normalize_on_device = false;  // the dataset yields uint8; mean/std below apply on the device
  std::vector<float> mean = {0.485f, 0.456f, 0.406f};
  std::vector<float> std = {0.229f, 0.224f, 0.225f};
  bool channels_last = false;
  bool roll_over_epochs = true;       // false: next() throws std::out_of_range at the end of an epoch
};

class LoaderSource final : public BatchSource {
 public:
  LoaderSource(std::shared_ptr<const data::Dataset> dataset, LoaderSourceOptions options, c10::Device device);
  Batch next() override;
  int64_t num_classes() const override;
  DataPosition position() const override;
  void seek(const DataPosition& position) override;
  // Returns nullopt at the end of the current epoch (no roll-over); for evaluation passes.
  std::optional<Batch> next_in_epoch();
  void begin_epoch(int epoch);
  int epoch() const { return epoch_; }
  int64_t batches_per_epoch() const { return loader_->batches_per_epoch(); }
  data::LoaderStats stats() const { return loader_->stats(); }

 private:
  Batch to_device(const data::Batch& b);

  std::shared_ptr<const data::Dataset> dataset_;
  LoaderSourceOptions opt_;
  c10::Device device_;
  std::unique_ptr<data::Loader> loader_;
  data::Batch held_;  // keeps the previous host buffer alive until its copy is surely done
  at::Tensor mean_, std_;
  int epoch_ = 0;
  int64_t delivered_ = 0;  // batches handed out in the current epoch
  bool started_ = false;
};

}  // namespace crosstrain::core
