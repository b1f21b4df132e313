// Format dispatch by magic number; the decoders live in jpeg_codec.cpp and png_codec.cpp.
#include "core/data/image_codec.h"

#include "core/data/format_decoders.h"

namespace crosstrain::data {

ImageFormat sniff_image_format(const uint8_t* data, size_t size) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return ImageFormat::Jpeg;
  if (size >= 8 && std::equal(kPng, kPng + 8, data)) return ImageFormat::Png;
  return ImageFormat::Unknown;
}

ImageInfo probe_image(const uint8_t* data, size_t size) {
  switch (sniff_image_format(data, size)) {
    case ImageFormat::Jpeg: return probe_jpeg(data, size);
    case ImageFormat::Png: return probe_png(data, size);
    default: throw DecodeError("not a JPEG or PNG file");
  }
}

void decode_image_region(const uint8_t* data, size_t size, const RegionRequest& request, DecodedRegion& out) {
  switch (sniff_image_format(data, size)) {
    case ImageFormat::Jpeg: decode_jpeg_region(data, size, request, out); return;
    case ImageFormat::Png:
      // libpng has no cheap partial decode; the whole image is the region.
      out.image = decode_png(data, size);
      out.origin_x = out.origin_y = 0;
      out.scale = 1.0;
      return;
    default: throw DecodeError("not a JPEG or PNG file");
  }
}

DecodedRegion decode_image_region(const uint8_t* data, size_t size, const RegionRequest& request) {
  DecodedRegion out;
  decode_image_region(data, size, request, out);
  return out;
}

Image decode_image(const uint8_t* data, size_t size) {
  return decode_image_region(data, size, RegionRequest{}).image;
}

}  // namespace crosstrain::data
