#include "core/data/image_codec.h"

#include <gtest/gtest.h>

#include "core/data/sample_files.h"

using namespace crosstrain::data;
using namespace crosstrain::data::testing;

namespace {

double mean_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
  return s / a.size();
}

}  // namespace

TEST(ImageCodec, SniffsByMagicNumber) {
  const Image im = textured_image(16, 8, 3, 1);
  const auto jpeg = encode_jpeg(im, 90);
  const auto png = encode_png(im);
  EXPECT_EQ(sniff_image_format(jpeg.data(), jpeg.size()), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_image_format(png.data(), png.size()), ImageFormat::Png);
  const std::string text = "hello, not an image";
  EXPECT_EQ(sniff_image_format(reinterpret_cast<const uint8_t*>(text.data()), text.size()), ImageFormat::Unknown);
}

TEST(ImageCodec, JpegRoundTripIsClose) {
  // Smooth colours: 4:2:0 chroma subsampling keeps them (per-pixel colour noise it would not).
  Image im;
  im.width = 64, im.height = 48, im.channels = 3;
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x)
      for (int v : {x * 4, y * 5, (x + y) * 2}) im.pixels.push_back(static_cast<uint8_t>(v));
  const auto jpeg = encode_jpeg(im, 95);
  const ImageInfo info = probe_image(jpeg.data(), jpeg.size());
  EXPECT_EQ(info.width, 64);
  EXPECT_EQ(info.height, 48);
  EXPECT_EQ(info.channels, 3);
  const Image back = decode_image(jpeg.data(), jpeg.size());
  ASSERT_EQ(back.pixels.size(), im.pixels.size());
  EXPECT_LT(mean_abs_diff(back.pixels, im.pixels), 2.0);
}

TEST(ImageCodec, PngRoundTripIsExactForRgbAndGray) {
  for (int c : {1, 3}) {
    const Image im = textured_image(33, 17, c, 3);
    const auto png = encode_png(im);
    const Image back = decode_image(png.data(), png.size());
    EXPECT_EQ(back.channels, c);
    EXPECT_EQ(back.pixels, im.pixels);
  }
}

TEST(ImageCodec, RegionDecodeMatchesTheFullDecode) {
  for (bool progressive : {false, true}) {
  SCOPED_TRACE(progressive ? "progressive" : "baseline");
  const Image im = textured_image(200, 150, 3, 4);
  const auto jpeg = encode_jpeg(im, 90, progressive);
  const Image full = decode_image(jpeg.data(), jpeg.size());
  RegionRequest r;
  r.x0 = 37, r.y0 = 21, r.x1 = 150, r.y1 = 120;
  const DecodedRegion region = decode_image_region(jpeg.data(), jpeg.size(), r);
  EXPECT_EQ(region.scale, 1.0);
  EXPECT_LE(region.origin_x, r.x0);
  EXPECT_LE(region.origin_y, r.y0);
  ASSERT_GE(region.origin_x + region.image.width, r.x1);
  ASSERT_GE(region.origin_y + region.image.height, r.y1);
  // Same pixels where both exist (cropped decoding must not shift or blur anything).
  int max_diff = 0;
  for (int y = r.y0; y < r.y1; ++y)
    for (int x = r.x0; x < r.x1; ++x)
      for (int c = 0; c < 3; ++c) {
        const int a = full.pixels[(static_cast<size_t>(y) * full.width + x) * 3 + c];
        const int b = region.image.pixels[(static_cast<size_t>(y - region.origin_y) * region.image.width + (x - region.origin_x)) * 3 + c];
        max_diff = std::max(max_diff, std::abs(a - b));
      }
  EXPECT_LE(max_diff, 1);
  }
}

TEST(ImageCodec, DctScalingOnlyWhenTheTargetIsAtMostHalf) {
  const Image im = textured_image(400, 320, 3, 5);
  const auto jpeg = encode_jpeg(im, 90);
  RegionRequest r{0, 0, 400, 320, 100, 80};
  DecodedRegion d = decode_image_region(jpeg.data(), jpeg.size(), r);
  EXPECT_EQ(d.scale, 2.0 / 8.0);  // 400 * 2/8 = 100 >= 100
  EXPECT_EQ(d.image.width, 100);
  EXPECT_EQ(d.image.height, 80);
  r.out_w = 300, r.out_h = 240;  // more than half: full resolution
  d = decode_image_region(jpeg.data(), jpeg.size(), r);
  EXPECT_EQ(d.scale, 1.0);
  EXPECT_EQ(d.image.width, 400);
}

TEST(ImageCodec, CorruptInputThrowsDecodeErrorNeverAborts) {
  const Image im = textured_image(120, 90, 3, 6);
  const auto jpeg = encode_jpeg(im, 90);
  const auto png = encode_png(im);
  const std::vector<uint8_t> truncated_jpeg(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  const std::vector<uint8_t> truncated_png(png.begin(), png.begin() + png.size() / 2);
  const std::vector<uint8_t> header_only(jpeg.begin(), jpeg.begin() + 20);
  const std::vector<uint8_t> garbage_after_magic = {0xFF, 0xD8, 0xFF, 0x00, 0x12, 0x34, 0x56, 0xFF, 0xD9};
  const std::string text = "just some text in a .jpg file\n";
  const std::vector<uint8_t> not_image(text.begin(), text.end());
  for (const auto* bytes : {&truncated_jpeg, &truncated_png, &header_only, &garbage_after_magic, &not_image}) {
    EXPECT_THROW(decode_image(bytes->data(), bytes->size()), DecodeError);
  }
  EXPECT_THROW(decode_image(nullptr, 0), DecodeError);
  // A truncated JPEG is rejected even when the region asked for lies before the cut.
  RegionRequest top{0, 0, 120, 8, 0, 0};
  EXPECT_THROW(decode_image_region(truncated_jpeg.data(), truncated_jpeg.size(), top), DecodeError);
}

TEST(ImageCodec, GrayJpegStaysOneChannel) {
  const Image im = textured_image(40, 30, 1, 7);
  const auto jpeg = encode_jpeg(im, 95);
  const Image back = decode_image(jpeg.data(), jpeg.size());
  EXPECT_EQ(back.channels, 1);
  EXPECT_LT(mean_abs_diff(back.pixels, im.pixels), 8.0);
}

TEST(ImageCodec, MutatedFilesNeverCrash) {
  // Random byte changes and cuts anywhere: every outcome is an image or a DecodeError.
  const Image im = textured_image(64, 48, 3, 8);
  const std::vector<std::vector<uint8_t>> originals = {encode_jpeg(im, 85), encode_jpeg(im, 85, true), encode_png(im)};
  crosstrain::data::SampleRng rng(99);
  int decoded = 0, rejected = 0;
  for (const auto& original : originals) {
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<uint8_t> bytes = original;
      const int edits = 1 + static_cast<int>(rng.randint(0, 8));
      for (int e = 0; e < edits; ++e) bytes[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(bytes.size())))] ^= static_cast<uint8_t>(1 + rng.randint(0, 255));
      if (rng.coin()) bytes.resize(static_cast<size_t>(rng.randint(1, static_cast<int64_t>(bytes.size()) + 1)));
      try {
        RegionRequest r{8, 8, 40, 30, 16, 12};
        const DecodedRegion d = decode_image_region(bytes.data(), bytes.size(), r);
        EXPECT_GT(d.image.width, 0);
        ++decoded;
      } catch (const DecodeError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(decoded + rejected, 450);
}
