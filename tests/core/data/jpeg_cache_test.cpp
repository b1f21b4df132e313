// Progressive JPEGs rewritten as baseline (transcode_jpeg_to_baseline) and kept in a folder
// (JpegBaselineCache): the same pixels, a file decodable a region at a time, entries that follow
// their source, and an ImageFolder dataset that gives the same samples with the cache as without.
#include "core/data/jpeg_cache.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/image_codec.h"
#include "core/data/sample_files.h"

namespace fs = std::filesystem;
using namespace crosstrain::data;
using namespace crosstrain::data::testing;

namespace {

Image decode(const std::vector<uint8_t>& bytes) { return decode_image(bytes.data(), bytes.size()); }

// The file without its last scan (a valid JPEG whose last refinement never came): decoders smooth
// its blocks, so it decodes to other pixels than its coefficients alone give.
std::vector<uint8_t> without_last_scan(const std::vector<uint8_t>& jpeg) {
  size_t last_sos = 0;
  for (size_t i = 2; i + 1 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) last_sos = i;  // in entropy data 0xFF is followed by 0x00 or RSTn
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(last_sos));
  out.push_back(0xFF);
  out.push_back(0xD9);
  return out;
}

size_t entries_in(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".jpg";
  return n;
}

}  // namespace

TEST(JpegTranscode, ProgressiveBecomesBaselineWithTheSamePixels) {
  // Odd sizes leave partial blocks and partial chroma blocks at the right and bottom edges.
  for (int channels : {3, 1})
    for (int quality : {50, 95}) {
      SCOPED_TRACE(std::to_string(channels) + " channels, quality " + std::to_string(quality));
      const auto progressive = encode_jpeg(textured_image(203, 117, channels, 11), quality, true);
      ASSERT_TRUE(jpeg_is_progressive(progressive.data(), progressive.size()));
      const auto baseline = transcode_jpeg_to_baseline(progressive.data(), progressive.size());
      EXPECT_FALSE(jpeg_is_progressive(baseline.data(), baseline.size()));
      const Image a = decode(progressive), b = decode(baseline);
      EXPECT_EQ(b.width, a.width);
      EXPECT_EQ(b.height, a.height);
      EXPECT_EQ(b.channels, a.channels);
      EXPECT_EQ(b.pixels, a.pixels);  // lossless: not "close", equal
      // Standard Huffman tables: a little larger than the progressive file, not a multiple of it.
      EXPECT_LT(baseline.size(), progressive.size() * 3 / 2) << progressive.size();
      // And a region of the rewrite equals the same region of the progressive file, DCT scaling included.
      RegionRequest r;
      r.x0 = 13, r.y0 = 9, r.x1 = 180, r.y1 = 100, r.out_w = 40, r.out_h = 30;
      const DecodedRegion ra = decode_image_region(progressive.data(), progressive.size(), r);
      const DecodedRegion rb = decode_image_region(baseline.data(), baseline.size(), r);
      EXPECT_EQ(rb.scale, ra.scale);
      EXPECT_EQ(rb.origin_x, ra.origin_x);
      EXPECT_EQ(rb.origin_y, ra.origin_y);
      EXPECT_EQ(rb.image.pixels, ra.image.pixels);
    }
}

TEST(JpegTranscode, ProgressiveMarkerIsReadFromTheFrameHeaderOnly) {
  const auto baseline = encode_jpeg(textured_image(40, 30, 3, 2), 90);
  const auto progressive = encode_jpeg(textured_image(40, 30, 3, 2), 90, true);
  EXPECT_FALSE(jpeg_is_progressive(baseline.data(), baseline.size()));
  EXPECT_TRUE(jpeg_is_progressive(progressive.data(), progressive.size()));
  const auto png = encode_png(textured_image(8, 8, 3, 1));
  EXPECT_FALSE(jpeg_is_progressive(png.data(), png.size()));
  // The header probe (what the dataset reads per sample) says the same.
  EXPECT_FALSE(probe_image(baseline.data(), baseline.size()).progressive);
  EXPECT_TRUE(probe_image(progressive.data(), progressive.size()).progressive);
  EXPECT_FALSE(probe_image(png.data(), png.size()).progressive);
  // Cut before the frame header, or with a segment length running past the end: no answer, no overread.
  for (size_t n : {size_t{0}, size_t{2}, size_t{5}, size_t{21}})
    EXPECT_FALSE(jpeg_is_progressive(progressive.data(), std::min(n, progressive.size()))) << n;
  std::vector<uint8_t> lying = {0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF};
  EXPECT_FALSE(jpeg_is_progressive(lying.data(), lying.size()));
}

