#pragma once
// Fused per-sample transforms: crop, resize, flip, channel conversion and normalization in one
// pass from decoded pixels straight into a batch slot, with no intermediate image.
//
//   train: RandomResizedCrop(size, scale, ratio) with torchvision's sampling (10 tries, then the
//          central-crop fallback) + random horizontal flip + normalize
//   eval:  Resize(shorter side = resize) + CenterCrop(size) + normalize
//
// Resampling is bilinear with antialiasing when shrinking: the triangle filter widened by the
// shrink factor, as PIL's Image.resize(BILINEAR) and torchvision's tensor resize(antialias=True)
// do. Against PIL the 0..255 values differ by at most 1 (PIL rounds to 8 bits between its two
// passes and uses fixed-point weights; we keep floats; the tests allow 2), see
// tests/core/data/transform_test.cpp and docs/DATA.md.
//
// Output is planar CHW: float32 normalized ((x/255 - mean) / std) or uint8 (raw, for
// normalizing on the device with 4x less host-to-device traffic).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/image_codec.h"
#include "core/data/sample_rng.h"

namespace crosstrain::data {

enum class SampleType { Float32, UInt8 };

// Shape and element type of one sample in a batch buffer.
struct SampleLayout {
  int channels = 0;
  int height = 0;
  int width = 0;
  SampleType type = SampleType::Float32;

  size_t elements() const { return static_cast<size_t>(channels) * height * width; }
  size_t bytes() const { return elements() * (type == SampleType::Float32 ? 4 : 1); }
};

struct TransformSpec {
  enum class Mode { Train, Eval };
  Mode mode = Mode::Eval;
  int size = 224;       // output is size x size; 0 = keep the source size (fixed-size datasets)
  int resize = 0;       // eval: shorter side before the center crop; 0 = size * 256 / 224
  double scale_min = 0.08, scale_max = 1.0;             // train: crop area fraction
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;  // train: crop aspect ratio w/h
  bool hflip = true;                                    // train: flip with probability 1/2
  // One value (all channels) or three. A 1-channel output uses the first.
  std::vector<float> mean = {0.485f, 0.456f, 0.406f};
  std::vector<float> std = {0.229f, 0.224f, 0.225f};
  SampleType output = SampleType::Float32;
  int channels = 0;  // 0 = as the source; 3 = gray becomes RGB; 1 = RGB becomes luma (PIL's "L")
  // JPEG: decode at 1/2, 1/4 or 1/8 resolution (DCT domain) when the output needs at most half
  // of the crop. Much faster on large photos; not bit-compatible with PIL (see docs/DATA.md).
  bool dct_scaling = true;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
  // The slot a sample from a source with `source_channels` (and, when size == 0, that size) fills.
  SampleLayout layout(int source_channels, int source_width = 0, int source_height = 0) const;
};

// torchvision's crop box convention.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};

// torchvision.transforms.RandomResizedCrop.get_params, same algorithm with our generator.
CropBox sample_resized_crop(int height, int width, double scale_min, double scale_max, double ratio_min,
                            double ratio_max, SampleRng& rng);

// Output coordinate i samples the source around offset + (i + 0.5) * scale, using source pixels
// in [lo, hi) only (the crop box for train, the whole image for eval, as torchvision's
// crop-then-resize and resize-then-crop see them).
struct ResampleAxis {
  double scale = 1.0;
  double offset = 0.0;
  int lo = 0, hi = 0;
};

// Where every output pixel of one sample comes from.
struct SampleGeometry {
  ResampleAxis x, y;
  int out_width = 0, out_height = 0;
  bool flip = false;
};

// torchvision's resized_crop(box, [out_h, out_w]) then optional hflip.
SampleGeometry resized_crop_geometry(const CropBox& box, int out_width, int out_height, bool flip);
// torchvision's resize(shorter side = resize) then center_crop(size).
SampleGeometry resize_center_crop_geometry(int src_width, int src_height, int resize, int size);

// Draws the random parts (train) or computes the fixed ones (eval) for a source of w x h.
SampleGeometry plan_sample_geometry(const TransformSpec& spec, int src_width, int src_height, SampleRng& rng);

// Pixels of a decoded (possibly cropped and DCT-downscaled) image and where they sit in source
// coordinates; see DecodedRegion.
struct PixelView {
  const uint8_t* pixels = nullptr;
  int width = 0, height = 0, channels = 0;
  int origin_x = 0, origin_y = 0;
  double scale = 1.0;
};
PixelView view_of(const Image& image);
PixelView view_of(const DecodedRegion& region);

// The part of the source (whole pixels, clamped to the image) that `geometry` reads, as a
// decoder request; allow_dct_scaling = false asks for full resolution.
RegionRequest region_for(const SampleGeometry& geometry, int src_width, int src_height, bool allow_dct_scaling = true);

// The fused pass: writes spec.layout(...) bytes at `dest`. Thread-safe (scratch is per thread).
void render_sample(const PixelView& source, const SampleGeometry& geometry, const TransformSpec& spec, void* dest);

}  // namespace crosstrain::data
