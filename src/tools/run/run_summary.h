#pragma once
// What the agent reported from each process of a run (one JSON file per process that imported
// torch, written at its exit into the run's private state folder), and the lines `run` prints.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::run {

struct ProcessReport {
  int64_t pid = 0;
  std::optional<int64_t> rank;
  int64_t steps = 0;
  std::string torch_version;
  std::string dump_dir;
  int64_t records = 0, bytes = 0;
  std::string dump_note;
  std::vector<std::string> seeded;   // what --seed set
  std::string nonfinite;             // the first non-finite tensor, described in one line
  std::string fp16_overflow;         // the first float32 output beyond float16's range
  std::string written_inf;           // infinities the program wrote (a mask): counted, not a stop
  std::string scaler_skips;          // steps a GradScaler skipped on overflow: counted, not a stop
  std::string dump_error;            // why recording stopped before the end (the script went on)
  std::string skipped;               // tensors not recorded, by reason ("5 nested tensor, 2 dtype float8_e4m3fn")
  bool profiled = false;             // the process ran the profiler
  bool refused = false;              // the agent refused its options (and said why) before the script ran
  bool closed = false;               // the agent finished its dump at exit (Python's exit handlers ran)
  std::vector<std::string> traces;   // trace files (or torch_npu folders) it wrote, one per cycle
};

// What the profiler was asked, for the summary's hint when nothing was recorded.
struct ProfileSchedule {
  int wait = 1, warmup = 1, active = 3, repeat = 1;
};

// Reads every agent-*.json in dir; unreadable files are skipped (a process killed mid-write).
std::vector<ProcessReport> read_reports(const std::string& dir);

// The summary: a line per process that ran steps (by rank), then notes. `python`: whether the command
// looked like Python before it ran (a different hint when no process reported). `end_signal`: the
// signal that ended the command (0: it exited); when `dumping`, its step in progress was not written,
// unless every process that reported finished its dump at exit (a KeyboardInterrupt runs Python's exit
// handlers before the signal ends the process).
std::vector<std::string> summary_lines(const std::vector<ProcessReport>& reports, bool python,
                                       const ProfileSchedule* schedule = nullptr, int end_signal = 0,
                                       bool dumping = false);

}  // namespace crosstrain::run
