// libFuzzer target: image file bytes (JPEG, PNG or anything else). probe and decode either succeed
// with consistent dimensions or throw DecodeError; images over 4 Mpixel are only probed. A
// progressive JPEG's baseline rewrite is refused or decodes to the same pixels.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/data/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::data;
  try {
    const ImageInfo info = probe_image(data, size);
    if (static_cast<int64_t>(info.width) * info.height > (int64_t{1} << 22)) return 0;
    const Image im = decode_image(data, size);
    if (im.width != info.width || im.height != info.height ||
        im.pixels.size() != static_cast<size_t>(im.width) * im.height * im.channels)
      std::abort();
    RegionRequest crop{info.width / 4, info.height / 4, info.width / 2 + 1, info.height / 2 + 1, 8, 8, true};
    (void)decode_image_region(data, size, crop);
    if (jpeg_is_progressive(data, size)) {
      // The --jpeg-cache rewrite: refused, or the same pixels as the file itself.
      const std::vector<uint8_t> baseline = transcode_jpeg_to_baseline(data, size);
      if (jpeg_is_progressive(baseline.data(), baseline.size()) || decode_image(baseline.data(), baseline.size()).pixels != im.pixels)
        std::abort();
    }
  } catch (const DecodeError&) {
  }
  return 0;
}
