#pragma once
// What `crosstrain analyze` computes from one Trace, as plain data: operator statistics, an
// operator-type summary, the per-step time breakdown, device idle gaps and launch behaviour, host
// syncs, CPU-fallback operators, memory, and (filled by the advisor) findings. Renderers and the
// advisor read this struct; nothing here prints.
//
// Step breakdown rule: each instant of a step counts once, for the highest-priority category
// active then, in the order of StepCategory (kernel > memcpy > memset > communication > runtime >
// data loading > CPU execution > other). See docs/ANALYZE.md for the step-window rule.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/analyze/op_names.h"
#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

enum class StepCategory { Kernel, Memcpy, Memset, Communication, Runtime, DataLoading, CpuExec, Other };
constexpr int kStepCategoryCount = 8;
const char* step_category_name(StepCategory c);
const char* step_category_name(int c);

struct AnalyzeOptions {
  bool group_by_shape = false;       // operator rows by name + input shapes
  double idle_gap_min_us = 20;       // shorter device gaps are launch jitter, not waiting
  double short_kernel_us = 10;       // "short" device op for the many-small-ops rule
  size_t memory_curve_points = 400;
};

struct OperatorStats {
  std::string name;
  std::string shapes;                // "" unless grouped by shape
  OpType type = OpType::Other;
  int64_t calls = 0;
  double host_total_us = 0;
  double host_self_us = 0;           // minus child operators, annotations and runtime calls
  double device_self_us = 0;         // device activity launched directly by this operator
  double device_total_us = 0;        // ... by it or any operator it called
};

struct OpTypeStats {
  OpType type = OpType::Other;
  int64_t calls = 0;
  double host_self_us = 0;
  double device_self_us = 0;
};

struct StepBreakdown {
  std::string label;                 // "ProfilerStep#3", or "trace" when the trace has no steps
  double start_us = 0;
  double duration_us = 0;
  std::array<double, kStepCategoryCount> category_us{};
  double device_busy_us = 0;         // any device activity
  double data_wait_us = 0;           // data loading, before the priority rule
  double comm_us = 0;                // device communication, before the priority rule
  double comm_overlapped_us = 0;     // communication while a compute kernel also ran
  int64_t kernels = 0;
  int64_t host_syncs = 0;
};

struct IdleGap {
  double start_us = 0;
  double duration_us = 0;
  std::string step;
};

struct NamedTotal {
  std::string name;
  int64_t count = 0;
  double total_us = 0;
};

struct MemoryCurve {
  std::string device;                // "cpu", "cuda:0", ...
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  std::vector<std::pair<double, double>> points;  // (us since trace start, bytes allocated)
};

struct Finding {
  std::string rule;                  // rule id, e.g. "data_loading"
  std::string title;
  std::string measured;              // rendered measured value, e.g. "23.4% of step time"
  std::string threshold;             // rendered threshold, e.g. "> 5%"
  double value = 0;
  std::string suggestion;
};

struct TraceAnalysis {
  std::string path;
  std::string format;
  int rank = -1;
  std::string device_name;
  bool has_device = false;
  bool tensor_cores = false;         // CUDA compute capability >= 7 or an Ascend NPU
  uint64_t bytes = 0;
  size_t span_count = 0;
  double trace_start_us = 0;         // earliest span, for the memory curve's x axis

  std::vector<OperatorStats> operators;   // sorted by device self time, then host self time
  std::array<OpTypeStats, kOpTypeCount> op_types{};

  std::vector<StepBreakdown> steps;
  StepBreakdown total;               // sums over steps (label "total")

  int64_t kernel_count = 0;          // compute kernels in steps
  int64_t short_kernel_count = 0;
  double kernel_us = 0;
  int64_t launches = 0;              // device activity linked to a host launch
  int64_t launches_into_idle = 0;    // ... issued while the device had nothing queued
  double idle_gap_min_us = 0;        // the option the gaps were found with
  int64_t idle_gap_count = 0;
  double idle_gap_us = 0;
  std::vector<IdleGap> idle_gaps;    // longest first, at most 10

  std::vector<NamedTotal> host_syncs;    // outermost sync calls inside steps, by name
  int64_t host_sync_count = 0;
  std::vector<NamedTotal> cpu_fallback;  // compute operators that launched no device work
  double cpu_fallback_us = 0;
  double matmul_conv_us = 0;             // device time (host time without a device)
  double matmul_conv_fp32_us = 0;
  bool dtypes_recorded = false;

  std::vector<MemoryCurve> memory;
  std::vector<Finding> findings;

  double mean_step_us() const { return steps.empty() ? 0 : total.duration_us / static_cast<double>(steps.size()); }
  double share(double us) const { return total.duration_us > 0 ? us / total.duration_us : 0; }
};

TraceAnalysis analyze_trace(const Trace& trace, const AnalyzeOptions& options = {});

}  // namespace crosstrain::analyze
