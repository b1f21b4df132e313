#pragma once
// Per-format entry points behind image_codec.h's dispatch (private to core/data).
#include "core/data/image_codec.h"

namespace crosstrain::data {

ImageInfo probe_jpeg(const uint8_t* data, size_t size);
void decode_jpeg_region(const uint8_t* data, size_t size, const RegionRequest& request, DecodedRegion& out);

ImageInfo probe_png(const uint8_t* data, size_t size);
Image decode_png(const uint8_t* data, size_t size);

}  // namespace crosstrain::data
