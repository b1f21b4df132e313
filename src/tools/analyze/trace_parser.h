#pragma once
// The event-level parser behind trace_reader (internal). It fills a Trace from a JsonScanner, for a
// whole document, or, for the parallel reader, from an event in the middle of the traceEvents array
// to the array's end. A SplitPoint lets the whole-document parse hand over the second half of the
// array to a parse that ran concurrently from that point.
#include <atomic>
#include <stdexcept>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "report/json_scanner.h"
#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

using report::JsonNumber;
using report::JsonScanner;

// The second half of a traceEvents array, parsed speculatively from `offset`.
class SplitPoint {
 public:
  virtual ~SplitPoint() = default;
  virtual uint64_t offset() const = 0;
  // Called when the main parse reaches offset() exactly at an event start. Returns true after
  // merging the second half into `into` and moving `js` to the array's closing bracket; false if
  // the speculative parse failed (the main parse then simply continues).
  virtual bool adopt(JsonScanner& js, Trace& into) = 0;
  // Called when the main parse passed offset() without an event starting there.
  virtual void abandon() = 0;
};

// A well-formed JSON document that is not a trace (an object without "traceEvents": Ascend's
// communication.json, an execution trace, profiler metadata). Folders skip such files with a note.
class NotATraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a speculative parse that met something it cannot parse out of context (B/E pairs).
struct SpeculationRefused {};

class TraceParser {
 public:
  TraceParser(JsonScanner& js, Trace& trace) : js_(js), t_(trace) {}

  void parse_document();
  void set_split(SplitPoint* split) { split_ = split; }

  // For the speculative half: parses events from the scanner's position up to the closing ']' of
  // the array (left unconsumed); returns its offset. Stops early (throws SpeculationRefused) when
  // `stop` becomes true or a B/E event appears.
  uint64_t parse_events_to_array_end(const std::atomic<bool>& stop);

 private:
  struct EventFields;
  int64_t read_id_key();
  void parse_top_object();
  void parse_device_properties();
  void parse_distributed_info();
  void parse_event_array();
  void parse_args(EventFields& e);
  int64_t read_clamped_int();
  void parse_event();
  double relative_ts(const JsonNumber& ts);
  void check_time(const EventFields& e, uint64_t at);
  void commit(EventFields& e, uint64_t at);

  JsonScanner& js_;
  Trace& t_;
  SplitPoint* split_ = nullptr;
  bool speculative_ = false;
  std::unordered_map<uint32_t, std::vector<Span>> open_;
};

}  // namespace crosstrain::analyze
