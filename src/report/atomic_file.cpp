// write_file_atomic(), write_stdout() and check_writable(): the contract is in output.h.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>

#include "report/input_file.h"
#include "report/output.h"

namespace crosstrain::report {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write " + path + ": " + why);
}

std::string errno_text(int err) { return std::strerror(err); }

// What sits at a path once symbolic links are followed.
struct Target {
  std::string path;  // the final target (equals the given path when it is no link)
  bool exists = false;
  struct stat st {};
};

Target resolve(const std::string& path) {
  if (path.empty()) fail("''", "empty path");
  Target t;
  t.path = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno == ENOENT) return t;
    fail(path, errno_text(errno));
  }
  if (S_ISLNK(lst.st_mode)) {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf)) {
      const int err = errno;
      if (err == ENOENT) fail(path, "it is a dangling symbolic link (its target does not exist)");
      fail(path, "cannot follow the symbolic link: " + errno_text(err));
    }
    t.path = buf;
    if (::stat(t.path.c_str(), &lst) != 0) fail(path, errno_text(errno));
    // A link to a regular file is refused: a link planted where a report goes must not redirect
    // the write to a file elsewhere. Links to devices and FIFOs (/dev/stdout) are written through.
    if (S_ISREG(lst.st_mode))
      fail(path, "it is a symbolic link (to " + t.path + "); write to the target itself or remove the link");
  }
  t.exists = true;
  t.st = lst;
  if (S_ISDIR(lst.st_mode)) fail(path, "it is a directory");
  if (S_ISBLK(lst.st_mode)) fail(path, "it is a block device");
  return t;
}

void split_path(const std::string& path, std::string& dir, std::string& base) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    dir = ".";
    base = path;
  } else {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    base = path.substr(slash + 1);
  }
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, errno_text(errno));
    }
    done += static_cast<size_t>(n);
  }
}

// What a writer does with the open file: stream its content through the sink.
using Producer = std::function<void(const ByteSink&)>;

void produce_into(int fd, const Producer& produce, const std::string& path) {
  produce([&](const char* data, size_t size) { write_all(fd, data, size, path); });
}

// A character device, FIFO or socket: written in place. O_NONBLOCK on open makes a FIFO without
// a reader fail (ENXIO) instead of blocking; the writes themselves block as usual.
void write_special(const std::string& shown, const std::string& path, const Producer& produce) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO) fail(shown, "it is a FIFO that no process reads");
    fail(shown, errno_text(errno));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  try {
    produce_into(fd, produce, shown);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0 && errno != EINTR) fail(shown, errno_text(errno));
}

std::string temp_prefix(const std::string& base) { return "." + base + ".tmp-"; }

// Removes ".BASE.tmp-PID-XXXXXX" files in `dir` left by processes that no longer run.
void remove_stale_temps(const std::string& dir, const std::string& base) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const std::string prefix = temp_prefix(base);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '-' || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours)
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(full.c_str());
  }
  ::closedir(d);
}

// Creates the temporary file with O_EXCL under a random name; returns its fd and sets `tmp`.
int create_temp(const std::string& dir, const std::string& base, const std::string& shown, std::string& tmp) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string suffix;
    for (int i = 0; i < 12; ++i) suffix += kChars[rd() % (sizeof(kChars) - 1)];
    tmp = dir + "/" + temp_prefix(base) + std::to_string(::getpid()) + "-" + suffix;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) fail(shown, "cannot create a temporary file in " + dir + ": " + errno_text(errno));
  }
  fail(shown, "cannot create a temporary file in " + dir);
}

void write_replacing(const std::string& shown, const Target& t, const Producer& produce) {
  std::string dir, base;
  split_path(t.path, dir, base);
  if (base.empty()) fail(shown, "no file name");
  remove_stale_temps(dir, base);
  std::string tmp;
  const int fd = create_temp(dir, base, shown, tmp);
  try {
    if (t.exists && ::fchmod(fd, t.st.st_mode & 07777) != 0) fail(shown, errno_text(errno));
    produce_into(fd, produce, shown);
    if (::fsync(fd) != 0) fail(shown, errno_text(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(shown, errno_text(err));
  }
  if (::rename(tmp.c_str(), t.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(shown, errno_text(err));
  }
  // The rename is durable only once the directory is on disk too.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (::fsync(dfd) != 0 && errno != EINVAL && errno != EROFS) {
      const int err = errno;
      ::close(dfd);
      fail(shown, "fsync of " + dir + ": " + errno_text(err));
    }
    ::close(dfd);
  }
}

bool is_special(const struct stat& st) {
  return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::function<void(const ByteSink&)>& produce) {
  const Target t = resolve(path);
  if (t.exists && is_special(t.st)) {
    write_special(path, t.path, produce);
    return;
  }
  if (t.exists && !S_ISREG(t.st.st_mode)) fail(path, "it is not a regular file");
  write_replacing(path, t, produce);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

void refuse_input_as_output(const std::string& what, const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return;
  struct stat out_st {}, in_st {};
  const bool out_exists = ::stat(output.c_str(), &out_st) == 0;
  for (const auto& input : inputs) {
    if (input.empty()) continue;
    // A folder read as an input is replaced only by writing the folder itself (a report beside the
    // dump inside it is another file); a file by any name of it (path_within: links, hard links).
    const bool folder = ::stat(input.c_str(), &in_st) == 0 && S_ISDIR(in_st.st_mode);
    const bool same = folder ? out_exists && out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino
                             : path_within(output, input);
    if (same)
      throw std::invalid_argument(what + " " + output + " would write into the input " + input +
                                  " (one of the files read): writing it would destroy that input; choose another path");
  }
}

void check_writable(const std::string& path) {
  if (path == "-") return;
  const Target t = resolve(path);
  if (t.exists && is_special(t.st)) {
    if (::access(t.path.c_str(), W_OK) != 0) fail(path, errno_text(errno));
    return;
  }
  std::string dir, base;
  split_path(t.path, dir, base);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) fail(path, "directory " + dir + ": " + errno_text(errno));
  if (!S_ISDIR(st.st_mode)) fail(path, dir + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(path, "directory " + dir + ": " + errno_text(errno));
}

bool flush_stdout(std::string* error) {
  std::cout.flush();
  const bool cout_ok = !std::cout.fail();
  errno = 0;
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int err = errno;
  if (cout_ok && c_ok) return true;
  if (error) *error = "cannot write to standard output: " + (err ? errno_text(err) : std::string("write failed"));
  return false;
}

void write_stdout(const std::string& bytes) {
  std::cout.flush();
  const size_t n = std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  const int err = errno;
  std::string why;
  if (n != bytes.size()) throw std::runtime_error("cannot write to standard output: " + errno_text(err));
  if (!flush_stdout(&why)) throw std::runtime_error(why);
}

}  // namespace crosstrain::report
