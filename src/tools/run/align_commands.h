#pragma once
// `crosstrain align --a "CMD" --b "CMD"`: the user's own command twice under `run` with the same
// seed and dump settings, then compared: the verdict and the first divergence, by operator.
//
//   AlignCommands a;  a.a = "python train.py --device cpu";  a.b = "python train.py --device cuda";
//   AlignCommandsResult r = align_commands(a, options);   // r.result.agree, r.result.first_divergence
//
// Each side is a command string (words split as a shell would, without expansion; leading NAME=VALUE
// words set its environment). `a_env`/`b_env` run one command twice with two environments instead.
// A side that runs as several ranks (torchrun) is compared through rank 0's dump. A side whose command
// fails or records nothing gives no verdict: AlignSideError names the side and the reason.
#include <map>
#include <stdexcept>
#include <string>

#include "tools/compare/dump_compare.h"
#include "tools/run/runner.h"

namespace crosstrain::run {

struct AlignCommands {
  std::string a, b;                          // command strings; empty: `command`
  std::map<std::string, std::string> a_env, b_env;
  std::vector<std::string> command;          // the one command of the environment form
  std::string out;                           // OUT/a and OUT/b; "" = a new align-<time> here
  RunRequest shared;                         // seed and dump settings both sides use (dump = "")
  compare::CompareOptions compare;
};

struct AlignSideError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AlignCommandsResult {
  std::string out_dir, dump_a, dump_b;       // the dumps compared (rank 0's for a multi-rank side)
  std::vector<std::string> a_argv, b_argv;
  compare::CompareResult result;
};

// std::invalid_argument for a caller mistake (a side that is not a command, no command at all),
// AlignSideError when a side fails, compare::UnreadableInput when a dump cannot be read back.
AlignCommandsResult align_commands(const AlignCommands& request, const RunOptions& options);

}  // namespace crosstrain::run
