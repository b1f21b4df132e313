#pragma once
// Records a training run into a crosstrain dump (docs/DUMP_FORMAT.md) by watching the loop through
// train::TrainObserver; the trainer itself knows nothing about dumps.
//
//   DumpSessionOptions o; o.dir = "dump_a"; o.mode = dump::DumpMode::Stats; o.steps = StepSelection::parse("0-1");
//   DumpSession dump(o);                          // opens the dump now: a bad directory fails early
//   train::TrainHooks hooks; hooks.train_observers.push_back(&dump);
//   train::run_training(train::check_config(config), hooks);
//   dump.close();
//
// Per dumped step, in execution order: every module's forward output (block and leaf), the loss and
// the loss scale, the gradient flowing into each module output as backward reaches it, then every
// parameter's gradient (scaled and unscaled when a loss scaler runs). With K accumulated
// micro-batches, the loss and module records are of the first micro-batch, and module gradients are
// taken with respect to that micro-batch's own loss (backward saw it divided by K): what rank 0 of
// a K-rank data-parallel run records for the same samples. The loss of every step (the mean of its
// micro-batches) goes to loss.jsonl. Tensors are copied to host memory on dumped steps only; other steps cost one branch
// per module. Writes are serialised (backward hooks may run on autograd's device threads).
//
// ModuleDisturbance is a test aid: it changes one named module's output (relative noise or a NaN) so tests can prove that a comparison finds the place where two runs part.
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/models.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/dump_writer.h"
#include "tools/train/train_observer.h"

namespace crosstrain::dump {

struct DumpSessionOptions {
  std::string dir;
  dump::DumpMode mode = dump::DumpMode::Stats;
  dump::StepSelection steps;        // default: every step
  nlohmann::json meta = nlohmann::json::object();  // model, precision, device, seed, ...
  bool overwrite = false;            // replace a dump already in `dir`
};

// The dump's meta block for a run configuration (model, precision, device, seed, batch, ...).
nlohmann::json dump_meta_for(const train::TrainConfig& config);

class DumpSession final : public train::TrainObserver {
 public:
  explicit DumpSession(const DumpSessionOptions& options);  // std::runtime_error if `dir` is unusable
  ~DumpSession() override;
  DumpSession(const DumpSession&) = delete;
  DumpSession& operator=(const DumpSession&) = delete;

  void on_step_begin(int64_t step) override;
  void on_micro_batch(int64_t step, int64_t micro, int64_t count) override;
  void on_loss(int64_t step, const at::Tensor& loss, std::optional<double> loss_scale) override;
  void on_param_grads(int64_t step, bool scaled, const train::NamedTensors& grads) override;
  void on_step_end(const train::StepRecord& record) override;
  bool wants_module_events() const override { return true; }
  bool reads_module_outputs() const override { return true; }
  bool wants_param_grads() const override { return true; }
  at::Tensor on_module_exit(const std::string& module, const at::Tensor& output) override;

  void close();  // also done by the destructor
  int64_t records_written() const;
  const std::string& dir() const { return options_.dir; }

 private:
  void write(int64_t step, const std::string& name, dump::RecordKind kind, const at::Tensor& t);

  DumpSessionOptions options_;
  dump::DumpWriter writer_;
  mutable std::mutex mutex_;
  int64_t step_ = -1;
  bool dumping_ = false;      // the current step is selected
  int64_t micro_ = 0;         // the micro-batch running now
  int64_t micro_count_ = 1;   // micro-batches per step (--accumulate-steps)
  bool saw_scaled_ = false;   // a scaler reported scaled gradients this step
};

// Changes one module's output on every step: `output + relative * mean|output| * noise` (fixed
// standard-normal noise: it changes the direction, which batch norm would not undo as it undoes a
// scale), or a NaN in its first element. Register it after any DumpSession so the dump records
// the changed output.
class ModuleDisturbance final : public train::TrainObserver {
 public:
  enum class Kind { Noise, NaN };
  ModuleDisturbance(std::string module, Kind kind, double relative = 1e-2);
  bool wants_module_events() const override { return true; }
  bool reads_module_outputs() const override { return true; }
  at::Tensor on_module_exit(const std::string& module, const at::Tensor& output) override;
  int64_t applied() const { return applied_; }

 private:
  std::string module_;
  Kind kind_;
  double relative_;
  int64_t applied_ = 0;
};

}  // namespace crosstrain::dump
