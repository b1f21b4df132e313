#include "tools/analyze/analysis_report.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/analyze/rank_compare.h"

namespace crosstrain::analyze {

using report::format_count;
using report::format_percent;
using report::format_us;

OperatorSort parse_operator_sort(const std::string& s) {
  if (s == "device") return OperatorSort::DeviceSelf;
  if (s == "host-self") return OperatorSort::HostSelf;
  if (s == "host-total") return OperatorSort::HostTotal;
  if (s == "calls") return OperatorSort::Calls;
  throw std::invalid_argument("unknown --sort '" + s + "' (valid: device, host-self, host-total, calls)");
}

void sort_operators(std::vector<OperatorStats>& ops, OperatorSort by) {
  auto key = [by](const OperatorStats& o) {
    switch (by) {
      case OperatorSort::DeviceSelf: return o.device_self_us;
      case OperatorSort::HostSelf: return o.host_self_us;
      case OperatorSort::HostTotal: return o.host_total_us;
      case OperatorSort::Calls: return static_cast<double>(o.calls);
    }
    return 0.0;
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const OperatorStats& a, const OperatorStats& b) {
    if (key(a) != key(b)) return key(a) > key(b);
    return a.host_self_us > b.host_self_us;
  });
}

namespace {

double op_share_base(const TraceAnalysis& a, bool device) {
  double sum = 0;
  for (const auto& o : a.operators) sum += device ? o.device_self_us : o.host_self_us;
  return sum;
}

std::string title_of(const TraceAnalysis& a) {
  std::string t = a.path + " (" + a.format;
  if (a.rank >= 0) t += ", rank " + std::to_string(a.rank);
  if (!a.device_name.empty()) t += ", " + a.device_name;
  return t + ")";
}

}  // namespace

std::string device_missing_text(const TraceAnalysis& a) {
  if (!a.device_missing()) return "";
  return "No device activity recorded: " + format_count(a.launch_calls) +
         " launch calls (cudaLaunchKernel, cudaMemcpyAsync ...) in steps, but no kernel, copy or collective on a "
         "device (profiled without the device's activities: torch.profiler needs ProfilerActivity.CUDA, or its "
         "device's); device time, idle and launch delays are unknown and the advice that needs them is left out.";
}

std::string partial_step_text(const TraceAnalysis& a) {
  if (a.partial_step.empty()) return "";
  return "Left out: " + a.partial_step + " (" + format_us(a.partial_step_us) +
         "), the trace's last step, did no backward or optimizer work after a step that did: the profiler stopped "
         "inside a step the loop never ran (its tail after the last prof.step(), or a script that ended before the "
         "profiling schedule's active steps were over), so it is not counted as a step.";
}

