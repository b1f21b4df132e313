#pragma once
// State dicts on disk in torch.save's layout, so Python's torch.load(path, weights_only=True) opens
// what crosstrain writes and crosstrain reads what a Python script torch.save()d (dicts, including
// model.state_dict()'s OrderedDict, lists, tuples, numbers, strings, tensors; no other classes).
//
// Writing is crash-safe: the archive streams into report::write_file_atomic
// (temporary file, fsync, rename, directory fsync; special files in place; links to regular files
// refused). A crash at any moment leaves either the old file or the new one. A failed write (full
// disk) throws std::runtime_error naming the target; the old file stays as it was.
#include <cstdint>
#include <string>
#include <vector>

#include "core/state_dict.h"

namespace crosstrain::core {

void save_state_file(const c10::IValue& state, const std::string& path);
// Reads a torch.save() file, zip or legacy (core/torchsave: checked before use; plain dicts and
// collections.OrderedDict, lists, tuples, numbers, strings, tensors). std::runtime_error naming
// the file when it is missing, not a regular file, larger than kMaxStateFileBytes, truncated,
// corrupt or holds anything else; a bad tensor is named by its keys.
// With `unread`, an object of another class (the argparse.Namespace of a training script's 'args')
// does not refuse the file: it reads as None and is listed there by its keys and class, for the
// caller to refuse where it needed the value. Nothing of it is imported or called.
inline constexpr uint64_t kMaxStateFileBytes = uint64_t{64} << 30;
struct UnreadValue {
  std::string name;        // "['args']"
  std::string class_name;  // "argparse.Namespace"
};
c10::IValue load_state_file(const std::string& path, std::vector<UnreadValue>* unread = nullptr);

}  // namespace crosstrain::core
