#include "core/data/transform.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace crosstrain::data {
namespace {

// Python's round(): halves go to the even neighbour (the default floating-point rounding mode).
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

// Separable filter taps for one axis, PIL's precompute_coeffs with the bilinear (triangle) filter.
struct AxisTaps {
  std::vector<int> start;
  std::vector<int> count;
  std::vector<float> weights;  // max_taps per output index, zero after count
  int max_taps = 0;
  int used_taps = 0;  // the largest count: the taps past it are zero for every output index
};

void compute_taps(const ResampleAxis& axis, int out_size, bool flip, AxisTaps& taps) {
  const double filterscale = std::max(axis.scale, 1.0);
  const double support = filterscale;  // the triangle filter's support is 1
  const double inv = 1.0 / filterscale;
  const int lo = axis.lo, span = axis.hi - axis.lo;
  taps.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.used_taps = 1;
  taps.start.assign(out_size, lo);
  taps.count.assign(out_size, 1);
  taps.weights.assign(static_cast<size_t>(out_size) * taps.max_taps, 0.0f);
  double w[64];
  const bool on_stack = taps.max_taps <= 64;
  std::vector<double> heap(on_stack ? 0 : taps.max_taps);
  double* ww = on_stack ? w : heap.data();
  for (int i = 0; i < out_size; ++i) {
    const double center = axis.offset - lo + (i + 0.5) * axis.scale;  // relative to lo
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > span) xmax = span;
    int n = std::min(xmax - xmin, taps.max_taps);
    double total = 0.0;
    for (int k = 0; k < n; ++k) {
      double t = std::fabs((k + xmin - center + 0.5) * inv);
      ww[k] = t < 1.0 ? 1.0 - t : 0.0;
      total += ww[k];
    }
    const int slot = flip ? out_size - 1 - i : i;
    float* dst = taps.weights.data() + static_cast<size_t>(slot) * taps.max_taps;
    if (n <= 0 || total <= 0.0) {
      // Sampling point outside the usable source (only with degenerate boxes): nearest pixel.
      taps.start[slot] = lo + std::clamp(static_cast<int>(center), 0, std::max(span - 1, 0));
      taps.count[slot] = 1;
      dst[0] = 1.0f;
      continue;
    }
    taps.start[slot] = lo + xmin;
    taps.count[slot] = n;
    taps.used_taps = std::max(taps.used_taps, n);
    for (int k = 0; k < n; ++k) dst[k] = static_cast<float>(ww[k] / total);
  }
}

// Axis in the coordinates of the decoded pixels (which may be a DCT-scaled part of the source).
ResampleAxis to_view(const ResampleAxis& a, int origin, double scale, int view_size) {
  ResampleAxis v;
  v.scale = a.scale * scale;
  v.offset = (a.offset - origin) * scale;
  v.lo = std::clamp(static_cast<int>(std::floor((a.lo - origin) * scale + 1e-9)), 0, view_size - 1);
  v.hi = std::clamp(static_cast<int>(std::ceil((a.hi - origin) * scale - 1e-9)), v.lo + 1, view_size);
  return v;
}

struct Scratch {
  AxisTaps xt, yt;
  std::vector<float> column;  // one output row after the vertical pass, source columns [x0, x1)
  std::vector<float> pixel;   // one output row after both passes, out_w * 4 (RGB + pad)
};

