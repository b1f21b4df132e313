#include "tools/run/output_folders.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace crosstrain::run {

namespace {

// A folder needs room for at least an index header and a few records.
constexpr unsigned long long kMinFreeBytes = 1ull << 20;

[[noreturn]] void refuse(const std::string& what, const std::string& dir, const std::string& why) {
  throw std::invalid_argument(what + " " + dir + ": " + why);
}

void make_folder(const std::string& dir, const std::string& what) {
  const fs::path p(dir);
  std::error_code ec;
  const auto link = fs::symlink_status(p, ec);
  if (fs::is_symlink(link) && !fs::exists(p, ec))
    refuse(what, dir, "a link to " + fs::read_symlink(p, ec).string() + ", which does not exist");
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) refuse(what, dir, "exists and is not a folder");
    return;
  }
  fs::create_directories(p, ec);
  if (ec) refuse(what, dir, "cannot be created (" + ec.message() + ")");
}

void probe_write(const std::string& dir, const std::string& what) {
  const std::string probe = (fs::path(dir) / (".crosstrain-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) refuse(what, dir, std::string("cannot be written (") + std::strerror(errno) + ")");
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int saved = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) refuse(what, dir, std::string("cannot be written (") + std::strerror(saved) + ")");
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0 &&
      static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize < kMinFreeBytes)
    refuse(what, dir, "no space left on its file system");
}

}  // namespace

OutputFolder& OutputFolder::operator=(OutputFolder&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutputFolder::~OutputFolder() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

OutputFolder claim_output_folder(const std::string& dir, const std::string& what) {
  if (dir.empty()) return {};
  make_folder(dir, what);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) refuse(what, dir, std::string("cannot be opened (") + std::strerror(errno) + ")");
  OutputFolder folder(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    refuse(what, dir, errno == EWOULDBLOCK ? "another crosstrain run is writing there; wait for it or choose another folder"
                                           : std::string("cannot be locked (") + std::strerror(errno) + ")");
  probe_write(dir, what);
  return folder;
}

namespace {

bool holds_dump(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "index.jsonl", ec);
}

}  // namespace

void prepare_dump_dir(const std::string& dir, bool overwrite) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) return;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument("--dump " + dir + " exists and is not a folder");
  std::vector<fs::path> dumps;
  if (holds_dump(root)) dumps.push_back(root);
  static const std::regex process_dir(R"((rank|pid)[0-9]+)");
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory() && std::regex_match(it->path().filename().string(), process_dir) && holds_dump(it->path()))
      dumps.push_back(it->path());
  if (dumps.empty()) return;
  if (!overwrite)
    throw std::invalid_argument("--dump " + dir + " already holds a dump (--dump-overwrite replaces it)");
  for (const auto& d : dumps) {
    for (const char* name : {"index.jsonl", "loss.jsonl", "run.json", ".crosstrain-run"}) fs::remove(d / name, ec);
    fs::remove_all(d / "tensors", ec);
    if (d != root) fs::remove(d, ec);  // only when nothing else is left in it
  }
}

void prepare_profile_dir(const std::string& dir, bool overwrite) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) return;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument("--profile " + dir + " exists and is not a folder");
  static const std::regex cycle_dir(R"(cycle[0-9]+)");
  std::vector<fs::path> cycles;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory() && std::regex_match(it->path().filename().string(), cycle_dir)) cycles.push_back(it->path());
  if (cycles.empty()) return;
  if (!overwrite)
    throw std::invalid_argument("--profile " + dir + " already holds traces (" + cycles.front().filename().string() +
                                "/...; --profile-overwrite replaces them)");
  for (const auto& c : cycles) fs::remove_all(c, ec);
}

}  // namespace crosstrain::run
