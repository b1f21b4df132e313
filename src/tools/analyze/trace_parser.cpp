#include "tools/analyze/trace_parser.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace crosstrain::analyze {

namespace {

// Beyond this a trace is corrupt, not merely long: ~3 years of epoch microseconds past 2100 (and a
// single event lasting more than 11 days: kMaxDurationUs, trace.h).
constexpr double kMaxAbsTimestampUs = 1e17;

}  // namespace

struct TraceParser::EventFields {
  char ph = 0;
  uint32_t name = 0, cat = 0, shapes = 0, dtypes = 0, meta_name = 0, task_type = 0;
  bool has_ts = false, has_dur = false, has_pid = false, has_id = false;
  JsonNumber ts;
  double dur = 0;
  int64_t pid = 0, tid = 0;
  uint64_t id = 0;
  int64_t correlation = -1;
  bool has_memory = false;
  int64_t total_allocated = 0, total_reserved = 0, bytes = 0;
  int32_t device_type = 0, device_id = -1;
  uint32_t collective = 0, msg_dtype = 0;
  int64_t msg_nelems = -1;
};

void TraceParser::parse_document() {
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

int64_t TraceParser::read_id_key() {
  if (js_.peek() == '"') return kStringIdFlag + t_.strings.intern(js_.read_string());
  uint64_t at = js_.offset();
  JsonNumber n = js_.read_number();
  if (std::fabs(n.value) >= 4e18 || n.fraction != 0) js_.fail_at(at, "pid/tid out of range");
  return n.whole;
}

void TraceParser::parse_top_object() {
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
    } else if (key == "baseTimeNanoseconds" && (js_.peek() == '-' || (js_.peek() >= '0' && js_.peek() <= '9'))) {
      // Only a whole, non-negative number ties call sites to events; anything else is left unused.
      JsonNumber n = js_.read_number();
      t_.has_base_time = n.integral && n.value >= 0 && n.value < 9e18;
      t_.base_time_ns = t_.has_base_time ? n.whole : 0;
    } else {
      js_.skip_value();
    }
  }
  if (!saw_events)
    throw NotATraceError(js_.file() + ": not a trace: the top-level object has no \"traceEvents\" array");
}

void TraceParser::parse_device_properties() {
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

void TraceParser::parse_distributed_info() {
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

void TraceParser::parse_event_array() {
  js_.expect('[', "");
  bool first = true;
  while (js_.next_member(first, ']')) {
    if (split_ != nullptr && js_.offset() >= split_->offset()) {
      SplitPoint* split = split_;
      split_ = nullptr;
      // The speculative parse is only valid if it started exactly where an event starts.
      if (js_.offset() == split->offset() && split->adopt(js_, t_)) continue;
      split->abandon();
    }
    parse_event();
  }
}

uint64_t TraceParser::parse_events_to_array_end(const std::atomic<bool>& stop) {
  speculative_ = true;
  for (size_t n = 0;; ++n) {
    if ((n & 1023) == 0 && stop.load(std::memory_order_relaxed)) throw SpeculationRefused{};
    parse_event();
    char c = js_.peek();
    if (c == ']') return js_.offset();
    js_.expect(',', "between trace events");
  }
}

void TraceParser::parse_args(EventFields& e) {
  if (js_.peek() != '{') return js_.skip_value();
  js_.expect('{', "");
  bool first = true;
  while (js_.next_member(first, '}')) {
    std::string_view key = js_.read_string();
    js_.expect(':', "after an object key");
    char v = js_.peek();
    bool numeric = v == '-' || (v >= '0' && v <= '9') || v == '"';
    if (key == "Input Dims" || key == "Input dims") {  // the second spelling: early torch.profiler
      e.shapes = t_.strings.intern(js_.read_compact_value());
    } else if (key == "Input type") {
      e.dtypes = t_.strings.intern(js_.read_compact_value());
    } else if ((key == "In msg nelems" || key == "Out msg nelems") && numeric) {
      e.msg_nelems = std::max(e.msg_nelems, read_clamped_int());
    } else if (key == "Collective name" && v == '"') {
      e.collective = t_.strings.intern(js_.read_string());
    } else if (key == "dtype" && v == '"') {
      e.msg_dtype = t_.strings.intern(js_.read_string());
    } else if (key == "Task Type" && v == '"') {
      e.task_type = t_.strings.intern(js_.read_string());
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

int64_t TraceParser::read_clamped_int() {
  JsonNumber n = js_.read_number_or_numeric_string();
  return static_cast<int64_t>(std::clamp(n.value, -9e18, 9e18));
}

void TraceParser::parse_event() {
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

double TraceParser::relative_ts(const JsonNumber& ts) {
  if (!t_.time_base_set) {
    t_.time_base_us = ts.whole;
    t_.time_base_set = true;
  }
  return static_cast<double>(ts.whole - t_.time_base_us) + ts.fraction;
}

void TraceParser::check_time(const EventFields& e, uint64_t at) {
  if (!e.has_ts) js_.fail_at(at, "event without \"ts\"");
  if (!std::isfinite(e.ts.value) || std::fabs(e.ts.value) > kMaxAbsTimestampUs)
    js_.fail_at(at, "absurd timestamp " + std::to_string(e.ts.value));
}

void TraceParser::commit(EventFields& e, uint64_t at) {
  switch (e.ph) {
    case 'X': {
      check_time(e, at);
      if (!e.has_dur) js_.fail_at(at, "complete event (\"ph\": \"X\") without \"dur\"");
      if (!std::isfinite(e.dur) || e.dur < 0 || e.dur > kMaxDurationUs)
        js_.fail_at(at, "absurd duration " + std::to_string(e.dur));
      Span s;
      s.ts = relative_ts(e.ts);
      s.dur = e.dur;
      s.name = e.name, s.cat = e.cat, s.shapes = e.shapes, s.dtypes = e.dtypes, s.task_type = e.task_type;
      s.track = t_.track_of({e.pid, e.tid});
      s.correlation = e.correlation;
      if (e.msg_nelems >= 0 && e.collective != 0)
        t_.collectives.push_back({static_cast<uint32_t>(t_.spans.size()), e.collective, e.msg_dtype, e.msg_nelems});
      t_.spans.push_back(s);
      return;
    }
    case 'B':
    case 'E': {
      // A begin/end pair may straddle the split: leave such traces to the sequential parse.
      if (speculative_) throw SpeculationRefused{};
      check_time(e, at);
      uint32_t track = t_.track_of({e.pid, e.tid});
      auto& stack = open_[track];
      if (e.ph == 'B') {
        Span s;
        s.ts = relative_ts(e.ts);
        s.name = e.name, s.cat = e.cat, s.shapes = e.shapes, s.dtypes = e.dtypes, s.track = track;
        s.task_type = e.task_type;
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

}  // namespace crosstrain::analyze
