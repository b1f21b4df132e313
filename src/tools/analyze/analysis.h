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
#include <map>
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

// What the training loop was doing, from the host's side (step_phases.h says how each is found).
enum class StepPhase { DataWait, ToDevice, HostSync, Forward, Backward, Optimizer, Other };
constexpr int kStepPhaseCount = 7;
const char* step_phase_name(StepPhase p);
const char* step_phase_name(int p);

// A line that calls the same function this often within one call of its own function runs in a
// loop (TraceAnalysis::op_loops); a chain of calls on one line (`x.float().pow(2).mean(-1)`)
// calls each function once.
constexpr int64_t kLoopRepeats = 4;
// An operator costing at most this many times the trace's per-operator overhead is small.
constexpr double kSmallOpOverheads = 10;

// A line of the user's script (or of a library it calls) and the work behind it.
struct SourceLine {
  std::string where;                 // "train.py:84"
  std::string code;                  // the line's text
  std::string via;                   // the library line that issued most of the work, when not `where`
  int64_t count = 0;                 // spans (calls, operators, copies ...) behind it
  int64_t ops = 0;                   // operators under its calls (call loops)
  double per_step = 0;               // count / steps
  double time_us = 0;
  int64_t small_ops = 0;             // ... of them small (TraceAnalysis::small_op_us)
  int64_t repeats = 0;               // most calls of one function it made in one call of its own function
};

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
  std::vector<SourceLine> sources;   // the user's lines behind its time (self time), most first
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
  double device_window_us = 0;       // from the step's first device activity to its end (0: none)
  int64_t kernels = 0;
  int64_t host_syncs = 0;
  // Host time by phase, each instant once (data wait > copies to the device > backward >
  // optimizer > forward > host syncs outside those > other), and the device's idle time by the
  // phase the host was in meanwhile (data wait > host sync > copies > backward > optimizer >
  // forward > other). Zero without device activity.
  std::array<double, kStepPhaseCount> phase_us{};
  std::array<double, kStepPhaseCount> idle_us{};
  double h2d_us = 0;                 // device time of host-to-device copies
  int64_t h2d_copies = 0;
};


struct IdleGap {
  double start_us = 0;               // trace time (us since the trace's time base)
  double duration_us = 0;
  std::string step;
  double offset_in_step_us = 0;      // start_us minus the start of its step's window
};

struct NamedTotal {
  std::string name;
  int64_t count = 0;
  double total_us = 0;  // summed over calls (calls on several threads at once add up)
  double wall_us = 0;   // runtime calls: the union of their times, never more than the steps
  double one_time_us = 0;  // runtime calls: the one call of this name that is a one-time cost (0: none)
};

struct KernelStats {
  std::string name;
  int64_t count = 0;
  double total_us = 0, min_us = 0, max_us = 0;
};

// Distribution of a per-launch delay, in us.
struct DelayStats {
  int64_t count = 0;
  double mean_us = 0, p50_us = 0, p95_us = 0, max_us = 0;
};

// One collective by name: its device time and, when the trace carries message arguments
// ("In msg nelems" ... on Kineto's NCCL kernels), bytes moved and the algorithm bandwidth.
struct CollectiveStats {
  std::string name;
  int64_t count = 0;
  double total_us = 0;
  int64_t sized = 0;                 // calls whose message size is known
  double bytes = 0;                  // summed over sized calls
  double sized_us = 0;               // device time of the sized calls
  double bandwidth_gbps() const { return sized_us > 0 ? bytes / sized_us / 1e3 : 0; }
};

// One step's activity, row by row, for the HTML timeline: each host thread's outermost
// operators/annotations and its runtime calls, and each device stream's work.
struct TimelineBar {
  double start_us = 0;               // since the step's window start
  double duration_us = 0;
  std::string name;
  int category = 0;                  // StepCategory index, for the colour
};
struct TimelineRow {
  std::string label;                 // "host 4242/4242", "runtime 4242/4242", "device 0/7"
  std::vector<TimelineBar> bars;
};
struct TimelineView {
  std::string step;                  // the step shown: the one of median duration
  double duration_us = 0;
  std::vector<TimelineRow> rows;
  int64_t dropped = 0;               // bars left out past the per-row cap
};

