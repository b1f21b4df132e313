#pragma once
// Where torchsave reads its bytes: an open file, read piece by piece with pread() (so a storage
// goes from the file straight into the memory of its tensor and the file is never held whole, as
// Python's torch.load reads it), or bytes already in memory (tests, fuzzing, CIFAR batches).
//
//   FileSource file(fd, size);                   // takes the descriptor (report::open_regular_file)
//   TorchFile f = read_torch_file(file);         // the source must outlive f
//
// A range past the end is a FormatError (a file cut short, or one shortened while it was read);
// a failed read is a std::runtime_error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/torchsave/format_error.h"

namespace crosstrain::torchsave {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Copies [at, at + n) into `dest`.
  virtual void read(uint64_t at, size_t n, char* dest) const = 0;
  // All the bytes, when they are in memory (nothing is copied then); nullptr for a file.
  virtual const char* data() const { return nullptr; }
  std::string read_string(uint64_t at, size_t n) const;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t at, size_t n, char* dest) const override;
  const char* data() const override { return bytes_.data(); }

 private:
  std::string_view bytes_;
};

class FileSource final : public ByteSource {
 public:
  // Owns `fd` (closed by the destructor); `size` as fstat() gave it when the file was opened.
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t at, size_t n, char* dest) const override;

 private:
  int fd_;
  uint64_t size_;
};

}  // namespace crosstrain::torchsave
