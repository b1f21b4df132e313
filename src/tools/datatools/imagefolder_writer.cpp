#include "tools/datatools/imagefolder_writer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "core/data/dataset.h"

namespace crosstrain::datatools {

// This tool is built from the data library's parts.
using namespace crosstrain::data;
namespace {

namespace fs = std::filesystem;

// Zero-padded so that sorting folder names gives numeric label order.
std::string class_folder(int label, int classes) {
  const int digits = std::max(2, static_cast<int>(std::to_string(std::max(classes - 1, 0)).size()));
  std::string s = std::to_string(label);
  return std::string(static_cast<size_t>(std::max(0, digits - static_cast<int>(s.size()))), '0') + s;
}

// CHW uint8 (what a dataset decodes to with an uint8 transform) -> HWC for the encoder.
Image to_hwc(const std::vector<uint8_t>& chw, const SampleLayout& l) {
  Image im;
  im.width = l.width;
  im.height = l.height;
  im.channels = l.channels;
  im.pixels.resize(chw.size());
  const size_t plane = static_cast<size_t>(l.width) * l.height;
  for (size_t p = 0; p < plane; ++p)
    for (int c = 0; c < l.channels; ++c) im.pixels[p * l.channels + c] = chw[c * plane + p];
  return im;
}

// The system's reason in the message ("No space left on device"); a file cut short is removed, so a
// tree never holds a truncated JPEG.
void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.string().c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  const size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int error = n == bytes.size() ? 0 : errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;
  if (n != bytes.size() && error == 0) error = EIO;
  if (error != 0) {
    std::error_code ec;
    fs::remove(path, ec);
    throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(error));
  }
}

}  // namespace

void ImageFolderWriteOptions::validate() const {
  if (root.empty()) throw std::invalid_argument("make-imagefolder: an output root is required");
  if (width < 0 || height < 0 || (width == 0) != (height == 0))
    throw std::invalid_argument("make-imagefolder: size must be WxH with both > 0, or 0x0 for the source size");
  if (width > 16384 || height > 16384) throw std::invalid_argument("make-imagefolder: size above 16384 pixels");
  if (quality < 1 || quality > 100) throw std::invalid_argument("make-imagefolder: quality must be 1..100");
  if (train_count < 0 || val_count < 0) throw std::invalid_argument("make-imagefolder: counts must be >= 0");
  if (classes < 1 || classes > 1000) throw std::invalid_argument("make-imagefolder: classes must be 1..1000");
  if (threads < 0) throw std::invalid_argument("make-imagefolder: threads must be >= 0");
}

ImageFolderWriteResult write_imagefolder(const ImageFolderWriteOptions& options,
                                         const std::function<void(int64_t, int64_t)>& progress) {
  options.validate();
  const auto start = std::chrono::steady_clock::now();
  const bool synthetic = options.source.rfind("synthetic", 0) == 0;

  // One job list over both splits; each job makes and writes one file.
  struct SplitJobs {
    std::string name;
    std::unique_ptr<Dataset> dataset;  // null for synthetic
    int64_t count = 0;
  };
  std::vector<SplitJobs> splits(2);
  splits[0].name = "train";
  splits[1].name = "val";
  int classes = options.classes;
  int width = options.width ? options.width : 500, height = options.height ? options.height : 375;
  if (synthetic) {
    if (options.source != "synthetic") throw std::invalid_argument("make-imagefolder: write synthetic, counts go in --train/--val");
    splits[0].count = options.train_count ? options.train_count : 1000;
    splits[1].count = options.val_count ? options.val_count : 200;
  } else {
    if (options.source.rfind("idx:", 0) != 0 && options.source.rfind("cifar:", 0) != 0)
      throw std::invalid_argument("make-imagefolder: the source must be synthetic, idx:DIR or cifar:DIR, not '" +
                                  options.source + "'");
    for (int s = 0; s < 2; ++s) {
      DatasetOptions d;
      d.split = s == 0 ? data::Split::Train : data::Split::Val;
      d.transform.mode = TransformSpec::Mode::Eval;
      d.transform.output = SampleType::UInt8;
      d.transform.size = 0;
      d.max_samples = s == 0 ? options.train_count : options.val_count;
      splits[s].dataset = open_dataset(options.source, d);
      splits[s].count = static_cast<int64_t>(splits[s].dataset->size());
    }
    classes = splits[0].dataset->num_classes();
    const SampleLayout l = splits[0].dataset->sample_layout();
    if (!options.width) width = l.width, height = l.height;
  }
  const fs::path root(options.root);
  for (const char* split : {"train", "val"}) {
    std::error_code ec;
    if (fs::exists(root / split, ec) && !options.overwrite)
      throw std::runtime_error(root.string() + "/" + split + " exists; choose another root or overwrite");
    if (options.overwrite) fs::remove_all(root / split, ec);
  }
  for (auto& s : splits)
    for (int c = 0; c < classes; ++c) fs::create_directories(root / s.name / class_folder(c, classes));

  const int64_t total = splits[0].count + splits[1].count;
  std::atomic<int64_t> next{0}, done{0}, bytes{0};
  std::mutex error_mutex, progress_mutex;
  std::exception_ptr error;
  auto work = [&] {
    std::vector<uint8_t> chw;
    for (;;) {
      const int64_t job = next++;
      if (job >= total) return;
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error) return;
      }
      try {
        const int s = job < splits[0].count ? 0 : 1;
        const int64_t i = s == 0 ? job : job - splits[0].count;
        Image image;
        int label;
        if (synthetic) {
          label = static_cast<int>(i % classes);
          // Val patterns use other indices than train ones, so the splits do not share images.
          image = synthetic_pattern(static_cast<uint64_t>(i) + (s == 0 ? 0 : 1000000007ull), label, classes, width, height, 3);
        } else {
          const Dataset& d = *splits[s].dataset;
          label = static_cast<int>(d.label(static_cast<size_t>(i)));
          const SampleLayout l = d.sample_layout();
          chw.resize(l.bytes());
          SampleRng rng(0);
          d.decode(static_cast<size_t>(i), rng, chw.data());
          Image native = to_hwc(chw, l);
          if (width == l.width && height == l.height) {
            image = std::move(native);
          } else {
            TransformSpec t;
            t.output = SampleType::UInt8;
            SampleGeometry g;
            g.out_width = width;
            g.out_height = height;
            g.x = ResampleAxis{static_cast<double>(l.width) / width, 0.0, 0, l.width};
            g.y = ResampleAxis{static_cast<double>(l.height) / height, 0.0, 0, l.height};
            SampleLayout out{l.channels, height, width, SampleType::UInt8};
            std::vector<uint8_t> resized(out.bytes());
            render_sample(view_of(native), g, t, resized.data());
            image = to_hwc(resized, out);
          }
        }
        char name[32];
        std::snprintf(name, sizeof(name), "%06lld.jpg", static_cast<long long>(i));
        const std::vector<uint8_t> jpeg = encode_jpeg(image, options.quality);
        write_bytes(root / splits[s].name / class_folder(label, classes) / name, jpeg);
        bytes += static_cast<int64_t>(jpeg.size());
        const int64_t d = ++done;
        if (progress && (d % 16 == 0 || d == total)) {
          std::lock_guard<std::mutex> lock(progress_mutex);
          progress(d, total);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        return;
      }
    }
  };
  const int threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  ImageFolderWriteResult r;
  r.root = root.string();
  r.train_images = splits[0].count;
  r.val_images = splits[1].count;
  r.classes = classes;
  r.width = width;
  r.height = height;
  r.bytes = bytes.load();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace crosstrain::datatools
