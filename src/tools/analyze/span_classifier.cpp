#include "tools/analyze/span_classifier.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tools/analyze/op_names.h"

namespace crosstrain::analyze {

namespace {

// What a category says. Unknown: a category no table knows, decided by structure. None: no
// category at all (legacy and Ascend arrays), decided by process names.
enum class CatVerdict : uint8_t { Known, Unknown, None };

struct CatKind {
  CatVerdict verdict = CatVerdict::None;
  SpanKind kind = SpanKind::Other;
  bool data_loading = false;  // the torch 1.8-1.10 "DataLoader" category
};

CatKind kind_of_category(const std::string& raw) {
  if (raw.empty()) return {};
  std::string c(raw.substr(0, 64));
  for (char& ch : c) ch = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
  auto known = [](SpanKind k) { return CatKind{CatVerdict::Known, k, false}; };
  if (c == "cpu_op" || c == "operator") return known(SpanKind::CpuOp);
  if (c == "user_annotation") return known(SpanKind::Annotation);
  if (c == "dataloader") return {CatVerdict::Known, SpanKind::Annotation, true};
  if (c == "python_function" || c == "python") return known(SpanKind::PythonFunction);
  // Device-side annotations, sync markers on streams, the whole-trace span, profiler overhead:
  // recognised, but neither work nor operators.
  if (c == "gpu_user_annotation" || c == "cuda_sync" || c == "trace" || c == "overhead" || c == "cpu_instant_event" ||
      c == "cuda_profiler_range" || c == "external_correlation")
    return known(SpanKind::Other);
  if (c.find("memcpy") != std::string::npos) return known(SpanKind::Memcpy);
  if (c.find("memset") != std::string::npos) return known(SpanKind::Memset);
  if (c.find("kernel") != std::string::npos) return known(SpanKind::Kernel);
  if (c.find("runtime") != std::string::npos || c.find("driver") != std::string::npos) return known(SpanKind::Runtime);
  return {CatVerdict::Unknown, SpanKind::Other, false};
}

// Device activity of a span already known to run on a device, by its Ascend task type when that
// says what the task is, else by its name. The task type decides first: HCCL's tasks are named
// after their type ("Notify Wait", "SDMA"), which no name rule reads as communication.
SpanKind device_kind(const NameInfo& name, const NameInfo& task) {
  // A device span named as a stream's wait or record (MTIA's event_wait / event_record, named like
  // Ascend's EVENT_* tasks) is a stream waiting, not work, whatever its category.
  if (name.task_class == TaskClass::StreamSync) return SpanKind::Other;
  switch (task.task_class) {
    case TaskClass::StreamSync: return SpanKind::Other;  // a stream waiting on an event: not device work
    case TaskClass::Collective: return SpanKind::Communication;
    case TaskClass::Copy: return name.memset || task.memset ? SpanKind::Memset : SpanKind::Memcpy;
    case TaskClass::Compute: return SpanKind::Kernel;
    case TaskClass::Unknown: break;
  }
  if (name.memcpy || task.memcpy) return SpanKind::Memcpy;
  if (name.memset || task.memset) return SpanKind::Memset;
  if (name.communication || task.communication) return SpanKind::Communication;
  return SpanKind::Kernel;
}

// HCCL moves data with plain copies on its own stream (MEMCPY_ASYNC tasks between notify waits):
// on a stream that carries collective tasks, copies are the collective's.
void copies_on_collective_streams(Trace& t, NameInfoCache& names) {
  std::vector<char> collective_track(t.tracks.size(), 0);
  for (const Span& s : t.spans)
    if (s.kind == SpanKind::Communication && names(s.task_type).task_class == TaskClass::Collective)
      collective_track[s.track] = 1;
  for (Span& s : t.spans)
    if (s.kind == SpanKind::Memcpy && s.task_type != 0 && collective_track[s.track]) s.kind = SpanKind::Communication;
}

enum class Role { Host, Device, DeviceComm, Api, Ignore };

// Process roles from process names, for category-less traces (Ascend, legacy autograd).
std::unordered_map<int64_t, Role> roles_from_names(Trace& t) {
  auto has = [](const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; };
  bool ascend = false;
  std::unordered_map<int64_t, Role> roles;
  for (const auto& [pid, name] : t.process_names) {
    Role r = Role::Host;
    if (name == "Ascend Hardware" || (has(name, "NPU") && !has(name, "MEM"))) r = Role::Device;
    else if (name == "HCCL" || name == "Communication") r = Role::DeviceComm;
    else if (name == "CANN") r = Role::Api;
    else if (name == "Overlap Analysis" || has(name, "Freq") || has(name, "MEM") || has(name, "Stars") ||
             has(name, "Acc PMU") || has(name, "QoS") || has(name, "SIO") || has(name, "Python GC"))
      r = Role::Ignore;
    if (name == "Ascend Hardware" || name == "CANN" || name == "HCCL" || name == "Overlap Analysis") ascend = true;
    roles[pid] = r;
  }
  if (t.format != TraceFormat::Kineto && ascend) t.format = TraceFormat::Ascend;
  return roles;
}

SpanKind kind_by_role(const Trace& t, const Span& s, Role r, const NameInfo& info, const NameInfo& task) {
  int64_t pid = t.tracks[s.track].key.pid;
  if (pid >= kStringIdFlag) {
    // Legacy autograd export: "CPU functions" and "<DEVICE> functions".
    const std::string& label = t.strings.str(static_cast<uint32_t>(pid - kStringIdFlag));
    if (label.size() > 10 && label.compare(label.size() - 10, 10, " functions") == 0 && label != "CPU functions")
      r = Role::Device;
  }
  switch (r) {
    case Role::Device: return device_kind(info, task);
    case Role::DeviceComm: return SpanKind::Communication;
    case Role::Api: return SpanKind::Runtime;
    case Role::Ignore: return SpanKind::Other;
    case Role::Host: break;
  }
  if (info.profiler_step || info.data_loading) return SpanKind::Annotation;
  if (t.strings.str(s.name).find(".py(") != std::string::npos) return SpanKind::PythonFunction;
  return SpanKind::CpuOp;
}

// Processes that hold device activity, found by structure: partners of host runtime calls by
// correlation id, and targets of flows that start on a host thread.
std::unordered_set<int64_t> device_processes(const Trace& t, const std::vector<CatVerdict>& verdict) {
  std::unordered_set<int64_t> host_pids, device_pids;
  std::unordered_map<int64_t, int64_t> runtime_pid_by_corr;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    int64_t pid = t.tracks[s.track].key.pid;
    if (verdict[i] == CatVerdict::Known && (is_host_tree(s.kind) || s.kind == SpanKind::PythonFunction))
      host_pids.insert(pid);
    if (verdict[i] == CatVerdict::Known && s.kind == SpanKind::Runtime && s.correlation >= 0)
      runtime_pid_by_corr.emplace(s.correlation, pid);
  }
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (verdict[i] != CatVerdict::Unknown || s.correlation < 0) continue;
    auto it = runtime_pid_by_corr.find(s.correlation);
    int64_t pid = t.tracks[s.track].key.pid;
    if (it != runtime_pid_by_corr.end() && (it->second != pid || !host_pids.count(pid))) device_pids.insert(pid);
  }
  // Flows: an 's' on a host process and its 'f' elsewhere mark the 'f' process.
  std::unordered_map<uint64_t, int64_t> start_pid;
  for (const Flow& f : t.flows)
    if (f.phase == 's') start_pid.emplace(f.id ^ (static_cast<uint64_t>(f.cat) << 48), t.tracks[f.track].key.pid);
  for (const Flow& f : t.flows) {
    if (f.phase != 'f') continue;
    auto it = start_pid.find(f.id ^ (static_cast<uint64_t>(f.cat) << 48));
    int64_t pid = t.tracks[f.track].key.pid;
    if (it != start_pid.end() && it->second != pid && host_pids.count(it->second) && !host_pids.count(pid))
      device_pids.insert(pid);
  }
  return device_pids;
}

}  // namespace

