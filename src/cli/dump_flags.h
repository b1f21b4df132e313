#pragma once
// Dump flags of `train` and `align`, and how they become observers and a batch source on a run.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tools/align/dump_session.h"
#include "tools/train.h"

namespace crosstrain::cli {

struct DumpFlags {
  std::string dir;             // --dump (train only; align dumps under --out)
  std::string steps = "0";     // --dump-steps
  std::string mode = "stats";  // --dump-mode
  bool overwrite = false;
  // Test aids (hidden flags).
  std::string perturb;         // MODULE[=RELATIVE]: noise of RELATIVE x mean|output|, default 1e-2
  std::string inject_nan;      // MODULE: a NaN in the first element of its output
  std::string input_npy;       // DIR with images.npy and labels.npy: the batch of every step
};

// with_dir: add --dump DIR and --dump-overwrite (train); align names its own directories.
void add_dump_flags(CLI::App* cmd, DumpFlags& f, bool with_dir);

// What a run with dump flags holds on to while it trains; observers are listed in `hooks`.
struct DumpAttachment {
  std::unique_ptr<tools::DumpSession> session;
  std::vector<std::unique_ptr<tools::ModuleDisturbance>> disturbances;
};

// Opens the dump (when `dir` is set), adds the disturbances after it, and installs the .npy batch
// source when one is named. `host_batches`: otherwise generate synthetic batches on the host
// (identical whatever the device). std::invalid_argument for malformed flags.
DumpAttachment attach_dump(const DumpFlags& f, const std::string& dir, const tools::TrainConfig& c,
                           tools::TrainHooks& hooks, bool host_batches);

}  // namespace crosstrain::cli
