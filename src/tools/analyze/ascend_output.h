#pragma once
// The files the Ascend PyTorch Profiler writes next to trace_view.json in ASCEND_PROFILER_OUTPUT/,
// as users and msprof-analyze read them:
//   kernel_details.csv     one row per NPU task. Two column generations: "Name", "Type",
//                          "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)"
//                          (torch_npu >= 2.1) and "Op Name", "OP Type", "Task Type",
//                          "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)" (older).
//   op_statistic.csv       per operator type and core: "OP Type", "Core Type", "Count",
//                          "Total Time(us)", ... (with or without a leading "Device_id").
//   step_trace_time.csv    per step: "Step", "Computing", "Communication(Not Overlapped)",
//                          "Overlapped", "Communication", "Free", ... in us.
//   communication.json     per step, per collective: "Communication Time Info" (Elapse / Transit /
//                          Wait / Synchronization Time(ms)) and bandwidth per transport.
//   communication_matrix.json  per step, per collective, per "src-dst" link: "Transport Type",
//                          "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)".
// CSV files are read as RFC 4180, one record at a time (memory is one record, not the file); msprof
// writes big numbers with a trailing tab (so spreadsheets keep the digits): cells are trimmed of
// spaces and tabs. A number must be a plain non-negative decimal: a row whose cell is not (hex,
// inf, a sign, text) is left out and the file's note names the first such cells. A JSON figure
// must be a JSON number, finite and non-negative: one that is not (absent, a string "0.4", null,
// true, -5) is left out of its sum, never read as 0, and counted in the file's note. A duration
// (CSV or JSON) above kMaxDurationUs (trace.h, 11 days), and a size or bandwidth above 1e12, is
// implausible and left out the same way. A file that is missing is simply absent; one that cannot
// be read adds a note and is skipped.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/analyze/analysis.h"

namespace crosstrain::analyze {

struct AscendStepRow {
  std::string step;
  double computing_us = 0, comm_not_overlapped_us = 0, overlapped_us = 0, comm_us = 0, free_us = 0;
};

struct AscendCollective {
  std::string name;             // "hcom_allReduce__123_0_1@1234", per step summed
  double elapse_ms = 0, transit_ms = 0, wait_ms = 0, sync_ms = 0;
};

struct AscendLink {
  std::string collective, link, transport;  // link "src-dst"
  double size_mb = 0, time_ms = 0, bandwidth_gbps = 0;
};

// The trace's own breakdown against the profiler's step_trace_time.csv, summed over the steps
// both have (ProfilerStep#N and Step N): compute-kernel time ("Computing"), communication, and
// communication overlapped with compute. They agree within a few percent when the trace is read
// right; a larger gap is said next to the profiler's table.
struct AscendAgreement {
  int steps = 0;  // steps compared; 0: nothing to compare
  double computing_trace_us = 0, computing_csv_us = 0;
  double comm_trace_us = 0, comm_csv_us = 0;
  double overlapped_trace_us = 0, overlapped_csv_us = 0;
  // The largest relative difference of the three, against the profiler's figure (or the step time
  // when the profiler's figure is under 1% of it).
  double worst = 0;
};
constexpr double kAscendAgreementTolerance = 0.05;

struct AscendOutput {
  std::string folder;
  bool has_kernel_details = false, has_op_statistic = false, has_step_trace = false, has_communication = false,
       has_matrix = false;
  std::vector<NamedTotal> cores;          // kernel_details by accelerator core: tasks, us
  std::vector<KernelStats> kernels;       // kernel_details by name, by total time (at most 50)
  std::vector<NamedTotal> op_statistic;   // "OP Type (Core Type)": count, total us
  std::vector<AscendStepRow> steps;
  std::vector<AscendCollective> collectives;  // communication.json, "Total Op Info" left out
  double comm_elapse_ms = 0, comm_wait_ms = 0, comm_transit_ms = 0;  // sums of the valid values
  int64_t comm_entries = 0;  // collectives read, over all steps: each has an elapse, transit and wait time
  int64_t comm_elapse_left_out = 0, comm_wait_left_out = 0, comm_transit_left_out = 0;  // values not valid
  std::vector<AscendLink> links;          // communication_matrix.json, slowest first
  std::vector<std::string> notes;
  AscendAgreement agreement;              // filled by compare_with_trace
};

// Reads what exists of the files above in `dir` (an ASCEND_PROFILER_OUTPUT folder).
AscendOutput read_ascend_output(const std::string& dir);

// The folder of Ascend side files for a trace read from `trace_path`, or "" when the trace is not
// a trace_view.json inside ASCEND_PROFILER_OUTPUT/.
std::string ascend_output_dir_of(const std::string& trace_path);

// Fills `out.agreement` from the analysis of the trace_view.json next to the side files.
void compare_with_trace(AscendOutput& out, const TraceAnalysis& trace);

// Several ranks: the slow rank (most time waiting in collectives: others arrive late at it, so
// the rank that waits least is the straggler) and the slowest links. The slow rank is judged over
// the ranks whose wait times are all valid: a rank with a wait time left out (its sum would be too
// small, and it would look like the straggler) or with none is not judged, and said so; with
// fewer than two such ranks there is no verdict.
std::string render_ascend_console(const std::vector<AscendOutput>& ranks, const std::vector<int>& rank_ids);

nlohmann::json ascend_output_to_json(const AscendOutput& a);

}  // namespace crosstrain::analyze
