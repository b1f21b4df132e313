#pragma once
// `align`'s work without the command line: the same training on two setups (device, precision,
// threads, layout), both dumped under one directory, then compared. Torch-free header.
//
//   AlignOptions o; o.base.model = "resnet18"; o.a = "device=cpu precision=fp32";
//   o.b = "device=cpu precision=bf16"; o.out = "align-out";
//   AlignRun run = run_align(o, std::cerr);   // run.result.agree, run.result.first_divergence
//
// Both sides start from one set of initial weights, written once on the host (OUT/initial_weights.pt
// unless base.weights_in names them), and train on batches generated on the host, so device RNGs
// and thread counts cannot make the starting points differ. A side whose loss turns NaN or infinite
// stops there; its dump is still compared and the stop becomes a problem of the result (the runs
// differ). A side that cannot run at all, or fails for any other reason (its device does not open,
// the weights do not load, an operator is missing, memory runs out), is no answer about the runs:
// run_align throws AlignSideFailed naming the side and the reason.
//
// A side may train as N data-parallel processes ("nproc=N", Gloo on the CPU, the device's backend
// elsewhere): the align process starts N copies of itself (tools/commands/align_ranks.h), each rank
// dumps into SIDE/rank<R>, and rank 0's dump is compared. Both sides then read one sharded dataset
// (synthetic:S, generated on the host) and must see the same samples per step: the side with fewer
// processes accumulates micro-batches (accumulate_steps) to make up the global batch, unless the
// spec sets it. Dumps of an accumulating run hold its first micro-batch, which is rank 0's.
#include <ostream>
#include <stdexcept>
#include <string>

#include "tools/compare/dump_compare.h"
#include "tools/dump/trainer/dump_attachment.h"
#include "tools/train/train_config.h"

namespace crosstrain::align {

struct AlignOptions {
  train::TrainConfig base;  // what both sides share
  std::string a, b;         // each side's changes: "device=cpu precision=bf16 threads=2"
  std::string out;          // directory for OUT/a and OUT/b; "" = a new align-<time> here
  crosstrain::dump::DumpOptions dump;         // steps and mode; the disturbances (test aids) apply to B only
  bool strict = false;      // warnings make the runs differ
};

// A side could not run or failed before its comparison meant anything; what() names the side
// ("run B (device=cuda:0): ..."). `align` exits with kAlignSideFailedExit for it.
struct AlignSideFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
inline constexpr int kAlignSideFailedExit = compare::kNoVerdictExit;

struct AlignRun {
  std::string out_dir;           // where the dumps are
  bool out_dir_generated = false;
  compare::CompareResult result;   // problems include a side that stopped early
  bool worker = false;           // this process trained one rank of a side: no verdict here
};

// The keys a side may set: device, precision, threads, channels_last, backend_lib, loss_scale,
// nproc, accumulate_steps. std::invalid_argument naming the side and key for a malformed spec; the
// side's configuration is checked once both sides are matched (run_align).
struct AlignSide {
  train::TrainConfig config;
  int nproc = 1;                // processes the side trains as
  bool accumulate_set = false;  // the spec set accumulate_steps
};
AlignSide parse_align_side(const train::TrainConfig& base, const std::string& side, const std::string& spec);

// Makes both sides see the same samples per step when their process counts differ: the side with
// fewer processes accumulates micro-batches unless its spec set accumulate_steps, and both read
// one sharded synthetic dataset. std::invalid_argument when the global batches cannot be matched.
// Notes what it changed to `log` when given.
void match_align_sides(AlignSide& a, AlignSide& b, std::ostream* log);

// Checks both sides once (train::check_config) and opens both devices before anything runs
// (std::invalid_argument naming the side for a malformed or invalid side, AlignSideFailed for a
// device that does not open), then trains A, then B, and compares. Progress lines go to `log`.
AlignRun run_align(const AlignOptions& options, std::ostream& log);

}  // namespace crosstrain::align
