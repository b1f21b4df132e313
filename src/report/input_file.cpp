#include "report/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace crosstrain::report {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string byte_size_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4 && bytes % 1024 == 0) {
    v /= 1024;
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

int open_regular_file(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, std::string("is ") + kind_of(st.st_mode) + ", not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

void read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what, std::vector<uint8_t>& out) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  if (size > max_bytes) {
    ::close(fd);
    fail(path, what + " of " + std::to_string(size) + " bytes is larger than the limit of " + byte_size_text(max_bytes));
  }
  // Read up to EOF (the file may change after fstat), never past the limit.
  out.resize(static_cast<size_t>(size) + 1);
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (used > max_bytes) break;
      out.resize(std::min<uint64_t>(static_cast<uint64_t>(out.size()) * 2, max_bytes + 1));
    }
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail(path, std::string("read error: ") + std::strerror(err));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  if (used > max_bytes) fail(path, what + " grew past the limit of " + byte_size_text(max_bytes) + " while being read");
  out.resize(used);
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  std::vector<uint8_t> bytes;
  read_regular_file(path, max_bytes, what, bytes);
  return std::string(bytes.begin(), bytes.end());
}

std::string resolve_inside(const std::string& root, const std::string& relative) {
  if (relative.empty()) fail(root, "an empty file name");
  if (relative[0] == '/') fail(root, "'" + relative + "' is an absolute path; paths must stay inside " + root);
  for (size_t start = 0; start <= relative.size();) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    if (relative.compare(start, end - start, "..") == 0 && end - start == 2)
      fail(root, "'" + relative + "' leads out of " + root + " ('..')");
    start = end + 1;
  }
  char buf[PATH_MAX];
  if (!::realpath(root.c_str(), buf)) fail(root, std::string("cannot resolve: ") + std::strerror(errno));
  const std::string real_root = buf;
  const std::string joined = root + "/" + relative;
  if (!::realpath(joined.c_str(), buf)) fail(joined, std::string("cannot open: ") + std::strerror(errno));
  const std::string real = buf;
  const std::string prefix = real_root == "/" ? "/" : real_root + "/";
  if (real.compare(0, prefix.size(), prefix) != 0)
    fail(joined, "a symbolic link leads out of " + root + " (to " + real + ")");
  return real;
}

bool path_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec), b = fs::weakly_canonical(fs::absolute(outer), ec);
  auto ai = a.begin(), bi = b.begin();
  bool below = true;
  for (; bi != b.end(); ++ai, ++bi) {
    if (bi->empty() && std::next(bi) == b.end()) break;  // trailing separator
    if (ai == a.end() || *ai != *bi) {
      below = false;
      break;
    }
  }
  if (below) return true;
  // Another name of the same file: a hard link of `outer`, or of a file below it.
  struct stat in {}, out {};
  if (::stat(a.c_str(), &in) != 0 || !S_ISREG(in.st_mode) || ::stat(b.c_str(), &out) != 0) return false;
  const auto same = [&](const struct stat& st) { return st.st_dev == in.st_dev && st.st_ino == in.st_ino; };
  if (!S_ISDIR(out.st_mode)) return same(out);
  if (in.st_nlink < 2) return false;  // its only name is outside
  for (auto it = fs::recursive_directory_iterator(b, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (it->is_regular_file(ec) && ::lstat(it->path().c_str(), &st) == 0 && same(st)) return true;
  }
  return false;
}

}  // namespace crosstrain::report
