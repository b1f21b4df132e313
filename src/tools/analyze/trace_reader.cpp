#include "tools/analyze/trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <thread>
#include <unordered_map>

#include "report/json_scanner.h"
#include "tools/analyze/call_sites.h"
#include "tools/analyze/span_classifier.h"
#include "tools/analyze/trace_parser.h"

namespace crosstrain::analyze {

namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Refuses anything but a regular file before opening it: opening a FIFO blocks until a writer
// comes, and /dev/zero never ends.
void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot open");
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(path + ": not a regular file (a pipe, device or socket cannot be analyzed; copy it to a file)");
}

// Inflates a gzip file into memory, refusing to go past `limit` bytes; leaves a NUL after the
// content for the scanner's sentinel.
std::string inflate_file(const std::string& path, uint64_t file_size, uint64_t limit) {
  // The trailer holds the uncompressed size mod 2^32: a first allocation that rarely needs to grow,
  // but only a hint (a crafted file can say anything), so it is capped by deflate's maximum ratio
  // (~1032:1) and by the limit.
  size_t hint = 0;
  {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    unsigned char isize[4] = {0, 0, 0, 0};
    if (f && std::fseek(f.get(), -4, SEEK_END) == 0 && std::fread(isize, 1, 4, f.get()) == 4)
      hint = static_cast<size_t>(isize[0]) | static_cast<size_t>(isize[1]) << 8 | static_cast<size_t>(isize[2]) << 16 |
             static_cast<size_t>(isize[3]) << 24;
  }
  const uint64_t cap = std::min<uint64_t>(limit + 1, file_size * 1040 + (1 << 20));
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) throw std::runtime_error(path + ": cannot open");
  gzbuffer(gz, 1 << 20);
  std::string data;
  size_t used = 0;
  data.resize(static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>({hint + (1 << 20), file_size * 2, 1 << 20}), cap)));
  for (;;) {
    if (data.size() - used < (1 << 16)) data.resize(data.size() + data.size() / 2);
    unsigned want = static_cast<unsigned>(std::min<size_t>(data.size() - used, 1u << 30));
    int n = gzread(gz, &data[used], want);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(gz, &err);
      gzclose(gz);
      throw std::runtime_error(path + ": corrupt gzip data after " + std::to_string(used) + " uncompressed bytes: " + msg);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used > limit) {
      gzclose(gz);
      throw std::runtime_error(path + ": inflates to more than " + std::to_string(limit) +
                               " bytes, the limit for compressed traces (raise it with --max-inflated-mib)");
    }
  }
  // gzread returns what it has at a truncated stream's end; gzclose_r's status tells.
  int rc = gzclose_r(gz);
  if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error(path + ": corrupt gzip stream");
  if (rc == Z_BUF_ERROR) throw std::runtime_error(path + ": truncated gzip stream after " + std::to_string(used) + " bytes");
  data.resize(used);
  return data;  // std::string keeps a NUL at data()[size()]: the scanner's sentinel
}

