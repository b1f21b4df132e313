#include "tools/analyze/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <unordered_map>

#include "tools/analyze/json_scanner.h"
#include "tools/analyze/op_names.h"
#include "tools/analyze/trace_parser.h"

namespace crosstrain::analyze {

namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads a whole file, inflating gzip; leaves a NUL after the content for the scanner's sentinel.
std::string read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw std::runtime_error(path + ": cannot open");
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f.get());
  std::string data;
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    // The gzip trailer holds the uncompressed size mod 2^32: a good first allocation, so the
    // buffer rarely grows (each growth copies, briefly holding old and new).
    size_t hint = 0;
    unsigned char isize[4] = {0, 0, 0, 0};
    if (std::fseek(f.get(), -4, SEEK_END) == 0 && std::fread(isize, 1, 4, f.get()) == 4)
      hint = static_cast<size_t>(isize[0]) | static_cast<size_t>(isize[1]) << 8 | static_cast<size_t>(isize[2]) << 16 |
             static_cast<size_t>(isize[3]) << 24;
    f.reset();
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) throw std::runtime_error(path + ": cannot open");
    gzbuffer(gz, 1 << 20);
    size_t used = 0;
    data.resize(std::max<size_t>({hint + (1 << 20), std::filesystem::file_size(path) * 2, 1 << 20}));
    for (;;) {
      if (data.size() - used < (1 << 16)) data.resize(data.size() + data.size() / 2);
      unsigned want = static_cast<unsigned>(std::min<size_t>(data.size() - used, 1u << 30));
      int n = gzread(gz, &data[used], want);
      if (n < 0) {
        int err = 0;
        std::string msg = gzerror(gz, &err);
        gzclose(gz);
        throw std::runtime_error(path + ": corrupt gzip data after " + std::to_string(used) +
                                 " uncompressed bytes: " + msg);
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
    }
    // gzread returns what it has at a truncated stream's end; gzclose_r's status tells.
    int rc = gzclose_r(gz);
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error(path + ": corrupt gzip stream");
    if (rc == Z_BUF_ERROR) throw std::runtime_error(path + ": truncated gzip stream after " + std::to_string(used) + " bytes");
    data.resize(used);
  } else {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    if (ec) throw std::runtime_error(path + ": cannot stat: " + ec.message());
    data.resize(size);
    std::rewind(f.get());
    if (size > 0 && std::fread(&data[0], 1, size, f.get()) != size) throw std::runtime_error(path + ": read error");
  }
  return data;  // std::string keeps a NUL at data()[size()]: the scanner's sentinel
}

// Appends a separately parsed later part of the same trace: strings and threads are re-interned,
// times moved onto this trace's time base.
void append_trace(Trace& into, const Trace& part) {
  std::vector<uint32_t> strings(part.strings.size());
  for (uint32_t i = 0; i < part.strings.size(); ++i) strings[i] = into.strings.intern(part.strings.str(i));
  // String pids/tids are ids into the part's own string table.
  auto id_key = [&](int64_t v) { return v >= kStringIdFlag ? kStringIdFlag + strings[static_cast<size_t>(v - kStringIdFlag)] : v; };
  std::vector<uint32_t> tracks(part.tracks.size());
  for (uint32_t i = 0; i < part.tracks.size(); ++i)
    tracks[i] = into.track_of({id_key(part.tracks[i].key.pid), id_key(part.tracks[i].key.tid)});
  double shift = 0;
  if (!into.time_base_set) {
    into.time_base_us = part.time_base_us;
    into.time_base_set = part.time_base_set;
  } else if (part.time_base_set) {
    shift = static_cast<double>(part.time_base_us - into.time_base_us);
  }
  into.spans.reserve(into.spans.size() + part.spans.size());
  for (Span s : part.spans) {
    s.name = strings[s.name], s.cat = strings[s.cat], s.shapes = strings[s.shapes], s.dtypes = strings[s.dtypes];
    s.track = tracks[s.track];
    s.ts += shift;
    into.spans.push_back(s);
  }
  for (Flow f : part.flows) {
    f.cat = strings[f.cat], f.track = tracks[f.track], f.ts += shift;
    into.flows.push_back(f);
  }
  for (MemorySample m : part.memory) {
    m.ts += shift;
    into.memory.push_back(m);
  }
  for (const auto& [pid, name] : part.process_names) into.process_names[id_key(pid)] = name;
}

