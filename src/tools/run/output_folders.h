#pragma once
// The folders `crosstrain run` writes into (--dump, --profile), made ready before the command
// starts, so that what can be checked is checked then (one line, exit 2) and never kills the
// user's training later:
//
//   OutputFolder dump = claim_output_folder(dir, "--dump");   // holds the folder's lock
//   prepare_dump_dir(dir, overwrite);
//
// claim_output_folder creates the folder (a dangling link, a file in the way, a read-only file
// system, no permission or no free space is std::invalid_argument naming the folder), writes and
// removes a probe file, and takes an exclusive lock on the folder for as long as the returned
// object lives: a second `crosstrain run` into the same folder is refused before it starts.
#include <string>

namespace crosstrain::run {

class OutputFolder {
 public:
  OutputFolder() = default;
  explicit OutputFolder(int fd) : fd_(fd) {}
  OutputFolder(OutputFolder&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutputFolder& operator=(OutputFolder&& other) noexcept;
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  ~OutputFolder();

 private:
  int fd_ = -1;
};

// `what` names the flag in messages ("--dump"). An empty dir claims nothing.
OutputFolder claim_output_folder(const std::string& dir, const std::string& what);

// Removes a dump's files from `dir` (index.jsonl, loss.jsonl, run.json, tensors/, and rank<N>/ or
// pid<N>/ folders holding a dump); throws std::invalid_argument when dir holds a dump and overwrite
// is false.
void prepare_dump_dir(const std::string& dir, bool overwrite);

// The same for a --profile folder: cycle<N>/ folders from an earlier run need overwrite.
void prepare_profile_dir(const std::string& dir, bool overwrite);

}  // namespace crosstrain::run
