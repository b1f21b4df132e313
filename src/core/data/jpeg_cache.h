#pragma once
// Progressive JPEGs decoded once: a folder of their lossless baseline rewrites.
//
// A progressive JPEG is entropy-decoded whole before its first row comes out, so a random crop
// costs the whole file every epoch, at about a third of the rate of the same picture stored as
// baseline (docs/DATA.md, docs/PERFORMANCE.md). The cache keeps, for each progressive file read,
// the baseline file made from the same DCT coefficients (transcode_jpeg_to_baseline: the same
// pixels); later epochs read that instead. One entry per source path, named after it; a comment
// segment at its start holds the path, size and modification time it was made from, so a changed
// file is transcoded again and its new entry replaces the old one (the folder does not grow with
// every edit of the dataset); baseline and PNG files are never copied. Threads may share one
// cache: an entry appears whole (written aside, then renamed).
//
//   JpegBaselineCache cache("/scratch/cache");
//   if (!cache.read(path, bytes, max_bytes)) {      // not cached: the file itself
//     read_file_bytes(path, bytes, max_bytes);
//     cache.admit(path, bytes);                     // progressive: now the baseline rewrite
//   }
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::data {

// Throws std::invalid_argument (a usage error) when a cache folder is asked for a dataset spec
// (KIND:PATH) whose kind reads no JPEG files: only imagefolder does.
void check_jpeg_cache_use(const std::string& data_spec, const std::string& dir);

// What to tell a user whose samples were decoded from progressive JPEG files `reads` times (the
// dataset's progressive_jpeg_reads()): the flag that decodes them once. "" when reads is 0.
std::string progressive_jpeg_note(int64_t reads);

class JpegBaselineCache {
 public:
  // Makes `dir` (and its parents) if missing; std::runtime_error when it cannot be made or written.
  explicit JpegBaselineCache(std::string dir);

  const std::string& dir() const { return dir_; }

  // The cached rewrite of `path` into `bytes` (exactly what admit() gave, without the entry's
  // comment); false when there is none, it was made from another version of the file, it cannot
  // be read or `path` cannot be stat'ed, leaving `bytes` unspecified.
  bool read(const std::string& path, std::vector<uint8_t>& bytes, uint64_t max_bytes) const;

  // When `bytes` (the file at `path`) is a progressive JPEG that can be rewritten, replaces them
  // with the baseline rewrite and stores it; otherwise leaves them as they are. Never throws: a
  // file that cannot be rewritten or stored is decoded as it is, and counted in failures().
  void admit(const std::string& path, std::vector<uint8_t>& bytes) const;

  // The entry's file name for a source (for tests and for saying where a file went).
  std::string entry_path(const std::string& path) const;

  int64_t stored() const;    // entries written by this object
  int64_t failures() const;  // progressive files that could not be rewritten or stored

 private:
  std::string dir_;
  mutable std::atomic<int64_t> stored_{0};
  mutable std::atomic<int64_t> failures_{0};
};

}  // namespace crosstrain::data
