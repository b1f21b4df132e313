#pragma once
// Small generated inputs for the data tests: textured images, PNG/JPEG/IDX/CIFAR files, and
// per-test scratch folders.
#include <png.h>

#include <cstdint>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/image_codec.h"
#include "core/data/sample_rng.h"

namespace crosstrain::data::testing {

inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("crosstrain_data_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Edges, gradients and noise: resampling differences show up, unlike on flat images.
inline Image textured_image(int w, int h, int channels, uint64_t seed) {
  Image im;
  im.width = w;
  im.height = h;
  im.channels = channels;
  im.pixels.resize(static_cast<size_t>(w) * h * channels);
  SampleRng rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) {
        int v = (x * 255 / w + y * 97 / h + c * 60) % 256;
        if (((x / 7) + (y / 5)) % 3 == 0) v = 255 - v;
        v += static_cast<int>(rng.randint(-20, 21));
        im.pixels[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
  return im;
}

inline std::vector<uint8_t> encode_png(const Image& im) {
  png_image p{};
  p.version = PNG_IMAGE_VERSION;
  p.width = static_cast<png_uint_32>(im.width);
  p.height = static_cast<png_uint_32>(im.height);
  p.format = im.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  png_image_write_to_memory(&p, nullptr, &size, 0, im.pixels.data(), 0, nullptr);
  std::vector<uint8_t> out(size);
  png_image_write_to_memory(&p, out.data(), &size, 0, im.pixels.data(), 0, nullptr);
  out.resize(size);
  return out;
}

inline void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}

// IDX image and label files for n images of rows x cols; image i is filled with value i*3+1,
// label i % 10.
inline void write_idx_pair(const std::filesystem::path& dir, const std::string& prefix, uint32_t n, uint32_t rows,
                           uint32_t cols, uint32_t image_magic = 0x803) {
  std::vector<uint8_t> images, labels;
  put_be32(images, image_magic);
  put_be32(images, n);
  put_be32(images, rows);
  put_be32(images, cols);
  for (uint32_t i = 0; i < n; ++i) images.insert(images.end(), rows * cols, static_cast<uint8_t>(i * 3 + 1));
  put_be32(labels, 0x801);
  put_be32(labels, n);
  for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
  write_file(dir / (prefix + "-images-idx3-ubyte"), images);
  write_file(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

// CIFAR records: label then R, G, B planes filled with label, 100 + i, 200.
inline std::vector<uint8_t> cifar_records(int n, int label_bytes) {
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    for (int b = 0; b < label_bytes; ++b) out.push_back(static_cast<uint8_t>(b == label_bytes - 1 ? i % 10 : 7));
    out.insert(out.end(), 1024, static_cast<uint8_t>(i % 10));
    out.insert(out.end(), 1024, static_cast<uint8_t>(100 + i));
    out.insert(out.end(), 1024, static_cast<uint8_t>(200));
  }
  return out;
}

}  // namespace crosstrain::data::testing
