#include "core/torchsave/byte_source.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace crosstrain::torchsave {

std::string shown(std::string_view text, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  size_t i = 0;
  // UTF-8 stays as it is (cut between characters); control bytes and backslashes are escaped.
  for (; i < text.size(); ++i) {
    const bool continues = (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    if (out.size() >= max && !(continues && out.size() < max + 3)) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

namespace {

void check_range(uint64_t size, uint64_t at, size_t n) {
  if (at > size || n > size - at)
    throw FormatError("the file ends at byte " + std::to_string(size) + ", before the " + std::to_string(n) +
                      " bytes at byte " + std::to_string(at) + " (truncated)");
}

}  // namespace

std::string ByteSource::read_string(uint64_t at, size_t n) const {
  check_range(size(), at, n);
  std::string s(n, '\0');
  if (n) read(at, n, s.data());
  return s;
}

void MemorySource::read(uint64_t at, size_t n, char* dest) const {
  check_range(bytes_.size(), at, n);
  if (n) std::memcpy(dest, bytes_.data() + at, n);
}

FileSource::~FileSource() { ::close(fd_); }

void FileSource::read(uint64_t at, size_t n, char* dest) const {
  check_range(size_, at, n);
  // pread moves at most ~2 GiB at a time on Linux; loop over short reads.
  while (n > 0) {
    const ssize_t got = ::pread(fd_, dest, n, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("read failed at byte ") + std::to_string(at) + ": " + std::strerror(errno));
    }
    if (got == 0)
      throw FormatError("the file ends at byte " + std::to_string(at) + " while " + std::to_string(n) +
                        " more bytes were read (it was shortened while read)");
    dest += got;
    at += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

}  // namespace crosstrain::torchsave