void classify_spans(Trace& t) {
  NameInfoCache names(t.strings);
  std::vector<int> cat_cache(t.strings.size(), -1);
  std::vector<CatKind> cat_kinds;
  auto category = [&](uint32_t cat) -> const CatKind& {
    if (cat_cache[cat] < 0) {
      cat_cache[cat] = static_cast<int>(cat_kinds.size());
      cat_kinds.push_back(kind_of_category(t.strings.str(cat)));
    }
    return cat_kinds[static_cast<size_t>(cat_cache[cat])];
  };
  const auto roles = roles_from_names(t);

  std::vector<CatVerdict> verdict(t.spans.size());
  for (size_t i = 0; i < t.spans.size(); ++i) {
    Span& s = t.spans[i];
    const NameInfo& info = names(s.name);
    const CatKind& ck = category(s.cat);
    verdict[i] = ck.verdict;
    SpanKind k = SpanKind::Other;
    if (ck.verdict == CatVerdict::Known) {
      k = ck.kind;
    } else if (ck.verdict == CatVerdict::None) {
      auto it = roles.find(t.tracks[s.track].key.pid);
      k = kind_by_role(t, s, it == roles.end() ? Role::Host : it->second, info, names(s.task_type));
    }
    // Steps and data loading are annotations whatever category the writer gave them (torch
    // 1.8-1.10 wrote ProfilerStep#N and enumerate(DataLoader)#... as "Operator").
    if (k == SpanKind::CpuOp && (info.profiler_step || info.data_loading)) k = SpanKind::Annotation;
    if (k == SpanKind::Kernel && info.communication && names(s.task_type).task_class != TaskClass::Compute)
      k = SpanKind::Communication;
    s.kind = k;
  }
  copies_on_collective_streams(t, names);

  // Categories nobody listed: device activity if the trace's structure says so, else left out.
  bool unknown = false;
  for (CatVerdict v : verdict) unknown = unknown || v == CatVerdict::Unknown;
  if (!unknown) return;
  const auto device_pids = device_processes(t, verdict);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    Span& s = t.spans[i];
    if (verdict[i] != CatVerdict::Unknown || !device_pids.count(t.tracks[s.track].key.pid)) continue;
    s.kind = device_kind(names(s.name), names(s.task_type));
  }
}

}  // namespace crosstrain::analyze