// A whole plain file read into memory, with a NUL after the content for the scanner's sentinel.
// Read, not mapped: a mapped file that another process truncates (a profiler rewriting its trace)
// kills the reader with SIGBUS when it touches the lost pages; a read sees the file shrink and
// says so. Uninitialised on allocation, so the bytes are touched once, by the read.
class FileBytes {
 public:
  explicit FileBytes(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(path + ": cannot open");
    std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* f) { ::close(*f); });
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw std::runtime_error(path + ": not a regular file");
    const auto expected = static_cast<size_t>(st.st_size);
    try {
      data_.reset(new char[expected + 1]);
    } catch (const std::bad_alloc&) {
      throw std::runtime_error(path + ": " + std::to_string(expected) + " bytes do not fit in memory");
    }
    while (size_ < expected) {
      ssize_t n = ::read(fd, data_.get() + size_, expected - size_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(path + ": read error after " + std::to_string(size_) + " bytes");
      if (n == 0) break;
      size_ += static_cast<size_t>(n);
    }
    data_[size_] = '\0';
    if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != expected || size_ != expected)
      throw std::runtime_error(path + ": the file changed size while it was read (" + std::to_string(expected) +
                               " bytes when opened, " +
                               std::to_string(size_ != expected ? size_ : static_cast<size_t>(st.st_size)) +
                               " when read): is a profiler still writing it? Analyze it once it is complete");
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

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
  const auto span_shift = static_cast<uint32_t>(into.spans.size());
  for (CollectiveArgs c : part.collectives) {
    c.span += span_shift, c.collective = strings[c.collective], c.dtype = strings[c.dtype];
    into.collectives.push_back(c);
  }
  into.spans.reserve(into.spans.size() + part.spans.size());
  for (Span s : part.spans) {
    s.name = strings[s.name], s.cat = strings[s.cat], s.shapes = strings[s.shapes], s.dtypes = strings[s.dtypes];
    s.task_type = strings[s.task_type];
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

bool is_gzip_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  unsigned char magic[2] = {0, 0};
  return f && std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

Trace parse_trace(std::string_view data, const std::string& name, const ReadOptions& options) {
  std::string copy(data);
  Trace t;
  t.path = name;
  parse_into(copy.c_str(), copy.size(), name, options, t);
  return t;
}

Trace read_trace_file(const std::string& path, const ReadOptions& options) {
  require_regular_file(path);
  Trace t;
  t.path = path;
  if (!is_gzip_file(path)) {
    FileBytes bytes(path);
    parse_into(bytes.data(), bytes.size(), path, options, t);
    return t;
  }
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  const std::string inflated = inflate_file(path, ec ? 0 : size, options.max_inflated_bytes);
  parse_into(inflated.c_str(), inflated.size(), path, options, t);
  return t;
}

namespace {

namespace fs = std::filesystem;

bool is_json_name(const std::string& name) { return has_suffix(name, ".json") || has_suffix(name, ".json.gz"); }

// "<prefix><N>" with N of 1 to 7 digits: N, else -1.
int numbered_folder(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 7 || name.compare(0, prefix.size(), prefix) != 0)
    return -1;
  const std::string digits = name.substr(prefix.size());
  return digits.find_first_not_of("0123456789") == std::string::npos ? std::stoi(digits) : -1;
}

// "rank<N>" (one folder per rank: --dump, and older `crosstrain train --profile` runs): N, else -1.
int rank_folder_number(const std::string& name) { return numbered_folder(name, "rank"); }

// "trace_cycle<N>.<anything>": how `crosstrain train --profile` named cycle N before it wrote the run
// layout (DIR/trace_cycle<N>.pt.trace.json, DIR/rank<r>/trace_cycle<N>.pt.trace.json). N, else -1.
int old_cycle_file_number(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos ? -1 : numbered_folder(name.substr(0, dot), "trace_cycle");
}

// "rank<N>.<anything>" (`crosstrain run --profile` names each rank's trace so): N, else -1.
int rank_file_number(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos ? -1 : rank_folder_number(name.substr(0, dot));
}

// "cycle<N>": `crosstrain run --profile DIR` writes each profiling cycle's traces (one per rank) there.
bool is_cycle_folder(const std::string& name) { return numbered_folder(name, "cycle") >= 0; }

constexpr const char* kAscendOutput = "ASCEND_PROFILER_OUTPUT";
// How deep below the folder given runs are looked for: runs/level1/<host>_ascend_pt/ is two.
constexpr int kMaxRunDepth = 3;

struct Candidates {
  std::vector<std::string> files;
  std::vector<std::string> db_only;  // Ascend output folders with the database export only
};

// An Ascend output folder holds one trace, trace_view.json; its other JSON files (communication.json,
// communication_matrix.json ...) are summaries, read by ascend_output with a note when broken.
// torch_npu's export_type=db writes ascend_pytorch_profiler[_<rank>].db instead.
void collect_ascend_output(const fs::path& out, Candidates& c) {
  std::error_code ec;
  if (fs::is_regular_file(out / "trace_view.json", ec)) return c.files.push_back((out / "trace_view.json").string());
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ascend_pytorch_profiler", 0) == 0 && has_suffix(name, ".db")) return c.db_only.push_back(out.string());
  }
}

// Trace candidates in a folder: its JSON files, or, for an Ascend output folder, its trace_view.json;
// sub-folders that are Ascend output folders, rank<N>/ or cycle<N>/ folders too, and, a few levels
// down, plain folders holding such folders or old-layout traces (several runs side by side: level0/,
// level1/).
void collect_candidates(const fs::path& dir, Candidates& c, int depth, bool own_json) {
  std::error_code ec;
  if (dir.filename() == kAscendOutput) return collect_ascend_output(dir, c);
  if (fs::is_directory(dir / kAscendOutput, ec)) return collect_ascend_output(dir / kAscendOutput, c);
  std::vector<fs::path> ranks, plain;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    std::error_code e2;
    if (entry.is_regular_file(e2)) {
      // Old-layout traces are crosstrain's by their name, in a folder of runs too (bench's DIR/<precision>/).
      const bool old_layout = old_cycle_file_number(name) >= 0;
      if (is_json_name(name) && !is_call_sites_file(name) && (own_json || old_layout))
        c.files.push_back(entry.path().string());
    } else if (depth < kMaxRunDepth && entry.is_directory(e2)) {
      if (fs::is_directory(entry.path() / kAscendOutput, e2) || rank_folder_number(name) >= 0 || is_cycle_folder(name))
        ranks.push_back(entry.path());
      else if (depth + 1 < kMaxRunDepth && !entry.is_symlink(e2))  // a link back up would list runs twice
        plain.push_back(entry.path());
    }
  }
  if (ec) throw std::runtime_error(dir.string() + ": cannot list: " + ec.message());
  std::sort(ranks.begin(), ranks.end());
  std::sort(plain.begin(), plain.end());
  for (const auto& d : ranks) collect_candidates(d, c, kMaxRunDepth, true);
  for (const auto& d : plain) collect_candidates(d, c, depth + 1, false);
}

