#pragma once
// The zip container of torch.save() files, read from bytes in memory: the central directory
// (zip64 too) is parsed with every offset and length checked against the buffer before use, so a
// truncated or hostile file is refused with FormatError, never read out of bounds. Only what
// torch.save writes is supported: records stored without compression.
//
//   ZipArchive zip(bytes);                      // bytes must outlive zip
//   std::string_view pkl = zip.record("archive/data.pkl");
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crosstrain::torchsave {

// A file that is not what torch.save() writes, or is truncated or corrupt. The message names what
// is wrong, not the file (callers add the path).
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ZipArchive {
 public:
  // check_crc = false skips the CRC-32 checks (fuzzing: mutations then reach the pickle machine).
  explicit ZipArchive(std::string_view bytes, bool check_crc = true);

  // Names in central-directory order's first entry (torch.save puts every record under one folder).
  const std::string& first_name() const { return first_name_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // The bytes of a stored record; FormatError when it is absent, compressed, out of the buffer or
  // fails its CRC-32 (checked on first use).
  std::string_view record(const std::string& name) const;

 private:
  struct Entry {
    uint64_t data_offset = 0, size = 0;
    uint32_t crc = 0;
    uint16_t method = 0;
    mutable bool crc_checked = false;
  };
  void read_central_directory();
  std::string_view bytes_;
  bool check_crc_ = true;
  std::map<std::string, Entry> entries_;
  std::string first_name_;
};

}  // namespace crosstrain::torchsave
