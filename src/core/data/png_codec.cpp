// PNG through libpng's progressive-free read API, with the conversions PIL's
// Image.open(f).convert("RGB") makes (what torchvision's ImageFolder loader does):
//   - alpha and tRNS transparency are dropped, not composited: a transparent pixel keeps its colour;
//   - 16-bit gray (PIL mode "I;16") is clipped to 255 (PIL converts I;16 -> L by clipping); every
//     other 16-bit sample keeps its high byte (PIL's "RGB;16B", "LA;16B", "RGBA;16B" unpacking);
//   - 1/2/4-bit gray is scaled to 0..255 and palettes are looked up; gamma chunks are ignored.
// libpng reports errors by longjmp: each setjmp-guarded function below touches only memory
// allocated before its setjmp, and the C++ caller throws DecodeError afterwards.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "core/data/format_decoders.h"

namespace crosstrain::data {
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[200];
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", msg);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "truncated file");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

// libpng's read state, freed on every path out.
struct PngReader {
  PngSource src{};
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngReader(const uint8_t* data, size_t size) {
    src.data = data;
    src.size = size;
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_png_error, on_png_warning);
    if (png) info = png_create_info_struct(png);
    if (!png || !info) throw DecodeError("PNG: out of memory");
    png_set_read_fn(png, &src, read_from_memory);
    // A hostile header must not make libpng allocate without bound (text/iCCP chunks and rows).
    png_set_chunk_malloc_max(png, 64u << 20);
  }
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
  [[noreturn]] void fail() const { throw DecodeError(std::string("PNG: ") + src.message); }
};

// The stored layout after libpng's expansions (see header()).
struct PngLayout {
  uint32_t width = 0, height = 0;
  int color_type = 0;   // the file's
  int bit_depth = 0;    // after expansion: 8 or 16
  int channels = 0;     // after expansion
  int passes = 1;
  size_t rowbytes = 0;
};

bool read_header(PngReader& r, PngLayout& out) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_info(r.png, r.info);
  out.width = png_get_image_width(r.png, r.info);
  out.height = png_get_image_height(r.png, r.info);
  out.color_type = png_get_color_type(r.png, r.info);
  if (out.color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  if (out.color_type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(r.png, r.info) < 8) png_set_expand_gray_1_2_4_to_8(r.png);
  out.passes = png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  out.bit_depth = png_get_bit_depth(r.png, r.info);
  out.channels = png_get_channels(r.png, r.info);
  out.rowbytes = png_get_rowbytes(r.png, r.info);
  return true;
}

// One stored row -> gray or RGB bytes, as PIL converts.
void convert_row(const PngLayout& l, const uint8_t* in, uint8_t* out, int out_channels) {
  const int step = l.bit_depth == 16 ? 2 : 1;
  const bool clip16_gray = l.bit_depth == 16 && l.color_type == PNG_COLOR_TYPE_GRAY;
  for (uint32_t x = 0; x < l.width; ++x) {
    const uint8_t* px = in + static_cast<size_t>(x) * l.channels * step;
    for (int c = 0; c < out_channels; ++c) {
      const uint8_t* s = px + c * step;
      out[static_cast<size_t>(x) * out_channels + c] = clip16_gray ? (s[0] ? 255 : s[1]) : s[0];
    }
  }
}

// Non-interlaced files that need converting: one stored row at a time (no full-size copy).
bool read_converted(PngReader& r, const PngLayout& l, uint8_t* row, uint8_t* out, int out_channels) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  const size_t out_row = static_cast<size_t>(l.width) * out_channels;
  for (uint32_t y = 0; y < l.height; ++y) {
    png_read_row(r.png, row, nullptr);
    convert_row(l, row, out + y * out_row, out_channels);
  }
  png_read_end(r.png, nullptr);
  return true;
}

bool read_rows(PngReader& r, png_bytep* rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  png_read_end(r.png, nullptr);
  return true;
}

}  // namespace

ImageInfo probe_png(const uint8_t* data, size_t size) {
  PngReader r(data, size);
  PngLayout l;
  if (!read_header(r, l)) r.fail();
  const bool color = (l.color_type & PNG_COLOR_MASK_COLOR) != 0;
  return ImageInfo{static_cast<int>(l.width), static_cast<int>(l.height), color ? 3 : 1, false};
}

Image decode_png(const uint8_t* data, size_t size) {
  PngReader r(data, size);
  PngLayout l;
  if (!read_header(r, l)) r.fail();
  const int64_t w = l.width, h = l.height;
  if (w <= 0 || h <= 0) throw DecodeError("PNG: image has no pixels");
  if (w * h > kMaxImagePixels) throw DecodeError("PNG: image too large");
  const bool color = (l.color_type & PNG_COLOR_MASK_COLOR) != 0;
  Image out;
  out.width = static_cast<int>(w);
  out.height = static_cast<int>(h);
  out.channels = color ? 3 : 1;
  out.pixels.resize(static_cast<size_t>(w * h * out.channels));
  // Rows that need no conversion (8-bit gray or RGB) are read straight into the output;
  // others row by row through one buffer, or, when interlaced, through a whole stored image.
  const size_t out_row = static_cast<size_t>(w) * out.channels;
  const bool in_place = l.rowbytes == out_row && l.bit_depth == 8;
  if (!in_place && l.passes == 1) {
    std::vector<uint8_t> row(l.rowbytes);
    if (!read_converted(r, l, row.data(), out.pixels.data(), out.channels)) r.fail();
    return out;
  }
  std::vector<uint8_t> stored(in_place ? 0 : l.rowbytes * static_cast<size_t>(h));
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; ++y)
    rows[static_cast<size_t>(y)] = in_place ? out.pixels.data() + y * out_row : stored.data() + y * l.rowbytes;
  if (!read_rows(r, rows.data())) r.fail();
  if (!in_place)
    for (int64_t y = 0; y < h; ++y) convert_row(l, rows[static_cast<size_t>(y)], out.pixels.data() + y * out_row, out.channels);
  return out;
}

}  // namespace crosstrain::data
