// The dataset registry, file reading shared by the readers, and the synthetic kind.
#include "core/data/dataset.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/data/fixed_size_dataset.h"
#include "report/input_file.h"

namespace crosstrain::data {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, DatasetFactory>& registry() {
  static std::map<std::string, DatasetFactory> kinds = {
      {"synthetic", open_synthetic_dataset},
      {"idx", open_idx_dataset},
      {"cifar", open_cifar_dataset},
      {"imagefolder", open_imagefolder_dataset},
  };
  return kinds;
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// Generated on demand at the transform's size (32x32 when it keeps the source size).
class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(size_t count, const TransformSpec& t) : count_(count), transform_(t) {
    transform_.validate();
    side_ = t.size ? t.size : 32;
  }
  std::string kind() const override { return "synthetic"; }
  size_t size() const override { return count_; }
  int num_classes() const override { return kClasses; }
  int source_channels() const override { return 3; }
  SampleLayout sample_layout() const override { return transform_.layout(3, side_, side_); }
  int64_t label(size_t index) const override { return static_cast<int64_t>(mix_seed(index) % kClasses); }
  std::string describe(size_t index) const override { return "synthetic#" + std::to_string(index); }
  void decode(size_t index, SampleRng& rng, void* dest) const override {
    Image im = synthetic_pattern(index, static_cast<int>(label(index)), kClasses, side_, side_, 3);
    render_sample(view_of(im), plan_sample_geometry(transform_, side_, side_, rng), transform_, dest);
  }

 private:
  static constexpr int kClasses = 10;
  size_t count_;
  TransformSpec transform_;
  int side_;
};

}  // namespace

std::vector<std::string> Dataset::class_names() const {
  std::vector<std::string> names;
  for (int i = 0; i < num_classes(); ++i) names.push_back(std::to_string(i));
  return names;
}

std::vector<std::string> dataset_kinds() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> kinds;
  for (const auto& [k, f] : registry()) kinds.push_back(k);
  return kinds;
}

void register_dataset_kind(const std::string& kind, DatasetFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[kind] = std::move(factory);
}

std::unique_ptr<Dataset> open_dataset(const std::string& spec, const DatasetOptions& options) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string path = colon == std::string::npos ? "" : spec.substr(colon + 1);
  DatasetFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(kind);
    if (it != registry().end()) factory = it->second;
  }
  if (!factory) {
    std::vector<std::string> kinds = dataset_kinds();
    throw std::invalid_argument("unknown dataset kind '" + kind + "' in '" + spec + "'; known kinds: " + join(kinds) +
                                " (write KIND:PATH)");
  }
  options.transform.validate();
  if (path.empty() && kind != "synthetic") throw std::invalid_argument("dataset '" + kind + "' needs a path: " + kind + ":PATH");
  return factory(path, options);
}

void read_file_bytes(const std::string& path, std::vector<uint8_t>& bytes, uint64_t max_bytes) {
  try {
    report::read_regular_file(path, max_bytes, "file", bytes);
  } catch (const std::runtime_error& e) {
    // The message starts with the path; BadSample carries it apart.
    std::string reason = e.what();
    if (reason.compare(0, path.size() + 2, path + ": ") == 0) reason.erase(0, path.size() + 2);
    throw BadSample(path, reason);
  }
}

std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::vector<uint8_t> bytes;
  read_file_bytes(path, bytes, max_bytes);
  return bytes;
}

int64_t Dataset::skipped_samples() const {
  int64_t n = 0;
  for (const auto& s : skipped_) n += s.samples;
  return n;
}

Image synthetic_pattern(uint64_t index, int label, int num_classes, int width, int height, int channels) {
  Image im;
  im.width = width;
  im.height = height;
  im.channels = channels;
  im.pixels.resize(static_cast<size_t>(width) * height * channels);
  const uint64_t h = mix_seed(index * 7919 + 17);
  // Class decides hue and stripe orientation/frequency; the index moves a disc and shifts phases.
  const double hue = 6.283185307 * label / std::max(num_classes, 1);
  const double base[3] = {0.5 + 0.4 * std::cos(hue), 0.5 + 0.4 * std::cos(hue + 2.094), 0.5 + 0.4 * std::cos(hue + 4.189)};
  const double angle = 3.14159265 * label / std::max(num_classes, 1);
  const double freq = (2.0 + label % 5) * 6.283185307 / std::max(width, height) * 4.0;
  const double phase = static_cast<double>(h % 1000) / 1000.0 * 6.283185307;
  const double cx = width * (0.25 + 0.5 * static_cast<double>((h >> 12) % 1000) / 1000.0);
  const double cy = height * (0.25 + 0.5 * static_cast<double>((h >> 24) % 1000) / 1000.0);
  const double radius = std::min(width, height) * (0.1 + 0.15 * static_cast<double>((h >> 36) % 1000) / 1000.0);
  const double ca = std::cos(angle), sa = std::sin(angle);
  uint64_t noise = h;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double stripe = 0.5 + 0.5 * std::sin((x * ca + y * sa) * freq + phase);
      const double grad = static_cast<double>(x + y) / (width + height);
      const bool in_disc = (x - cx) * (x - cx) + (y - cy) * (y - cy) < radius * radius;
      noise = noise * 6364136223846793005ull + 1442695040888963407ull;
      const int jitter = static_cast<int>((noise >> 59) & 15) - 8;  // mild sensor-like noise
      uint8_t* p = im.pixels.data() + (static_cast<size_t>(y) * width + x) * channels;
      for (int c = 0; c < channels; ++c) {
        double v = in_disc ? 1.0 - base[c] : base[c] * (0.55 + 0.3 * stripe) + 0.25 * grad;
        p[c] = static_cast<uint8_t>(std::clamp(static_cast<int>(v * 255.0) + jitter, 0, 255));
      }
    }
  }
  return im;
}

std::unique_ptr<Dataset> open_synthetic_dataset(const std::string& path, const DatasetOptions& options) {
  size_t count = 1024;
  if (!path.empty()) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(path.c_str(), &end, 10);
    if (errno != 0 || end == path.c_str() || *end != '\0' || v <= 0)
      throw std::invalid_argument("synthetic dataset: '" + path + "' is not a positive sample count");
    count = static_cast<size_t>(v);
  }
  if (options.max_samples > 0) count = std::min(count, static_cast<size_t>(options.max_samples));
  return std::make_unique<SyntheticDataset>(count, options.transform);
}

}  // namespace crosstrain::data
