#pragma once
// The spans behind each measurement the advisor judges, gathered by the very passes that measure
// them (internal to the analysis), so the source lines named in a finding are those of the spans
// its value counts. Gathered only when the trace has source lines: the passes take a null pointer
// otherwise and pay nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace crosstrain::analyze {

enum class Concern {
  HostSync,        // outermost sync calls in steps
  CpuFallback,     // compute operators that launched nothing on a device trace
  PageableCopy,    // device copies to or from pageable memory
  ShortKernel,     // compute kernels under the short-kernel limit
  LaunchIntoIdle,  // launch calls that found the device idle
  Communication,   // collectives
  Fp32Matmul,      // matmul/conv operators with fp32 inputs
  Allocator,       // allocation and free calls
  OnlineCompile,   // online operator compilation calls
  AiCpu,           // Ascend AI_CPU tasks
  DataLoading,     // data-loading spans
  FirstStep,       // operators of the first step
  DeviceIdle,      // the device work each idle gap waited for, weighted by the gap
  kCount
};

struct ConcernSpans {
  std::array<std::vector<std::pair<int32_t, double>>, static_cast<size_t>(Concern::kCount)> spans;
  std::vector<std::pair<double, double>> idle_gaps;  // (start, length) of every device idle gap counted
  void add(Concern c, size_t span, double us) { spans[static_cast<size_t>(c)].emplace_back(static_cast<int32_t>(span), us); }
  const std::vector<std::pair<int32_t, double>>& of(Concern c) const { return spans[static_cast<size_t>(c)]; }
};

}  // namespace crosstrain::analyze