TEST(JpegTranscode, DamagedFilesAreRefusedNotRepaired) {
  const auto progressive = encode_jpeg(textured_image(120, 90, 3, 5), 90, true);
  const std::vector<uint8_t> cut(progressive.begin(), progressive.begin() + progressive.size() / 2);
  EXPECT_THROW(transcode_jpeg_to_baseline(cut.data(), cut.size()), DecodeError);
  const std::string text = "not a jpeg at all";
  EXPECT_THROW(transcode_jpeg_to_baseline(reinterpret_cast<const uint8_t*>(text.data()), text.size()), DecodeError);
}

TEST(JpegTranscode, IncompleteProgressiveScansAreNotRewritten) {
  const auto whole = encode_jpeg(textured_image(96, 64, 3, 6), 90, true);
  const auto early = without_last_scan(whole);
  ASSERT_LT(early.size(), whole.size());
  const Image a = decode(early), b = decode(whole);  // decodable, and not the same picture
  EXPECT_NE(a.pixels, b.pixels);
  EXPECT_THROW(transcode_jpeg_to_baseline(early.data(), early.size()), DecodeError);
}

TEST(JpegBaselineCache, StoresProgressiveFilesOnlyAndFollowsTheSource) {
  const auto dir = scratch_dir("jpeg_cache_entries");
  const auto src = dir / "data" / "p.jpg";
  const auto progressive = encode_jpeg(textured_image(64, 48, 3, 3), 85, true);
  write_file(src, progressive);
  JpegBaselineCache cache((dir / "cache" / "nested").string());  // made with its parents
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(cache.read(src.string(), bytes, 1 << 20));
  bytes = progressive;
  cache.admit(src.string(), bytes);
  EXPECT_FALSE(jpeg_is_progressive(bytes.data(), bytes.size()));  // the caller decodes the rewrite at once
  EXPECT_EQ(cache.stored(), 1);
  const std::string entry = cache.entry_path(src.string());
  ASSERT_TRUE(fs::exists(entry));
  std::vector<uint8_t> again;
  ASSERT_TRUE(cache.read(src.string(), again, 1 << 20));
  EXPECT_EQ(again, bytes);
  EXPECT_EQ(decode(again).pixels, decode(progressive).pixels);
  EXPECT_FALSE(cache.read(src.string(), again, 16)) << "an entry over the byte limit is not read";
  // An entry cut short (a power loss before its data reached the disk) is missing, not a bad sample.
  const auto whole_entry = read_file(entry);
  write_file(entry, std::vector<uint8_t>(whole_entry.begin(), whole_entry.begin() + whole_entry.size() / 2));
  EXPECT_FALSE(cache.read(src.string(), again, 1 << 20));
  write_file(entry, {});
  EXPECT_FALSE(cache.read(src.string(), again, 1 << 20));
  write_file(entry, whole_entry);

  // Another path's entry is never served for this one (copied over it: as a hash collision would be).
  const auto other = dir / "data" / "q.jpg";
  write_file(other, progressive);
  fs::copy_file(entry, cache.entry_path(other.string()));
  EXPECT_FALSE(cache.read(other.string(), again, 1 << 20));
  fs::remove(cache.entry_path(other.string()));

  // A rewritten source (new size and time): the old entry is never served for it, and the new
  // rewrite takes its place rather than adding to the folder.
  const auto changed = encode_jpeg(textured_image(64, 48, 3, 4), 60, true);
  write_file(src, changed);
  ::utimensat(AT_FDCWD, src.c_str(), nullptr, 0);
  EXPECT_EQ(cache.entry_path(src.string()), entry);
  EXPECT_FALSE(cache.read(src.string(), again, 1 << 20));
  bytes = changed;
  cache.admit(src.string(), bytes);
  ASSERT_TRUE(cache.read(src.string(), again, 1 << 20));
  EXPECT_EQ(decode(again).pixels, decode(changed).pixels);
  EXPECT_EQ(entries_in(dir / "cache" / "nested"), 1u);

  // Baseline and PNG files stay as they are and take no room; a file that cannot be rewritten
  // (here: cut short) is counted, left as it was, and stores nothing.
  const auto baseline = encode_jpeg(textured_image(64, 48, 3, 3), 85);
  bytes = baseline;
  cache.admit((dir / "data" / "b.jpg").string(), bytes);
  EXPECT_EQ(bytes, baseline);
  const std::vector<uint8_t> cut(progressive.begin(), progressive.begin() + progressive.size() / 2);
  bytes = cut;
  cache.admit(src.string(), bytes);
  EXPECT_EQ(bytes, cut);
  EXPECT_EQ(cache.failures(), 1);
  EXPECT_EQ(cache.stored(), 2);
  EXPECT_EQ(entries_in(dir / "cache" / "nested"), 1u);
  fs::remove_all(dir);
}

