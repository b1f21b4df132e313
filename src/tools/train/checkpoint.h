#pragma once
// Checkpoints and exact resume (docs/CHECKPOINT.md).
//
// A checkpoint is one torch.save()-layout file, DIR/checkpoint_<step>.pt, holding the trainer's state
// (tools/train/trainer.h: model, optimizer, scaler, lr_scheduler, rng, data, step) plus "epoch", "args" (the
// settings that decide the computation, as strings) and "crosstrain" (version, format). Python's
// torch.load(path, weights_only=True) opens it; the parts are PyTorch's own state_dict() layouts.
//
// Writing costs the step loop a copy of the small state (batch-norm statistics, RNG) and the
// allocation of the rest; the writer thread copies parameters and optimizer state while the next
// step's forward and backward run (the optimizer step waits for it), then pickles and writes it
// crash-safely (core/state_file.h) while training goes on. At most one write is in flight;
// the next checkpoint waits for it. After a write, the newest `keep` checkpoints this run could
// resume from are kept and older ones of that kind removed; a file that does not qualify
// (unreadable, inconsistent, written with other settings, not crosstrain's) never counts and is
// never removed, so it can never push out a good checkpoint.
//
// Resuming with "auto" takes the newest checkpoint that loads into the trainer, says which ones it
// skipped and why, and starts fresh when there is none. A checkpoint whose settings differ from the
// run's in anything that changes the computation is refused, naming each differing setting.
// One trainer writes a directory at a time (tools/train/checkpoint_lock.h).
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/state_dict.h"
#include "tools/train/train_observer.h"

namespace crosstrain::train {

class Trainer;

constexpr int64_t kCheckpointFormat = 1;

// The settings a resumed run must share with the run that wrote the checkpoint, as flag -> value.
std::vector<std::pair<std::string, std::string>> checkpoint_fingerprint(const TrainConfig& resolved);

// The settings of a checkpoint's "args" that differ from `resolved`'s, as "--flag saved (now value)";
// empty when none differ or the checkpoint records none (another program's).
std::vector<std::string> fingerprint_differences(const core::StateDict& state, const TrainConfig& resolved);

// Reads a checkpoint file (crosstrain's, or a training script's) as a dict of state;
// std::runtime_error naming the file when it cannot.
core::StateDict load_checkpoint_file(const std::filesystem::path& path);

// The file name of the checkpoint of `step`: checkpoint_000000042.pt.
std::string checkpoint_name(int64_t step);

// Checkpoints in `dir`, by name: the highest step in its name first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);

// What --resume chose, and what it passed over (the writer need not read those again).
struct ResumePoint {
  std::string path;  // empty: start fresh
  std::vector<std::pair<std::string, std::string>> skipped;  // (path, why), newest first
};

// Writes snapshots in the background.
class CheckpointWriter {
 public:
  // Why a checkpoint file of the directory cannot serve this run ("" when it can); `ours` is a
  // snapshot this run wrote, to compare layouts with. Runs on the writer thread.
  using Judge = std::function<std::string(const std::filesystem::path& path, const c10::IValue& ours)>;

  CheckpointWriter(std::filesystem::path dir, int64_t keep, Judge judge, const ResumePoint& resumed);
  ~CheckpointWriter();  // finishes the write in flight
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Copies `state` to host memory (waiting first for the previous write) and queues it. Parameters
  // (tensors requiring grad) and everything under "optimizer" are copied by the writer thread:
  // call wait_for_copies() before anything changes them (the optimizer step).
  void save(const c10::IValue& state, int64_t step);
  // Waits until the writer has copied what save() left it; counted as stall.
  void wait_for_copies();
  // Time the loop spent on checkpoints outside save() (gathering the state).
  void add_stall(double seconds) { stall_s_ += seconds; }
  // Waits for the write in flight; rethrows its error.
  void wait();

  // Notes of the writer thread (files left out of --checkpoint-keep, and why), taken once each.
  std::vector<std::string> take_notes();

  int64_t written() const { return written_; }
  double write_seconds() const { return write_s_; }
  double stall_seconds() const { return stall_s_; }
  const std::string& last_path() const { return last_path_; }

