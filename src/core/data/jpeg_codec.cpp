// JPEG through libjpeg-turbo. libjpeg reports fatal errors by calling error_exit, whose default
// calls exit(); ours longjmps back to the frame that called setjmp, which then throws DecodeError.
// Only trivially destructible state lives between a setjmp and the libjpeg calls it guards.
#include "core/data/format_decoders.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace crosstrain::data {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are printed to stderr by default. A premature end of data is a truncated file, which
// PIL rejects too ("image file is truncated"); treat it as fatal. Other warnings (stray bytes
// before a marker and the like) are common in real photos and harmless: stay quiet about them.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_jpeg_error(cinfo);
}

void install_error_manager(jpeg_decompress_struct& cinfo, JpegErrorManager& err) {
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_jpeg_error;
  err.pub.emit_message = on_jpeg_message;
  err.message[0] = '\0';
}

void set_output_color(jpeg_decompress_struct& cinfo) {
  switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: cinfo.out_color_space = JCS_GRAYSCALE; break;
    case JCS_YCbCr:
    case JCS_RGB: cinfo.out_color_space = JCS_RGB; break;
    case JCS_CMYK:
    case JCS_YCCK: cinfo.out_color_space = JCS_CMYK; break;  // turned into RGB by cmyk_rows_to_rgb
    default: ERREXIT(&cinfo, JERR_CONVERSION_NOTIMPL);
  }
}

// CMYK rows (4 bytes a pixel) -> RGB (3), in place, as PIL does: Adobe-written files store the
// inks inverted (PIL reads them as "CMYK;I"), and PIL's CMYK -> RGB conversion is
// R = (255 - K) - (C * (255 - K)) / 255, rounded as its MULDIV255.
void cmyk_rows_to_rgb(uint8_t* pixels, size_t count, bool adobe_inverted) {
  auto muldiv255 = [](int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (size_t i = 0; i < count; ++i) {
    int ink[4];
    for (int c = 0; c < 4; ++c) ink[c] = adobe_inverted ? 255 - pixels[4 * i + c] : pixels[4 * i + c];
    const int nk = 255 - ink[3];
    for (int c = 0; c < 3; ++c) pixels[3 * i + c] = static_cast<uint8_t>(std::clamp(nk - muldiv255(ink[c], nk), 0, 255));
  }
}

void check_dimensions(int64_t w, int64_t h) {
  if (w <= 0 || h <= 0) throw DecodeError("image has no pixels");
  if (w * h > kMaxImagePixels) throw DecodeError("image too large (" + std::to_string(w) + "x" + std::to_string(h) + ")");
}

// Smallest M/8 (M <= 4, so at least halving) keeping the region at least out_w x out_h; 8 = no scaling.
int dct_scale_numerator(const RegionRequest& r) {
  if (r.out_w <= 0 || r.out_h <= 0) return 8;
  const int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
  for (int m = 1; m <= 4; ++m) {
    if (static_cast<int64_t>(rw) * m >= static_cast<int64_t>(r.out_w) * 8 &&
        static_cast<int64_t>(rh) * m >= static_cast<int64_t>(r.out_h) * 8)
      return m;
  }
  return 8;
}

// A complete JPEG ends with EOI (FF D9), possibly followed by padding. Entropy-coded data can
// never contain FF D9 (an FF there is stuffed as FF 00), so a file cut anywhere after its headers
// has no EOI in its tail. Cheap (no decoding), and independent of which rows a crop needs.
bool has_end_of_image_marker(const uint8_t* data, size_t size) {
  const size_t window = std::min<size_t>(size, 4096);
  for (size_t i = size - window; i + 1 < size; ++i)
    if (data[i] == 0xFF && data[i + 1] == 0xD9) return true;
  return false;
}

}  // namespace

