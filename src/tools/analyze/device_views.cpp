#include "tools/analyze/device_views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace crosstrain::analyze {

int dtype_bytes(const std::string& d) {
  std::string s;
  for (char c : d) s += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (s.rfind("c10::", 0) == 0) s = s.substr(5);
  if (s == "double" || s == "long" || s == "int64" || s == "complexfloat" || s == "uint64") return 8;
  if (s == "float" || s == "int" || s == "int32" || s == "float32" || s == "uint32") return 4;
  if (s == "half" || s == "bfloat16" || s == "short" || s == "int16" || s == "float16" || s == "uint16") return 2;
  if (s == "byte" || s == "char" || s == "bool" || s == "int8" || s == "uint8" || s.rfind("float8", 0) == 0) return 1;
  if (s == "complexdouble") return 16;
  return 0;
}

namespace {

DelayStats summarize(std::vector<double>& v) {
  DelayStats d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.count = static_cast<int64_t>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean_us = sum / static_cast<double>(v.size());
  auto pct = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))]; };
  d.p50_us = pct(0.5), d.p95_us = pct(0.95), d.max_us = v.back();
  return d;
}

// The median of `v` (0 when empty).
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return std::max(0.0, *mid);
}

// A runtime call that does not wait for the device, `us` long, against the `others` calls of its
// name (their median; the name's total in steps, this call included). The first call of its name
// 10x their median pays for a first use (a kernel's module loaded at its first launch, a library's
// handle); so does any call 100x their median that is most of its name's time: CUDA loads each
// kernel's module at that kernel's own first launch, seldom the first launch of the trace. A launch
// held up by a full launch queue is one of many such calls, not one call that outweighs all others.
constexpr double kFirstCallFactor = 10;
constexpr double kAnyCallFactor = 100;
bool is_one_time_call(double us, bool first, size_t others, double others_median_us, double name_total_us) {
  if (others == 0) return false;  // nothing to compare it with
  if (first && us > kFirstCallFactor * others_median_us) return true;
  return us >= kAnyCallFactor * others_median_us && us > 0.5 * name_total_us;
}

std::vector<NamedTotal> ranked(std::map<std::string, NamedTotal>& by_name) {
  std::vector<NamedTotal> v;
  for (auto& [n, e] : by_name) v.push_back(e);
  std::stable_sort(v.begin(), v.end(), [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });
  return v;
}

void add(std::map<std::string, NamedTotal>& m, const std::string& name, double us) {
  auto& e = m[name];
  e.name = name;
  ++e.count;
  e.total_us += us;
}

// HCCL numbers every call ("hcom_allReduce__560_0_1"); the operation is the part before the
// numbers, as kernel_details.csv's Type column gives it ("hcom_allReduce_").
std::string collective_operation(const std::string& name) {
  const size_t ids = name.rfind("__");
  if (name.rfind("hcom_", 0) != 0 || ids == std::string::npos ||
      name.find_first_not_of("0123456789_", ids) != std::string::npos)
    return name;
  return name.substr(0, ids + 1);
}

// Per stream and step window: walk the stream's work in start order; each gap before a piece of
// work is split at the moment that work's launch call ended (see StreamIdle).
void compute_stream_idle(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows, TraceAnalysis& out) {
  std::map<uint32_t, std::vector<int32_t>> by_track;
  for (int32_t i : L.device_order) by_track[t.spans[static_cast<size_t>(i)].track].push_back(i);
  for (const auto& [track, spans] : by_track) {
    StreamIdle st;
    st.stream = t.pid_label(t.tracks[track].key.pid) + "/" + t.pid_label(t.tracks[track].key.tid);
    size_t k = 0;
    for (const StepWindow& w : windows) {
      while (k < spans.size() && t.spans[static_cast<size_t>(spans[k])].ts < w.start) ++k;
      double at = w.start;  // the stream is idle from here
      for (; k < spans.size() && t.spans[static_cast<size_t>(spans[k])].ts < w.end; ++k) {
        const Span& d = t.spans[static_cast<size_t>(spans[k])];
        if (d.ts > at) {
          double gap = d.ts - at;
          int32_t l = L.launcher[static_cast<size_t>(spans[k])];
          if (l == kNoSpan) {
            st.unlinked_us += gap;
          } else {
            // Until the launch call returned the host was late; after it the work sat queued.
            double host = std::clamp(t.spans[static_cast<size_t>(l)].end() - at, 0.0, gap);
            st.host_wait_us += host, st.queued_us += gap - host;
          }
        }
        double end = std::min(d.end(), w.end);
        if (end > at) st.busy_us += end - std::max(at, d.ts), at = end;
      }
      if (w.end > at) st.tail_us += w.end - at;
    }
    out.stream_idle.push_back(st);
  }
  std::sort(out.stream_idle.begin(), out.stream_idle.end(),
            [](const StreamIdle& a, const StreamIdle& b) { return a.busy_us > b.busy_us; });
}

}  // namespace