TEST(JpegBaselineCache, UnusableFolderIsAnErrorNamingTheFlag) {
  const auto dir = scratch_dir("jpeg_cache_bad");
  write_file(dir / "file", {1});
  try {
    JpegBaselineCache cache((dir / "file" / "sub").string());
    FAIL() << "a folder under a regular file was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--jpeg-cache"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// What a training run sees: every sample, train transform and random crops, the same with the cache
// as without, in the first epoch (which fills it) and in the second (which reads it); damaged files
// fail the same way.
TEST(JpegBaselineCache, DatasetGivesTheSameSamplesWithAndWithoutIt) {
  const auto dir = scratch_dir("jpeg_cache_dataset");
  const auto root = dir / "images";
  for (int i = 0; i < 4; ++i) {
    write_file(root / "a" / ("p" + std::to_string(i) + ".jpg"), encode_jpeg(textured_image(150 + 7 * i, 110, 3, i), 90, true));
    write_file(root / "b" / ("g" + std::to_string(i) + ".jpg"), encode_jpeg(textured_image(90, 120 + 5 * i, 1, 9 + i), 80, true));
  }
  write_file(root / "b" / "base.jpg", encode_jpeg(textured_image(100, 100, 3, 20), 90));
  write_file(root / "b" / "flat.png", encode_png(textured_image(50, 40, 3, 21)));
  const auto whole = encode_jpeg(textured_image(120, 90, 3, 22), 90, true);
  write_file(root / "b" / "trunc.jpg", std::vector<uint8_t>(whole.begin(), whole.begin() + whole.size() / 2));
  write_file(root / "b" / "early.jpg", without_last_scan(whole));  // smoothed when decoded: not rewritten

  DatasetOptions plain;
  plain.transform.size = 32;
  plain.transform.mode = TransformSpec::Mode::Train;
  DatasetOptions cached = plain;
  cached.jpeg_cache = (dir / "cache").string();
  auto reference = open_dataset("imagefolder:" + root.string(), plain);
  auto subject = open_dataset("imagefolder:" + root.string(), cached);
  ASSERT_EQ(subject->size(), reference->size());
  const size_t n = reference->size();
  std::vector<float> a(reference->sample_layout().elements()), b(a.size());
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("epoch " + std::to_string(epoch) + ", " + reference->describe(i));
      SampleRng ra(100 * epoch + i), rb(100 * epoch + i);
      std::string fa, fb;
      try { reference->decode(i, ra, a.data()); } catch (const BadSample& e) { fa = e.reason(); }
      try { subject->decode(i, rb, b.data()); } catch (const BadSample& e) { fb = e.reason(); }
      EXPECT_EQ(fb, fa);
      if (fa.empty()) EXPECT_EQ(b, a);
    }
    EXPECT_EQ(entries_in(dir / "cache"), 8u) << "the eight whole progressive files, not the baseline, PNG, damaged or incomplete ones";
  }
  fs::remove_all(dir);
}
