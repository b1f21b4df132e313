#include "tools/train/train_report.h"

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"

namespace crosstrain::train {

namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The final loss of a run that took no step: a resume at (or past) the run's last step.
std::string no_steps_run(const TrainResult& r) {
  if (!r.resumed_from.empty())
    return "n/a (nothing to run: resumed at step " + std::to_string(r.resumed_at_step) + " of " +
           std::to_string(r.config.steps) + ")";
  return "n/a (no step ran)";
}

}  // namespace

nlohmann::json train_result_to_json(const TrainResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"loss_scale", opt(s.loss_scale)},
                     {"step_ms", s.step_ms}, {"data_wait_ms", s.data_wait_ms}, {"skipped", s.skipped}});
  nlohmann::json evals = nlohmann::json::array();
  for (const auto& e : r.evals)
    evals.push_back({{"step", e.step}, {"epoch", e.epoch}, {"samples", e.samples}, {"top1", e.top1}, {"top5", e.top5},
                     {"loss", e.loss}});
  const auto& c = r.config;
  // What the user asked, next to what the run resolved it to (only the derived settings).
  const auto& q = r.requested;
  nlohmann::json requested = {{"lr", q.lr < 0 ? nlohmann::json(nullptr) : nlohmann::json(q.lr)},
                              {"steps", q.steps},
                              {"epochs", q.epochs},
                              {"warmup_steps", q.warmup_steps < 0 ? nlohmann::json(nullptr) : nlohmann::json(q.warmup_steps)},
                              {"image_size", q.image_size == 0 ? nlohmann::json(nullptr) : nlohmann::json(q.image_size)},
                              {"num_classes", q.num_classes == 0 ? nlohmann::json(nullptr) : nlohmann::json(q.num_classes)},
                              {"eval_at_end", q.eval_at_end}};
  return {
      {"requested", requested},
      {"checkpoints", {{"resumed_from", r.resumed_from.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.resumed_from)},
                       {"resumed_at_step", r.resumed_at_step},
                       {"written", r.checkpoints_written},
                       {"write_seconds", r.checkpoint_write_s},
                       {"stall_seconds", r.checkpoint_stall_s}}},
      {"stop_signal", r.stop_signal == 0 ? nlohmann::json(nullptr) : nlohmann::json(r.stop_signal)},
      {"notes", r.notes},
      {"lr", c.lr},
      {"num_classes", c.num_classes},
      {"precision", r.precision},
      {"precision_native", opt(r.precision_native)},
      {"device", r.device},
      {"device_description", r.device_description},
      {"model", c.model},
      {"batch_size", c.batch_size},
      {"accumulate_steps", c.accumulate_steps},
      {"global_batch", r.global_batch},
      {"distributed", r.dist_backend.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"world_size", r.world_size},
                                                               {"backend", r.dist_backend},
                                                               {"bucket_cap_mb", c.bucket_cap_mb},
                                                               {"broadcast_buffers", c.broadcast_buffers},
                                                               {"sync_bn", c.sync_bn},
                                                               {"grad_compression", c.grad_compression}}},
      {"image_size", c.image_size},
      {"channels_last", c.channels_last},
      {"parameters", r.parameters},
      {"gflops_per_image", r.gflops_per_image},
      {"steps", c.steps},
      {"warmup_steps", c.warmup_steps},
      {"measured_steps", r.measured_steps},
      {"throughput_img_s", r.throughput_img_s},
      {"batch_time_ms_median", r.batch_time_ms_median},
      {"batch_time_ms_p90", r.batch_time_ms_p90},
      {"first_step_ms", r.first_step_ms},
      {"peak_memory_bytes", opt(r.peak_memory_bytes)},
      {"peak_rss_bytes", opt(r.peak_rss_bytes)},
      {"fixed_state_bytes", {{"parameters", r.fixed_state.parameters},
                             {"buffers", r.fixed_state.buffers},
                             {"gradients", r.fixed_state.gradients},
                             {"optimizer", r.fixed_state.optimizer},
                             {"total", r.fixed_state.total()}}},
      {"achieved_tflops", r.achieved_tflops},
      {"peak_tflops", opt(r.peak_tflops)},
      {"utilization", opt(r.utilization)},
      {"final_loss", opt(r.final_loss)},
      {"data_wait_ms_mean", r.data_wait_ms_mean},
      {"data_wait_share", r.data_wait_share},
      {"profile_recorder", r.profile_recorder},
      {"data", r.data},
      {"train_samples", r.train_samples},
      {"bad_samples", r.bad_samples},
      {"first_bad_samples", r.first_bad},
      {"profile_traces", r.profile_traces},
      {"skipped_steps", r.skipped_steps},
      {"final_loss_scale", opt(r.final_loss_scale)},
      {"fused_optimizer", r.fused_optimizer},
      {"fused_loss_scaler", r.fused_scaler},
      {"messages", r.messages},
      {"step_log", steps},
      {"evals", evals},
      {"final_top1", r.evals.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.evals.back().top1)},
      {"final_top5", r.evals.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.evals.back().top5)},
  };
}

