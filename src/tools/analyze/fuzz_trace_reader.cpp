// libFuzzer entry point for the trace reader and the analysis behind it: any byte string must
// either parse into a Trace that analyzes cleanly or throw a std::runtime_error; crashes, sanitizer
// reports and other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto trace = crosstrain::analyze::parse_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    auto analysis = crosstrain::analyze::analyze_trace(trace);
    analysis.findings = crosstrain::analyze::run_advisor(analysis);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