// Four floats as one SIMD value (GCC/Clang vector extension; SSE on x86, NEON on ARM).
typedef float Float4 __attribute__((vector_size(16)));
inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Vertical pass for output row y: a weighted sum of whole source rows over [x0, x1), contiguous
// in memory so the compiler vectorizes it. The filter is separable, so doing this pass first
// gives the same values as PIL's horizontal-first order up to float rounding, with the scalar
// (gathering) pass run on out_h rows instead of crop_h rows.
void vertical_pass(const PixelView& src, const AxisTaps& yt, int y, int x0, int x1, float* out) {
  const int c = src.channels;
  const size_t len = static_cast<size_t>(x1 - x0) * c;
  const float* w = yt.weights.data() + static_cast<size_t>(y) * yt.max_taps;
  const size_t stride = static_cast<size_t>(src.width) * c;
  const uint8_t* first = src.pixels + static_cast<size_t>(yt.start[y]) * stride + static_cast<size_t>(x0) * c;
  const float w0 = w[0];
  for (size_t i = 0; i < len; ++i) out[i] = w0 * first[i];
  for (int k = 1; k < yt.count[y]; ++k) {
    const uint8_t* r = first + stride * k;
    const float wk = w[k];
    for (size_t i = 0; i < len; ++i) out[i] += wk * r[i];
  }
}

// Horizontal pass: out[x * 4 + ch] for ch < channels (lane 3 is junk for RGB).
// RGB runs every output pixel over used_taps taps (the unused ones have weight 0 and read the
// zeroed padding after the row): a loop count that does not change from pixel to pixel keeps
// the branch predictor right, which is worth more than the skipped multiplications.
void horizontal_pass(const float* column, int channels, int x0, const AxisTaps& xt, int out_w, float* out) {
  if (channels == 3) {
    const int taps = xt.max_taps, used = xt.used_taps;
    int x = 0;
    // Two output pixels per iteration: two independent add chains hide the add latency.
    for (; x + 1 < out_w; x += 2) {
      const float* wa = xt.weights.data() + static_cast<size_t>(x) * taps;
      const float* wb = wa + taps;
      const float* pa = column + static_cast<size_t>(xt.start[x] - x0) * 3;
      const float* pb = column + static_cast<size_t>(xt.start[x + 1] - x0) * 3;
      Float4 a = load4(pa) * wa[0], b = load4(pb) * wb[0];
      for (int k = 1; k < used; ++k) {
        a += load4(pa + 3 * k) * wa[k];
        b += load4(pb + 3 * k) * wb[k];
      }
      std::memcpy(out + 4 * x, &a, sizeof(a));
      std::memcpy(out + 4 * x + 4, &b, sizeof(b));
    }
    for (; x < out_w; ++x) {
      const float* w = xt.weights.data() + static_cast<size_t>(x) * taps;
      const float* p = column + static_cast<size_t>(xt.start[x] - x0) * 3;
      Float4 acc = load4(p) * w[0];
      for (int k = 1; k < used; ++k) acc += load4(p + 3 * k) * w[k];
      std::memcpy(out + 4 * x, &acc, sizeof(acc));
    }
  } else {
    for (int x = 0; x < out_w; ++x) {
      const float* w = xt.weights.data() + static_cast<size_t>(x) * xt.max_taps;
      const float* p = column + (xt.start[x] - x0);
      float acc = 0;
      for (int k = 0; k < xt.count[x]; ++k) acc += p[k] * w[k];
      out[4 * x] = acc;
    }
  }
}

}  // namespace

void TransformSpec::validate() const {
  if (size < 0) throw std::invalid_argument("transform: size must be >= 0");
  if (resize < 0) throw std::invalid_argument("transform: resize must be >= 0");
  if (mode == Mode::Eval && size > 0 && resize > 0 && resize < size)
    throw std::invalid_argument("transform: resize (" + std::to_string(resize) + ") must be >= size (" +
                                std::to_string(size) + ")");
  if (!(scale_min > 0 && scale_min <= scale_max)) throw std::invalid_argument("transform: need 0 < scale_min <= scale_max");
  if (!(ratio_min > 0 && ratio_min <= ratio_max)) throw std::invalid_argument("transform: need 0 < ratio_min <= ratio_max");
  if ((mean.size() != 1 && mean.size() != 3) || mean.size() != std.size())
    throw std::invalid_argument("transform: mean and std need 1 or 3 values each, as many of both");
  for (float s : std)
    if (!(s > 0)) throw std::invalid_argument("transform: std values must be > 0");
  if (channels != 0 && channels != 1 && channels != 3) throw std::invalid_argument("transform: channels must be 0, 1 or 3");
}

