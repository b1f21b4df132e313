#include "tools/train/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace crosstrain::train {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// The holder's own words, first line only, printable characters only: the file is another
// process's, and may hold anything.
std::string holder_of(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  std::string out;
  for (ssize_t i = 0; i < n && buf[i] != '\n'; ++i)
    if (buf[i] >= 0x20 && buf[i] < 0x7f) out += buf[i];
  return out.empty() ? "a process that has not said which" : out;
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(const fs::path& dir, std::string* note) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw std::runtime_error("cannot create --checkpoint-dir " + dir.string() + (ec ? ": " + ec.message() : ""));
  const fs::path path = dir / kFileName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  int rc;
  do rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw std::runtime_error("--checkpoint-dir " + dir.string() + " is in use by another trainer (" + holder +
                               "); two runs in one directory would overwrite each other's checkpoints: wait for it "
                               "to end, or give this run its own --checkpoint-dir");
    if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
      if (note)
        *note = "the file system of --checkpoint-dir " + dir.string() + " does not support locks (" +
                std::strerror(err) + "): make sure no other trainer writes to it";
      return;
    }
    throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
  }
  const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host_name() + "\n";
  // Only a courtesy to the next trainer: the lock holds whether or not these bytes arrive.
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the lock
}

}  // namespace crosstrain::train
