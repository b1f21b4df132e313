// Decoded pixels against PIL's Image.open(f).convert("RGB") on the files PIL itself writes or
// reads (tests/core/data/pil_reference.py): 16-bit gray, alpha and tRNS transparency, palettes,
// low bit depths, CMYK JPEGs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/data/dataset.h"
#include "core/data/image_codec.h"

namespace fs = std::filesystem;
using namespace crosstrain::data;

namespace {

struct Reference {
  bool ok = false;
  fs::path dir;
};

const Reference& reference() {
  static Reference r = [] {
    Reference ref;
    ref.dir = fs::temp_directory_path() / ("crosstrain_pil_" + std::to_string(::getpid()));
    const std::string cmd = std::string(CROSSTRAIN_PYTHON) + " " + CROSSTRAIN_SOURCE_DIR +
                            "/tests/core/data/pil_reference.py " + ref.dir.string() + " >/dev/null";
    ref.ok = std::system(cmd.c_str()) == 0;
    return ref;
  }();
  static const bool cleanup = std::atexit([] {
    std::error_code ec;
    fs::remove_all(reference().dir, ec);
  }) == 0;
  (void)cleanup;
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Largest per-byte difference between our decode (gray expanded to RGB, as the transform does)
// and PIL's.
int max_difference(const fs::path& image_file) {
  const std::vector<uint8_t> bytes = read_file_bytes(image_file.string());
  const Image im = decode_image(bytes.data(), bytes.size());
  const std::string pil = slurp(image_file.string() + ".rgb");
  const size_t n = static_cast<size_t>(im.width) * im.height;
  EXPECT_EQ(pil.size(), n * 3) << image_file;
  if (pil.size() != n * 3) return 256;
  int worst = 0;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) {
      const int ours = im.pixels[i * im.channels + (im.channels == 1 ? 0 : c)];
      worst = std::max(worst, std::abs(ours - static_cast<uint8_t>(pil[i * 3 + c])));
    }
  return worst;
}

}  // namespace

TEST(PilFidelity, PngOfEveryColourTypeAndDepthMatchesExactly) {
  if (!reference().ok) GTEST_SKIP() << "PIL not usable with " << CROSSTRAIN_PYTHON;
  int files = 0;
  for (const auto& e : fs::directory_iterator(reference().dir)) {
    if (e.path().extension() != ".png") continue;
    ++files;
    EXPECT_EQ(max_difference(e.path()), 0) << e.path().filename();
  }
  EXPECT_GE(files, 15);
}

TEST(PilFidelity, SixteenBitGrayClipsAsPilDoes) {
  if (!reference().ok) GTEST_SKIP() << "PIL not usable with " << CROSSTRAIN_PYTHON;
  const auto bytes = read_file_bytes((reference().dir / "gray16.png").string());
  const Image im = decode_image(bytes.data(), bytes.size());
  ASSERT_EQ(im.channels, 1);
  // Row 0 holds 0, 1, 255, 256, 1000, 32768, 65535.
  EXPECT_EQ(std::vector<uint8_t>(im.pixels.begin(), im.pixels.begin() + 7), (std::vector<uint8_t>{0, 1, 255, 255, 255, 255, 255}));
}

TEST(PilFidelity, CmykJpegDecodesLikePil) {
  if (!reference().ok) GTEST_SKIP() << "PIL not usable with " << CROSSTRAIN_PYTHON;
  // PIL bundles its own libjpeg-turbo build; the IDCT may round a unit differently.
  EXPECT_LE(max_difference(reference().dir / "cmyk_adobe.jpg"), 2);
}

// What --jpeg-cache stores: PIL-written progressive files (fitted tables, 4:4:4, 4:2:2, 4:2:0,
// gray, odd sizes) rewritten as baseline decode to the same pixels as the originals, which decode
// as PIL does; CMYK ones are left as they are (their rewrite could change the Adobe marker).
TEST(PilFidelity, ProgressiveJpegsRewriteToBaselineWithTheSamePixels) {
  if (!reference().ok) GTEST_SKIP() << "PIL not usable with " << CROSSTRAIN_PYTHON;
  for (const char* name : {"progressive_444.jpg", "progressive_422.jpg", "progressive_420.jpg", "progressive_gray.jpg"}) {
    SCOPED_TRACE(name);
    const auto bytes = read_file_bytes((reference().dir / name).string());
    ASSERT_TRUE(jpeg_is_progressive(bytes.data(), bytes.size()));
    EXPECT_LE(max_difference(reference().dir / name), 2);
    const auto baseline = transcode_jpeg_to_baseline(bytes.data(), bytes.size());
    EXPECT_FALSE(jpeg_is_progressive(baseline.data(), baseline.size()));
    EXPECT_EQ(decode_image(baseline.data(), baseline.size()).pixels, decode_image(bytes.data(), bytes.size()).pixels);
  }
  const auto cmyk = read_file_bytes((reference().dir / "progressive_cmyk.jpg").string());
  ASSERT_TRUE(jpeg_is_progressive(cmyk.data(), cmyk.size()));
  EXPECT_LE(max_difference(reference().dir / "progressive_cmyk.jpg"), 2);
  EXPECT_THROW(transcode_jpeg_to_baseline(cmyk.data(), cmyk.size()), DecodeError);
}
