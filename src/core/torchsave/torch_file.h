#pragma once
// Reading what torch.save() writes, without libtorch: the zip (zip_archive.h), data.pkl on a
// restricted pickle machine (pickle_reader.h), and every tensor checked against the record that
// backs it before anyone reads a byte of it. What Python's torch.load(weights_only=True) refuses
// is refused here with FormatError naming the tensor by its keys (['model']['fc.weight']):
//   - a storage record shorter than its storage (elements x item size),
//   - a tensor whose size, stride and offset reach past its storage,
//   - a missing, compressed or corrupt (CRC-32) record, a big-endian archive.
// The caller (core/state_file.cpp) turns the checked graph into tensors.
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/torchsave/pickle_reader.h"
#include "core/torchsave/zip_archive.h"

namespace crosstrain::torchsave {

struct TorchFile {
  Pickle pickle;
  // The bytes of each Storage node's record (at least numel x item size; views into the input).
  std::unordered_map<uint32_t, std::string_view> storage_bytes;
  // Each reachable tensor's name: its keys and indices from the root, "['model']['fc.weight']".
  std::unordered_map<uint32_t, std::string> tensor_names;
};

// `bytes` (the whole file) must outlive the result. check_crc: see ZipArchive.
TorchFile read_torch_file(std::string_view bytes, bool check_crc = true);

}  // namespace crosstrain::torchsave
