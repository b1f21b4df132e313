// libFuzzer entry point for the trace reader and the analysis behind it: any byte string must
// either parse into a Trace that analyzes cleanly or throw a std::runtime_error; crashes, sanitizer
// reports and other exceptions are bugs.
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosstrain::analyze;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The two-thread parse must agree with the one-thread parse on every input: same spans, or an
  // error in both.
  size_t spans[2] = {0, 0};
  bool failed[2] = {false, false};
  for (int parallel = 0; parallel < 2; ++parallel) {
    try {
      ReadOptions options;
      options.parallel_min_bytes = parallel ? 0 : SIZE_MAX;
      auto trace = parse_trace(bytes, "fuzz.json", options);
      spans[parallel] = trace.spans.size();
      auto analysis = analyze_trace(trace);
      analysis.findings = run_advisor(analysis);
    } catch (const std::runtime_error&) {
      failed[parallel] = true;
    }
  }
  if (failed[0] != failed[1] || spans[0] != spans[1]) std::abort();
  return 0;
}
