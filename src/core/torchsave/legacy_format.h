#pragma once
// torch.save's format before PyTorch 1.6 (and with _use_new_zipfile_serialization=False), read from
// bytes in memory. The file is five pickles, then the storages:
//   magic number (a fixed 10-byte integer), protocol version (1001), sys_info ({little_endian,
//   type_sizes}), the object (storages as persistent ids ('storage', type, key, location, numel,
//   view)), the list of storage keys; then for each key in that order an int64 element count and
//   count x item size raw bytes.
// Every pickle runs on the restricted machine; sys_info must say little-endian; each key listed
// must belong to storages of the object with one type and exactly that many elements, and its bytes
// must lie inside the file. FormatError names the key and the byte position otherwise.
#include <string_view>
#include <unordered_map>

#include "core/torchsave/pickle_reader.h"

namespace crosstrain::torchsave {

// True when `bytes` begins with the legacy magic number pickled as torch.save pickles it (protocol 2).
bool is_legacy_torch_file(std::string_view bytes);

struct LegacyFile {
  Pickle pickle;
  std::unordered_map<uint32_t, std::string_view> storage_bytes;  // per Storage node, numel x item
};

LegacyFile read_legacy_torch_file(std::string_view bytes, bool opaque_objects);

}  // namespace crosstrain::torchsave