// The second half of the traceEvents array, parsed on another thread from an event start guessed
// in the middle of the file. The guess is checked when the main parse gets there (see
// TraceParser): a wrong guess, or any failure here, only costs the wasted work.
class SecondHalf : public SplitPoint {
 public:
  SecondHalf(const char* data, size_t size, uint64_t start, const std::string& name)
      : start_(start), scanner_(data, size, name) {
    scanner_.seek(start);
    worker_ = std::thread([this] {
      try {
        TraceParser parser(scanner_, part_);
        end_ = parser.parse_events_to_array_end(stop_);
        ok_ = true;
      } catch (...) {
        ok_ = false;
      }
    });
  }
  ~SecondHalf() override {
    stop_ = true;
    if (worker_.joinable()) worker_.join();
  }
  SecondHalf(const SecondHalf&) = delete;
  SecondHalf& operator=(const SecondHalf&) = delete;

  uint64_t offset() const override { return start_; }
  bool adopt(JsonScanner& js, Trace& into) override {
    worker_.join();
    if (!ok_) return false;
    append_trace(into, part_);
    part_ = Trace();
    js.seek(end_);
    return true;
  }
  void abandon() override { stop_ = true; }

 private:
  uint64_t start_;
  JsonScanner scanner_;
  Trace part_;
  std::atomic<bool> stop_{false};
  bool ok_ = false;
  uint64_t end_ = 0;
  std::thread worker_;
};

// An offset just after "}" <ws> "," <ws> at or after the middle: likely the start of an event.
uint64_t guess_event_start(const char* data, size_t size) {
  const size_t limit = std::min(size, size / 2 + (size_t{16} << 20));
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  for (size_t i = size / 2; i < limit; ++i) {
    if (data[i] != '}') continue;
    size_t k = i + 1;
    while (k < size && ws(data[k])) ++k;
    if (k >= size || data[k] != ',') continue;
    ++k;
    while (k < size && ws(data[k])) ++k;
    if (k < size && data[k] == '{') return k;
  }
  return 0;
}

void parse_into(const char* data, size_t size, const std::string& name, const ReadOptions& opt, Trace& t) {
  std::unique_ptr<SecondHalf> second;
  if (size >= opt.parallel_min_bytes && size >= 64) {
    uint64_t start = guess_event_start(data, size);
    if (start > 0) second = std::make_unique<SecondHalf>(data, size, start, name);
  }
  JsonScanner js(data, size, name);
  TraceParser parser(js, t);
  parser.set_split(second.get());
  parser.parse_document();
  t.bytes_read = size;
  classify_spans(t);
}

// A plain file mapped read-only: no copy, and the kernel zero-fills the tail of the last page,
// which gives the scanner its NUL sentinel for free. Files ending exactly on a page boundary
// (no tail) and files that cannot be mapped are read instead.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    struct stat st {};
    long page = ::sysconf(_SC_PAGESIZE);
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 2 && page > 0 && st.st_size % page != 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        const auto* bytes = static_cast<const unsigned char*>(p);
        if (bytes[0] == 0x1f && bytes[1] == 0x8b) {
          ::munmap(p, static_cast<size_t>(st.st_size));  // gzip: inflate through the read path
        } else {
          ::madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
          data_ = static_cast<const char*>(p);
          size_ = static_cast<size_t>(st.st_size);
        }
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Trace parse_trace(std::string_view data, const std::string& name, const ReadOptions& options) {
  std::string copy(data);
  Trace t;
  t.path = name;
  parse_into(copy.c_str(), copy.size(), name, options, t);
  return t;
}

Trace read_trace_file(const std::string& path, const ReadOptions& options) {
  Trace t;
  t.path = path;
  MappedFile mapped(path);
  if (mapped.data() != nullptr) {
    parse_into(mapped.data(), mapped.size(), path, options, t);
  } else {
    std::string bytes = read_file_bytes(path);
    parse_into(bytes.c_str(), bytes.size(), path, options, t);
  }
  return t;
}

std::vector<Trace> read_traces(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error(path + ": no such file or folder");
  if (!fs::is_directory(path, ec)) {
    std::vector<Trace> one;
    one.push_back(read_trace_file(path));
    return one;
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (has_suffix(name, ".json") || has_suffix(name, ".json.gz")) files.push_back(entry.path().string());
  }
  if (ec) throw std::runtime_error(path + ": cannot list: " + ec.message());
  if (files.empty()) throw std::runtime_error(path + ": no trace files (*.json, *.json.gz) in this folder");
  std::sort(files.begin(), files.end());
  std::vector<Trace> traces;
  for (const auto& f : files) traces.push_back(read_trace_file(f));
  bool ranked = std::all_of(traces.begin(), traces.end(), [](const Trace& t) { return t.rank >= 0; });
  if (ranked)
    std::stable_sort(traces.begin(), traces.end(), [](const Trace& a, const Trace& b) { return a.rank < b.rank; });
  return traces;
}

}  // namespace crosstrain::analyze
