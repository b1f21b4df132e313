#include "tools/migrate/safe_files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace crosstrain::migrate {

namespace fs = std::filesystem;

namespace {

std::string os_error(const std::string& what, const fs::path& path) {
  return what + " " + path.string() + ": " + std::strerror(errno);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_regular_file(const fs::path& path, size_t max_bytes) {
  Fd f;
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) throw std::runtime_error(os_error("cannot read", path));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw std::runtime_error(os_error("cannot read", path));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(path.string() + " is not a regular file");
  if (static_cast<unsigned long long>(st.st_size) > max_bytes)
    throw FileTooLarge(path.string() + " has " + std::to_string(st.st_size) + " bytes, above the limit of " +
                       std::to_string(max_bytes) + " (--max-file-size)");
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(os_error("cannot read", path));
    if (n == 0) break;  // the file shrank meanwhile
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

void write_atomic(const fs::path& path, const std::string& bytes, const fs::path& like) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000);
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (f.fd < 0) throw std::runtime_error(os_error("cannot write", tmp));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string message = os_error("cannot write", tmp);
      ::unlink(tmp.c_str());
      throw std::runtime_error(message);
    }
    done += static_cast<size_t>(n);
  }
  struct stat st {};
  mode_t mode = ::stat(like.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  ::fchmod(f.fd, mode);
  ::close(f.fd);
  f.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string message = os_error("cannot replace", path);
    ::unlink(tmp.c_str());
    throw std::runtime_error(message);
  }
}

void make_real_directories(const fs::path& root, const fs::path& relative_dir) {
  fs::path at = root;
  std::error_code ec;
  fs::create_directories(root, ec);
  for (const auto& part : relative_dir) {
    if (part.empty() || part == ".") continue;
    at /= part;
    if (::mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) throw std::runtime_error(os_error("cannot create", at));
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) throw std::runtime_error(os_error("cannot create", at));
    if (S_ISLNK(st.st_mode))
      throw std::runtime_error("refusing to write through the symbolic link " + at.string() + " in the output tree");
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(at.string() + " is in the way: not a directory");
  }
}

}  // namespace crosstrain::migrate
