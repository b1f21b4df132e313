// Decode-only reference for bench/input_pipeline.sh: libjpeg-turbo decoding every JPEG of a
// folder in full, to RGB, with the library's defaults (islow IDCT, fancy upsampling: what PIL
// asks for), on one thread, nothing else done with the pixels. Prints one JSON object.
//
//   jpeg_decode_bench DIR [--images N] [--scale M]   (M/8 DCT scaling, 8 = none)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::vector<std::vector<unsigned char>> read_files(const std::string& dir, size_t limit) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPEG")) paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.size() > limit) paths.resize(limit);
  std::vector<std::vector<unsigned char>> files;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

// Full decode of one file; returns the number of output pixels.
size_t decode(const std::vector<unsigned char>& bytes, int scale, std::vector<unsigned char>& pixels) {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);  // the bench's own files: the default exit() on error is fine
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(scale);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  const size_t stride = static_cast<size_t>(cinfo.output_width) * cinfo.output_components;
  pixels.resize(stride * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW rows[16];
    for (int i = 0; i < 16; ++i)
      rows[i] = pixels.data() + stride * std::min<size_t>(cinfo.output_scanline + i, cinfo.output_height - 1);
    jpeg_read_scanlines(&cinfo, rows, 16);
  }
  const size_t n = static_cast<size_t>(cinfo.output_width) * cinfo.output_height;
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: jpeg_decode_bench DIR [--images N] [--scale M]\n");
    return argc < 2 ? 2 : 0;
  }
  size_t images = 1500;
  int scale = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--images") images = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--scale") scale = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown flag %s\n", flag.c_str()); return 2; }
  }
  const auto files = read_files(argv[1], images);
  if (files.empty()) { std::fprintf(stderr, "no JPEG files under %s\n", argv[1]); return 2; }
  std::vector<unsigned char> pixels;
  decode(files[0], scale, pixels);  // warm-up
  size_t done = 0, pixel_count = 0;
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  while (done < images) {
    pixel_count += decode(files[done % files.size()], scale, pixels);
    ++done;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - c0;
  std::printf("{\"images\": %zu, \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"images_per_s\": %.1f, "
              "\"images_per_cpu_s\": %.1f, \"megapixels_per_cpu_s\": %.2f, \"scale\": %d}\n",
              done, wall, cpu, done / wall, done / cpu, pixel_count / cpu / 1e6, scale);
  return 0;
}
