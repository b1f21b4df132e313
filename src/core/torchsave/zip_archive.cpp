#include "core/torchsave/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <string_view>

namespace crosstrain::torchsave {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                   kEnd64Locator = 0x07064b50, kEnd64 = 0x06064b50;
constexpr size_t kEndSize = 22, kEnd64LocatorSize = 20, kEnd64Size = 56, kCentralSize = 46, kLocalSize = 30;
constexpr uint64_t kMaxEntries = 1u << 20;
constexpr size_t kCrcPiece = size_t{4} << 20;

// Little-endian reads at an offset already checked.
uint64_t le(std::string_view b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<uint64_t>(i)]);
  return v;
}

void need(uint64_t size, uint64_t at, uint64_t n, const std::string& what) {
  if (at > size || n > size - at) throw FormatError("truncated zip archive (" + what + " runs past the end of the file)");
}

uint32_t crc32_update(uint32_t crc, const char* data, size_t n) {
  constexpr size_t kChunk = size_t{1} << 30;
  uLong c = crc;
  for (size_t at = 0; at < n; at += kChunk)
    c = crc32(c, reinterpret_cast<const Bytef*>(data + at), static_cast<uInt>(std::min(kChunk, n - at)));
  return static_cast<uint32_t>(c);
}

}  // namespace

void read_record(const ByteSource& source, const ZipRecord& r, char* dest, uint64_t n, bool check_crc,
                 const std::string& name) {
  source.read(r.offset, static_cast<size_t>(n), dest);
  if (!check_crc) return;
  uint32_t crc = crc32_update(static_cast<uint32_t>(crc32(0L, Z_NULL, 0)), dest, static_cast<size_t>(n));
  std::string piece;
  for (uint64_t at = n; at < r.size;) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kCrcPiece, r.size - at));
    piece.resize(len);
    source.read(r.offset + at, len, piece.data());
    crc = crc32_update(crc, piece.data(), len);
    at += len;
  }
  if (crc != r.crc) throw FormatError("record '" + shown(name) + "' fails its CRC-32 check (corrupt)");
}

ZipArchive::ZipArchive(const ByteSource& source, bool check_crc) : source_(source), check_crc_(check_crc) {
  read_central_directory();
}

void ZipArchive::read_central_directory() {
  const uint64_t size = source_.size();
  if (size < kEndSize || le(source_.read_string(0, 4), 0, 4) != kLocalHeader)
    throw FormatError("neither a zip archive (torch.save's format since PyTorch 1.6) nor the legacy torch.save format");
  // The end record sits in the last 22 + 65535 (comment) bytes; the last match wins.
  const uint64_t tail_at = size > kEndSize + 0xFFFF ? size - kEndSize - 0xFFFF : 0;
  const std::string tail = source_.read_string(tail_at, static_cast<size_t>(size - tail_at));
  uint64_t end = tail.size() - kEndSize;
  while (le(tail, end, 4) != kEnd) {
    if (end == 0) throw FormatError("truncated zip archive (no end of central directory)");
    --end;
  }
  uint64_t count = le(tail, end + 10, 2), cd_size = le(tail, end + 12, 4), cd_offset = le(tail, end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    const uint64_t end_at = tail_at + end;
    if (end_at < kEnd64LocatorSize) throw FormatError("zip64 archive without its end-of-central-directory locator");
    const std::string locator = source_.read_string(end_at - kEnd64LocatorSize, kEnd64LocatorSize);
    if (le(locator, 0, 4) != kEnd64Locator) throw FormatError("zip64 archive without its end-of-central-directory locator");
    const uint64_t at = le(locator, 8, 8);
    need(size, at, kEnd64Size, "zip64 end of central directory");
    const std::string end64 = source_.read_string(at, kEnd64Size);
    if (le(end64, 0, 4) != kEnd64) throw FormatError("bad zip64 end-of-central-directory record");
    count = le(end64, 32, 8);
    cd_size = le(end64, 40, 8);
    cd_offset = le(end64, 48, 8);
  }
  if (count > kMaxEntries) throw FormatError("zip archive claims " + std::to_string(count) + " records");
  need(size, cd_offset, cd_size, "central directory");
  const std::string cd = source_.read_string(cd_offset, static_cast<size_t>(cd_size));
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (kCentralSize > cd.size() - at || le(cd, at, 4) != kCentralHeader)
      throw FormatError("corrupt zip central directory (record " + std::to_string(i) + ")");
    const uint64_t name_len = le(cd, at + 28, 2), extra_len = le(cd, at + 30, 2), comment_len = le(cd, at + 32, 2);
    if (kCentralSize + name_len + extra_len + comment_len > cd.size() - at)
      throw FormatError("corrupt zip central directory (record " + std::to_string(i) + " runs past it)");
    Entry e;
    e.method = static_cast<uint16_t>(le(cd, at + 10, 2));
    e.crc = static_cast<uint32_t>(le(cd, at + 16, 4));
    uint64_t compressed = le(cd, at + 20, 4), stored = le(cd, at + 24, 4), local = le(cd, at + 42, 4);
    std::string name = cd.substr(at + kCentralSize, name_len);
    // Zip64 extended information: 8-byte values, present only for the fields saturated above, in
    // this order.
    uint64_t x = at + kCentralSize + name_len;
    const uint64_t x_end = x + extra_len;
    while (x_end - x >= 4) {
      const uint64_t id = le(cd, x, 2), len = le(cd, x + 2, 2);
      if (len > x_end - x - 4) throw FormatError("corrupt zip extra field in record '" + shown(name) + "'");
      if (id == 0x0001) {
        uint64_t f = x + 4;
        auto next = [&](uint64_t& v) {
          if (v != 0xFFFFFFFF) return;
          if (f + 8 > x + 4 + len) throw FormatError("short zip64 field in record '" + shown(name) + "'");
          v = le(cd, f, 8);
          f += 8;
        };
        next(stored);
        next(compressed);
        next(local);
      }
      x += 4 + len;
    }
    if (e.method == 0 && compressed != stored)
      throw FormatError("record '" + shown(name) + "' is stored with two different sizes");
    need(size, local, kLocalSize, "local file header");
    need(size, local + kLocalSize, compressed, "record '" + shown(name) + "'");
    e.local_header = local;
    e.size = compressed;
    if (i == 0) first_name_ = name;
    if (!entries_.emplace(std::move(name), e).second)
      throw FormatError("record '" + shown(cd.substr(at + kCentralSize, name_len)) + "' appears twice");
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  if (entries_.empty()) throw FormatError("empty zip archive");
}

ZipRecord ZipArchive::locate(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw FormatError("record '" + shown(name) + "' is missing");
  const Entry& e = it->second;
  if (e.method != 0)
    throw FormatError("record '" + shown(name) + "' is compressed (method " + std::to_string(e.method) +
                      "); torch.save stores records uncompressed");
  // The local header's own name and extra lengths place the data.
  const std::string local = source_.read_string(e.local_header, kLocalSize);
  if (le(local, 0, 4) != kLocalHeader) throw FormatError("bad local header for record '" + shown(name) + "'");
  ZipRecord r;
  r.offset = e.local_header + kLocalSize + le(local, 26, 2) + le(local, 28, 2);
  r.size = e.size;
  r.crc = e.crc;
  need(source_.size(), r.offset, r.size, "record '" + shown(name) + "'");
  return r;
}

std::string ZipArchive::read(const std::string& name) const {
  const ZipRecord r = locate(name);
  std::string data(static_cast<size_t>(r.size), '\0');
  read_record(source_, r, data.data(), r.size, check_crc_, name);
  return data;
}

}  // namespace crosstrain::torchsave
