// MNIST-format IDX files (MNIST, Fashion-MNIST, KMNIST...), raw or gzip-compressed.
// Images: magic 0x00000803, count, rows, cols (big-endian u32), then count*rows*cols bytes.
// Labels: magic 0x00000801, count, then count bytes.
#include <zlib.h>

#include <filesystem>

#include "core/data/fixed_size_dataset.h"

namespace crosstrain::data {
namespace {

namespace fs = std::filesystem;

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error(path + ": zlib initialisation failed");
  std::vector<uint8_t> out(std::max<size_t>(in.size() * 4, 1 << 16));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  // Bound the output: a small hostile .gz must not inflate into all of memory.
  constexpr size_t kMaxInflated = size_t{4} << 30;
  while (rc != Z_STREAM_END) {
    if (zs.total_out == out.size()) {
      if (out.size() >= kMaxInflated) {
        inflateEnd(&zs);
        throw std::runtime_error(path + ": inflates to more than 4 GiB; not an IDX file");
      }
      out.resize(out.size() * 2);
    }
    zs.next_out = out.data() + zs.total_out;
    zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input ended early: keep what came out
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      throw std::runtime_error(path + ": gzip: " + msg);
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

// The first of the usual spellings that exists (with '-' or '.', raw or .gz).
std::string find_idx_file(const fs::path& dir, const std::string& prefix, const std::string& kind) {
  for (const char* sep : {"-", "."})
    for (const char* ext : {"", ".gz"}) {
      fs::path p = dir / (prefix + sep + kind + "-ubyte" + ext);
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
  throw std::runtime_error("idx dataset: no " + prefix + "-" + kind + "-ubyte[.gz] in " + dir.string());
}

std::vector<uint8_t> load_maybe_gzipped(const std::string& path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const BadSample& e) {
    throw std::runtime_error(e.what());
  }
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path);
  return bytes;
}

}  // namespace

std::unique_ptr<Dataset> open_idx_dataset(const std::string& path, const DatasetOptions& options) {
  const fs::path dir(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("idx dataset: " + path + " is not a directory");
  const std::string prefix = options.split == Split::Train ? "train" : "t10k";
  const std::string images_path = find_idx_file(dir, prefix, "images-idx3");
  const std::string labels_path = find_idx_file(dir, prefix, "labels-idx1");
  const std::vector<uint8_t> images = load_maybe_gzipped(images_path);
  const std::vector<uint8_t> labels = load_maybe_gzipped(labels_path);

  if (images.size() < 16 || read_be32(images.data()) != 0x00000803)
    throw std::runtime_error("idx dataset: " + images_path + ": not an IDX image file (magic 0x00000803 expected)");
  if (labels.size() < 8 || read_be32(labels.data()) != 0x00000801)
    throw std::runtime_error("idx dataset: " + labels_path + ": not an IDX label file (magic 0x00000801 expected)");
  const uint64_t n_images = read_be32(images.data() + 4);
  const uint64_t rows = read_be32(images.data() + 8), cols = read_be32(images.data() + 12);
  const uint64_t n_labels = read_be32(labels.data() + 4);
  if (rows == 0 || cols == 0 || rows * cols > (1u << 24))
    throw std::runtime_error("idx dataset: " + images_path + ": implausible image size " + std::to_string(rows) + "x" +
                             std::to_string(cols));
  if (n_images != n_labels)
    throw std::runtime_error("idx dataset: " + images_path + " declares " + std::to_string(n_images) + " images but " +
                             labels_path + " " + std::to_string(n_labels) + " labels");

  auto dataset = std::make_unique<FixedSizeImageDataset>("idx", images_path, static_cast<int>(cols),
                                                         static_cast<int>(rows), 1, options.transform);
  const uint64_t per_image = rows * cols;
  const uint64_t complete_images = std::min<uint64_t>(n_images, (images.size() - 16) / per_image);
  const uint64_t complete_labels = std::min<uint64_t>(n_labels, labels.size() - 8);
  const uint64_t usable = std::min(complete_images, complete_labels);
  if (usable < n_images) {
    const std::string& short_file = complete_images < complete_labels ? images_path : labels_path;
    const std::string reason = "truncated: " + std::to_string(n_images) + " records declared, " +
                               std::to_string(usable) + " complete";
    if (options.strict) throw std::runtime_error("idx dataset: " + short_file + ": " + reason);
    dataset->add_skipped({short_file, reason});
  }
  for (uint64_t i = 0; i < usable; ++i) dataset->add(images.data() + 16 + i * per_image, labels[8 + i]);
  dataset->finish(options.max_samples);
  return dataset;
}

}  // namespace crosstrain::data
