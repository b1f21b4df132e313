#pragma once
// torch.save's format before PyTorch 1.6 (and with _use_new_zipfile_serialization=False), read
// through a ByteSource. The file is five pickles, then the storages:
//   magic number (a fixed 10-byte integer), protocol version (1001), sys_info ({little_endian,
//   type_sizes}), the object (storages as persistent ids ('storage', type, key, location, numel,
//   view)), the list of storage keys; then for each key in that order an int64 element count and
//   count x item size raw bytes.
// Every pickle runs on the restricted machine, read through a window (the file is never held
// whole); sys_info must say little-endian; each key listed must belong to storages of the object
// with one type and exactly that many elements, and its bytes must lie inside the file. FormatError
// names the key and the byte position otherwise. The storages' bytes are not read here: their
// places are returned, for the caller to read into the tensors' memory.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/torchsave/pickle_reader.h"

namespace crosstrain::torchsave {

// True when `start` (the file's first bytes) begins with the legacy magic number pickled as
// torch.save pickles it (protocol 2).
bool is_legacy_torch_file(std::string_view start);

struct LegacyFile {
  Pickle pickle;
  std::map<std::string, uint64_t> storage_offsets;  // storage key -> where its numel x item bytes start
};

LegacyFile read_legacy_torch_file(const ByteSource& source, bool opaque_objects);

}  // namespace crosstrain::torchsave
