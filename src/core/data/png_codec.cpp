// PNG through libpng's simplified API, which catches libpng's own longjmp-based errors and
// reports them in png_image::message: nothing here can abort the process.
#include <png.h>

#include <cstring>

#include "core/data/format_decoders.h"

namespace crosstrain::data {
namespace {

// Frees libpng's state on every path out.
struct PngReader {
  png_image image;
  PngReader() {
    std::memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
  }
  ~PngReader() { png_image_free(&image); }
  void begin(const uint8_t* data, size_t size) {
    if (!png_image_begin_read_from_memory(&image, data, size))
      throw DecodeError(std::string("PNG: ") + image.message);
  }
};

}  // namespace

ImageInfo probe_png(const uint8_t* data, size_t size) {
  PngReader reader;
  reader.begin(data, size);
  const bool color = (reader.image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  return ImageInfo{static_cast<int>(reader.image.width), static_cast<int>(reader.image.height), color ? 3 : 1};
}

Image decode_png(const uint8_t* data, size_t size) {
  PngReader reader;
  reader.begin(data, size);
  const int64_t w = reader.image.width, h = reader.image.height;
  if (w <= 0 || h <= 0) throw DecodeError("PNG: image has no pixels");
  if (w * h > kMaxImagePixels) throw DecodeError("PNG: image too large");
  const bool color = (reader.image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  // Alpha is dropped (composited over black by libpng), as PIL's convert("RGB") drops it;
  // palettes and 16-bit samples come back as 8-bit gray or RGB.
  reader.image.format = color ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  Image out;
  out.width = static_cast<int>(w);
  out.height = static_cast<int>(h);
  out.channels = color ? 3 : 1;
  out.pixels.resize(static_cast<size_t>(w * h * out.channels));
  if (!png_image_finish_read(&reader.image, nullptr, out.pixels.data(), 0, nullptr))
    throw DecodeError(std::string("PNG: ") + reader.image.message);
  return out;
}

}  // namespace crosstrain::data