std::string render_console(const TraceAnalysis& a, const RenderOptions& opt) {
  std::ostringstream out;
  out << "Trace " << title_of(a) << ": " << format_count(static_cast<int64_t>(a.span_count)) << " spans, "
      << a.steps.size() << " step(s), mean step " << format_us(a.mean_step_us()) << "\n";
  if (a.device_missing()) out << device_missing_text(a) << "\n";
  if (!a.partial_step.empty()) out << partial_step_text(a) << "\n";
  out << "\n";

  const bool device = a.has_device;
  const double base = op_share_base(a, device);
  std::vector<std::string> op_head = {"Operator", "Calls", "Host self", "Host total", "Device self", "Device total",
                                       "Share", "Mean"};
  if (a.source_lines) op_head.push_back("Your line");
  report::Table ops(op_head);
  if (a.source_lines) ops.align(op_head.size() - 1, report::Align::Left);
  size_t shown = 0;
  for (const auto& o : a.operators) {
    if (shown++ >= opt.top) break;
    double key = device ? o.device_self_us : o.host_self_us;
    std::string name = o.shapes.empty() ? o.name : o.name + " " + o.shapes;
    std::vector<std::string> row = {name, format_count(o.calls), format_us(o.host_self_us), format_us(o.host_total_us),
                                    device ? format_us(o.device_self_us) : "n/a", device ? format_us(o.device_total_us) : "n/a",
                                    format_percent(base > 0 ? key / base : 0),
                                    format_us(o.calls ? o.host_total_us / static_cast<double>(o.calls) : 0)};
    if (a.source_lines) row.push_back(operator_source_text(o));
    ops.add_row(row);
  }
  out << "Operators (top " << std::min(opt.top, a.operators.size()) << " of " << a.operators.size()
      << ", share of " << (device ? "device" : "host") << " self time)\n"
      << ops.render() << "\n";

  report::Table types({"Operator type", "Calls", "Host self", "Device self"});
  for (const auto& t : a.op_types)
    if (t.calls > 0)
      types.add_row({op_type_name(t.type), format_count(t.calls), format_us(t.host_self_us),
                     device ? format_us(t.device_self_us) : "n/a"});
  out << types.render() << "\n";

  std::vector<std::string> head = {"Step", "Time"};
  for (int c = 0; c < kStepCategoryCount; ++c) head.push_back(step_category_name(c));
  head.push_back("Syncs");
  report::Table steps(head);
  auto add_step = [&](const StepBreakdown& s) {
    std::vector<std::string> row = {s.label, format_us(s.duration_us)};
    for (int c = 0; c < kStepCategoryCount; ++c)
      row.push_back(format_percent(s.duration_us > 0 ? s.category_us[static_cast<size_t>(c)] / s.duration_us : 0));
    row.push_back(format_count(s.host_syncs));
    steps.add_row(row);
  };
  // Long traces have thousands of steps: the first few show the pattern, JSON/CSV carry them all.
  constexpr size_t kConsoleSteps = 12;
  for (size_t i = 0; i < a.steps.size() && i < kConsoleSteps; ++i) add_step(a.steps[i]);
  if (a.steps.size() > kConsoleSteps)
  {
    std::vector<std::string> more(head.size(), "");
    more[0] = "(" + format_count(static_cast<int64_t>(a.steps.size() - kConsoleSteps)) + " more)";
    steps.add_row(more);
  }
  if (a.steps.size() > 1) {
    steps.add_separator();
    add_step(a.total);
  }
  out << "Step breakdown (overlapped time counted once, for the higher category)\n" << steps.render() << "\n";
  out << render_phases_console(a);

  if (device) {
    out << "Device: busy " << format_percent(a.share(a.total.device_busy_us)) << " of step time";
    if (a.total.device_window_us > 0)
      out << " (idle " << format_percent(1.0 - a.total.device_busy_us / a.total.device_window_us)
          << " counted from each step's first device activity, as Ascend's Overlap Analysis does)";
    out << "; " << format_count(a.idle_gap_count) << " idle gaps >= " << format_us(a.idle_gap_min_us) << " totalling "
        << format_us(a.idle_gap_us) << "; " << format_count(a.launches_into_idle) << " of " << format_count(a.launches)
        << " launches found the device idle\n";
    for (const auto& g : a.idle_gaps)
      out << "  idle " << format_us(g.duration_us) << " at +" << format_us(g.offset_in_step_us) << " into " << g.step
          << "\n";
    out << render_device_views_console(a, std::min<size_t>(opt.top, 10));
  }
  out << "Data loading: " << format_percent(a.share(a.total.data_wait_us)) << " of step time\n";
  if (a.total.comm_us > 0)
    out << "Communication: " << format_us(a.total.comm_us) << " in steps, " << format_percent(a.total.comm_overlapped_us / a.total.comm_us)
        << " of it overlapped with " << (device ? "compute kernels" : "operators on other threads") << "\n";
  if (!a.host_syncs.empty()) {
    out << "Host syncs in steps: " << format_us(a.host_sync_us) << " (" << format_percent(a.share(a.host_sync_us))
        << " of step time):";
    for (const auto& s : a.host_syncs) out << " " << s.name << " x" << format_count(s.count) << " (" << format_us(s.total_us) << ")";
    out << "\n";
  }
  if (!a.runtime_calls.empty()) {
    out << "Runtime calls in steps, by time:";
    for (size_t i = 0; i < a.runtime_calls.size() && i < 5; ++i) {
      const auto& r = a.runtime_calls[i];
      out << (i ? ", " : " ") << r.name << " x" << format_count(r.count) << " " << format_us(r.total_us) << " ("
          << format_percent(a.share(r.wall_us)) << " of step time" << (r.total_us > r.wall_us * 1.001 ? ", threads at once" : "")
          << ")";
    }
    out << "\n";
  }
  if (!a.allocator_calls.empty()) {
    out << "Memory allocation calls in steps: " << format_us(a.allocator_us) << " ("
        << format_percent(a.share(a.allocator_us)) << " of step time):";
    for (size_t i = 0; i < a.allocator_calls.size() && i < 5; ++i)
      out << " " << a.allocator_calls[i].name << " x" << format_count(a.allocator_calls[i].count) << " ("
          << format_us(a.allocator_calls[i].total_us) << ")";
    out << "\n";
  }
  if (!a.cpu_fallback.empty()) {
    out << "CPU-fallback operators (launched no device work):";
    for (const auto& s : a.cpu_fallback) out << " " << s.name << " x" << s.count << " (" << format_us(s.total_us) << ")";
    out << "\n";
  }
  for (const auto& m : a.memory)
    out << "Memory " << m.device << ": peak allocated " << report::format_bytes(m.peak_allocated) << ", peak reserved "
        << report::format_bytes(m.peak_reserved) << "\n";
  out << render_source_console(a);

  out << "\nAdvisor: ";
  if (a.findings.empty()) out << "no rule fired\n";
  else out << a.findings.size() << " finding(s)\n";
  for (const auto& f : a.findings) {
    out << "  [" << f.rule << "] " << f.title << ": " << f.measured << " (threshold " << f.threshold << ")\n"
        << "    evidence: " << f.evidence << "\n";
    for (size_t i = 0; i < f.sources.size() && i < 3; ++i) out << "    at " << source_line_text(f.sources[i]) << "\n";
    out << "    -> " << f.suggestion << "\n";
  }
  return out.str();
}

