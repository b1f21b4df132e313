#pragma once
// The observers every `train` run may attach: step statistics for the summary, the JSON-lines log,
// the progress line, the profiler and periodic evaluation. Each is small and knows only its job.
#include <fstream>
#include <iosfwd>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/loader_source.h"
#include "core/models.h"
#include "report/terminal.h"
#include "tools/train/precision.h"
#include "tools/profile/profile_session.h"
#include "tools/train/train_observer.h"

namespace crosstrain::train {

// Keeps every step's record and, at the end, the summary's timing figures: first step, median and
// p90 batch time, throughput and data-wait share over the steps after the warm-up.
class StepStatistics final : public TrainObserver {
 public:
  void on_run_begin(const RunPlan& plan) override;
  void on_step_end(const StepRecord& record) override;
  void on_run_end(TrainResult& result) override;

 private:
  std::vector<StepRecord> steps_;
  int64_t warmup_ = 0, batch_size_ = 0;
};

// One JSON object per step (step, loss, lr, step_ms, skipped, loss_scale), flushed as it goes.
class JsonLinesLog final : public TrainObserver {
 public:
  explicit JsonLinesLog(const std::string& path);  // std::runtime_error when it cannot be created
  void on_step_end(const StepRecord& record) override;
  void on_run_end(TrainResult& result) override;

 private:
  std::string path_;
  std::ofstream out_;
};

// "step 7/100  loss 2.3026  41.2 ms" on a terminal; nothing when stderr is not one.
class ProgressObserver final : public TrainObserver {
 public:
  ProgressObserver(report::ProgressLine& line, int64_t total_steps) : line_(line), total_(total_steps) {}
  void on_step_end(const StepRecord& record) override;
  void on_run_end(TrainResult& result) override { line_.clear(); }

 private:
  report::ProgressLine& line_;
  int64_t total_;
};

// --profile: the session's schedule driven by step events, module spans from module events.
class ProfileObserver final : public TrainObserver {
 public:
  ProfileObserver(const profile::ProfileOptions& options, const std::string& device);
  void on_step_begin(int64_t step) override { session_.step_begin(step); }
  void on_step_end(const StepRecord& record) override { session_.step_end(record.step); }
  bool wants_module_events() const override { return spans_; }
  bool reads_module_outputs() const override { return reads_; }
  void on_module_enter(const std::string& module) override;
  at::Tensor on_module_exit(const std::string& module, const at::Tensor& output) override;
  void on_run_end(TrainResult& result) override;
  const std::string& recorder() const { return session_.recorder(); }

 private:
  profile::ProfileSession session_;
  bool spans_;
  bool reads_;
};

// Evaluation on the validation split every N steps, every N epochs, and/or after the last step.
class EvalObserver final : public TrainObserver {
 public:
  struct Schedule {
    int64_t every_steps = 0, every_epochs = 0, total_steps = 0, batches_per_epoch = 1;
    bool at_end = false;
  };
  EvalObserver(core::TrainableModel& model, std::unique_ptr<core::LoaderSource> val, const PrecisionPlan& plan,
               c10::Device device, Schedule schedule, std::ostream& messages, report::ProgressLine& progress);
  void on_step_end(const StepRecord& record) override;
  void on_run_end(TrainResult& result) override;
  // Data-parallel runs: each rank evaluates its shard, and `combine` turns the shard's record into
  // the whole validation set's (sums over ranks).
  void set_combine(std::function<void(EvalRecord&)> combine) { combine_ = std::move(combine); }

 private:
  std::function<void(EvalRecord&)> combine_;
  core::TrainableModel& model_;
  std::unique_ptr<core::LoaderSource> val_;
  PrecisionPlan plan_;
  c10::Device device_;
  Schedule schedule_;
  std::ostream& messages_;
  report::ProgressLine& progress_;
  std::vector<EvalRecord> evals_;
};

}  // namespace crosstrain::train
