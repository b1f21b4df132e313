#pragma once
// An `align` side that trains as N data-parallel processes ("nproc=N"): the align process starts N
// copies of itself with torchrun's worker environment (tools/launch) and one variable saying which
// side they train and where the dumps go; each copy trains that side as one rank and dumps into
// SIDE/rank<R>. Torch-free.
//
//   parent:  int status = run_side_ranks("b", 2, out_dir);        // the launcher's exit status
//   worker:  if (auto role = align_worker_role()) { ... train role->side, dump to role->out ... }
#include <optional>
#include <string>

namespace crosstrain::align {

// The exit status of a rank whose loss turned NaN or infinite: a stopped side, not a failed one.
inline constexpr int kAlignRankStoppedExit = 4;

struct AlignWorkerRole {
  std::string side;  // "a" or "b"
  std::string out;   // the align output directory the parent chose
};

// Set in a process the parent started for a multi-process side; nullopt otherwise. The rank is
// torchrun's (dist::WorkerEnv).
std::optional<AlignWorkerRole> align_worker_role();

// Runs `nproc` copies of this process (its own executable and command line) as one data-parallel
// side on this node, on a free port, and returns the launcher's exit status: 0, the first failing
// rank's status, or 128 + a stop signal. Their output goes to this process's, prefixed by rank.
int run_side_ranks(const std::string& side, int nproc, const std::string& out);

}  // namespace crosstrain::align
