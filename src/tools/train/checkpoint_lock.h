#pragma once
// One trainer per checkpoint directory (docs/CHECKPOINT.md, "Nothing lost").
//
//   CheckpointDirLock lock(config.checkpoint_dir);  // before --resume reads the directory
//   ... train, write checkpoints ...                 // released when `lock` goes away or the process dies
//
// The lock is flock(2) on DIR/crosstrain.lock, held from before the directory is read for
// --resume until the run ends; the kernel drops it when the process dies, so a crashed run never
// leaves a stale lock behind. The holder writes "pid N on host H" into the file so that a second
// trainer can say who holds it. Only the rank that writes checkpoints (rank 0) takes it.
#include <filesystem>
#include <string>

namespace crosstrain::train {

class CheckpointDirLock {
 public:
  // Creates `dir` if needed and takes the lock. std::runtime_error when another process holds it,
  // naming that process (pid and host) and the way out; also when the lock file cannot be opened.
  // A file system without locks (ENOLCK, EOPNOTSUPP) is not an error: `note` then says why the
  // directory is not protected.
  explicit CheckpointDirLock(const std::filesystem::path& dir, std::string* note = nullptr);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  static constexpr const char* kFileName = "crosstrain.lock";

 private:
  int fd_ = -1;
};

}  // namespace crosstrain::train
