// MNIST-format IDX files (MNIST, Fashion-MNIST, KMNIST...), raw or gzip-compressed (one member or
// several concatenated).
// Images: magic 0x00000803, count, rows, cols (big-endian u32), then count*rows*cols bytes.
// Labels: magic 0x00000801, count, then count bytes.
// The image file's bytes become the dataset's pixel store as read (no copy); a file, raw or
// inflated, larger than DatasetOptions::max_file_bytes is refused, the inflated size checked as
// the bytes come out of zlib.
#include <zlib.h>

#include <filesystem>

#include "core/data/fixed_size_dataset.h"
#include "report/input_file.h"

namespace crosstrain::data {
namespace {

namespace fs = std::filesystem;

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

[[noreturn]] void too_large(const std::string& path, uint64_t limit) {
  throw std::runtime_error("idx dataset: " + path + ": inflates to more than the limit of " +
                           report::byte_size_text(limit) + " (raise it with the maximum file size option)");
}

// Inflates every gzip member of `in` (`cat a.gz b.gz` is one valid .gz, as gzip and Python read
// it); zero bytes after the last member (tape padding) are ignored, anything else there is an
// error. A member cut short keeps what came out of it. inflateReset zeroes zlib's counters, so
// the positions are kept here.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path, uint64_t limit) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error(path + ": zlib initialisation failed");
  auto fail = [&](const std::string& msg) {
    inflateEnd(&zs);
    throw std::runtime_error(path + ": gzip: " + msg);
  };
  // The trailer's size (mod 2^32, and only a claim) sizes the first buffer when it is plausible.
  uint64_t hint = in.size() >= 4 ? read_be32(in.data() + in.size() - 4) : 0;
  hint = ((hint & 0xff) << 24) | ((hint & 0xff00) << 8) | ((hint >> 8) & 0xff00) | (hint >> 24);  // little-endian
  const uint64_t first = hint >= in.size() && hint <= limit ? hint + 1 : std::min<uint64_t>(uint64_t{in.size()} * 4 + (1 << 16), limit + 1);
  std::vector<uint8_t> out(static_cast<size_t>(first));
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos > limit) {
      inflateEnd(&zs);
      too_large(path, limit);
    }
    if (out_pos == out.size()) out.resize(static_cast<size_t>(std::min<uint64_t>(uint64_t{out.size()} * 2, limit + 1)));
    // Never more room than limit + 1 bytes: going past the limit is seen at once.
    zs.next_in = const_cast<Bytef*>(in.data() + in_pos);
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - in_pos, UINT32_MAX));
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - out_pos, UINT32_MAX));
    const uInt offered_in = zs.avail_in, offered_out = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += offered_in - zs.avail_in;
    out_pos += offered_out - zs.avail_out;
    if (rc == Z_STREAM_END) {
      size_t next = in_pos;
      while (next < in.size() && in[next] == 0) ++next;
      if (next == in.size()) break;
      if (next != in_pos || in.size() - next < 2 || in[next] != 0x1f || in[next + 1] != 0x8b)
        fail("data after the end of the compressed stream at byte " + std::to_string(in_pos) + " is not another gzip member");
      if (inflateReset(&zs) != Z_OK) fail("zlib reset failed");
      continue;
    }
    if (rc == Z_BUF_ERROR && in_pos == in.size()) break;  // input ended early: keep what came out
    if (rc != Z_OK && rc != Z_BUF_ERROR) fail(zs.msg ? zs.msg : "corrupt data");
  }
  if (out_pos > limit) {
    inflateEnd(&zs);
    too_large(path, limit);
  }
  out.resize(out_pos);  // no shrink_to_fit: that would copy it all once more
  inflateEnd(&zs);
  return out;
}

// The first of the usual spellings that exists (with '-' or '.', raw or .gz).
std::string find_idx_file(const fs::path& dir, const std::string& prefix, const std::string& kind) {
  for (const char* sep : {"-", "."})
    for (const char* ext : {"", ".gz"}) {
      fs::path p = dir / (prefix + sep + kind + "-ubyte" + ext);
      std::error_code ec;
      if (fs::exists(fs::symlink_status(p, ec))) return p.string();
    }
  throw std::runtime_error("idx dataset: no " + prefix + "-" + kind + "-ubyte[.gz] in " + dir.string());
}

std::vector<uint8_t> load_maybe_gzipped(const std::string& path, uint64_t limit) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path, limit);
  } catch (const BadSample& e) {
    throw std::runtime_error("idx dataset: " + std::string(e.what()));
  }
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path, limit);
  return bytes;
}

// Magic first (a foreign file is named as such), then the header's length.
void check_header(const std::vector<uint8_t>& b, const std::string& path, uint32_t magic, size_t header, const char* what) {
  if (b.size() < 4 || read_be32(b.data()) != magic) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08x", magic);
    throw std::runtime_error("idx dataset: " + path + ": not an IDX " + what + " file (magic " + hex + " expected)");
  }
  if (b.size() < header)
    throw std::runtime_error("idx dataset: " + path + ": truncated header (" + std::to_string(b.size()) + " of " +
                             std::to_string(header) + " bytes)");
}

}  // namespace

std::unique_ptr<Dataset> open_idx_dataset(const std::string& path, const DatasetOptions& options) {
  const fs::path dir(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("idx dataset: " + path + " is not a directory");
  const std::string prefix = options.split == Split::Train ? "train" : "t10k";
  const std::string images_path = find_idx_file(dir, prefix, "images-idx3");
  const std::string labels_path = find_idx_file(dir, prefix, "labels-idx1");
  std::vector<uint8_t> images = load_maybe_gzipped(images_path, options.max_file_bytes);
  const std::vector<uint8_t> labels = load_maybe_gzipped(labels_path, options.max_file_bytes);
  check_header(images, images_path, 0x00000803, 16, "image");
  check_header(labels, labels_path, 0x00000801, 8, "label");
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
    dataset->add_skipped({short_file, reason, static_cast<int64_t>(n_images - usable)});
  }
  std::vector<int64_t> label_values(labels.begin() + 8, labels.begin() + 8 + static_cast<std::ptrdiff_t>(usable));
  dataset->adopt(std::move(images), 16, std::move(label_values));
  dataset->finish(options.max_samples);
  return dataset;
}

}  // namespace crosstrain::data
