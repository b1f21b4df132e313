#include "core/state_file.h"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

namespace crosstrain::core {

namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// An O_EXCL temporary file next to the target, removed unless committed.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    const fs::path dir = fs::path(target).parent_path();
    std::random_device rd;
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
      char suffix[32];
      std::snprintf(suffix, sizeof suffix, ".tmp.%08x%08x", rd(), rd());
      path_ = target + suffix;
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) throw std::runtime_error("cannot write " + target + ": " + errno_text());
    dir_ = dir.empty() ? "." : dir.string();
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw std::runtime_error("cannot write " + target_ + ": " + errno_text());
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void commit() {
    if (::fsync(fd_) != 0) throw std::runtime_error("cannot write " + target_ + " (fsync): " + errno_text());
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw std::runtime_error("cannot write " + target_ + " (close): " + errno_text());
    }
    fd_ = -1;
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      throw std::runtime_error("cannot write " + target_ + " (rename): " + errno_text());
    committed_ = true;
    const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);  // the rename itself survives a power cut
      ::close(dfd);
    }
  }

 private:
  std::string target_, path_, dir_;
  int fd_ = -1;
  bool committed_ = false;
};

// Where the archive's bytes go. The write callback must not throw: PyTorchStreamWriter's destructor
// writes the end of the archive, and an exception there would terminate the process. So the first
// error is kept and reported once the writer is done.
class ArchiveSink {
 public:
  explicit ArchiveSink(const std::string& path) : path_(path) {
    std::error_code ec;
    const auto st = fs::symlink_status(path, ec);
    if (fs::is_symlink(st)) {
      // Write through the link (its target is replaced atomically), never replace the link itself.
      path_ = fs::weakly_canonical(path, ec).string();
      if (ec) throw std::runtime_error("cannot write " + path + ": its link does not resolve");
    }
    const auto target = fs::status(path_, ec);
    if (fs::exists(target) && !fs::is_regular_file(target) && !fs::is_directory(target)) {
      // A device or FIFO: written in place, as a shell redirection would (no reader: an error).
      direct_fd_ = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (direct_fd_ < 0) throw std::runtime_error("cannot write " + path + ": " + errno_text());
      ::fcntl(direct_fd_, F_SETFL, ::fcntl(direct_fd_, F_GETFL) & ~O_NONBLOCK);
    } else if (fs::is_directory(target)) {
      throw std::runtime_error("cannot write " + path + ": it is a directory");
    } else {
      temp_ = std::make_unique<TempFile>(path_);
    }
  }
  ~ArchiveSink() {
    if (direct_fd_ >= 0) ::close(direct_fd_);
  }
  size_t write(const void* data, size_t n) noexcept {
    if (!error_.empty()) return n;
    try {
      if (temp_) {
        temp_->write(data, n);
      } else {
        const char* p = static_cast<const char*>(data);
        size_t left = n;
        while (left > 0) {
          const ssize_t w = ::write(direct_fd_, p, left);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) throw std::runtime_error("cannot write " + path_ + ": " + errno_text());
          p += w;
          left -= static_cast<size_t>(w);
        }
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    return n;
  }
  void commit() {
    if (!error_.empty()) throw std::runtime_error(error_);
    if (temp_) temp_->commit();
  }

 private:
  std::string path_;
  std::unique_ptr<TempFile> temp_;
  int direct_fd_ = -1;
  std::string error_;
};

}  // namespace

void save_state_file(const c10::IValue& state, const std::string& path) {
  // torch.save's layout: a zip with data.pkl (protocol 2, no TorchScript type tags, which
  // torch.load(weights_only=True) rejects) and one record per storage under data/.
  std::vector<char> pkl;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pkl.insert(pkl.end(), b, b + n); }, nullptr, nullptr,
                              nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  ArchiveSink sink(path);
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) { return sink.write(data, n); });
    writer.writeRecord("data.pkl", pkl.data(), pkl.size());
    writer.writeRecord("byteorder", "little", 6);
    const auto& tensors = pickler.tensorData();
    for (size_t i = 0; i < tensors.size(); ++i) {
      auto data = torch::jit::getWriteableTensorData(tensors[i]);
      writer.writeRecord("data/" + std::to_string(i), data.data(), data.sizeInBytes());
    }
    writer.writeEndOfFile();
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw std::runtime_error("cannot write " + path + ": " + what.substr(0, what.find('\n')));
  }
  sink.commit();
}

c10::IValue load_state_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw std::runtime_error(path + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw std::runtime_error(path + " is not a complete torch.save() archive (truncated or corrupt): " +
                             msg.substr(0, msg.find('\n')));
  }
}

}  // namespace crosstrain::core
