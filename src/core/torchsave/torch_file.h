#pragma once
// Reading what torch.save() writes, without libtorch, in both of its formats:
//   - the zip archive of PyTorch >= 1.6 (zip_archive.h; data.pkl and one record per storage),
//   - the legacy stream of earlier versions and of _use_new_zipfile_serialization=False
//     (legacy_format.h: pickles one after another, then the storages' raw bytes),
// each pickle run on the restricted machine (pickle_reader.h), and every tensor checked against the
// bytes that back it before anyone reads one. What Python's torch.load(weights_only=True) refuses
// is refused here with FormatError naming the tensor by its keys (['model']['fc.weight']):
//   - a storage shorter than its elements x item size,
//   - a tensor whose size, stride and offset reach past its storage,
//   - a missing, compressed or corrupt (CRC-32) record, a big-endian file.
// The tar archives of torch < 0.4 are recognised and refused by name. The caller
// (core/state_file.cpp) turns the checked graph into tensors; storages become CPU memory whatever
// device ('cuda:0') the file names.
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/torchsave/pickle_reader.h"
#include "core/torchsave/zip_archive.h"

namespace crosstrain::torchsave {

struct TorchFile {
  Pickle pickle;
  // The bytes of each Storage node (exactly numel x item size; views into the input).
  std::unordered_map<uint32_t, std::string_view> storage_bytes;
  // Each reachable tensor's name: its keys and indices from the root, "['model']['fc.weight']".
  std::unordered_map<uint32_t, std::string> tensor_names;
  // Reachable values that were not read (ReadOptions::opaque_objects): node, its name, its class.
  struct Unread {
    uint32_t node;
    std::string name, class_name;
  };
  std::vector<Unread> unread;
};

struct ReadOptions {
  bool check_crc = true;        // false: skip the zip's CRC-32 checks (fuzzing reaches the pickle)
  bool opaque_objects = false;  // other classes become Object nodes listed in `unread` (pickle_reader.h)
};

// `bytes` (the whole file) must outlive the result.
TorchFile read_torch_file(std::string_view bytes, const ReadOptions& options = {});

// Which of torch.save's layouts `bytes` starts like: "zip", "legacy", "tar" (torch < 0.4) or "".
std::string torch_file_layout(std::string_view bytes);

}  // namespace crosstrain::torchsave
