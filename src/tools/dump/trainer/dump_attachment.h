#pragma once
// Dumps on a training run (`train --dump`, both sides of `align`): the options the flags fill, and
// the observers and batch source they become. Torch-free header: the CLI binds flags to
// DumpOptions without seeing libtorch; only dump_attachment.cpp knows the dump session.
//
//   DumpOptions o; o.dir = "dump"; o.steps = "0-1";
//   train::TrainHooks hooks;
//   DumpAttachment dump = attach_dump(o, o.dir, config, hooks, /*host_batches=*/false);
//   train::run_training(train::check_config(config), hooks);
//   dump.close();
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace crosstrain::train {
struct TrainConfig;
struct TrainHooks;
}  // namespace crosstrain::train
namespace crosstrain::dump {
class DumpSession;
class ModuleDisturbance;
}  // namespace crosstrain::dump

namespace crosstrain::dump {

struct DumpOptions {
  std::string dir;             // train: --dump DIR; align names its own directories
  std::string steps = "0";     // steps to dump: list and ranges, e.g. "0-2,10"; "" = every step
  std::string mode = "stats";  // stats | tensors
  bool overwrite = false;      // replace a dump already in `dir`
  // Test aids.
  std::string perturb;         // MODULE[=RELATIVE]: noise of RELATIVE x mean|output|, default 1e-2
  std::string inject_nan;      // MODULE: a NaN in the first element of its output
  std::string input_npy;       // DIR with images.npy and labels.npy: the batch of every step
};

// What a run with dump options holds on to while it trains; it owns the observers it listed in
// the hooks, so it must outlive the run.
class DumpAttachment {
 public:
  DumpAttachment();
  ~DumpAttachment();
  DumpAttachment(DumpAttachment&&) noexcept;
  DumpAttachment& operator=(DumpAttachment&&) noexcept;

  bool dumping() const { return session_ != nullptr; }
  void close();                      // finishes the dump (index, loss log); idempotent
  std::string dir() const;           // "" when not dumping
  int64_t records_written() const;   // 0 when not dumping

 private:
  friend DumpAttachment attach_dump(const DumpOptions&, const std::string&, const train::TrainConfig&,
                                    train::TrainHooks&, bool);
  std::unique_ptr<dump::DumpSession> session_;
  std::vector<std::unique_ptr<dump::ModuleDisturbance>> disturbances_;
};

// Opens the dump in `dir` (none when empty), adds the disturbances after it, and installs the .npy
// batch source when one is named; otherwise, with `host_batches`, synthetic batches generated on
// the host (identical whatever the device). std::invalid_argument for malformed options,
// std::runtime_error when the directory is unusable.
DumpAttachment attach_dump(const DumpOptions& options, const std::string& dir, const train::TrainConfig& config,
                           train::TrainHooks& hooks, bool host_batches);

}  // namespace crosstrain::dump