std::string render_rank_summary(const std::vector<TraceAnalysis>& ranks) {
  std::vector<std::string> head = {"Trace", "Rank", "Steps", "Mean step", "Compute/step"};
  for (int c = 0; c < kStepCategoryCount; ++c) head.push_back(step_category_name(c));
  head.push_back("Findings");
  report::Table t(head);
  for (const auto& a : ranks) {
    std::vector<std::string> row = {std::filesystem::path(a.path).filename().string(),
                                    a.rank >= 0 ? std::to_string(a.rank) : "-", std::to_string(a.steps.size()),
                                    format_us(a.mean_step_us()), format_us(compute_us_per_step(a))};
    for (int c = 0; c < kStepCategoryCount; ++c) row.push_back(format_percent(a.share(a.total.category_us[static_cast<size_t>(c)])));
    std::string rules;
    for (const auto& f : a.findings) rules += (rules.empty() ? "" : ",") + f.rule;
    row.push_back(rules.empty() ? "-" : rules);
    t.add_row(row);
  }
  return "Ranks\n" + t.render();
}

std::string render_diff_console(const TraceDiff& d, size_t top) {
  std::ostringstream out;
  out << "Diff A=" << d.a_path << " B=" << d.b_path << " (" << (d.per_step ? "per step" : "whole trace") << ", "
      << d.time_basis << " time); step A " << format_us(d.a_step_us) << ", B " << format_us(d.b_step_us) << " ("
      << report::format_change(d.a_step_us, d.b_step_us) << ")\n";
  if (!d.warning.empty()) out << "Warning: " << d.warning << "\n";
  report::Table t({"Kind", "Name", "A", "B", "Change", "Status"});
  size_t n = 0;
  for (const auto& r : d.rows) {
    if (r.status == DiffStatus::Same) continue;
    if (n++ >= top) break;
    t.add_row({r.kind, r.name, format_us(r.a_us), format_us(r.b_us),
               (r.delta_us() >= 0 ? "+" : "-") + format_us(std::abs(r.delta_us())), diff_status_name(r.status)});
  }
  out << t.render();
  if (n == 0) out << "no operator or category changed by more than 2%\n";
  return out.str();
}

nlohmann::json findings_to_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings)
    out.push_back({{"rule", f.rule}, {"title", f.title}, {"measured", f.measured}, {"value", f.value},
                   {"threshold", f.threshold}, {"suggestion", f.suggestion}, {"evidence", f.evidence},
                   {"sources", source_lines_json(f.sources)}});
  return out;
}