 private:
  void run();
  void prune(const c10::IValue& ours);
  std::string verdict(const std::filesystem::path& path, const c10::IValue& ours);
  void release_copies(std::vector<std::pair<at::Tensor, at::Tensor>>& copies);

  std::filesystem::path dir_;
  int64_t keep_;
  Judge judge_;
  // Writer thread only: file name -> why it cannot serve ("" for good), decided once per run.
  std::map<std::string, std::string> verdicts_;
  std::set<std::string> reported_;  // files already named in a note
  std::vector<std::string> notes_;  // under mutex_
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<std::pair<c10::IValue, int64_t>> pending_;
  std::vector<std::pair<at::Tensor, at::Tensor>> deferred_;  // (copy, source) for the writer
  bool busy_ = false, stop_ = false, copying_ = false;
  std::string error_;
  std::thread thread_;
  int64_t written_ = 0;
  double write_s_ = 0, stall_s_ = 0;
  std::string last_path_;
};

// Saves on the configured cadence and at the end of the run; fills the result's checkpoint fields.
class CheckpointObserver final : public TrainObserver {
 public:
  CheckpointObserver(Trainer& trainer, const TrainConfig& resolved, int64_t batches_per_epoch,
                     const ResumePoint& resumed, std::ostream& messages);
  void on_phase_begin(int64_t step, Phase phase) override;
  void on_step_end(const StepRecord& record) override;
  void on_run_end(TrainResult& result) override;
  // Writes a checkpoint of the current state now and waits for it (preemption, end of run).
  void save_now();
  // Waits for the write in flight.
  void wait() { writer_.wait(); }

 private:
  c10::IValue checkpoint_state() const;
  void print_notes();

  Trainer& trainer_;
  const TrainConfig& config_;
  std::ostream& messages_;
  int64_t batches_per_epoch_;
  CheckpointWriter writer_;
  int64_t last_saved_step_ = -1;
};

// Loads a checkpoint's state into the run, all of it or nothing (Trainer::load_state_dict);
// throws when it does not fit.
using ResumeLoad = std::function<void(const core::StateDict& state)>;

// `spec`: "auto" (the newest checkpoint in `dir` that reads and loads, else fresh) or a path. Under
// "auto" a checkpoint that cannot be read, or that `load` refuses, is skipped with a note naming
// why; a named one is an error (one line naming the file). std::invalid_argument when the
// checkpoint's settings differ from `resolved`'s.
ResumePoint choose_resume(const std::string& spec, const std::filesystem::path& dir, const TrainConfig& resolved,
                          const ResumeLoad& load, std::ostream& messages);

// Loads a checkpoint into the trainer: crosstrain's own, or one written by a Python script, which
// resumes at the start of an epoch: the model's state dict is found as --weights finds it
// (core/model_state_finder.h: {"model", ...} of torchvision's reference, {"state_dict", ...} of
// pytorch/examples and timm, wrapper prefixes stripped), the optimizer under "optimizer" or
// "optimizer_state_dict". "epoch" is read as the script that wrote it reads it (script_epoch).
// `notes` hears which entry was used and how "epoch" was read.
void resume_trainer(Trainer& trainer, const core::StateDict& state, int64_t batches_per_epoch,
                    std::ostream* notes = nullptr);

// The epoch a script's checkpoint resumes at, told by its keys, as the script's own --resume does:
// pytorch/examples' imagenet ("state_dict" with "best_acc1", or "best_prec1" of its older
// versions) saves epoch + 1 and resumes at "epoch"; timm ("state_dict", "version") resumes at
// "epoch" + 1 from version 2 on and at "epoch" before; torchvision's classification reference
// ("model", "lr_scheduler", ...) saves the finished epoch and resumes at "epoch" + 1, which is
// also taken for the layouts that do not say (PyTorch's tutorial). 0 without "epoch".
struct ScriptEpoch {
  int64_t next = 0;         // the epoch to run next
  std::string convention;   // how "epoch" was read, for the resume note
};
ScriptEpoch script_epoch(const core::StateDict& state);

// SIGTERM / SIGINT: the first asks the run to stop after the current step (a checkpoint is written
// and the run exits with 128 + the signal's number); a second ends the process at once.
void install_preemption_handlers();
int preemption_signal();  // 0 while none arrived

}  // namespace crosstrain::train
