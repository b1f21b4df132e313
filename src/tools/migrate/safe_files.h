#pragma once
// File access for `crosstrain migrate` that cannot be steered by what sits in the trees it reads
// and writes: reads accept only regular files (a FIFO or device is refused without blocking) up to
// a size limit; writes go to a fresh temporary file (O_EXCL, O_NOFOLLOW) renamed over the target,
// so an existing symbolic link is replaced, never written through; output directories are
// created one component at a time and a symbolic link among them is refused.
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace crosstrain::migrate {

// Thrown by read_regular_file for a file above the size limit (the caller reports and skips it).
struct FileTooLarge : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws FileTooLarge above `max_bytes`, std::runtime_error when the path is not a regular file
// or cannot be read.
std::string read_regular_file(const std::filesystem::path& path, size_t max_bytes);

// Temporary file next to `path` with the permission bits of `like` (when it exists), then rename.
void write_atomic(const std::filesystem::path& path, const std::string& bytes, const std::filesystem::path& like);

// Creates root/relative_dir; throws std::runtime_error when a component below `root` is a
// symbolic link or not a directory.
void make_real_directories(const std::filesystem::path& root, const std::filesystem::path& relative_dir);

}  // namespace crosstrain::migrate