nlohmann::json analysis_to_json(const TraceAnalysis& a) {
  using nlohmann::json;
  json j;
  j["path"] = a.path;
  j["format"] = a.format;
  j["rank"] = a.rank;
  j["device_name"] = a.device_name;
  j["has_device"] = a.has_device;
  j["tensor_cores"] = a.tensor_cores;
  j["bytes"] = a.bytes;
  j["spans"] = a.span_count;
  json ops = json::array();
  for (const auto& o : a.operators)
    ops.push_back({{"name", o.name}, {"shapes", o.shapes}, {"type", op_type_name(o.type)}, {"calls", o.calls},
                   {"host_self_us", o.host_self_us}, {"host_total_us", o.host_total_us},
                   {"device_self_us", o.device_self_us}, {"device_total_us", o.device_total_us},
                   {"sources", source_lines_json(o.sources)}});
  j["operators"] = ops;
  json types = json::array();
  for (const auto& t : a.op_types)
    types.push_back({{"type", op_type_name(t.type)}, {"calls", t.calls}, {"host_self_us", t.host_self_us},
                     {"device_self_us", t.device_self_us}});
  j["operator_types"] = types;
  auto step_json = [](const StepBreakdown& s) {
    json c, phases, idle;
    for (int k = 0; k < kStepCategoryCount; ++k) c[step_category_name(k)] = s.category_us[static_cast<size_t>(k)];
    for (int k = 0; k < kStepPhaseCount; ++k) {
      phases[step_phase_name(k)] = s.phase_us[static_cast<size_t>(k)];
      idle[step_phase_name(k)] = s.idle_us[static_cast<size_t>(k)];
    }
    return json{{"label", s.label}, {"start_us", s.start_us}, {"duration_us", s.duration_us}, {"categories_us", c},
                {"device_busy_us", s.device_busy_us}, {"data_wait_us", s.data_wait_us}, {"comm_us", s.comm_us},
                {"comm_overlapped_us", s.comm_overlapped_us}, {"device_window_us", s.device_window_us},
                {"kernels", s.kernels}, {"host_syncs", s.host_syncs}, {"phases_us", phases},
                {"device_idle_by_phase_us", idle}, {"h2d_us", s.h2d_us}, {"h2d_copies", s.h2d_copies}};
  };
  json steps = json::array();
  for (const auto& s : a.steps) steps.push_back(step_json(s));
  j["steps"] = steps;
  j["partial_step"] = a.partial_step.empty() ? json(nullptr)
                                             : json{{"label", a.partial_step}, {"duration_us", a.partial_step_us}};
  j["total"] = step_json(a.total);
  json gaps = json::array();
  for (const auto& g : a.idle_gaps)
    gaps.push_back({{"start_us", g.start_us}, {"duration_us", g.duration_us}, {"step", g.step},
                    {"offset_in_step_us", g.offset_in_step_us}});
  j["device"] = {{"kernels", a.kernel_count}, {"short_kernels", a.short_kernel_count}, {"kernel_us", a.kernel_us},
                 {"launches", a.launches}, {"launches_into_idle", a.launches_into_idle},
                 {"idle_gap_count", a.idle_gap_count}, {"idle_gap_us", a.idle_gap_us}, {"idle_gaps", gaps},
                 {"views", device_views_to_json(a)}};
  j["recognised_spans"] = a.recognised_spans;
  auto named = [](const std::vector<NamedTotal>& v) {
    json arr = json::array();
    for (const auto& n : v) arr.push_back({{"name", n.name}, {"count", n.count}, {"total_us", n.total_us}});
    return arr;
  };
  j["host_syncs"] = named(a.host_syncs);
  j["host_sync_us"] = a.host_sync_us;
  j["runtime_calls"] = named(a.runtime_calls);
  for (size_t i = 0; i < a.runtime_calls.size(); ++i) {
    j["runtime_calls"][i]["wall_us"] = a.runtime_calls[i].wall_us;
    j["runtime_calls"][i]["one_time_us"] = a.runtime_calls[i].one_time_us;
  }
  {
    const auto& l = a.longest_runtime_call;
    j["longest_runtime_call"] =
        l.name.empty() ? json()
                       : json{{"name", l.name}, {"duration_us", l.duration_us}, {"first", l.first},
                              {"ordinal", l.ordinal}, {"one_time", l.one_time}, {"calls", l.calls},
                              {"others_median_us", l.others_median_us}, {"others_total_us", l.others_total_us},
                              {"step", l.step}, {"offset_in_step_us", l.offset_in_step_us}};
  }
  j["launch_calls"] = a.launch_calls;
  j["device_missing"] = a.device_missing();
  j["allocator_calls"] = named(a.allocator_calls);
  j["allocator_us"] = a.allocator_us;
  j["allocator_in_data_loading_us"] = a.allocator_in_data_loading_us;
  j["cpu_fallback"] = named(a.cpu_fallback);
  j["matmul_conv"] = {{"time_us", a.matmul_conv_us}, {"fp32_time_us", a.matmul_conv_fp32_us},
                      {"dtypes_recorded", a.dtypes_recorded}};
  json mem = json::array();
  for (const auto& m : a.memory) {
    json pts = json::array();
    for (const auto& [x, y] : m.points) pts.push_back({x, y});
    mem.push_back({{"device", m.device}, {"peak_allocated", m.peak_allocated}, {"peak_reserved", m.peak_reserved},
                   {"curve", pts}});
  }
  j["memory"] = mem;
  j["compute_us_per_step"] = compute_us_per_step(a);
  j["script"] = script_json(a);
  j["findings"] = findings_to_json(a.findings);
  return j;
}

