#pragma once
// State dicts on disk in torch.save's layout, so Python's torch.load(path, weights_only=True) opens
// what crosstrain writes and crosstrain reads what a Python script torch.save()d (plain dicts,
// lists, tuples, numbers, strings, tensors; no classes).
//
// Writing is crash-safe: the archive is built in memory and written by report::write_file_atomic
// (temporary file, fsync, rename, directory fsync; special files in place; links to regular files
// refused). A crash at any moment leaves either the old file or the new one. A failed write (full
// disk) throws std::runtime_error naming the target; the old file stays as it was.
#include <string>

#include "core/state_dict.h"

namespace crosstrain::core {

void save_state_file(const c10::IValue& state, const std::string& path);
// std::runtime_error naming the file when it is missing, truncated or not a torch.save() archive.
c10::IValue load_state_file(const std::string& path);

}  // namespace crosstrain::core
