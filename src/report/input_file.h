#pragma once
// How torch-free readers open files they did not write (dumps, loss logs, datasets, images):
// only regular files are read, so a FIFO, /dev/zero or a directory named like an input is refused
// at once instead of blocking or growing without end, and every read has a byte limit. Paths that
// a file names (a dump index naming its tensors) are resolved inside their directory.
// Errors are std::runtime_error naming the path and what is wrong.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace crosstrain::report {

// Opens `path` read-only (O_NONBLOCK, so opening a FIFO cannot block) and checks with fstat() that
// it is a regular file; returns the descriptor (the caller closes it) and its size.
int open_regular_file(const std::string& path, uint64_t* size = nullptr);

// Reads the whole regular file `path` into `out` (reusing its capacity). Files over `max_bytes`
// are refused before anything is read; `what` names the kind of file in the message
// ("loss log larger than the 1 GiB limit").
void read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what, std::vector<uint8_t>& out);
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// `relative`, a path named inside a file in `root`, as a path that stays within `root`: absolute
// paths, ".." components and symbolic links that lead out of `root` are refused.
std::string resolve_inside(const std::string& root, const std::string& relative);

// True when `inner` is `outer` or lies below it, however it is named: both are made absolute and
// canonical (symbolic links resolved where they exist), and an existing file is also within when
// it is a hard link of `outer` or of a file below it (same device and inode). What writes a file
// asks this of every input before it writes, so an output never replaces what it was made from.
bool path_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

// "1.5 GiB"-style text for limits in messages.
std::string byte_size_text(uint64_t bytes);

}  // namespace crosstrain::report