void compute_device_views(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows,
                          NameInfoCache& names, TraceAnalysis& out, ConcernSpans* concerns) {
  auto note = [&](Concern c, size_t span, double us) {
    if (concerns) concerns->add(c, span, us);
  };
  std::unordered_map<uint32_t, const CollectiveArgs*> msg_of;
  for (const auto& c : t.collectives) msg_of[c.span] = &c;
  // Keyed by interned name: a trace has millions of kernels and a few thousand names.
  std::unordered_map<uint32_t, KernelStats> kernels;
  std::unordered_map<std::string, CollectiveStats> colls;
  std::map<std::string, NamedTotal> pageable, ai_cpu, compile;
  std::vector<double> delays, idle_latency;
  double busy_until = -std::numeric_limits<double>::infinity();

  for (int32_t i : L.device_order) {
    const Span& d = t.spans[static_cast<size_t>(i)];
    int32_t l = L.launcher[static_cast<size_t>(i)];
    const Span* ls = l != kNoSpan ? &t.spans[static_cast<size_t>(l)] : nullptr;
    if (window_of(windows, ls ? ls->ts : d.ts) < 0) {
      busy_until = std::max(busy_until, d.end());
      continue;
    }
    const std::string& name = t.strings.str(d.name);
    if (d.kind == SpanKind::Kernel) {
      auto& k = kernels[d.name];
      if (k.count == 0) k.name = name, k.min_us = d.dur, k.max_us = d.dur;
      ++k.count;
      k.total_us += d.dur;
      k.min_us = std::min(k.min_us, d.dur), k.max_us = std::max(k.max_us, d.dur);
    } else if (d.kind == SpanKind::Communication && names(d.name).communication) {
      // A collective by its name (hcom_allReduce_..., ncclDevKernel_AllReduce...). The tasks it is
      // made of (Ascend's "Notify Wait", "SDMA", a Plane's "Memcpy") are time inside it, not
      // collectives of their own.
      const std::string op = collective_operation(name);
      note(Concern::Communication, static_cast<size_t>(i), d.dur);
      auto& c = colls[op];
      c.name = op;
      ++c.count;
      c.total_us += d.dur;
      auto m = msg_of.find(static_cast<uint32_t>(i));
      int bytes = m != msg_of.end() ? dtype_bytes(t.strings.str(m->second->dtype)) : 0;
      if (bytes > 0 && d.dur > 0) {
        ++c.sized;
        c.bytes += static_cast<double>(m->second->nelems) * bytes;
        c.sized_us += d.dur;
      }
    } else if (d.kind == SpanKind::Memcpy && names(d.name).pageable_copy) {
      add(pageable, name, d.dur);
      out.pageable_copy_us += d.dur;
      note(Concern::PageableCopy, static_cast<size_t>(i), d.dur);
    }
    if (names(d.task_type).ai_cpu) {
      add(ai_cpu, name, d.dur);
      out.ai_cpu_us += d.dur;
      note(Concern::AiCpu, static_cast<size_t>(i), d.dur);
    }
    if (L.first_of_launch[static_cast<size_t>(i)]) {
      delays.push_back(std::max(0.0, d.ts - ls->ts));
      if (busy_until <= ls->end()) {
        idle_latency.push_back(std::max(0.0, d.ts - ls->end()));
        note(Concern::LaunchIntoIdle, static_cast<size_t>(l), std::max(0.0, d.ts - ls->end()));
      }
    }
    busy_until = std::max(busy_until, d.end());
  }

  // Runtime calls by name; allocations and frees; online compilation, charged to the operator
  // that made it. Times are clipped to the step windows.
  std::unordered_map<uint32_t, NamedTotal> runtime;
  std::unordered_map<uint32_t, std::vector<std::pair<double, double>>> runtime_times;  // for wall_us
  std::map<std::string, NamedTotal> allocator;
  std::vector<std::pair<double, double>> allocating;
  std::unordered_map<uint32_t, double> first_of_name;  // name -> start of its first call in the trace
  std::unordered_map<uint32_t, std::pair<int32_t, double>> longest_of_name;  // name -> its longest call in steps
  int32_t longest = kNoSpan;
  double longest_us = -1;
  int longest_step = -1;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::Runtime) continue;
    auto [first, fresh] = first_of_name.try_emplace(s.name, s.ts);
    if (!fresh) first->second = std::min(first->second, s.ts);
    const int k = window_of(windows, s.ts);
    if (k < 0) continue;
    const StepWindow& w = windows[static_cast<size_t>(k)];
    const double a = std::max(s.ts, w.start), b = std::max(a, std::min(s.end(), w.end));
    auto& r = runtime[s.name];
    r.name = t.strings.str(s.name);
    ++r.count;
    r.total_us += b - a;
    runtime_times[s.name].emplace_back(a, b);
    const NameInfo& info = names(s.name);
    // A wait for the device lasts as long as the work queued before it: not the call's own cost.
    if (!info.host_sync && !info.blocking_copy) {
      auto [l, none] = longest_of_name.try_emplace(s.name, static_cast<int32_t>(i), b - a);
      if (!none && b - a > l->second.second) l->second = {static_cast<int32_t>(i), b - a};
      if (b - a > longest_us) longest = static_cast<int32_t>(i), longest_us = b - a, longest_step = k;
    }
    if (info.launch_call) ++out.launch_calls;
    if (info.allocator_call) {
      add(allocator, r.name, b - a);
      allocating.emplace_back(a, b);
      note(Concern::Allocator, i, b - a);
    }
    if (!info.online_compile) continue;
    int32_t op = L.op_of[i];
    add(compile, op != kNoSpan ? t.strings.str(t.spans[static_cast<size_t>(op)].name) : r.name, s.dur);
    out.online_compile_us += s.dur;
    note(Concern::OnlineCompile, i, s.dur);
  }
  // Per name, its longest call that does not wait, judged against the other calls of the name.
  for (const auto& [id, l] : longest_of_name) {
    std::vector<double> others;
    bool skipped = false;
    for (const auto& [a, b] : runtime_times[id]) {
      if (!skipped && b - a == l.second) skipped = true;
      else others.push_back(b - a);
    }
    NamedTotal& r = runtime[id];
    const bool first = first_of_name[id] == t.spans[static_cast<size_t>(l.first)].ts;
    if (is_one_time_call(l.second, first, others.size(), median(others), r.total_us)) r.one_time_us = l.second;
    if (l.first != longest) continue;
    auto& lc = out.longest_runtime_call;
    lc.name = r.name;
    lc.duration_us = longest_us;
    lc.first = first;
    lc.calls = r.count;
    lc.others_median_us = median(others);
    lc.others_total_us = std::max(0.0, r.total_us - longest_us);
    lc.one_time = r.one_time_us > 0;
    const Span& ls = t.spans[static_cast<size_t>(longest)];
    for (const Span& s : t.spans)
      if (s.kind == SpanKind::Runtime && s.name == ls.name && s.ts <= ls.ts) ++lc.ordinal;
    const StepWindow& w = windows[static_cast<size_t>(longest_step)];
    lc.step = w.label;
    lc.offset_in_step_us = std::max(0.0, ls.ts - w.start);
  }
  for (auto& [id, r] : runtime) {
    r.wall_us = union_length(runtime_times[id]);
    out.runtime_calls.push_back(std::move(r));
  }
  std::sort(out.runtime_calls.begin(), out.runtime_calls.end(), [](const NamedTotal& a, const NamedTotal& b) {
    return a.total_us != b.total_us ? a.total_us > b.total_us : a.name < b.name;
  });
  if (out.runtime_calls.size() > 20) out.runtime_calls.resize(20);
  out.allocator_calls = ranked(allocator);
  out.allocator_us = union_length(allocating);
  // How much of the data loading is allocation: frees of the previous batch land in the
  // DataLoader's __next__, and would read as slow data loading.
  std::vector<std::pair<double, double>> loading;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::Annotation || !names(s.name).data_loading) continue;
    const int k = window_of(windows, s.ts);
    if (k < 0) continue;
    const StepWindow& w = windows[static_cast<size_t>(k)];
    const double a = std::max(s.ts, w.start), b = std::min(s.end(), w.end);
    if (b > a) loading.emplace_back(a, b), note(Concern::DataLoading, i, b - a);
  }
  if (!allocating.empty() && !loading.empty()) {
    const double loading_us = union_length(loading);
    loading.insert(loading.end(), allocating.begin(), allocating.end());
    out.allocator_in_data_loading_us = std::max(0.0, out.allocator_us + loading_us - union_length(loading));
  }

  for (auto& [n, k] : kernels) out.top_kernels.push_back(k);
  std::sort(out.top_kernels.begin(), out.top_kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total_us != b.total_us ? a.total_us > b.total_us : a.name < b.name;
  });
  if (out.top_kernels.size() > 50) out.top_kernels.resize(50);
  for (auto& [n, c] : colls) out.collectives.push_back(c);
  std::sort(out.collectives.begin(), out.collectives.end(), [](const CollectiveStats& a, const CollectiveStats& b) {
    return a.total_us != b.total_us ? a.total_us > b.total_us : a.name < b.name;
  });
  out.launch_delay = summarize(delays);
  out.idle_launch_latency = summarize(idle_latency);
  out.pageable_copies = ranked(pageable);
  out.ai_cpu_tasks = ranked(ai_cpu);
  out.online_compile = ranked(compile);
  for (const auto& s : out.steps)
    if (s.duration_us > 0 && s.data_wait_us > 0.5 * s.duration_us) ++out.data_bound_steps;
  compute_stream_idle(t, L, windows, out);
}

}  // namespace crosstrain::analyze