// One device stream's time inside steps: busy, and its idle gaps split by cause. A gap before a
// piece of work splits at the end of that work's launch call: before it the host had not yet
// launched the work (host wait), after it the work was launched but had not started (queued:
// launch latency, or a wait on another stream or event). A gap before work with no known launch
// is unlinked; the stretch after a step's last work on the stream is tail.
struct StreamIdle {
  std::string stream;                // "pid/tid" of the device track
  double busy_us = 0, host_wait_us = 0, queued_us = 0, unlinked_us = 0, tail_us = 0;
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
  std::string evidence;              // the events behind the value and their share of step time
  std::vector<SourceLine> sources;   // the lines of the script behind that evidence, most first
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
  // The trace's last ProfilerStep when it did no backward or optimizer work while the step before it
  // did: the profiler stopped inside a step the loop never ran (the loop's tail after its last
  // prof.step(), or a script that ended before the schedule's active steps were over). It is left
  // out of the steps and said. "" when none.
  std::string partial_step;
  double partial_step_us = 0;

  int64_t kernel_count = 0;          // compute kernels in steps
  int64_t short_kernel_count = 0;
  double kernel_us = 0;
  int64_t launches = 0;              // runtime calls that launched device work (a graph launch once)
  int64_t launches_into_idle = 0;    // ... issued while the device had nothing queued
  double idle_gap_min_us = 0;        // the option the gaps were found with
  int64_t idle_gap_count = 0;
  double idle_gap_us = 0;
  std::vector<IdleGap> idle_gaps;    // longest first, at most 10

  std::vector<NamedTotal> host_syncs;    // outermost sync calls inside steps, by name
  int64_t host_sync_count = 0;
  double host_sync_us = 0;               // their union: never more than the steps
  std::vector<NamedTotal> runtime_calls;    // host runtime calls inside steps by total time, at most 20
  // The longest single runtime call inside steps (clipped to its step) that does not wait for the
  // device (no synchronize, no free, no blocking copy: those last as long as the work before them).
  // A call that does not wait is a one-time cost when it stands far out from the other calls of its
  // name: the first call of its name more than 10x their median, or any call at least 100x their
  // median that is also most of its name's time. CUDA loads a kernel's module at that kernel's first
  // launch (lazy module loading, CUDA_MODULE_LOADING=LAZY), which is seldom the first launch of the
  // trace; a library (cuBLAS, cuDNN) creates its handle at first use.
  struct LongestRuntimeCall {
    std::string name;              // "" when the trace has no runtime call in steps
    double duration_us = 0;
    bool first = false;            // the first call of its name in the trace
    int64_t ordinal = 0;           // its place among the calls of its name in the trace (1: first)
    bool one_time = false;         // a one-time cost, as above
    int64_t calls = 0;             // calls of that name inside steps
    double others_median_us = 0;   // the median of the other calls of that name (0: none)
    double others_total_us = 0;    // the other calls of that name inside steps, summed
    std::string step;
    double offset_in_step_us = 0;
  } longest_runtime_call;
  // Runtime calls that give the device work (is_launch_call_name) inside steps. With none of the
  // device's activity in the trace (has_device false) the device side was not recorded.
  int64_t launch_calls = 0;
  bool device_missing() const { return !has_device && launch_calls > 0; }
  std::vector<NamedTotal> allocator_calls;  // device/pinned memory allocations and frees inside steps
  double allocator_us = 0;                  // their union
  double allocator_in_data_loading_us = 0;  // ... while a data-loading span ran
  std::vector<NamedTotal> cpu_fallback;  // compute operators that launched no device work
  double cpu_fallback_us = 0;
  double matmul_conv_us = 0;             // device time (host time without a device)
  double matmul_conv_fp32_us = 0;
  bool dtypes_recorded = false;

