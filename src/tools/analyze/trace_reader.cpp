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
#include <unordered_map>

#include "tools/analyze/json_scanner.h"
#include "tools/analyze/op_names.h"

namespace crosstrain::analyze {

namespace {

// Beyond these a trace is corrupt, not merely long: ~3 years of epoch microseconds past 2100 and
// a single event lasting more than 11 days.
constexpr double kMaxAbsTimestampUs = 1e17;
constexpr double kMaxDurationUs = 1e12;

struct EventFields {
  char ph = 0;
  uint32_t name = 0, cat = 0, shapes = 0, dtypes = 0, meta_name = 0;
  bool has_ts = false, has_dur = false, has_pid = false, has_id = false;
  JsonNumber ts;
  double dur = 0;
  int64_t pid = 0, tid = 0;
  uint64_t id = 0;
  int64_t correlation = -1;
  bool has_memory = false;
  int64_t total_allocated = 0, total_reserved = 0, bytes = 0;
  int32_t device_type = 0, device_id = -1;
};

class TraceParser {
 public:
  TraceParser(JsonScanner& js, Trace& trace) : js_(js), t_(trace) {}

  void parse_document() {
    char c = js_.peek();
    if (c == '[') {
      t_.format = TraceFormat::LegacyAutograd;  // refined after reading (Ascend looks the same)
      parse_event_array();
    } else if (c == '{') {
      parse_top_object();
    } else if (c == '\0' && js_.at_end()) {
      js_.fail("empty file");
    } else {
      js_.fail("not a trace: expected a JSON object with \"traceEvents\" or an array of events");
    }
    if (!js_.at_end()) js_.fail("unexpected data after the end of the trace");
  }

 private:
  int64_t read_id_key() {
    if (js_.peek() == '"') return kStringIdFlag + t_.strings.intern(js_.read_string());
    uint64_t at = js_.offset();
    JsonNumber n = js_.read_number();
    if (std::fabs(n.value) >= 4e18 || n.fraction != 0) js_.fail_at(at, "pid/tid out of range");
    return n.whole;
  }

  void parse_top_object() {
    js_.expect('{', "");
    bool first = true, saw_events = false;
    while (js_.next_member(first, '}')) {
      std::string_view key = js_.read_string();
      js_.expect(':', "after an object key");
      if (key == "traceEvents") {
        if (js_.peek() != '[') js_.fail("\"traceEvents\" is not an array");
        parse_event_array();
        saw_events = true;
      } else if (key == "deviceProperties") {
        parse_device_properties();
      } else if (key == "distributedInfo") {
        parse_distributed_info();
      } else {
        js_.skip_value();
      }
    }
    if (!saw_events) js_.fail("not a trace: the top-level object has no \"traceEvents\" array");
  }

  void parse_device_properties() {
    if (js_.peek() != '[') return js_.skip_value();
    js_.expect('[', "");
    bool first = true;
    while (js_.next_member(first, ']')) {
      if (js_.peek() != '{') {
        js_.skip_value();
        continue;
      }
      js_.expect('{', "");
      bool f2 = true;
      while (js_.next_member(f2, '}')) {
        std::string key(js_.read_string());
        js_.expect(':', "after an object key");
        char v = js_.peek();
        if (key == "computeMajor" && (v == '-' || (v >= '0' && v <= '9'))) {
          JsonNumber n = js_.read_number();
          t_.device_compute_major = static_cast<int>(std::clamp(n.value, 0.0, 1000.0));
        } else if (key == "name" && v == '"') {
          t_.device_name = std::string(js_.read_string());
        } else {
          js_.skip_value();
        }
      }
    }
  }

  void parse_distributed_info() {
    if (js_.peek() != '{') return js_.skip_value();
    js_.expect('{', "");
    bool first = true;
    while (js_.next_member(first, '}')) {
      std::string key(js_.read_string());
      js_.expect(':', "after an object key");
      char v = js_.peek();
      bool numeric = v == '-' || (v >= '0' && v <= '9');
      if ((key == "rank" || key == "world_size") && numeric) {
        JsonNumber n = js_.read_number();
        int value = static_cast<int>(std::clamp(n.value, -1.0, 1e7));
        (key == "rank" ? t_.rank : t_.world_size) = value;
      } else {
        js_.skip_value();
      }
    }
  }

