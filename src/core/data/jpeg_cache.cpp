#include "core/data/jpeg_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/data/image_codec.h"
#include "report/input_file.h"
#include "report/output.h"  // check_writable
#include "report/units.h"   // format_count

namespace crosstrain::data {
namespace {

namespace fs = std::filesystem;

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Writes `bytes` to `path` whole or not at all: a temporary file beside it, then rename(). Not
// report::write_file_atomic, whose fsync()s and sweep of stale temporary files in the folder (made
// for reports) took the first epoch from 0.73x to 0.46x of the rate without a cache on 1,000
// photographs. Without fsync a power loss can leave an entry cut short; read() treats such an
// entry as missing.
bool write_whole(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  const bool ok = ::close(fd) == 0 && done == bytes.size();
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

// What an entry must say of its source to be served for it: the path, size and modification time
// ("" when the source cannot be stat'ed, or its path would not fit a JPEG comment segment).
std::string source_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || path.size() > 60000) return "";
  return "crosstrain jpeg-cache 1 " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + " " + path;
}

}  // namespace

void check_jpeg_cache_use(const std::string& data_spec, const std::string& dir) {
  if (!dir.empty() && data_spec.rfind("imagefolder:", 0) != 0)
    throw std::invalid_argument("--jpeg-cache needs JPEG files (--data imagefolder:ROOT)");
}

JpegBaselineCache::JpegBaselineCache(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw std::runtime_error("--jpeg-cache " + dir_ + ": cannot make the folder" +
                                                         (ec ? " (" + ec.message() + ")" : ""));
  try {
    report::check_writable((fs::path(dir_) / "entry.jpg").string());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("--jpeg-cache: ") + e.what());
  }
}

std::string progressive_jpeg_note(int64_t reads) {
  if (reads <= 0) return "";
  return report::format_count(reads) +
         " decoded image(s) were progressive JPEGs, each entropy-decoded whole whatever its crop: --jpeg-cache DIR "
         "decodes them from lossless baseline rewrites (the same pixels) from the second epoch on (docs/DATA.md)";
}

std::string JpegBaselineCache::entry_path(const std::string& path) const {
  const uint64_t h = fnv1a(14695981039346656037ull, path.data(), path.size());
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.jpg", static_cast<unsigned long long>(h));
  return (fs::path(dir_) / name).string();
}

bool JpegBaselineCache::read(const std::string& path, std::vector<uint8_t>& bytes, uint64_t max_bytes) const {
  const std::string entry = entry_path(path);
  const std::string stamp = source_stamp(path);
  if (stamp.empty() || ::access(entry.c_str(), R_OK) != 0) return false;
  try {
    report::read_regular_file(entry, max_bytes, "file", bytes);
  } catch (const std::runtime_error&) {
    return false;
  }
  // SOI, the comment naming the source as it was, the rewrite's own segments; every entry ends with
  // the end-of-image marker, and one without it was cut short (write_whole).
  const size_t head = 4 + 2 + stamp.size();
  if (bytes.size() < head + 4 || bytes[2] != 0xFF || bytes[3] != 0xFE || bytes[bytes.size() - 2] != 0xFF ||
      bytes.back() != 0xD9)
    return false;
  if (((bytes[4] << 8) | bytes[5]) != static_cast<int>(2 + stamp.size()) ||
      std::memcmp(bytes.data() + 6, stamp.data(), stamp.size()) != 0)
    return false;  // made from another version of the file (or another path of the same hash)
  bytes.erase(bytes.begin() + 2, bytes.begin() + static_cast<std::ptrdiff_t>(head));
  return true;
}

void JpegBaselineCache::admit(const std::string& path, std::vector<uint8_t>& bytes) const {
  if (!jpeg_is_progressive(bytes.data(), bytes.size())) return;
  try {
    std::vector<uint8_t> baseline = transcode_jpeg_to_baseline(bytes.data(), bytes.size());
    bytes.swap(baseline);  // decoded now whether or not it can be stored
    const std::string stamp = source_stamp(path);
    if (stamp.empty() || bytes.size() < 2) {
      ++failures_;
      return;
    }
    // The entry: SOI, a comment segment with the source's stamp, then the rewrite after its SOI.
    std::vector<uint8_t> entry;
    entry.reserve(bytes.size() + 4 + stamp.size());
    entry.insert(entry.end(), {0xFF, 0xD8, 0xFF, 0xFE, static_cast<uint8_t>((2 + stamp.size()) >> 8),
                               static_cast<uint8_t>((2 + stamp.size()) & 0xFF)});
    entry.insert(entry.end(), stamp.begin(), stamp.end());
    entry.insert(entry.end(), bytes.begin() + 2, bytes.end());
    if (write_whole(entry_path(path), entry)) {
      ++stored_;
    } else {
      ++failures_;  // not stored (a full disk): rewritten again next time
    }
  } catch (const DecodeError&) {
    ++failures_;  // decoded as it is: a damaged file is then reported by the decoder, with the reason
  }
}

int64_t JpegBaselineCache::stored() const { return stored_.load(); }
int64_t JpegBaselineCache::failures() const { return failures_.load(); }

}  // namespace crosstrain::data
