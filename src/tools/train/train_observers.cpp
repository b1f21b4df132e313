#include "tools/train/train_observers.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "core/step_stats.h"
#include "report/units.h"
#include "tools/train/run_plan.h"
#include "tools/train/train_data.h"

namespace crosstrain::train {

void StepStatistics::on_run_begin(const RunPlan& plan) {
  warmup_ = plan.resolved.warmup_steps;
  batch_size_ = global_batch(plan.resolved);  // every rank steps in lockstep: the job's images per step
}

void StepStatistics::on_step_end(const StepRecord& record) { steps_.push_back(record); }

void StepStatistics::on_run_end(TrainResult& r) {
  r.steps = steps_;
  if (steps_.empty()) return;
  r.first_step_ms = steps_.front().step_ms;
  r.final_loss = steps_.back().loss;
  std::vector<double> measured;
  double wait_total = 0;
  for (const auto& s : steps_)
    if (s.step >= warmup_) {
      measured.push_back(s.step_ms);
      wait_total += s.data_wait_ms;
    }
  const auto stats = core::summarize_step_times(measured);
  r.measured_steps = static_cast<int64_t>(measured.size());
  r.batch_time_ms_median = stats.median_ms;
  r.batch_time_ms_p90 = stats.p90_ms;
  r.throughput_img_s =
      stats.total_ms > 0 ? static_cast<double>(batch_size_ * r.measured_steps) / (stats.total_ms / 1e3) : 0;
  if (!measured.empty()) r.data_wait_ms_mean = wait_total / static_cast<double>(measured.size());
  if (stats.total_ms > 0) r.data_wait_share = wait_total / stats.total_ms;
}

JsonLinesLog::JsonLinesLog(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot write --step-log file " + path);
}

void JsonLinesLog::on_step_end(const StepRecord& rec) {
  nlohmann::json j = {{"step", rec.step}, {"loss", rec.loss}, {"lr", rec.lr}, {"step_ms", rec.step_ms},
                      {"skipped", rec.skipped}};
  j["loss_scale"] = rec.loss_scale ? nlohmann::json(*rec.loss_scale) : nlohmann::json(nullptr);
  out_ << j.dump() << "\n" << std::flush;
  if (!out_) throw std::runtime_error("cannot write --step-log file " + path_ + " (disk full?)");
}

void JsonLinesLog::on_run_end(TrainResult&) {
  out_.close();
  if (!out_) throw std::runtime_error("cannot write --step-log file " + path_ + " (disk full?)");
}

void ProgressObserver::on_step_end(const StepRecord& rec) {
  line_.update("step " + std::to_string(rec.step + 1) + "/" + std::to_string(total_) + "  loss " +
               report::format_fixed(rec.loss, 4) + "  " + report::format_ms(rec.step_ms));
}

ProfileObserver::ProfileObserver(const profile::ProfileOptions& options, const std::string& device)
    : session_(options, device), spans_(options.module_spans) {
  reads_ = spans_ && session_.module_observer()->reads_outputs();
}

void ProfileObserver::on_module_enter(const std::string& module) { session_.module_observer()->on_enter(module); }

at::Tensor ProfileObserver::on_module_exit(const std::string& module, const at::Tensor& output) {
  return session_.module_observer()->on_exit(module, output);
}

void ProfileObserver::on_run_end(TrainResult& r) {
  session_.finish();
  r.profile_recorder = session_.recorder();
  r.profile_traces = session_.traces_written();
}

EvalObserver::EvalObserver(core::TrainableModel& model, std::unique_ptr<core::LoaderSource> val,
                           const PrecisionPlan& plan, c10::Device device, Schedule schedule, std::ostream& messages,
                           report::ProgressLine& progress)
    : model_(model), val_(std::move(val)), plan_(plan), device_(device), schedule_(schedule), messages_(messages),
      progress_(progress) {}

void EvalObserver::on_step_end(const StepRecord& rec) {
  const int64_t done = rec.step + 1, per_epoch = std::max<int64_t>(1, schedule_.batches_per_epoch);
  const bool at_steps = schedule_.every_steps > 0 && done % schedule_.every_steps == 0;
  const bool at_epochs = schedule_.every_epochs > 0 && done % (schedule_.every_epochs * per_epoch) == 0;
  const bool at_end = schedule_.at_end && done == schedule_.total_steps;
  if (!(at_steps || at_epochs || at_end)) return;
  progress_.clear();
  EvalRecord e = evaluate(model_, *val_, plan_, device_);
  if (combine_) combine_(e);
  e.step = done;
  e.epoch = static_cast<double>(done) / static_cast<double>(per_epoch);
  evals_.push_back(e);
  messages_ << "eval after step " << done << " (epoch " << report::format_fixed(e.epoch, 2) << "): top-1 "
            << report::format_percent(e.top1, 2) << ", top-5 " << report::format_percent(e.top5, 2) << ", loss "
            << report::format_fixed(e.loss, 4) << " on " << e.samples << " samples" << std::endl;
}

void EvalObserver::on_run_end(TrainResult& r) { r.evals = evals_; }

}  // namespace crosstrain::train