  void parse_event_array() {
    js_.expect('[', "");
    bool first = true;
    while (js_.next_member(first, ']')) parse_event();
  }

  void parse_args(EventFields& e) {
    if (js_.peek() != '{') return js_.skip_value();
    js_.expect('{', "");
    bool first = true;
    while (js_.next_member(first, '}')) {
      std::string_view key = js_.read_string();
      js_.expect(':', "after an object key");
      char v = js_.peek();
      bool numeric = v == '-' || (v >= '0' && v <= '9') || v == '"';
      if (key == "Input Dims") {
        e.shapes = t_.strings.intern(js_.read_compact_value());
      } else if (key == "Input type") {
        e.dtypes = t_.strings.intern(js_.read_compact_value());
      } else if (key == "correlation" && v != '"' && numeric) {
        e.correlation = read_clamped_int();
      } else if (key == "Total Allocated" && numeric) {
        e.total_allocated = read_clamped_int(), e.has_memory = true;
      } else if (key == "Total Reserved" && numeric) {
        e.total_reserved = read_clamped_int();
      } else if (key == "Bytes" && numeric) {
        e.bytes = read_clamped_int();
      } else if (key == "Device Type" && numeric) {
        e.device_type = static_cast<int32_t>(std::clamp<int64_t>(read_clamped_int(), -1, 1 << 20));
      } else if (key == "Device Id" && numeric) {
        e.device_id = static_cast<int32_t>(std::clamp<int64_t>(read_clamped_int(), -1, 1 << 20));
      } else if (key == "name" && v == '"') {
        e.meta_name = t_.strings.intern(js_.read_string());
      } else {
        js_.skip_value();
      }
    }
  }

  int64_t read_clamped_int() {
    JsonNumber n = js_.read_number_or_numeric_string();
    return static_cast<int64_t>(std::clamp(n.value, -9e18, 9e18));
  }

  void parse_event() {
    uint64_t at = js_.offset();
    if (js_.peek() != '{') js_.fail("expected a trace event object");
    js_.expect('{', "");
    EventFields e;
    bool first = true;
    while (js_.next_member(first, '}')) {
      std::string_view key = js_.read_string();
      js_.expect(':', "after an object key");
      if (key == "ph") {
        std::string_view ph = js_.read_string();
        e.ph = ph.size() == 1 ? ph[0] : '?';
      } else if (key == "name") {
        if (js_.peek() == '"') e.name = t_.strings.intern(js_.read_string());
        else js_.skip_value();
      } else if (key == "cat") {
        if (js_.peek() == '"') e.cat = t_.strings.intern(js_.read_string());
        else js_.skip_value();
      } else if (key == "pid") {
        e.pid = read_id_key(), e.has_pid = true;
      } else if (key == "tid") {
        e.tid = read_id_key();
      } else if (key == "ts") {
        e.ts = js_.read_number_or_numeric_string(), e.has_ts = true;
      } else if (key == "dur") {
        e.dur = js_.read_number_or_numeric_string().value, e.has_dur = true;
      } else if (key == "args") {
        parse_args(e);
      } else if (key == "id") {
        if (js_.peek() == '"') {
          std::string_view s = js_.read_string();
          e.id = std::hash<std::string_view>()(s);
        } else {
          e.id = static_cast<uint64_t>(read_clamped_int());
        }
        e.has_id = true;
      } else {
        js_.skip_value();
      }
    }
    commit(e, at);
  }

  double relative_ts(const JsonNumber& ts) {
    if (!t_.time_base_set) {
      t_.time_base_us = ts.whole;
      t_.time_base_set = true;
    }
    return static_cast<double>(ts.whole - t_.time_base_us) + ts.fraction;
  }

