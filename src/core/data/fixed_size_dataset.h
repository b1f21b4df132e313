#pragma once
// In-memory images of one size (IDX, CIFAR): the readers fill it, decode() only transforms.
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace crosstrain::data {

class FixedSizeImageDataset : public Dataset {
 public:
  FixedSizeImageDataset(std::string kind, std::string source, int width, int height, int channels,
                        const TransformSpec& transform);

  // Appends one image (HWC, width*height*channels bytes) with its label.
  void add(const uint8_t* hwc, int64_t label);
  // Takes over a whole file's bytes as the pixel store (no copy): images start at `offset`, one
  // per label. Replaces what add() stored.
  void adopt(std::vector<uint8_t> bytes, size_t offset, std::vector<int64_t> labels);
  void add_skipped(SkippedItem item) { skipped_.push_back(std::move(item)); }
  void set_num_classes(int n) { num_classes_ = n; }
  // Keeps max_samples evenly spaced samples (0 or >= size: all); throws when nothing is left.
  void finish(int64_t max_samples);

  std::string kind() const override { return kind_; }
  size_t size() const override { return labels_.size(); }
  int num_classes() const override { return num_classes_; }
  int source_channels() const override { return channels_; }
  SampleLayout sample_layout() const override { return transform_.layout(channels_, width_, height_); }
  int64_t label(size_t index) const override { return labels_.at(index); }
  std::string describe(size_t index) const override { return source_ + "#" + std::to_string(index); }
  void decode(size_t index, SampleRng& rng, void* dest) const override;

 private:
  std::string kind_, source_;
  int width_, height_, channels_;
  int num_classes_ = 0;
  TransformSpec transform_;
  std::vector<uint8_t> pixels_;
  size_t offset_ = 0;  // of the first image in pixels_
  std::vector<int64_t> labels_;
};

// Indices of `keep` samples spread evenly over [0, n) (all of them when keep is 0 or >= n).
std::vector<size_t> evenly_spaced_subset(size_t n, int64_t keep);

// Summary for "no usable samples" errors: the count and the first few reasons.
std::string describe_skipped(const std::vector<SkippedItem>& skipped);

}  // namespace crosstrain::data
