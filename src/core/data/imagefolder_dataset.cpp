// torchvision's ImageFolder layout: ROOT/<class>/**/<file>.{jpg,jpeg,png}, classes sorted by
// folder name as Python sorts them, files sorted by path. Files of torchvision's other image formats (.bmp, .webp ...)
// are listed as skipped, with the reason. Files are only listed when the dataset is opened; they are
// read and decoded by decode(), so a bad file is found (and skipped or reported) when it is used.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <utility>

#include "core/data/fixed_size_dataset.h"
#include "core/data/jpeg_cache.h"

namespace crosstrain::data {
namespace {

namespace fs = std::filesystem;

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool has_image_extension(const fs::path& p) {
  const std::string ext = lower_extension(p);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The other extensions of torchvision's IMG_EXTENSIONS: ImageFolder would load these files, so
// leaving them out changes the dataset and must be said.
bool is_other_torchvision_image(const fs::path& p) {
  static const std::set<std::string> other{".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
  return other.count(lower_extension(p)) > 0;
}

SkippedItem undecodable_format(const fs::path& p) {
  return {p.string(), "a " + lower_extension(p) +
                          " image: crosstrain decodes JPEG and PNG only (torchvision's ImageFolder would load it; "
                          "convert it to JPEG or PNG)"};
}

// Directories already walked, by (device, inode): a directory reached again through a symbolic
// link (a link to an ancestor, a "." link, two links to one folder) is not walked twice.
struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator<(const DirId& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

// Image files under `dir`, following links to files and to directories not walked yet; links to
// `dir` itself or to a folder above it are not followed. Entries named like images that are not
// regular files (FIFOs, devices) are left out with a reason; dangling links are listed, so that
// they are reported as bad samples when read, as torchvision's loader would fail on them.
void walk_images(const fs::path& dir, std::vector<std::string>& found, std::vector<SkippedItem>& skipped,
                 std::error_code& ec) {
  std::set<DirId> seen;
  std::error_code cec;
  const fs::path self = fs::canonical(dir, cec);
  for (fs::path up = self.parent_path(); !cec && !up.empty(); up = up.parent_path()) {
    struct stat st {};
    if (::stat(up.c_str(), &st) == 0) seen.insert({st.st_dev, st.st_ino});  // ancestors: never walked
    if (up == up.root_path()) break;
  }
  std::vector<fs::path> pending{dir};
  while (!pending.empty()) {
    const fs::path d = pending.back();
    pending.pop_back();
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
    std::error_code dec;
    for (fs::directory_iterator it(d, fs::directory_options::skip_permission_denied, dec), end; !dec && it != end;
         it.increment(dec)) {
      const fs::path& p = it->path();
      struct stat target {};
      if (::stat(p.c_str(), &target) != 0) {
        if (has_image_extension(p)) found.push_back(p.string());
        continue;
      }
      if (S_ISDIR(target.st_mode)) {
        pending.push_back(p);
      } else if (has_image_extension(p)) {
        if (S_ISREG(target.st_mode)) found.push_back(p.string());
        else skipped.push_back({p.string(), "not a regular file"});
      } else if (is_other_torchvision_image(p) && S_ISREG(target.st_mode)) {
        skipped.push_back(undecodable_format(p));
      }
    }
    if (dec && d == dir) ec = dec;
  }
}

// A file name as Python sees it: os.fsdecode's UTF-8 with surrogateescape, as code points. A
// well-formed sequence (Unicode's table 3-7: no overlong forms, surrogates or values above
// U+10FFFF) is its code point; any other byte b is U+DC00 + b on its own.
std::u32string python_code_points(std::string_view name) {
  std::u32string out;
  out.reserve(name.size());
  auto byte = [&](size_t i) { return i < name.size() ? static_cast<unsigned char>(name[i]) : 0u; };
  auto cont = [&](size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) { return byte(i) >= lo && byte(i) <= hi; };
  for (size_t i = 0; i < name.size();) {
    const unsigned b = byte(i);
    size_t n = 0;
    if (b < 0x80) n = 1;
    else if (b >= 0xC2 && b <= 0xDF) n = cont(i + 1) ? 2 : 0;
    else if (b == 0xE0) n = cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
    else if (b == 0xED) n = cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
    else if (b >= 0xE1 && b <= 0xEF) n = cont(i + 1) && cont(i + 2) ? 3 : 0;
    else if (b == 0xF0) n = cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    else if (b == 0xF4) n = cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    else if (b >= 0xF1 && b <= 0xF3) n = cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    if (n == 0) {
      out.push_back(0xDC00 + b);
      ++i;
      continue;
    }
    char32_t cp = n == 1 ? b : b & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// torchvision's order: sorted(entry.name for entry in os.scandir(root)), Python's str order.
void sort_as_python(std::vector<std::string>& names) {
  std::vector<std::pair<std::u32string, std::string>> keyed;
  for (auto& n : names) keyed.emplace_back(python_code_points(n), std::move(n));
  std::sort(keyed.begin(), keyed.end());
  names.clear();
  for (auto& [key, n] : keyed) names.push_back(std::move(n));
}

std::vector<std::string> list_classes(const fs::path& root) {
  std::vector<std::string> classes;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (is_dir(it->path())) classes.push_back(it->path().filename().string());
  if (ec) throw std::runtime_error("imagefolder dataset: cannot list " + root.string() + ": " + ec.message());
  sort_as_python(classes);
  return classes;
}

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(const fs::path& class_root, const fs::path& sample_root, const DatasetOptions& options)
      : root_(sample_root.string()), transform_(options.transform), max_pixels_(options.max_image_pixels),
        max_bytes_(options.max_image_bytes) {
    transform_.validate();
    if (!options.jpeg_cache.empty()) cache_ = std::make_shared<const JpegBaselineCache>(options.jpeg_cache);
    if (transform_.size == 0) throw std::invalid_argument("imagefolder dataset: the transform needs an output size (size > 0)");
    classes_ = list_classes(class_root);
    if (classes_.empty()) throw std::runtime_error("imagefolder dataset: no class folders in " + class_root.string());
    for (size_t label = 0; label < classes_.size(); ++label) {
      const fs::path dir = sample_root / classes_[label];
      std::vector<std::string> found;
      std::error_code ec;
      if (is_dir(dir)) {
        const size_t skipped_before = skipped_.size();
        walk_images(dir, found, skipped_, ec);
        if (options.strict && skipped_.size() > skipped_before)
          throw std::runtime_error("imagefolder dataset: " + skipped_[skipped_before].where + ": " +
                                   skipped_[skipped_before].reason);
      }
      if (found.empty()) {
        const std::string reason = ec ? "cannot list: " + ec.message()
                                      : is_dir(dir) ? "empty class folder (no .jpg/.jpeg/.png files)"
                                                    : "class folder missing in this split";
        if (options.strict) throw std::runtime_error("imagefolder dataset: " + dir.string() + ": " + reason);
        skipped_.push_back({dir.string(), reason});
        continue;
      }
      sort_as_python(found);
      for (auto& f : found) {
        paths_.push_back(std::move(f));
        labels_.push_back(static_cast<int64_t>(label));
      }
    }
    if (sample_root != class_root) skip_classes_without_label(sample_root, options.strict);
    if (options.max_samples > 0 && static_cast<size_t>(options.max_samples) < paths_.size()) {
      std::vector<size_t> keep = evenly_spaced_subset(paths_.size(), options.max_samples);
      std::vector<std::string> paths;
      std::vector<int64_t> labels;
      for (size_t i : keep) {
        paths.push_back(paths_[i]);
        labels.push_back(labels_[i]);
      }
      paths_.swap(paths);
      labels_.swap(labels);
    }
    if (paths_.empty())
      throw std::runtime_error("imagefolder dataset " + root_ + ": no usable samples" + describe_skipped(skipped_));
    // Channels are a property of each file; the transform fixes the output's. Without an explicit
    // choice we promise 3 (grayscale files are expanded), which is what image models expect.
    if (transform_.channels == 0) transform_.channels = 3;
  }

  std::string kind() const override { return "imagefolder"; }
  size_t size() const override { return paths_.size(); }
  int num_classes() const override { return static_cast<int>(classes_.size()); }
  int source_channels() const override { return 3; }
  SampleLayout sample_layout() const override { return transform_.layout(3); }
  int64_t label(size_t index) const override { return labels_.at(index); }
  std::string describe(size_t index) const override { return paths_.at(index); }
  std::vector<std::string> class_names() const override { return classes_; }
  int64_t progressive_jpeg_reads() const override { return progressive_reads_.load(std::memory_order_relaxed); }

  void decode(size_t index, SampleRng& rng, void* dest) const override {
    const std::string& path = paths_.at(index);
    thread_local std::vector<uint8_t> bytes;
    thread_local DecodedRegion region;
    const bool cached = cache_ && cache_->read(path, bytes, max_bytes_);
    if (!cached) read_file_bytes(path, bytes, max_bytes_);
    try {
      const ImageInfo info = probe_image(bytes.data(), bytes.size());
      const int64_t pixels = static_cast<int64_t>(info.width) * info.height;
      if (pixels > max_pixels_ || pixels > kMaxImagePixels)
        throw DecodeError(std::to_string(info.width) + "x" + std::to_string(info.height) + " = " + std::to_string(pixels) +
                          " pixels, more than the limit of " + std::to_string(std::min(max_pixels_, kMaxImagePixels)) +
                          " (a decompression bomb?)");
      if (info.progressive && cache_) {
        cache_->admit(path, bytes);  // now and from now on its baseline rewrite
      } else if (info.progressive) {
        progressive_reads_.fetch_add(1, std::memory_order_relaxed);
      }
      const SampleGeometry g = plan_sample_geometry(transform_, info.width, info.height, rng);
      decode_image_region(bytes.data(), bytes.size(), region_for(g, info.width, info.height, transform_.dct_scaling), region);
      render_sample(view_of(region), g, transform_, dest);
    } catch (const DecodeError& e) {
      throw BadSample(path, e.what());
    }
  }

 private:
  // Class folders of the validation root that the training root lacks: their files have no label
  // (labels are the training root's), so each is a skipped item counting its images.
  void skip_classes_without_label(const fs::path& sample_root, bool strict) {
    const std::set<std::string> known(classes_.begin(), classes_.end());
    for (const auto& name : list_classes(sample_root)) {
      if (known.count(name)) continue;
      const fs::path dir = sample_root / name;
      std::vector<std::string> found;
      std::vector<SkippedItem> ignored;
      std::error_code ec;
      walk_images(dir, found, ignored, ec);
      const std::string reason = "class folder not in the training root: its " + std::to_string(found.size()) +
                                 " image(s) have no label (labels are the training root's class folders)";
      if (strict) throw std::runtime_error("imagefolder dataset: " + dir.string() + ": " + reason);
      skipped_.push_back({dir.string(), reason, static_cast<int64_t>(found.size())});
    }
  }

  std::string root_;
  TransformSpec transform_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
  int64_t max_pixels_;
  uint64_t max_bytes_;
  std::shared_ptr<const JpegBaselineCache> cache_;
  mutable std::atomic<int64_t> progressive_reads_{0};
};

}  // namespace

std::unique_ptr<Dataset> open_imagefolder_dataset(const std::string& path, const DatasetOptions& options) {
  const fs::path root(path);
  if (!is_dir(root)) throw std::runtime_error("imagefolder dataset: " + path + " is not a directory");
  // ROOT/train + ROOT/val: one tree for both splits (what make-imagefolder writes).
  const bool split_tree = is_dir(root / "train") && is_dir(root / "val");
  const fs::path train_root = split_tree ? root / "train" : root;
  if (options.split == Split::Train) return std::make_unique<ImageFolderDataset>(train_root, train_root, options);
  fs::path val_root = split_tree ? root / "val" : fs::path(options.val_root);
  if (val_root.empty())
    throw std::invalid_argument("imagefolder dataset: " + path + " has no train/ and val/ folders; give the validation root");
  if (!is_dir(val_root)) throw std::runtime_error("imagefolder dataset: validation root " + val_root.string() + " is not a directory");
  // Labels come from the training root's class folders, so both splits agree on them.
  return std::make_unique<ImageFolderDataset>(train_root, val_root, options);
}

}  // namespace crosstrain::data
