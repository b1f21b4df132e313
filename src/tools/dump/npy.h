#pragma once
// NumPy .npy files: the writer emits format 1.0 (what numpy.save writes and numpy.load reads as is);
// the reader accepts versions 1.0, 2.0 and 3.0, little-endian, C order, the dump dtypes.
// The reader maps the file (no copy), so comparing gigabyte tensors costs no extra memory.
// Errors name the file and what is wrong with it (std::runtime_error); nothing aborts.
#include <cstdint>
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

// numpy descr of a stored dtype: "<f4", "|b1", ...; bfloat16 has none (it is stored as float32).
std::string npy_descr(DType stored);

// Header (magic, version 1.0, dict, padding to a multiple of 64 bytes) for an array.
std::string npy_header(DType stored, const std::vector<int64_t>& shape);

// Writes `data` (numel elements of `type`, C order) as an .npy file. bfloat16 is widened to
// float32 on the way (exactly); returns the dtype stored in the file.
DType write_npy(const std::string& path, DType type, const std::vector<int64_t>& shape, const void* data);

// What an .npy header says, checked against the file's size: the data (numel elements of dtype)
// lies at [data_offset, data_offset + numel * dtype_size(dtype)) within `size` bytes.
struct NpyLayout {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  size_t numel = 0;
  size_t data_offset = 0;
  int version = 1;
};
// std::runtime_error naming `path` when the bytes are not a supported, complete .npy file.
NpyLayout parse_npy_header(const uint8_t* bytes, size_t size, const std::string& path);

class NpyArray {
 public:
  // Maps `path`; std::runtime_error naming the file on any problem (missing, truncated, bad header,
  // big-endian, Fortran order, unsupported dtype).
  static NpyArray open(const std::string& path);

  NpyArray() = default;
  NpyArray(NpyArray&& other) noexcept;
  NpyArray& operator=(NpyArray&& other) noexcept;
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;
  ~NpyArray();

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t numel() const { return numel_; }
  const void* data() const { return data_; }
  int version() const { return version_; }

 private:
  void release();
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const void* data_ = nullptr;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  size_t numel_ = 0;
  int version_ = 1;
};

}  // namespace crosstrain::dump