nlohmann::json analyses_to_json(const std::vector<TraceAnalysis>& all) {
  nlohmann::json j;
  j["schema_version"] = report::kJsonSchemaVersion;
  j["traces"] = nlohmann::json::array();
  for (const auto& a : all) j["traces"].push_back(analysis_to_json(a));
  return j;
}

nlohmann::json diff_to_json(const TraceDiff& d) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : d.rows)
    rows.push_back({{"kind", r.kind}, {"name", r.name}, {"a_us", r.a_us}, {"b_us", r.b_us},
                    {"delta_us", r.delta_us()}, {"status", diff_status_name(r.status)}});
  return {{"schema_version", report::kJsonSchemaVersion}, {"a", d.a_path}, {"b", d.b_path}, {"per_step", d.per_step},
          {"time_basis", d.time_basis}, {"a_step_us", d.a_step_us}, {"b_step_us", d.b_step_us},
          {"a_device", d.a_device}, {"b_device", d.b_device}, {"warning", d.warning}, {"rows", rows}};
}

std::vector<std::string> analysis_csv_paths(const std::string& dir) { return {dir + "/operators.csv", dir + "/steps.csv"}; }

void write_analysis_csv(const std::vector<TraceAnalysis>& all, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create folder: " + ec.message());
  auto num = [](double v) {
    std::ostringstream s;
    s.precision(10);
    s << v;
    return s.str();
  };
  std::vector<std::vector<std::string>> ops, steps;
  for (const auto& a : all) {
    std::string rank = std::to_string(a.rank);
    for (const auto& o : a.operators)
      ops.push_back({a.path, rank, o.name, o.shapes, op_type_name(o.type), std::to_string(o.calls), num(o.host_self_us),
                     num(o.host_total_us), num(o.device_self_us), num(o.device_total_us),
                     o.sources.empty() ? "" : o.sources.front().where});
    for (const auto& s : a.steps) {
      std::vector<std::string> row = {a.path, rank, s.label, num(s.start_us), num(s.duration_us)};
      for (int c = 0; c < kStepCategoryCount; ++c) row.push_back(num(s.category_us[static_cast<size_t>(c)]));
      row.push_back(num(s.device_busy_us));
      row.push_back(num(s.data_wait_us));
      row.push_back(std::to_string(s.host_syncs));
      for (int p = 0; p < kStepPhaseCount; ++p) row.push_back(num(s.phase_us[static_cast<size_t>(p)]));
      row.push_back(num(s.h2d_us));
      steps.push_back(row);
    }
  }
  std::vector<std::string> step_head = {"trace", "rank", "step", "start_us", "duration_us"};
  for (int c = 0; c < kStepCategoryCount; ++c) {
    std::string n = step_category_name(c);
    std::replace(n.begin(), n.end(), ' ', '_');
    step_head.push_back(n + "_us");
  }
  step_head.insert(step_head.end(), {"device_busy_us", "data_wait_us", "host_syncs"});
  for (int p = 0; p < kStepPhaseCount; ++p) {
    std::string n = std::string("phase_") + step_phase_name(p);
    std::replace(n.begin(), n.end(), ' ', '_');
    step_head.push_back(n + "_us");
  }
  step_head.push_back("h2d_us");
  const auto paths = analysis_csv_paths(dir);
  report::write_file_atomic(paths[0],
                            report::csv_document({"trace", "rank", "operator", "shapes", "type", "calls", "host_self_us",
                                                  "host_total_us", "device_self_us", "device_total_us", "source"},
                                                 ops));
  report::write_file_atomic(paths[1], report::csv_document(step_head, steps));
}

}  // namespace crosstrain::analyze
