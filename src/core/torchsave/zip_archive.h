#pragma once
// The zip container of torch.save() files, read through a ByteSource: the central directory (zip64
// too) is parsed with every offset and length checked against the file before use, so a truncated
// or hostile file is refused with FormatError, never read out of bounds. Only what torch.save
// writes is supported: records stored without compression. Nothing but the directory is read up
// front; a record's bytes are read when asked for, straight into the caller's memory.
//
//   ZipArchive zip(source);                         // source must outlive zip
//   std::string pkl = zip.read("archive/data.pkl");
//   ZipRecord r = zip.locate("archive/data/0");     // then read_record(source, r, dest, n, true)
#include <cstdint>
#include <map>
#include <string>

#include "core/torchsave/byte_source.h"

namespace crosstrain::torchsave {

// Where a stored record's bytes lie in the file, and their CRC-32.
struct ZipRecord {
  uint64_t offset = 0, size = 0;
  uint32_t crc = 0;
};

// Copies the first `n` bytes (n <= r.size) of the record into `dest`; with `check_crc`, the whole
// record's CRC-32 is checked (the bytes past `n` are read in pieces, not kept). FormatError naming
// `name` when it fails.
void read_record(const ByteSource& source, const ZipRecord& r, char* dest, uint64_t n, bool check_crc,
                 const std::string& name);

class ZipArchive {
 public:
  // check_crc = false skips the CRC-32 checks (fuzzing: mutations then reach the pickle machine).
  explicit ZipArchive(const ByteSource& source, bool check_crc = true);

  // The name of the central directory's first entry (torch.save puts every record under one folder).
  const std::string& first_name() const { return first_name_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  bool check_crc() const { return check_crc_; }
  // A stored record's place; FormatError when it is absent, compressed or out of the file.
  ZipRecord locate(const std::string& name) const;
  // A whole record (small ones: data.pkl, byteorder), its CRC-32 checked.
  std::string read(const std::string& name) const;

 private:
  struct Entry {
    uint64_t local_header = 0, size = 0;
    uint32_t crc = 0;
    uint16_t method = 0;
  };
  void read_central_directory();
  const ByteSource& source_;
  bool check_crc_ = true;
  std::map<std::string, Entry> entries_;
  std::string first_name_;
};

}  // namespace crosstrain::torchsave