SampleLayout TransformSpec::layout(int source_channels, int source_width, int source_height) const {
  SampleLayout l;
  l.channels = channels ? channels : source_channels;
  l.height = size ? size : source_height;
  l.width = size ? size : source_width;
  l.type = output;
  return l;
}

CropBox sample_resized_crop(int height, int width, double scale_min, double scale_max, double ratio_min,
                            double ratio_max, SampleRng& rng) {
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_min, scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = round_half_even(std::sqrt(target_area * aspect));
    const int h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = static_cast<int>(rng.randint(0, height - h + 1));
      const int left = static_cast<int>(rng.randint(0, width - w + 1));
      return CropBox{top, left, h, w};
    }
  }
  // torchvision's fallback: the largest central crop with the ratio clamped into range.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = round_half_even(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = round_half_even(h * ratio_max);
  }
  return CropBox{(height - h) / 2, (width - w) / 2, h, w};
}

SampleGeometry resized_crop_geometry(const CropBox& box, int out_width, int out_height, bool flip) {
  SampleGeometry g;
  g.out_width = out_width;
  g.out_height = out_height;
  g.x = ResampleAxis{static_cast<double>(box.width) / out_width, static_cast<double>(box.left), box.left, box.left + box.width};
  g.y = ResampleAxis{static_cast<double>(box.height) / out_height, static_cast<double>(box.top), box.top, box.top + box.height};
  g.flip = flip;
  return g;
}

SampleGeometry resize_center_crop_geometry(int src_width, int src_height, int resize, int size) {
  // Resize the shorter side (torchvision truncates the longer one), then center-crop.
  const int64_t r = resize;
  int64_t new_w, new_h;
  if (src_width <= src_height) {
    new_w = r;
    new_h = r * src_height / src_width;
  } else {
    new_h = r;
    new_w = r * src_width / src_height;
  }
  new_w = std::max<int64_t>(new_w, size);
  new_h = std::max<int64_t>(new_h, size);
  const int crop_top = round_half_even((new_h - size) / 2.0);
  const int crop_left = round_half_even((new_w - size) / 2.0);
  const double sx = static_cast<double>(src_width) / new_w, sy = static_cast<double>(src_height) / new_h;
  SampleGeometry g;
  g.out_width = g.out_height = size;
  g.x = ResampleAxis{sx, crop_left * sx, 0, src_width};
  g.y = ResampleAxis{sy, crop_top * sy, 0, src_height};
  return g;
}

SampleGeometry plan_sample_geometry(const TransformSpec& spec, int src_width, int src_height, SampleRng& rng) {
  if (src_width <= 0 || src_height <= 0) throw DecodeError("image has no pixels");
  const int out_w = spec.size ? spec.size : src_width;
  const int out_h = spec.size ? spec.size : src_height;
  if (spec.mode == TransformSpec::Mode::Train) {
    const CropBox box = sample_resized_crop(src_height, src_width, spec.scale_min, spec.scale_max, spec.ratio_min,
                                            spec.ratio_max, rng);
    const bool flip = spec.hflip && rng.coin();
    return resized_crop_geometry(box, out_w, out_h, flip);
  }
  if (spec.size == 0) return resized_crop_geometry(CropBox{0, 0, src_height, src_width}, out_w, out_h, false);
  const int resize = spec.resize ? spec.resize : spec.size * 256 / 224;
  return resize_center_crop_geometry(src_width, src_height, resize, spec.size);
}

PixelView view_of(const Image& image) {
  return PixelView{image.pixels.data(), image.width, image.height, image.channels, 0, 0, 1.0};
}

PixelView view_of(const DecodedRegion& region) {
  const Image& im = region.image;
  return PixelView{im.pixels.data(), im.width, im.height, im.channels, region.origin_x, region.origin_y, region.scale};
}

