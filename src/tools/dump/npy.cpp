#include "tools/dump/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "report/input_file.h"
#include "tools/dump/element_decode.h"

namespace crosstrain::dump {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  DType type;
  const char* descr;
};
// "=" and "<" both mean little-endian on the hosts we support; "|" is for one-byte types.
constexpr DescrEntry kDescrs[] = {
    {DType::Float32, "<f4"}, {DType::Float64, "<f8"}, {DType::Float16, "<f2"}, {DType::Int64, "<i8"},
    {DType::Int32, "<i4"},   {DType::UInt8, "|u1"},   {DType::Bool, "|b1"},
};

bool host_is_little_endian() {
  const uint16_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

// Parses numpy's header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct HeaderDict {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  bool has_descr = false, has_shape = false;
};

HeaderDict parse_header_dict(const std::string& text, const std::string& path) {
  HeaderDict h;
  size_t p = 0;
  auto skip = [&]() {
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
  };
  auto expect = [&](char c) {
    skip();
    if (p >= text.size() || text[p] != c) fail(path, std::string("corrupt header: expected '") + c + "'");
    ++p;
  };
  auto quoted = [&]() {
    skip();
    if (p >= text.size() || (text[p] != '\'' && text[p] != '"')) fail(path, "corrupt header: expected a string");
    char q = text[p++];
    size_t end = text.find(q, p);
    if (end == std::string::npos) fail(path, "corrupt header: unterminated string");
    std::string s = text.substr(p, end - p);
    p = end + 1;
    return s;
  };
  expect('{');
  for (;;) {
    skip();
    if (p < text.size() && text[p] == '}') break;
    std::string key = quoted();
    expect(':');
    skip();
    if (key == "descr") {
      h.descr = quoted();
      h.has_descr = true;
    } else if (key == "fortran_order") {
      if (text.compare(p, 4, "True") == 0) {
        h.fortran = true;
        p += 4;
      } else if (text.compare(p, 5, "False") == 0) {
        p += 5;
      } else {
        fail(path, "corrupt header: fortran_order is not True/False");
      }
    } else if (key == "shape") {
      expect('(');
      for (;;) {
        skip();
        if (p < text.size() && text[p] == ')') {
          ++p;
          break;
        }
        size_t start = p;
        while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
        if (p == start || p - start > 15) fail(path, "corrupt header: bad dimension in shape");
        h.shape.push_back(std::stoll(text.substr(start, p - start)));
        skip();
        if (p < text.size() && text[p] == 'L') ++p;  // Python 2 longs
        skip();
        if (p < text.size() && text[p] == ',') ++p;
      }
      h.has_shape = true;
    } else {
      fail(path, "corrupt header: unexpected key '" + key + "'");
    }
    skip();
    if (p < text.size() && text[p] == ',') ++p;
    if (p >= text.size()) fail(path, "corrupt header: unterminated dict");
  }
  if (!h.has_descr || !h.has_shape) fail(path, "corrupt header: 'descr' or 'shape' missing");
  return h;
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};

}  // namespace

std::string npy_descr(DType stored) {
  for (const auto& d : kDescrs)
    if (d.type == stored) return d.descr;
  throw std::invalid_argument("dtype " + dtype_name(stored) + " has no numpy equivalent");
}