  // Device views.
  std::vector<KernelStats> top_kernels;        // compute kernels by total time, at most 50
  DelayStats launch_delay;                     // launch call start -> start of its first device work
  DelayStats idle_launch_latency;              // launches into an idle device: launch end -> device start
  std::vector<CollectiveStats> collectives;    // device collectives by name, by total time
  std::vector<StreamIdle> stream_idle;         // per device stream, busiest first
  std::vector<NamedTotal> pageable_copies;     // device copies to/from pageable host memory, by name
  double pageable_copy_us = 0;                 // their device time inside steps
  std::vector<NamedTotal> ai_cpu_tasks;        // Ascend AI_CPU tasks (operators without an AI Core kernel)
  double ai_cpu_us = 0;
  std::vector<NamedTotal> online_compile;      // online operator compilation calls, by operator
  double online_compile_us = 0;
  int64_t data_bound_steps = 0;                // steps spending more than half their time in data loading

  // How much of the trace was understood: spans of a recognised kind, and the most frequent
  // categories of the rest. A trace with no recognised span is not a result (see unrecognised()).
  size_t recognised_spans = 0;
  std::vector<std::string> unrecognised_categories;

  TimelineView timeline;
  std::vector<MemoryCurve> memory;
  std::vector<Finding> findings;

  // Source lines (traces recorded by `crosstrain run --profile`, see source_index.h).
  bool source_lines = false;               // call sites were read and matched the trace
  bool module_spans = false;  // forward time known: nn.Module spans (with_stack + with_modules) or the trainer's forward
  std::map<std::string, std::vector<SourceLine>> lines;  // the lines behind each advisor rule's evidence
  // Tensor values read on the host (.item(), .tolist(), .cpu(), .numpy(), nonzero ...) by calls
  // made from the user's own lines inside steps: on an accelerator each one waits for the device.
  std::vector<SourceLine> host_reads;
  int64_t host_read_count = 0;
  // The user's lines that made the most Python calls per step, with the operators under them;
  // lines making fewer than 8 calls per step are left out. Many calls per step are a loop only
  // when they come from one call of the line's own function (a module's forward, a step
  // function): one line of a module's forward run by each of 232 instances is the model's depth.
  std::vector<SourceLine> call_loops;
  // The same, counting only calls made in a loop: a line that called the same function at least
  // kLoopRepeats times within one call of its own function (one module instance's forward, one
  // step of the script's loop), with the operators under those calls.
  std::vector<SourceLine> op_loops;
  // An operator is small when its cost (host time, or the device time of its work when longer)
  // is at most small_op_us = 10 x op_overhead_us, the fixed cost of any operator in this trace:
  // the host time of its cheapest operators (10th percentile of the outermost operators in
  // steps, held to 1-50 us). A loop of small operators pays mostly that fixed cost.
  double op_overhead_us = 0;
  double small_op_us = 0;
  std::vector<DataLoaderSettings> loaders;  // as the script built them
  // DataLoader time inside steps by the kind of iterator torch names in its spans: batches loaded
  // by the training process itself (num_workers=0), handed over by workers, and iterators started
  // (DataLoader.__iter__: worker processes start there) with the wait for their first batch.
  struct LoaderTime {
    double in_process_us = 0;
    double from_workers_us = 0;
    double start_us = 0;
    int64_t starts = 0;
    std::vector<double> wait_per_step;  // all data-loading time, by step
  } loader_time;
  int cpus = 0;                             // CPUs the training process could use (0: unknown)

  // Why this analysis must not be presented as a result ("" when it may): nothing in the trace was
  // recognised as an operator, annotation, runtime call or device activity.
  std::string unrecognised() const;

  double mean_step_us() const { return steps.empty() ? 0 : total.duration_us / static_cast<double>(steps.size()); }
  double share(double us) const { return total.duration_us > 0 ? us / total.duration_us : 0; }
};

TraceAnalysis analyze_trace(const Trace& trace, const AnalyzeOptions& options = {});

}  // namespace crosstrain::analyze