// An Ascend trace's rank: torch_npu writes profiler_info_<rank>.json (distributed runs) next to
// ASCEND_PROFILER_OUTPUT/; trace_view.json itself does not say. -1 when unknown.
int ascend_rank_of(const std::string& trace_path) {
  fs::path out = fs::path(trace_path).parent_path();
  if (out.filename() != "ASCEND_PROFILER_OUTPUT") return -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out.parent_path(), ec)) {
    std::string n = entry.path().filename().string();
    const std::string prefix = "profiler_info_", suffix = ".json";
    if (n.size() <= prefix.size() + suffix.size() || n.compare(0, prefix.size(), prefix) != 0 || !has_suffix(n, suffix))
      continue;
    std::string digits = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    return std::stoi(digits);
  }
  return -1;
}

}  // namespace

std::string run_folder_of(const std::string& trace_path) {
  fs::path p = fs::path(trace_path).parent_path();
  if (p.filename() == kAscendOutput) return p.parent_path().parent_path().string();
  if (rank_folder_number(p.filename().string()) >= 0) p = p.parent_path();
  // An old-layout trace belongs to the cycle folder the run layout would have put it in.
  const int cycle = old_cycle_file_number(fs::path(trace_path).filename().string());
  return cycle >= 0 ? (p / ("cycle" + std::to_string(cycle))).string() : p.string();
}

std::vector<Trace> read_traces(const std::string& path, const ReadOptions& options, std::vector<std::string>* notes) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error(path + ": no such file or folder");
  if (!fs::is_directory(path, ec)) {
    std::vector<Trace> one;
    one.push_back(read_trace_file(path, options));
    one.back().call_sites = read_call_sites(path, notes);
    return one;
  }
  Candidates c;
  collect_candidates(path, c, 0, true);
  const std::string db_hint =
      "crosstrain reads the text export (trace_view.json): export it with "
      "torch_npu.profiler.profiler.analyse(\"<folder>_ascend_pt\", export_type=\"text\"), or profile with "
      "experimental_config=torch_npu.profiler._ExperimentalConfig(export_type=[torch_npu.profiler.ExportType.Text])";
  if (c.files.empty() && !c.db_only.empty())
    throw std::runtime_error(c.db_only.front() + ": only the Ascend profiler's database export (ascend_pytorch_profiler*.db)" +
                             (c.db_only.size() > 1 ? " here and in " + std::to_string(c.db_only.size() - 1) + " more" : "") +
                             "; " + db_hint);
  if (c.files.empty())
    throw std::runtime_error(path + ": no trace files (*.json, *.json.gz, rank<N>/ folders of them, or an Ascend "
                             "ASCEND_PROFILER_OUTPUT/) in this folder");
  if (notes != nullptr)
    for (const auto& d : c.db_only) notes->push_back("skipped " + d + ": only the database export (ascend_pytorch_profiler*.db)");
  std::vector<std::string>& files = c.files;
  std::sort(files.begin(), files.end());
  std::vector<Trace> traces;
  for (const auto& f : files) {
    try {
      traces.push_back(read_trace_file(f, options));
      traces.back().call_sites = read_call_sites(f, notes);
      if (traces.back().rank < 0) traces.back().rank = ascend_rank_of(f);
      if (traces.back().rank < 0) traces.back().rank = rank_folder_number(fs::path(f).parent_path().filename().string());
      if (traces.back().rank < 0) traces.back().rank = rank_file_number(fs::path(f).filename().string());
      // Old-layout traces outside rank folders came from one process: rank 0, as the run layout says.
      const bool old_layout = old_cycle_file_number(fs::path(f).filename().string()) >= 0;
      if (traces.back().rank < 0 && old_layout) traces.back().rank = 0;
    } catch (const NotATraceError& e) {
      if (notes != nullptr) notes->push_back("skipped " + std::string(e.what()));
    }
  }
  if (traces.empty()) throw std::runtime_error(path + ": none of its " + std::to_string(files.size()) + " JSON files is a trace");
  // One run after another (by folder); inside a run, by rank when every trace of it has one.
  std::map<std::string, bool> run_ranked;
  for (const auto& t : traces) {
    auto [it, fresh] = run_ranked.emplace(run_folder_of(t.path), true);
    it->second = it->second && t.rank >= 0;
  }
  std::stable_sort(traces.begin(), traces.end(), [&](const Trace& a, const Trace& b) {
    const std::string ra = run_folder_of(a.path), rb = run_folder_of(b.path);
    if (ra != rb) return ra < rb;
    return run_ranked[ra] && a.rank < b.rank;
  });
  return traces;
}

}  // namespace crosstrain::analyze