  void check_time(const EventFields& e, uint64_t at) {
    if (!e.has_ts) js_.fail_at(at, "event without \"ts\"");
    if (!std::isfinite(e.ts.value) || std::fabs(e.ts.value) > kMaxAbsTimestampUs)
      js_.fail_at(at, "absurd timestamp " + std::to_string(e.ts.value));
  }

  void commit(EventFields& e, uint64_t at) {
    switch (e.ph) {
      case 'X': {
        check_time(e, at);
        if (!e.has_dur) js_.fail_at(at, "complete event (\"ph\": \"X\") without \"dur\"");
        if (!std::isfinite(e.dur) || e.dur < 0 || e.dur > kMaxDurationUs)
          js_.fail_at(at, "absurd duration " + std::to_string(e.dur));
        Span s;
        s.ts = relative_ts(e.ts);
        s.dur = e.dur;
        s.name = e.name, s.cat = e.cat, s.shapes = e.shapes, s.dtypes = e.dtypes;
        s.track = t_.track_of({e.pid, e.tid});
        s.correlation = e.correlation;
        t_.spans.push_back(s);
        return;
      }
      case 'B':
      case 'E': {
        check_time(e, at);
        uint32_t track = t_.track_of({e.pid, e.tid});
        auto& stack = open_[track];
        if (e.ph == 'B') {
          Span s;
          s.ts = relative_ts(e.ts);
          s.name = e.name, s.cat = e.cat, s.shapes = e.shapes, s.dtypes = e.dtypes, s.track = track;
          s.correlation = e.correlation;
          stack.push_back(s);
        } else if (!stack.empty()) {
          Span s = stack.back();
          stack.pop_back();
          s.dur = std::max(0.0, relative_ts(e.ts) - s.ts);
          t_.spans.push_back(s);
        }
        return;
      }
      case 'i':
      case 'I':
      case 'n': {
        if (!e.has_memory) return;
        check_time(e, at);
        MemorySample m;
        m.ts = relative_ts(e.ts);
        m.total_allocated = e.total_allocated, m.total_reserved = e.total_reserved, m.bytes = e.bytes;
        m.device_type = e.device_type, m.device_id = e.device_id;
        t_.memory.push_back(m);
        return;
      }
      case 's':
      case 'f':
      case 't': {
        if (!e.has_id) return;
        check_time(e, at);
        Flow f;
        f.ts = relative_ts(e.ts);
        f.id = e.id, f.cat = e.cat, f.phase = e.ph;
        f.track = t_.track_of({e.pid, e.tid});
        t_.flows.push_back(f);
        return;
      }
      case 'M': {
        if (e.has_pid && e.meta_name != 0 && t_.strings.str(e.name) == "process_name")
          t_.process_names[e.pid] = t_.strings.str(e.meta_name);
        return;
      }
      case 0: js_.fail_at(at, "trace event without \"ph\"");
      default: return;  // counters, async and object events carry nothing the analysis uses
    }
  }

  JsonScanner& js_;
  Trace& t_;
  std::unordered_map<uint32_t, std::vector<Span>> open_;
};

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
    f.reset();
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) throw std::runtime_error(path + ": cannot open");
    gzbuffer(gz, 1 << 20);
    size_t used = 0;
    data.resize(std::max<size_t>(std::filesystem::file_size(path) * 4, 1 << 20));
    for (;;) {
      if (data.size() - used < (1 << 20)) data.resize(data.size() * 2);
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

void parse_into(const char* data, size_t size, const std::string& name, Trace& t) {
  JsonScanner js(data, size, name);
  TraceParser parser(js, t);
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

Trace parse_trace(std::string_view data, const std::string& name) {
  std::string copy(data);
  Trace t;
  t.path = name;
  parse_into(copy.c_str(), copy.size(), name, t);
  return t;
}

Trace read_trace_file(const std::string& path) {
  Trace t;
  t.path = path;
  MappedFile mapped(path);
  if (mapped.data() != nullptr) {
    parse_into(mapped.data(), mapped.size(), path, t);
  } else {
    std::string bytes = read_file_bytes(path);
    parse_into(bytes.c_str(), bytes.size(), path, t);
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
