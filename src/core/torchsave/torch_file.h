#pragma once
// Reading what torch.save() writes, without libtorch, in both of its formats:
//   - the zip archive of PyTorch >= 1.6 (zip_archive.h; data.pkl and one record per storage),
//   - the legacy stream of earlier versions and of _use_new_zipfile_serialization=False
//     (legacy_format.h: pickles one after another, then the storages' raw bytes),
// each pickle run on the restricted machine (pickle_reader.h), and every tensor checked against the
// record that backs it before anyone reads one. What Python's torch.load(weights_only=True) refuses
// is refused here with FormatError naming the tensor by its keys (['model']['fc.weight']):
//   - a storage shorter than its elements x item size,
//   - a tensor whose size, stride and offset reach past its storage,
//   - a missing, compressed or corrupt (CRC-32) record, a big-endian file.
// The tar archives of torch < 0.4 are recognised and refused by name.
//
// Storages are records, one per key however many tensors view it (parameters saved as views of
// one flat buffer, as optimizers and FSDP keep them, are one record): the caller reads each record
// once, into memory it owns (read_storage), and makes its tensors views of it, as Python's
// torch.load does. Only the pickle is held in memory; storages become CPU memory whatever device
// ('cuda:0') the file names. Time and memory are linear in the file; names in messages are
// shortened (long keys, deep paths), so an error is one line of at most a few hundred characters.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/torchsave/byte_source.h"
#include "core/torchsave/pickle_reader.h"
#include "core/torchsave/zip_archive.h"

namespace crosstrain::torchsave {

// A storage's bytes in the file: numel x item size of them from `offset` (the record may be longer).
struct StorageRecord {
  std::string label;  // "data/120" (zip), "storage 120" (legacy)
  DType dtype = DType::Float32;
  int64_t numel = 0;
  ZipRecord place;    // offset, size and CRC-32 (legacy: size = numel x item, no CRC)
  bool check_crc = false;
  uint64_t bytes() const { return static_cast<uint64_t>(numel) * dtype_size(dtype); }
};

class TorchFile {
 public:
  Pickle pickle;
  // The tensors reachable from the root, in the order of their first paths (depth first).
  std::vector<uint32_t> tensors;
  // Reachable values that were not read (ReadOptions::opaque_objects): node, its name, its class;
  // the first 1000 in path order.
  struct Unread {
    uint32_t node;
    std::string name, class_name;
  };
  std::vector<Unread> unread;
  std::vector<StorageRecord> records;

  // How a reachable node (a tensor, a container, an unread value) is reached from the root:
  // "['model']['fc.weight']", "(the root)"; "(unreachable)" otherwise. Keys past 80 bytes and paths
  // deeper than 12 keys are shortened ("['a']['b']...(999990 more)...['y']['z']").
  std::string name_of(uint32_t node) const;
  // The record behind a Storage node (all Storage nodes of one key share it).
  uint32_t record_of(uint32_t storage_node) const { return record_index_[pickle.node(storage_node).ref]; }
  // Copies record r's numel x item bytes into `dest`, checking its CRC-32 (zip).
  void read_storage(uint32_t r, char* dest) const;
  std::string read_storage(uint32_t r) const;  // the same, as a string (tests)

 private:
  friend class TorchFileBuilder;
  struct PathStep {
    uint32_t parent = 0, slot = 0;  // the container it was first reached in, and where there
    uint32_t depth = kUnreached;    // keys from the root
    uint32_t anchor = 0;            // its ancestor of depth kHead (itself when it is not deeper)
  };
  static constexpr uint32_t kUnreached = 0xFFFFFFFF;
  const PathStep* path_of(uint32_t node) const;
  std::vector<PathStep> container_paths_;               // per entry of pickle.lists
  std::unordered_map<uint32_t, PathStep> leaf_paths_;   // tensors and unread values, by node
  std::vector<uint32_t> record_index_;                  // per entry of pickle.storages
  const ByteSource* source_ = nullptr;
  std::shared_ptr<const ByteSource> owned_source_;
};

struct ReadOptions {
  bool check_crc = true;        // false: skip the zip's CRC-32 checks (fuzzing reaches the pickle)
  bool opaque_objects = false;  // other classes become Object nodes listed in `unread` (pickle_reader.h)
};

// `source` must outlive the result; storages are read from it by read_storage.
TorchFile read_torch_file(const ByteSource& source, const ReadOptions& options = {});
// The same for bytes in memory; `bytes` must outlive the result.
TorchFile read_torch_file(std::string_view bytes, const ReadOptions& options = {});
// A temporary string would be gone before its storages are read: refused at compile time.
TorchFile read_torch_file(std::string&& bytes, const ReadOptions& options = {}) = delete;

// Which of torch.save's layouts a file starts like: "zip", "legacy", "tar" (torch < 0.4), or
// "safetensors" (refused, saying so), "empty" (0 bytes), "" (none of them).
std::string torch_file_layout(std::string_view bytes);
std::string torch_file_layout(const ByteSource& source);

}  // namespace crosstrain::torchsave
