#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cctype>

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/bench/memory_floor.h"
#include "tools/train/train_report.h"

namespace crosstrain::bench {

namespace {

// Every run's notes once each, in the order they first appear (bench's own come first in each run).
std::vector<std::string> distinct_notes(const std::vector<train::TrainResult>& runs) {
  std::vector<std::string> notes;
  for (const auto& r : runs)
    for (const auto& n : r.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  return notes;
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

std::string ratio_cell(std::optional<double> v) { return v ? report::format_fixed(v, 2) + "x" : std::string("n/a"); }

// The fixed state of every run, and each reduced-precision run's floor with its peak against it;
// the change column stays empty where a change means nothing.
void add_floor_rows(report::Table& t, const std::vector<train::TrainResult>& runs, bool change) {
  std::vector<std::string> fixed = {"fixed state (weights, grads, optimizer)"}, floor = {"memory floor"},
                           of_floor = {"peak / floor"};
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto f = memory_floor(runs, i);
    fixed.push_back(report::format_bytes(runs[i].fixed_state.total()));
    floor.push_back(f ? report::format_bytes(f->floor_bytes) : "n/a");
    of_floor.push_back(ratio_cell(f ? std::optional<double>(f->of_floor()) : std::nullopt));
  }
  if (change) {
    fixed.push_back(report::format_change(static_cast<double>(runs.front().fixed_state.total()),
                                          static_cast<double>(runs.back().fixed_state.total())));
    floor.emplace_back();
    of_floor.emplace_back();
  }
  t.add_row(fixed).add_row(floor).add_row(of_floor);
}

nlohmann::json floor_to_json(const std::optional<MemoryFloor>& f) {
  if (!f) return nullptr;
  return {{"fixed_state_bytes", f->fixed_state_bytes}, {"fp32_peak_bytes", f->fp32_peak_bytes},
          {"fp32_other_bytes", f->fp32_other_bytes},   {"element_ratio", f->element_ratio},
          {"floor_bytes", f->floor_bytes},             {"peak_memory_bytes", f->measured_bytes},
          {"of_floor", f->of_floor()}};
}

bool any_floor(const std::vector<train::TrainResult>& runs) {
  for (size_t i = 0; i < runs.size(); ++i)
    if (memory_floor(runs, i)) return true;
  return false;
}

}  // namespace

std::string render_comparison(const std::vector<train::TrainResult>& runs) {
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
  row("throughput (img/s)", [](const train::TrainResult& r) -> D { return r.throughput_img_s; }, fixed1);
  row("peak memory", [](const train::TrainResult& r) -> D { return as_double(r.peak_memory_bytes); },
      [](D v) { return v ? report::format_bytes(static_cast<int64_t>(*v)) : std::string("n/a"); });
  add_floor_rows(t, runs, change);
  row("batch time median", [](const train::TrainResult& r) -> D { return r.batch_time_ms_median; },
      [](D v) { return report::format_ms(v); });
  row("batch time p90", [](const train::TrainResult& r) -> D { return r.batch_time_ms_p90; },
      [](D v) { return report::format_ms(v); });
  row("first step", [](const train::TrainResult& r) -> D { return r.first_step_ms; }, [](D v) { return report::format_ms(v); });
  row("final loss", [](const train::TrainResult& r) -> D { return r.final_loss; },
      [](D v) { return report::format_fixed(v, 4); });
  row("skipped steps", [](const train::TrainResult& r) -> D { return static_cast<double>(r.skipped_steps); },
      [](D v) { return report::format_fixed(v, 0); });
  row("achieved TFLOP/s", [](const train::TrainResult& r) -> D { return r.achieved_tflops; },
      [](D v) { return report::format_fixed(v, 3); });
  row("utilization", [](const train::TrainResult& r) -> D { return r.utilization; },
      [](D v) { return report::format_percent(v); });
  std::string out = t.render();
  if (any_floor(runs))
    out += "memory floor = fixed state + (FP32 peak - fixed state) x 2/4 (bf16, fp16; tf32: 4/4); autocast's "
           "16-bit weight copies and what it keeps in fp32 lie above it\n";
  for (const auto& note : distinct_notes(runs)) out += "note: " + note + "\n";
  return out;
}

nlohmann::json bench_to_json(const std::vector<train::TrainResult>& runs) {
  nlohmann::json out = {{"schema_version", report::kJsonSchemaVersion}, {"kind", "bench"}};
  out["runs"] = nlohmann::json::array();
  nlohmann::json emulated = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    nlohmann::json run = train::train_result_to_json(r);
    run["memory_floor"] = floor_to_json(memory_floor(runs, i));
    out["runs"].push_back(run);
    if (r.precision_native == false) emulated.push_back(r.precision);
  }
  out["emulated_precisions"] = emulated;  // precisions this CPU emulates (core/cpu_features.h)
  out["notes"] = distinct_notes(runs);
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

}  // namespace crosstrain::bench
