#pragma once
// torch.save's format before PyTorch 1.6 (and with _use_new_zipfile_serialization=False), read
// through a ByteSource. The file is five pickles (protocol 2, or 3 from Python 3 with pickle_protocol=3),
// then the storages:
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

// The pickle protocol `start` (the file's first bytes, kLegacyMagicMaxSize of them are enough) was
// written at when it begins with the legacy magic number (0 for protocols 0 and 1, which write it
// alike), or -1. Only protocols 2 and 3 are read, as torch.load(weights_only=True) reads them; a file
// at another protocol is refused by read_legacy_torch_file, saying so.
int legacy_pickle_protocol(std::string_view start);
constexpr size_t kLegacyMagicMaxSize = 28;
bool is_legacy_torch_file(std::string_view start);  // legacy_pickle_protocol(start) >= 0

struct LegacyFile {
  Pickle pickle;
  std::map<std::string, uint64_t> storage_offsets;  // storage key -> where its numel x item bytes start
};

LegacyFile read_legacy_torch_file(const ByteSource& source, bool opaque_objects);

}  // namespace crosstrain::torchsave