RegionRequest region_for(const SampleGeometry& g, int src_width, int src_height, bool allow_dct_scaling) {
  auto extent = [](const ResampleAxis& a, int out, int limit, int& from, int& to) {
    const double support = std::max(a.scale, 1.0);
    from = std::max({0, a.lo, static_cast<int>(std::floor(a.offset + 0.5 * a.scale - support))});
    to = std::min({limit, a.hi, static_cast<int>(std::ceil(a.offset + (out - 0.5) * a.scale + support))});
    if (to <= from) to = std::min(limit, from + 1);
  };
  RegionRequest r;
  extent(g.x, g.out_width, src_width, r.x0, r.x1);
  extent(g.y, g.out_height, src_height, r.y0, r.y1);
  r.out_w = allow_dct_scaling ? g.out_width : 0;
  r.out_h = allow_dct_scaling ? g.out_height : 0;
  return r;
}

void render_sample(const PixelView& src, const SampleGeometry& g, const TransformSpec& spec, void* dest) {
  if (src.channels != 1 && src.channels != 3) throw DecodeError("unsupported channel count " + std::to_string(src.channels));
  if (src.width <= 0 || src.height <= 0) throw DecodeError("image has no pixels");
  thread_local Scratch s;
  const int out_w = g.out_width, out_h = g.out_height;
  compute_taps(to_view(g.x, src.origin_x, src.scale, src.width), out_w, g.flip, s.xt);
  compute_taps(to_view(g.y, src.origin_y, src.scale, src.height), out_h, false, s.yt);
  int x0 = src.width, x1 = 0;
  for (int i = 0; i < out_w; ++i) {
    x0 = std::min(x0, s.xt.start[i]);
    x1 = std::max(x1, s.xt.start[i] + s.xt.count[i]);
  }
  const int cin = src.channels;
  const int cout = spec.channels ? spec.channels : cin;
  // Padding after the row: the 4-wide loads of the last pixel read one float past it, and RGB
  // taps run to max_taps; zeros there keep 0-weight taps at 0 (never 0 * NaN).
  const size_t used = static_cast<size_t>(x1 - x0) * cin;
  s.column.resize(used + static_cast<size_t>(s.xt.max_taps) * 3 + 4);
  std::fill(s.column.begin() + static_cast<std::ptrdiff_t>(used), s.column.end(), 0.0f);
  s.pixel.resize(static_cast<size_t>(out_w) * 4);
  const size_t plane = static_cast<size_t>(out_w) * out_h;
  // float output = v * a + b with a = 1 / (255 std), b = -mean / std.
  float a[3], b[3];
  for (int c = 0; c < 3; ++c) {
    const size_t k = spec.mean.size() == 3 ? c : 0;
    a[c] = 1.0f / (255.0f * spec.std[k]);
    b[c] = -spec.mean[k] / spec.std[k];
  }
  for (int y = 0; y < out_h; ++y) {
    vertical_pass(src, s.yt, y, x0, x1, s.column.data());
    horizontal_pass(s.column.data(), cin, x0, s.xt, out_w, s.pixel.data());
    float* px = s.pixel.data();
    if (cin == 3 && cout == 1)
      for (int x = 0; x < out_w; ++x) px[4 * x] = 0.299f * px[4 * x] + 0.587f * px[4 * x + 1] + 0.114f * px[4 * x + 2];
    for (int c = 0; c < cout; ++c) {
      const int lane = cin == 1 || cout == 1 ? 0 : c;  // gray -> RGB repeats lane 0
      const size_t base = c * plane + static_cast<size_t>(y) * out_w;
      if (spec.output == SampleType::Float32) {
        float* o = static_cast<float*>(dest) + base;
        for (int x = 0; x < out_w; ++x) o[x] = std::min(std::max(px[4 * x + lane], 0.0f), 255.0f) * a[c] + b[c];
      } else {
        uint8_t* o = static_cast<uint8_t*>(dest) + base;
        for (int x = 0; x < out_w; ++x)
          o[x] = static_cast<uint8_t>(std::min(std::max(px[4 * x + lane], 0.0f), 255.0f) + 0.5f);
      }
    }
  }
}

}  // namespace crosstrain::data
