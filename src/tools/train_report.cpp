#include "tools/train_report.h"

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"

namespace crosstrain::tools {

namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> as_double(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

std::string precision_label(const std::string& p) {
  std::string out = p;
  for (auto& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
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
  return {
      {"precision", r.precision},
      {"device", r.device},
      {"device_description", r.device_description},
      {"model", c.model},
      {"batch_size", c.batch_size},
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
      {"achieved_tflops", r.achieved_tflops},
      {"peak_tflops", opt(r.peak_tflops)},
      {"utilization", opt(r.utilization)},
      {"final_loss", r.final_loss},
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
  t.add_row({"batch", std::to_string(c.batch_size) + " x " + std::to_string(c.image_size) + "px"});
  t.add_row({"steps", std::to_string(c.steps) + " (" + std::to_string(r.measured_steps) + " measured)"});
  t.add_row({"throughput", report::format_fixed(r.throughput_img_s, 1) + " img/s"});
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
  t.add_row({"final loss", report::format_fixed(r.final_loss, 4)});
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
  return t.render();
}

std::string render_comparison(const std::vector<TrainResult>& runs) {
  std::vector<std::string> header = {"metric"};
  for (const auto& r : runs) header.push_back(precision_label(r.precision));
  const bool change = runs.size() >= 2;
  if (change) header.push_back("change");
  report::Table t(header);
  auto row = [&](const std::string& name, auto value_of, auto render) {
    std::vector<std::string> cells = {name};
    for (const auto& r : runs) cells.push_back(render(value_of(r)));
    if (change) cells.push_back(report::format_change(value_of(runs.front()), value_of(runs.back())));
    t.add_row(cells);
  };
  using D = std::optional<double>;
  auto fixed1 = [](D v) { return report::format_fixed(v, 1); };
  row("throughput (img/s)", [](const TrainResult& r) -> D { return r.throughput_img_s; }, fixed1);
  row("peak memory", [](const TrainResult& r) -> D { return as_double(r.peak_memory_bytes); },
      [](D v) { return v ? report::format_bytes(static_cast<int64_t>(*v)) : std::string("n/a"); });
  row("batch time median", [](const TrainResult& r) -> D { return r.batch_time_ms_median; },
      [](D v) { return report::format_ms(v); });
  row("batch time p90", [](const TrainResult& r) -> D { return r.batch_time_ms_p90; },
      [](D v) { return report::format_ms(v); });
  row("first step", [](const TrainResult& r) -> D { return r.first_step_ms; }, [](D v) { return report::format_ms(v); });
  row("final loss", [](const TrainResult& r) -> D { return r.final_loss; },
      [](D v) { return report::format_fixed(v, 4); });
  row("skipped steps", [](const TrainResult& r) -> D { return static_cast<double>(r.skipped_steps); },
      [](D v) { return report::format_fixed(v, 0); });
  row("achieved TFLOP/s", [](const TrainResult& r) -> D { return r.achieved_tflops; },
      [](D v) { return report::format_fixed(v, 3); });
  row("utilization", [](const TrainResult& r) -> D { return r.utilization; },
      [](D v) { return report::format_percent(v); });
  return t.render();
}

nlohmann::json bench_to_json(const std::vector<TrainResult>& runs) {
  nlohmann::json out = {{"schema_version", report::kJsonSchemaVersion}, {"kind", "bench"}};
  out["runs"] = nlohmann::json::array();
  for (const auto& r : runs) out["runs"].push_back(train_result_to_json(r));
  if (runs.size() >= 2) {
    const auto& a = runs.front();
    const auto& b = runs.back();
    nlohmann::json cmp = {{"throughput_ratio", a.throughput_img_s > 0 ? b.throughput_img_s / a.throughput_img_s : 0.0},
                          {"batch_time_ratio", a.batch_time_ms_median > 0 ? b.batch_time_ms_median / a.batch_time_ms_median : 0.0}};
    if (a.peak_memory_bytes && b.peak_memory_bytes && *a.peak_memory_bytes > 0)
      cmp["peak_memory_ratio"] = static_cast<double>(*b.peak_memory_bytes) / static_cast<double>(*a.peak_memory_bytes);
    else
      cmp["peak_memory_ratio"] = nullptr;
    out["comparison"] = cmp;
  }
  return out;
}

}  // namespace crosstrain::tools