std::string npy_header(DType stored, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + npy_descr(stored) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dict += ',';  // "(5,)" like numpy
  dict += "), }";
  // magic(6) + version(2) + length(2) + dict + spaces + '\n', total a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  if (dict.size() > 65535) throw std::invalid_argument("npy header too long for format 1.0");
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

DType write_npy(const std::string& path, DType type, const std::vector<int64_t>& shape, const void* data) {
  if (!host_is_little_endian()) throw std::runtime_error("writing .npy needs a little-endian host");
  const DType stored = type == DType::BFloat16 ? DType::Float32 : type;
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  const std::string header = npy_header(stored, shape);
  const size_t numel = static_cast<size_t>(shape_numel(shape));
  bool ok = std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  if (type == DType::BFloat16) {
    const uint16_t* src = static_cast<const uint16_t*>(data);
    float buf[4096];
    for (size_t off = 0; ok && off < numel; off += 4096) {
      size_t n = std::min<size_t>(4096, numel - off);
      for (size_t i = 0; i < n; ++i) buf[i] = bfloat16_to_float(src[off + i]);
      ok = std::fwrite(buf, sizeof(float), n, f.get()) == n;
    }
  } else if (numel > 0) {
    ok = ok && std::fwrite(data, dtype_size(type), numel, f.get()) == numel;
  }
  FILE* raw = f.release();
  ok = (std::fclose(raw) == 0) && ok;
  if (!ok) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
  return stored;
}

NpyLayout parse_npy_header(const uint8_t* bytes, size_t size, const std::string& path) {
  NpyLayout out;
  if (size < 10) fail(path, "not an .npy file (too short: " + std::to_string(size) + " bytes)");
  if (std::memcmp(bytes, kMagic, kMagicLen) != 0) fail(path, "not an .npy file (bad magic)");
  const int major = bytes[6];
  size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(path, "truncated header");
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8) | (static_cast<size_t>(bytes[10]) << 16) |
                 (static_cast<size_t>(bytes[11]) << 24);
    prefix = 12;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (prefix + header_len > size) fail(path, "truncated header");
  const std::string text(reinterpret_cast<const char*>(bytes + prefix), header_len);
  HeaderDict h = parse_header_dict(text, path);
  if (h.fortran) fail(path, "Fortran-order arrays are not supported (save with C order)");
  std::string descr = h.descr;
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';
  if (descr.size() == 3 && descr[0] == '>' && descr[2] != '1') fail(path, "big-endian data ('" + h.descr + "') is not supported");
  if (descr == "<u1" || descr == "<b1") descr[0] = '|';
  bool known = false;
  for (const auto& d : kDescrs)
    if (descr == d.descr) {
      out.dtype = d.type;
      known = true;
    }
  if (!known) fail(path, "unsupported dtype '" + h.descr + "'");
  out.shape = h.shape;
  out.version = major;
  size_t numel = 1;
  for (auto d : h.shape) {
    if (d != 0 && numel > (SIZE_MAX / 16) / static_cast<size_t>(d)) fail(path, "shape too large");
    numel *= static_cast<size_t>(d);
  }
  out.numel = numel;
  out.data_offset = prefix + header_len;
  const size_t need = prefix + header_len + numel * dtype_size(out.dtype);
  if (need > size)
    fail(path, "truncated data: " + std::to_string(size) + " bytes, shape " + shape_to_string(h.shape) + " needs " +
                   std::to_string(need));
  return out;
}

NpyArray NpyArray::open(const std::string& path) {
  if (!host_is_little_endian()) fail(path, "reading .npy needs a little-endian host");
  uint64_t file_size = 0;
  const int fd = report::open_regular_file(path, &file_size);  // FIFOs and devices are refused
  const size_t size = static_cast<size_t>(file_size);
  if (size < 10) {
    ::close(fd);
    fail(path, "not an .npy file (too short: " + std::to_string(size) + " bytes)");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(errno));
  NpyArray arr;
  arr.map_ = map;
  arr.map_size_ = size;
  const NpyLayout l = parse_npy_header(static_cast<const uint8_t*>(map), size, path);
  arr.dtype_ = l.dtype;
  arr.shape_ = l.shape;
  arr.numel_ = l.numel;
  arr.version_ = l.version;
  arr.data_ = static_cast<const uint8_t*>(map) + l.data_offset;
  // The compare engine reads front to back once; tell the kernel to read ahead.
  ::madvise(map, size, MADV_SEQUENTIAL);
  ::madvise(map, size, MADV_WILLNEED);
  return arr;
}

NpyArray::NpyArray(NpyArray&& o) noexcept { *this = std::move(o); }

NpyArray& NpyArray::operator=(NpyArray&& o) noexcept {
  if (this != &o) {
    release();
    map_ = o.map_;
    map_size_ = o.map_size_;
    data_ = o.data_;
    dtype_ = o.dtype_;
    shape_ = std::move(o.shape_);
    numel_ = o.numel_;
    version_ = o.version_;
    o.map_ = nullptr;
    o.data_ = nullptr;
    o.map_size_ = 0;
  }
  return *this;
}

NpyArray::~NpyArray() { release(); }

void NpyArray::release() {
  if (map_) ::munmap(map_, map_size_);
  map_ = nullptr;
}

}  // namespace crosstrain::dump