std::string render_train_summary(const TrainResult& r) {
  report::Table t({"metric", "value"});
  t.align(1, report::Align::Left);
  const auto& c = r.config;
  t.add_row({"model", c.model + " (" + report::format_count(r.parameters) + " params, " +
                          report::format_fixed(r.gflops_per_image, 2) + " GFLOPs/img fwd)"});
  t.add_row({"device", r.device + " (" + r.device_description + ")"});
  t.add_row({"precision", r.precision + (c.channels_last ? ", channels-last" : "")});
  t.add_row({"data", r.data + (r.train_samples ? " (" + report::format_count(r.train_samples) + " training samples)" : "")});
  std::string batch = std::to_string(c.batch_size) + " x " + std::to_string(c.image_size) + "px";
  if (c.accumulate_steps > 1 || r.world_size > 1)
    batch += " (global " + std::to_string(r.global_batch) + ": " + std::to_string(c.accumulate_steps) +
             " micro-batches x " + std::to_string(r.world_size) + " ranks)";
  t.add_row({"batch", batch});
  if (!r.dist_backend.empty())
    t.add_row({"data-parallel", std::to_string(r.world_size) + " ranks over " + r.dist_backend + ", " +
                                    report::format_fixed(c.bucket_cap_mb, 0) + " MiB buckets" +
                                    (c.grad_compression != "none" ? ", " + c.grad_compression + " gradients" : "") +
                                    (c.sync_bn ? ", SyncBatchNorm" : "")});
  t.add_row({"steps", std::to_string(c.steps) + " (" + std::to_string(r.measured_steps) + " measured)"});
  t.add_row({"throughput", report::format_fixed(r.throughput_img_s, 1) + " img/s" +
                               (r.world_size > 1 ? " (all ranks)" : "")});
  t.add_row({"batch time median / p90",
             report::format_ms(r.batch_time_ms_median) + " / " + report::format_ms(r.batch_time_ms_p90)});
  t.add_row({"first step", report::format_ms(r.first_step_ms)});
  t.add_row({"data wait", report::format_ms(r.data_wait_ms_mean) + " per step (" +
                              report::format_percent(r.data_wait_share) + " of step time)"});
  t.add_row({"peak memory", report::format_bytes(r.peak_memory_bytes) +
                                (r.peak_rss_bytes ? " (process RSS " + report::format_bytes(r.peak_rss_bytes) + ")" : "")});
  t.add_row({"achieved", report::format_fixed(r.achieved_tflops, 3) + " TFLOP/s" +
                             (r.utilization ? " (" + report::format_percent(r.utilization) + " of " +
                                                  report::format_fixed(*r.peak_tflops, 2) + " peak)"
                                            : "")});
  t.add_row({"final loss", r.steps.empty() ? no_steps_run(r) : report::format_fixed(r.final_loss, 4)});
  if (r.final_loss_scale)
    t.add_row({"loss scale", report::format_fixed(*r.final_loss_scale, 1) + " (" + std::to_string(r.skipped_steps) +
                                 " skipped steps)"});
  if (!r.evals.empty()) {
    const auto& e = r.evals.back();
    t.add_row({"accuracy (validation)", "top-1 " + report::format_percent(e.top1, 2) + ", top-5 " +
                                            report::format_percent(e.top5, 2) + " on " + report::format_count(e.samples) +
                                            " samples after " + report::format_fixed(e.epoch, 2) + " epochs"});
  }
  if (r.bad_samples > 0) {
    std::string first;
    for (const auto& b : r.first_bad) first += (first.empty() ? "" : "; ") + b;
    t.add_row({"bad samples skipped", std::to_string(r.bad_samples) + " (first: " + first + ")"});
  }
  for (const auto& trace : r.profile_traces) t.add_row({"profile (" + r.profile_recorder + ")", trace});
  if (!r.resumed_from.empty())
    t.add_row({"resumed from", r.resumed_from + " (step " + std::to_string(r.resumed_at_step) + ")"});
  if (r.checkpoints_written > 0)
    t.add_row({"checkpoints", std::to_string(r.checkpoints_written) + " written, " +
                                  report::format_fixed(r.checkpoint_write_s, 2) + " s writing in the background, " +
                                  report::format_fixed(r.checkpoint_stall_s, 3) + " s stalled"});
  if (r.stop_signal) t.add_row({"stopped", "by signal " + std::to_string(r.stop_signal) + " (preempted)"});
  for (const auto& note : r.notes) t.add_row({"note", note});
  return t.render();
}

}  // namespace crosstrain::train
