#pragma once
// Still-image decoding and encoding for the input pipeline: JPEG through libjpeg-turbo, PNG through
// libpng. Every function either returns a complete image or throws DecodeError with a short
// reason; a corrupt, truncated or foreign file never aborts the process (libjpeg's fatal errors
// are caught with setjmp/longjmp inside this unit, libpng's through its simplified API).
//
// Decoded pixels are 8-bit, interleaved (HWC), 1 channel (grayscale) or 3 (RGB).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosstrain::data {

// A file that is not a decodable image: the message is the reason, without the path.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;             // 1 or 3
  std::vector<uint8_t> pixels;  // height * width * channels, row-major HWC

  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * width * channels; }
};

enum class ImageFormat { Jpeg, Png, Unknown };

// From the first bytes (magic numbers), not from a file name.
ImageFormat sniff_image_format(const uint8_t* data, size_t size);

struct ImageInfo {
  int width = 0;
  int height = 0;
  int channels = 0;
  bool progressive = false;  // a progressive JPEG (entropy-decoded whole before its first row)
};

// Dimensions and channel count from the header only (cheap: no pixel decoding).
ImageInfo probe_image(const uint8_t* data, size_t size);

// Which part of the source a consumer needs, in source pixel coordinates ([x0,x1) x [y0,y1)),
// and how many output pixels it will resample that part to. The decoder may return less
// resolution (JPEG DCT-domain scaling by M/8) as long as the region keeps at least out_w x out_h
// pixels, and only when that saves at least half the resolution, and it may skip the rows and
// columns outside the region.
struct RegionRequest {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int out_w = 0, out_h = 0;  // 0 = full resolution wanted
  // Reject JPEGs without their end-of-image marker, so that a truncated file is caught whatever
  // region is asked for: skip-and-count of bad files does not depend on the random crop.
  bool verify_whole_file = true;
};

// Pixels covering at least the requested region. Source coordinate (sx, sy) is found in `image`
// at ((sx - origin_x) * scale, (sy - origin_y) * scale).
struct DecodedRegion {
  Image image;
  int origin_x = 0;   // in source pixels
  int origin_y = 0;
  double scale = 1.0; // decoded pixels per source pixel (M/8 for JPEG DCT scaling, else 1)
};

DecodedRegion decode_image_region(const uint8_t* data, size_t size, const RegionRequest& request);
// The same into `out`, reusing its pixel buffer: no allocation (or page faults) per image once
// the buffer is large enough. Loader workers keep one per thread.
void decode_image_region(const uint8_t* data, size_t size, const RegionRequest& request, DecodedRegion& out);

// The whole image at full resolution.
Image decode_image(const uint8_t* data, size_t size);

// JPEG, 4:2:0 chroma subsampling for RGB, quality 1..100; baseline unless progressive.
std::vector<uint8_t> encode_jpeg(const Image& image, int quality, bool progressive = false);

// Whether a JPEG's frame is progressive (from its markers; false for anything else).
bool jpeg_is_progressive(const uint8_t* data, size_t size);

// A progressive (or any) YCbCr or grayscale JPEG rewritten as a baseline one from the same DCT
// coefficients: lossless, so it decodes to the same pixels, and a baseline file can be decoded a
// region at a time (a progressive one is entropy-decoded whole first). DecodeError for a file
// that cannot be read, is in another colour space, whose progressive scans stop before every
// coefficient is whole (decoders smooth those), or whose (damaged) coefficients a baseline file
// cannot code: in each case the rewrite would not give the file's pixels.
std::vector<uint8_t> transcode_jpeg_to_baseline(const uint8_t* data, size_t size);

// Largest image the decoders accept at all, in pixels: a hostile header cannot make them allocate
// without bound. Datasets apply a lower, configurable limit first (DatasetOptions).
constexpr int64_t kMaxImagePixels = int64_t{1} << 30;

}  // namespace crosstrain::data
