#pragma once
// Runs one attempt of a launch: the local workers as child processes, each in its own process
// group, until all have exited, one has failed or the launcher was told to stop.
//
//   SignalWatch signals;                     // once per launch: SIGINT/SIGTERM/SIGHUP/SIGCHLD
//   GroupResult r = run_worker_group(program, workers, options, signals);
//
// One thread and poll(2): the workers' stdout and stderr come through pipes and leave as whole
// lines with a "[rankN]: " prefix (LinePrefixer), each through the OutputSink of the launcher's
// stream of the same name, which never blocks this loop (a stream that takes nothing makes the
// sink drop lines, counted). Signals arrive through a self-pipe, so the loop sees them between reads.
//
// Stopping: the first worker that exits non-zero or dies by a signal stops the group: the others
// get SIGTERM and, after kill_timeout_s, SIGKILL. A SIGINT, SIGTERM or SIGHUP sent to the launcher
// is forwarded to every worker's process group; a second one, or the same timeout, sends SIGKILL.
// When the group is over, whatever is left of each worker's process group is killed, so a worker's
// background children do not outlive the launch. Workers read stdin from /dev/null and die with
// SIGKILL if the launcher itself dies (PR_SET_PDEATHSIG).
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::launch {

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGCHLD that write to a pipe, and ignores
// SIGPIPE (a closed stdout must not kill the launcher while workers run); restores all on
// destruction. One instance at a time.
class SignalWatch {
 public:
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  int fd() const;                 // readable when a signal arrived
  std::vector<int> take();        // the signals that arrived since the last call, in order
};

struct Program {
  std::string path;               // the executable to exec (already resolved)
  std::vector<std::string> argv;  // argv[0] included
};

struct WorkerSpec {
  int rank = 0;                   // global rank: the output prefix and messages
  int local_rank = 0;
  std::vector<std::string> env;   // the worker's whole environment, "NAME=value"
};

class OutputSink;

struct GroupOptions {
  bool prefix_output = true;
  OutputSink* out = nullptr;      // where the workers' prefixed lines go (required with prefix_output)
  OutputSink* err = nullptr;
  double kill_timeout_s = 30;
  std::function<void(const std::string&)> note;  // the launcher's own messages (one line each)
};

struct WorkerEnd {
  int rank = 0;
  int local_rank = 0;
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal killed it (then exit_code is unused)
  bool failed() const { return signal != 0 || exit_code != 0; }
  int status() const { return signal != 0 ? 128 + signal : exit_code; }  // as a shell reports it
  std::string describe() const;  // "exit code 3" or "signal 9 (SIGKILL)"
};

struct GroupResult {
  std::optional<WorkerEnd> first_failure;  // the failure that stopped the group
  int stop_signal = 0;                     // the signal that stopped the launcher, 0 if none
  bool killed = false;                     // SIGKILL was needed for some worker
  std::vector<WorkerEnd> ends;             // every worker, in order of exit
};

// Starts `workers` (one process each) running `program` and returns when all have exited.
// Throws std::runtime_error when a worker cannot be started (the ones started are stopped first).
GroupResult run_worker_group(const Program& program, const std::vector<WorkerSpec>& workers,
                             const GroupOptions& options, SignalWatch& signals);

// "SIGTERM" for 15 (the numbers of other signals as "signal N").
std::string signal_name(int sig);

}  // namespace crosstrain::launch