ImageInfo probe_jpeg(const uint8_t* data, size_t size) {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  install_error_manager(cinfo, err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw DecodeError(std::string("JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  ImageInfo info{static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height),
                 cinfo.jpeg_color_space == JCS_GRAYSCALE ? 1 : 3, cinfo.progressive_mode != 0};
  jpeg_destroy_decompress(&cinfo);
  return info;
}

void decode_jpeg_region(const uint8_t* data, size_t size, const RegionRequest& request, DecodedRegion& out) {
  if (request.verify_whole_file && !has_end_of_image_marker(data, size))
    throw DecodeError("JPEG: truncated (no end-of-image marker)");
  // `out` lives in the caller's frame; after setjmp only its fields and heap buffer change.
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  install_error_manager(cinfo, err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw DecodeError(std::string("JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  // Progressive files buffer every coefficient of the image; cap libjpeg's memory so a hostile
  // header fails with an error (no backing store) instead of exhausting the host.
  cinfo.mem->max_memory_to_use = 1L << 30;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const int64_t src_w = cinfo.image_width, src_h = cinfo.image_height;
  if (src_w <= 0 || src_h <= 0 || src_w * src_h > kMaxImagePixels) {
    jpeg_destroy_decompress(&cinfo);
    check_dimensions(src_w, src_h);
  }
  set_output_color(cinfo);

  RegionRequest r = request;
  if (r.x1 <= r.x0 || r.y1 <= r.y0) r = RegionRequest{0, 0, static_cast<int>(src_w), static_cast<int>(src_h), 0, 0, request.verify_whole_file};
  r.x0 = std::max(0, r.x0); r.y0 = std::max(0, r.y0);
  r.x1 = std::min<int>(static_cast<int>(src_w), r.x1); r.y1 = std::min<int>(static_cast<int>(src_h), r.y1);
  const int m = dct_scale_numerator(r);
  cinfo.scale_num = static_cast<unsigned>(m);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);

  const int ow = static_cast<int>(cinfo.output_width), oh = static_cast<int>(cinfo.output_height);
  const int channels = cinfo.output_components;  // 4 for CMYK until converted below
  const bool cmyk = cinfo.out_color_space == JCS_CMYK;
  const bool adobe_inverted = cmyk && cinfo.saw_Adobe_marker;
  // Region in decoded coordinates, widened to whole pixels plus a margin: chroma upsampling
  // treats the edge of a cropped decode as the image edge, so the outermost decoded pixels can
  // differ from a full decode; the margin keeps them out of what the caller uses.
  constexpr int kMargin = 2;
  int sx0 = std::max(0, static_cast<int>(static_cast<int64_t>(r.x0) * m / 8) - kMargin);
  int sx1 = std::min<int>(ow, static_cast<int>((static_cast<int64_t>(r.x1) * m + 7) / 8) + kMargin);
  int sy0 = std::max(0, static_cast<int>(static_cast<int64_t>(r.y0) * m / 8) - kMargin);
  int sy1 = std::min<int>(oh, static_cast<int>((static_cast<int64_t>(r.y1) * m + 7) / 8) + kMargin);
  if (sx1 <= sx0) sx1 = std::min(ow, sx0 + 1);
  if (sy1 <= sy0) sy1 = std::min(oh, sy0 + 1);

  JDIMENSION xoff = static_cast<JDIMENSION>(sx0), cw = static_cast<JDIMENSION>(sx1 - sx0);
  if (static_cast<int>(cw) < ow) jpeg_crop_scanline(&cinfo, &xoff, &cw);  // snaps to iMCU columns
  else xoff = 0, cw = static_cast<JDIMENSION>(ow);

  out.image.width = static_cast<int>(cw);
  out.image.height = sy1 - sy0;
  out.image.channels = cmyk ? 3 : channels;
  out.image.pixels.resize(static_cast<size_t>(cw) * out.image.height * channels);
  if (sy0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(sy0));
  while (static_cast<int>(cinfo.output_scanline) < sy1) {
    JSAMPROW row = out.image.pixels.data() +
                   static_cast<size_t>(cinfo.output_scanline - sy0) * cw * channels;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  // The rows below the region are never entropy-decoded (that would double the cost of a
  // typical crop); a truncated file is caught by the end-of-image check instead.
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (cmyk) {
    cmyk_rows_to_rgb(out.image.pixels.data(), static_cast<size_t>(cw) * out.image.height, adobe_inverted);
    out.image.pixels.resize(static_cast<size_t>(cw) * out.image.height * 3);
  }
  // Source coordinates of the decoded pixel grid's origin (exact when m == 8).
  out.scale = m / 8.0;
  out.origin_x = static_cast<int>(static_cast<int64_t>(xoff) * 8 / m);
  out.origin_y = static_cast<int>(static_cast<int64_t>(sy0) * 8 / m);
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality, bool progressive) {
  if (image.channels != 1 && image.channels != 3) throw std::invalid_argument("encode_jpeg: channels must be 1 or 3");
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels)
    throw std::invalid_argument("encode_jpeg: pixel buffer does not match the dimensions");
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_jpeg_error;
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    throw std::runtime_error(std::string("JPEG encoding failed: ") + err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &buffer_size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.channels;
  cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, std::clamp(quality, 1, 100), TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.row(static_cast<int>(cinfo.next_scanline)));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> bytes(buffer, buffer + buffer_size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return bytes;
}

bool jpeg_is_progressive(const uint8_t* data, size_t size) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return false;
  size_t i = 2;
  while (i + 4 <= size) {
    if (data[i] != 0xFF) return false;
    const uint8_t marker = data[i + 1];
    if (marker == 0xFF) {  // fill byte before a marker
      ++i;
      continue;
    }
    // SOF2, SOF6, SOF10, SOF14: progressive; the other start-of-frame markers: not; a scan begins
    // after the frame header, so the answer comes before SOS.
    if (marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE) return true;
    if ((marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) || marker == 0xDA)
      return false;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // markers without a length
      i += 2;
      continue;
    }
    i += 2 + ((static_cast<size_t>(data[i + 2]) << 8) | data[i + 3]);
  }
  return false;
}

namespace {

// Whether every coefficient of every component was sent to full precision. When some were not (a
// scan script that stops early), libjpeg smooths the blocks as it decodes (block smoothing, on by
// default, as in PIL), so the coefficients alone would not give the same pixels.
bool progressive_coefficients_complete(const jpeg_decompress_struct& src) {
  if (!src.progressive_mode) return true;
  for (int ci = 0; ci < src.num_components; ++ci)
    for (int k = 0; k < DCTSIZE2; ++k)
      if (src.coef_bits[ci][k] != 0) return false;
  return true;
}

// Whether every coefficient fits what a baseline 8-bit file can code: AC values of at most 10 bits
// and DC values whose differences fit 11. Damaged progressive data can leave larger values, which
// the Huffman encoder does not refuse but codes wrongly (the rewrite would decode differently).
bool coefficients_fit_baseline(jpeg_decompress_struct& src, jvirt_barray_ptr* coefficients) {
  if (src.data_precision != 8) return false;
  for (int ci = 0; ci < src.num_components; ++ci) {
    const jpeg_component_info& comp = src.comp_info[ci];
    for (JDIMENSION row = 0; row < comp.height_in_blocks; ++row) {
      JBLOCKARRAY blocks = (*src.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&src), coefficients[ci], row, 1, FALSE);
      for (JDIMENSION b = 0; b < comp.width_in_blocks; ++b)
        for (int k = 0; k < DCTSIZE2; ++k)
          if (blocks[0][b][k] > 1023 || blocks[0][b][k] < -1023) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<uint8_t> transcode_jpeg_to_baseline(const uint8_t* data, size_t size) {
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;
  JpegErrorManager err;  // one manager for both: any fatal error of either lands here
  install_error_manager(src, err);
  dst.err = &err.pub;
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;
  volatile bool dst_created = false;  // changed after setjmp: read back from memory after a longjmp
  if (setjmp(err.jump)) {
    if (dst_created) jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
    std::free(buffer);
    throw DecodeError(std::string("JPEG: ") + err.message);
  }
  jpeg_create_decompress(&src);
  src.mem->max_memory_to_use = 1L << 30;  // as the decoder: a hostile header fails, never exhausts
  jpeg_mem_src(&src, data, static_cast<unsigned long>(size));
  jpeg_read_header(&src, TRUE);
  const int64_t pixels = static_cast<int64_t>(src.image_width) * src.image_height;
  // YCbCr and grayscale only: other colour spaces depend on markers (Adobe's) that a rewrite
  // could change, and they are rare among progressive photographs.
  if (pixels <= 0 || pixels > kMaxImagePixels || (src.jpeg_color_space != JCS_YCbCr && src.jpeg_color_space != JCS_GRAYSCALE))
    ERREXIT(&src, JERR_CONVERSION_NOTIMPL);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&src);
  const char* refusal = !progressive_coefficients_complete(src) ? "its progressive scans leave coefficients incomplete, which decoders smooth"
                        : !coefficients_fit_baseline(src, coefficients) ? "it holds coefficients out of the baseline range (damaged data)"
                        : nullptr;
  if (refusal) {
    jpeg_destroy_decompress(&src);
    throw DecodeError(std::string("JPEG: ") + refusal + ": a baseline rewrite would decode differently");
  }
  jpeg_create_compress(&dst);
  dst_created = true;
  jpeg_mem_dest(&dst, &buffer, &buffer_size);
  jpeg_copy_critical_parameters(&src, &dst);  // the same quantisation and sampling: the same pixels
  // Standard Huffman tables: one pass (fitted ones take a second and saved 3% of the size on
  // photographs, while the first epoch went from 0.81x to 0.57x of reading without the cache).
  dst.optimize_coding = FALSE;
  jpeg_write_coefficients(&dst, coefficients);
  jpeg_finish_compress(&dst);
  jpeg_finish_decompress(&src);
  std::vector<uint8_t> bytes(buffer, buffer + buffer_size);
  jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  std::free(buffer);
  return bytes;
}

}  // namespace crosstrain::data
