#include "core/data/fixed_size_dataset.h"

#include <cstring>

namespace crosstrain::data {

FixedSizeImageDataset::FixedSizeImageDataset(std::string kind, std::string source, int width, int height,
                                             int channels, const TransformSpec& transform)
    : kind_(std::move(kind)), source_(std::move(source)), width_(width), height_(height), channels_(channels),
      transform_(transform) {
  transform_.validate();
}

void FixedSizeImageDataset::add(const uint8_t* hwc, int64_t label) {
  const size_t bytes = static_cast<size_t>(width_) * height_ * channels_;
  pixels_.insert(pixels_.end(), hwc, hwc + bytes);
  labels_.push_back(label);
  if (label + 1 > num_classes_) num_classes_ = static_cast<int>(label + 1);
}

void FixedSizeImageDataset::adopt(std::vector<uint8_t> bytes, size_t offset, std::vector<int64_t> labels) {
  const size_t per_image = static_cast<size_t>(width_) * height_ * channels_;
  if (offset > bytes.size() || (bytes.size() - offset) / per_image < labels.size())
    throw std::logic_error("FixedSizeImageDataset::adopt: fewer pixels than labels");
  pixels_ = std::move(bytes);
  offset_ = offset;
  labels_ = std::move(labels);
  for (int64_t l : labels_)
    if (l + 1 > num_classes_) num_classes_ = static_cast<int>(l + 1);
}

void FixedSizeImageDataset::finish(int64_t max_samples) {
  const size_t bytes = static_cast<size_t>(width_) * height_ * channels_;
  if (max_samples > 0 && static_cast<size_t>(max_samples) < labels_.size()) {
    std::vector<size_t> keep = evenly_spaced_subset(labels_.size(), max_samples);
    std::vector<uint8_t> pixels(keep.size() * bytes);
    std::vector<int64_t> labels(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      std::memcpy(pixels.data() + i * bytes, pixels_.data() + offset_ + keep[i] * bytes, bytes);
      labels[i] = labels_[keep[i]];
    }
    pixels_.swap(pixels);
    labels_.swap(labels);
    offset_ = 0;
  }
  if (labels_.empty()) throw std::runtime_error(kind_ + " dataset " + source_ + ": no usable samples" + describe_skipped(skipped_));
}

void FixedSizeImageDataset::decode(size_t index, SampleRng& rng, void* dest) const {
  if (index >= labels_.size()) throw std::out_of_range("sample index " + std::to_string(index) + " out of range");
  const size_t bytes = static_cast<size_t>(width_) * height_ * channels_;
  PixelView view{pixels_.data() + offset_ + index * bytes, width_, height_, channels_, 0, 0, 1.0};
  SampleGeometry g = plan_sample_geometry(transform_, width_, height_, rng);
  render_sample(view, g, transform_, dest);
}

std::vector<size_t> evenly_spaced_subset(size_t n, int64_t keep) {
  std::vector<size_t> out;
  if (keep <= 0 || static_cast<size_t>(keep) >= n) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  out.reserve(static_cast<size_t>(keep));
  for (int64_t i = 0; i < keep; ++i) out.push_back(static_cast<size_t>(static_cast<unsigned __int128>(i) * n / keep));
  return out;
}

std::string describe_skipped(const std::vector<SkippedItem>& skipped) {
  if (skipped.empty()) return "";
  int64_t samples = 0;
  for (const auto& item : skipped) samples += item.samples;
  std::string s = " (" + std::to_string(samples) + " skipped; first: " + skipped.front().where + ": " +
                  skipped.front().reason + ")";
  return s;
}

}  // namespace crosstrain::data
