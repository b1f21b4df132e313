#pragma once
// State dicts on disk in torch.save's layout, so Python's torch.load(path, weights_only=True) opens
// what crosstrain writes and crosstrain reads what a Python script torch.save()d (plain dicts,
// lists, tuples, numbers, strings, tensors; no classes).
//
// Writing is crash-safe: the bytes go to an unpredictably named temporary file in the target's
// directory (O_EXCL), which is fsync()ed, renamed over the target, and the directory fsync()ed. A
// crash at any moment leaves either the old file or the new one, never a mix. A failed write (full
// disk) removes the temporary file and throws std::runtime_error naming the target; the old file
// stays as it was.
#include <string>

#include "core/state_dict.h"

namespace crosstrain::core {

void save_state_file(const c10::IValue& state, const std::string& path);
// std::runtime_error naming the file when it is missing, truncated or not a torch.save() archive.
c10::IValue load_state_file(const std::string& path);

}  // namespace crosstrain::core
