#pragma once
// The in-memory form of one profiler trace, whatever wrote it (crosstrain, torch.profiler/Kineto,
// the older autograd profiler, the Ascend PyTorch Profiler). The reader fills it; the analysis only
// reads it. Compact on purpose: a 1 GB trace holds a few million spans, so a span is ~56 bytes and
// every string (names, categories, shapes) is interned once in a StringTable.
//
// Times are microseconds relative to `time_base_us` (the integer part of the first timestamp seen),
// which keeps sub-microsecond precision for epoch-based timestamps that a double cannot hold whole.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/analyze/call_sites.h"

namespace crosstrain::analyze {

// Beyond this a duration is corrupt, not merely long: one event (or one figure of a profiler's
// side file) lasting more than 11 days. The trace reader drops such events; side files leave the
// value out.
inline constexpr double kMaxDurationUs = 1e12;

// Interned strings: id 0 is always the empty string.
class StringTable {
 public:
  StringTable();
  uint32_t intern(std::string_view s);
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  void grow();
  std::vector<std::string> strings_;
  std::vector<uint32_t> slots_;  // open addressing; 0 = empty, else id + 1
  std::vector<uint64_t> hashes_;
};

enum class TraceFormat { Kineto, LegacyAutograd, Ascend };
const char* format_name(TraceFormat f);

// What a span is, decided after reading (it may depend on process names seen later in the file).
enum class SpanKind : uint8_t {
  Other,           // profiler bookkeeping, device-side annotations, derived tracks
  CpuOp,           // an operator on a host thread (aten::*, c10d::*, ...)
  Annotation,      // record_function / user_annotation spans (ProfilerStep#N, forward, data_wait, ...)
  PythonFunction,  // python call stacks; kept out of the operator tree
  Kernel,          // device compute kernel
  Memcpy,
  Memset,
  Communication,   // device-side collective (NCCL/HCCL kernels and tasks)
  Runtime,         // host runtime/driver calls (cudaLaunchKernel, aclrt*, CANN API)
};
inline bool is_device(SpanKind k) {
  return k == SpanKind::Kernel || k == SpanKind::Memcpy || k == SpanKind::Memset || k == SpanKind::Communication;
}
inline bool is_host_tree(SpanKind k) {
  return k == SpanKind::CpuOp || k == SpanKind::Annotation || k == SpanKind::Runtime;
}

// A (pid, tid) pair. Numeric ids are kept as numbers; string ids (legacy "CPU functions", Kineto
// "Spans") are interned and flagged so they never collide with numbers.
struct TrackKey {
  int64_t pid = 0;
  int64_t tid = 0;
  bool operator==(const TrackKey& o) const { return pid == o.pid && tid == o.tid; }
};
constexpr int64_t kStringIdFlag = int64_t{1} << 62;

struct Span {
  double ts = 0;               // us, relative to Trace::time_base_us
  double dur = 0;              // us
  uint32_t name = 0;           // StringTable ids
  uint32_t cat = 0;
  uint32_t shapes = 0;         // raw "Input Dims" JSON, compacted
  uint32_t dtypes = 0;         // raw "Input type" JSON, compacted
  uint32_t track = 0;          // index into Trace::tracks
  uint32_t task_type = 0;      // Ascend "Task Type" argument (AI_CORE, AI_CPU, MEMCPY_ASYNC ...), interned
  int64_t correlation = -1;    // Kineto correlation id (runtime call <-> device activity)
  SpanKind kind = SpanKind::Other;
  double end() const { return ts + dur; }
};

struct Flow {
  double ts = 0;
  uint64_t id = 0;
  uint32_t cat = 0;
  uint32_t track = 0;
  char phase = 's';            // 's' start, 'f' finish, 't' step
};

struct MemorySample {
  double ts = 0;
  int64_t total_allocated = 0;
  int64_t total_reserved = 0;
  int64_t bytes = 0;           // signed: negative for frees
  int32_t device_type = 0;     // c10::DeviceType: 0 CPU, 1 CUDA, 20 PrivateUse1 ...
  int32_t device_id = -1;
};

// Message arguments Kineto attaches to collective kernels and record_param_comms ("Collective
// name", "In msg nelems", "Out msg nelems", "dtype").
struct CollectiveArgs {
  uint32_t span = 0;           // index into Trace::spans
  uint32_t collective = 0;     // interned "Collective name" ("allreduce", "allgather" ...)
  uint32_t dtype = 0;          // interned "dtype" ("Float", "BFloat16" ...)
  int64_t nelems = 0;          // max(In msg nelems, Out msg nelems)
};

struct Track {
  TrackKey key;
};

struct Trace {
  std::string path;
  TraceFormat format = TraceFormat::Kineto;
  int rank = -1;                          // distributedInfo.rank when present
  int world_size = 0;
  int64_t time_base_us = 0;
  bool time_base_set = false;
  // Kineto's "baseTimeNanoseconds": a timestamp written as T us is the clock's (base + 1000 T) ns.
  // Ties the trace's python_function events to the call sites recorded beside it.
  int64_t base_time_ns = 0;
  bool has_base_time = false;
  int device_compute_major = 0;           // from deviceProperties (CUDA); 0 when unknown
  std::string device_name;                // e.g. "NVIDIA H100", "Ascend NPU"
  StringTable strings;
  std::vector<Track> tracks;
  std::vector<Span> spans;
  std::vector<Flow> flows;
  std::vector<MemorySample> memory;
  std::vector<CollectiveArgs> collectives;
  std::unordered_map<int64_t, std::string> process_names;  // pid -> name (metadata events)
  uint64_t bytes_read = 0;
  CallSites call_sites;                   // <trace>.sources.json, when `crosstrain run --profile` wrote one

  uint32_t track_of(TrackKey key);
  std::string pid_label(int64_t pid) const;  // number, or the interned string for string pids

 private:
  struct KeyHash {
    size_t operator()(const TrackKey& k) const {
      return std::hash<uint64_t>()(static_cast<uint64_t>(k.pid) * 1000003u ^ static_cast<uint64_t>(k.tid));
    }
  };
  std::unordered_map<TrackKey, uint32_t, KeyHash> track_index_;
  uint32_t last_track_ = UINT32_MAX;
};

}  // namespace crosstrain::analyze
