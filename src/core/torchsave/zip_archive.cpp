#include "core/torchsave/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace crosstrain::torchsave {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                   kEnd64Locator = 0x07064b50, kEnd64 = 0x06064b50;
constexpr size_t kEndSize = 22, kEnd64LocatorSize = 20, kEnd64Size = 56, kCentralSize = 46, kLocalSize = 30;
constexpr uint64_t kMaxEntries = 1u << 20;

// Little-endian reads at an offset already checked by `need`.
uint64_t le(std::string_view b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<uint64_t>(i)]);
  return v;
}

void need(std::string_view b, uint64_t at, uint64_t n, const char* what) {
  if (at > b.size() || n > b.size() - at)
    throw FormatError(std::string("truncated zip archive (") + what + " runs past the end of the file)");
}

uint32_t crc32_of(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t kChunk = 1u << 30;
  for (size_t at = 0; at < data.size(); at += kChunk) {
    const size_t n = std::min(kChunk, data.size() - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + at), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

ZipArchive::ZipArchive(std::string_view bytes, bool check_crc) : bytes_(bytes), check_crc_(check_crc) {
  read_central_directory();
}

void ZipArchive::read_central_directory() {
  const std::string_view b = bytes_;
  if (b.size() < kEndSize || le(b, 0, 4) != kLocalHeader)
    throw FormatError("neither a zip archive (torch.save's format since PyTorch 1.6) nor the legacy torch.save format");
  // The end record sits in the last 22 + 65535 (comment) bytes; the last match wins.
  const uint64_t lowest = b.size() > kEndSize + 0xFFFF ? b.size() - kEndSize - 0xFFFF : 0;
  uint64_t end = b.size() - kEndSize;
  while (le(b, end, 4) != kEnd) {
    if (end == lowest) throw FormatError("truncated zip archive (no end of central directory)");
    --end;
  }
  uint64_t count = le(b, end + 10, 2), cd_size = le(b, end + 12, 4), cd_offset = le(b, end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    if (end < kEnd64LocatorSize || le(b, end - kEnd64LocatorSize, 4) != kEnd64Locator)
      throw FormatError("zip64 archive without its end-of-central-directory locator");
    const uint64_t at = le(b, end - kEnd64LocatorSize + 8, 8);
    need(b, at, kEnd64Size, "zip64 end of central directory");
    if (le(b, at, 4) != kEnd64) throw FormatError("bad zip64 end-of-central-directory record");
    count = le(b, at + 32, 8);
    cd_size = le(b, at + 40, 8);
    cd_offset = le(b, at + 48, 8);
  }
  if (count > kMaxEntries) throw FormatError("zip archive claims " + std::to_string(count) + " records");
  need(b, cd_offset, cd_size, "central directory");
  uint64_t at = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (at > cd_end || kCentralSize > cd_end - at || le(b, at, 4) != kCentralHeader)
      throw FormatError("corrupt zip central directory (record " + std::to_string(i) + ")");
    const uint64_t name_len = le(b, at + 28, 2), extra_len = le(b, at + 30, 2), comment_len = le(b, at + 32, 2);
    if (kCentralSize + name_len + extra_len + comment_len > cd_end - at)
      throw FormatError("corrupt zip central directory (record " + std::to_string(i) + " runs past it)");
    Entry e;
    e.method = static_cast<uint16_t>(le(b, at + 10, 2));
    e.crc = static_cast<uint32_t>(le(b, at + 16, 4));
    uint64_t compressed = le(b, at + 20, 4), size = le(b, at + 24, 4), local = le(b, at + 42, 4);
    std::string name(b.substr(at + kCentralSize, name_len));
    // Zip64 extended information: 8-byte values, present only for the fields saturated above, in
    // this order.
    uint64_t x = at + kCentralSize + name_len;
    const uint64_t x_end = x + extra_len;
    while (x_end - x >= 4) {
      const uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      if (len > x_end - x - 4) throw FormatError("corrupt zip extra field in record '" + name + "'");
      if (id == 0x0001) {
        uint64_t f = x + 4;
        auto next = [&](uint64_t& v) {
          if (v != 0xFFFFFFFF) return;
          if (f + 8 > x + 4 + len) throw FormatError("short zip64 field in record '" + name + "'");
          v = le(b, f, 8);
          f += 8;
        };
        next(size);
        next(compressed);
        next(local);
      }
      x += 4 + len;
    }
    need(b, local, kLocalSize, "local file header");
    if (le(b, local, 4) != kLocalHeader) throw FormatError("bad local header for record '" + name + "'");
    const uint64_t data = local + kLocalSize + le(b, local + 26, 2) + le(b, local + 28, 2);
    need(b, data, compressed, ("record '" + name + "'").c_str());
    if (e.method == 0 && compressed != size)
      throw FormatError("record '" + name + "' is stored with two different sizes");
    e.data_offset = data;
    e.size = compressed;
    if (i == 0) first_name_ = name;
    if (!entries_.emplace(name, e).second) throw FormatError("record '" + name + "' appears twice");
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  if (entries_.empty()) throw FormatError("empty zip archive");
}

std::string_view ZipArchive::record(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw FormatError("record '" + name + "' is missing");
  const Entry& e = it->second;
  if (e.method != 0)
    throw FormatError("record '" + name + "' is compressed (method " + std::to_string(e.method) +
                      "); torch.save stores records uncompressed");
  std::string_view data = bytes_.substr(e.data_offset, e.size);
  if (check_crc_ && !e.crc_checked) {
    if (crc32_of(data) != e.crc) throw FormatError("record '" + name + "' fails its CRC-32 check (corrupt)");
    e.crc_checked = true;
  }
  return data;
}

}  // namespace crosstrain::torchsave
