#pragma once
// `--profile DIR` on train and bench: records a few steps on a wait / warmup / active schedule
// (torch.profiler.schedule's meaning) and writes one Chrome trace per active window, in
// torch.profiler's schema, so Perfetto, chrome://tracing, TensorBoard and `crosstrain analyze` read it.
// Cycle k of rank r goes to DIR/cycle<k>/rank<r>.pt.trace.json, the layout `crosstrain run --profile`
// writes (python/crosstrain/_profile.py), so both are read the same way.
//
// Two recorders write that schema:
//  - kineto: libtorch's own profiler (the PyPI wheel links Kineto on CPU and CUDA). Device kernels,
//    memcpy/memset and runtime calls come with the CPU operators, as with torch.profiler.
//  - portable: RecordFunction callbacks plus the allocator's memory reports, for devices and builds
//    without Kineto (out-of-tree PrivateUse1 backends). CPU-side operators, annotations and memory only.
//
// The training loop marks its phases with user scopes ("data_wait", "forward", "backward",
// "optimizer_step", "scaler_update"); the session adds "ProfilerStep#N" around each step and one
// span per module ("layer3.2.conv2") through a ForwardObserver.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace crosstrain::core {
class ForwardObserver;
}

namespace crosstrain::profile {

struct ProfileOptions {
  std::string dir;            // empty: profiling off
  int rank = 0;               // names the traces (see trace_path); 0 on one process
  int64_t wait = 1;           // steps skipped before each cycle
  int64_t warmup = 1;         // steps recorded but discarded (the profiler warms up)
  int64_t active = 3;         // steps written to the trace
  int64_t repeat = 1;         // cycles; 0 = until the run ends
  std::string recorder = "auto";  // auto | kineto | portable
  bool record_shapes = true;   // input shapes and dtypes of every operator
  bool profile_memory = true;  // allocation / free events with running totals
  bool module_spans = true;    // one span per module ("layer3.2.conv2")
};

void validate_profile_options(const ProfileOptions& o);

// DIR/cycle<cycle>/rank<rank>.pt.trace.json
std::string trace_path(const std::string& dir, int64_t cycle, int rank);

class ProfileSession {
 public:
  // `device` is the resolved device name ("cpu", "cuda:0", "npu:0").
  ProfileSession(ProfileOptions options, std::string device);
  ~ProfileSession();
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;

  void step_begin(int64_t step);
  void step_end(int64_t step);
  // Ends an open window early (run shorter than the schedule) and writes what it has.
  void finish();

  core::ForwardObserver* module_observer();
  const std::vector<std::string>& traces_written() const { return written_; }
  const std::string& recorder() const { return recorder_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ProfileOptions opt_;
  std::string recorder_;
  std::vector<std::string> written_;
};

}  // namespace crosstrain::profile
