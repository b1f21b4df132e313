// Renderers for what an analysis knows about the script: step phases, device idle by host phase,
// host reads, loops of Python calls, DataLoaders and the source lines behind findings and
// operators (console text and JSON; the HTML page uses the same texts).
#include <sstream>

#include "report/table.h"
#include "report/units.h"
#include "tools/analyze/analysis_report.h"

namespace crosstrain::analyze {

using report::format_count;
using report::format_fixed;
using report::format_percent;
using report::format_us;

std::string source_line_text(const SourceLine& l, const std::string& what) {
  std::string s = l.where;
  if (!l.code.empty()) s += " " + l.code;
  if (l.per_step > 0) s += "  x" + format_fixed(l.per_step, l.per_step < 10 ? 1 : 0) + " per step";
  if (l.time_us > 0) s += (l.per_step > 0 ? ", " : "  ") + format_us(l.time_us) + (what.empty() ? "" : " " + what);
  if (!l.via.empty()) s += " (via " + l.via + ")";
  return s;
}

std::string operator_source_text(const OperatorStats& o) {
  if (o.sources.empty()) return "";
  return o.sources.front().where + (o.sources.size() > 1 ? " +" + std::to_string(o.sources.size() - 1) : "");
}

bool has_phases(const TraceAnalysis& a) {
  for (double v : a.total.phase_us)
    if (v > 0) return true;
  return false;
}

std::string render_phases_console(const TraceAnalysis& a) {
  if (!has_phases(a)) return "";
  std::ostringstream out;
  std::vector<std::string> head = {"Step", "Time"};
  for (int p = 0; p < kStepPhaseCount; ++p) head.push_back(step_phase_name(p));
  if (a.has_device) head.push_back("H2D copies");
  report::Table t(head);
  auto add = [&](const StepBreakdown& s) {
    std::vector<std::string> row = {s.label, format_us(s.duration_us)};
    for (int p = 0; p < kStepPhaseCount; ++p)
      row.push_back(format_percent(s.duration_us > 0 ? s.phase_us[static_cast<size_t>(p)] / s.duration_us : 0));
    if (a.has_device) row.push_back(format_count(s.h2d_copies) + " / " + format_us(s.h2d_us));
    t.add_row(row);
  };
  for (size_t i = 0; i < a.steps.size() && i < 12; ++i) add(a.steps[i]);
  if (a.steps.size() > 1) {
    t.add_separator();
    add(a.total);
  }
  out << "Step phases (host time; each instant once" << (a.module_spans ? "" : "; no nn.Module spans: forward unknown")
      << ")\n" << t.render();
  if (a.has_device && a.total.duration_us > a.total.device_busy_us) {
    out << "Device idle by what the host was doing:";
    const double idle = a.total.duration_us - a.total.device_busy_us;
    for (int p = 0; p < kStepPhaseCount; ++p) {
      const double us = a.total.idle_us[static_cast<size_t>(p)];
      if (us > 0) out << " " << step_phase_name(p) << " " << format_us(us) << " (" << format_percent(us / idle) << ")";
    }
    out << "\n";
  }
  return out.str() + "\n";
}

std::string render_source_console(const TraceAnalysis& a) {
  std::ostringstream out;
  for (const auto& d : a.loaders) {
    if (d.iterators == 0) continue;
    out << "DataLoader" << (d.made_at.empty() ? "" : " " + d.made_at) << ": " << (d.dataset.empty() ? "" : d.dataset + ", ")
        << "batch_size " << d.batch_size << ", num_workers " << d.num_workers << ", pin_memory "
        << (d.pin_memory == 1 ? "on" : "off") << ", persistent_workers " << (d.persistent_workers == 1 ? "on" : "off")
        << ", prefetch_factor " << (d.prefetch_factor < 0 ? std::string("-") : std::to_string(d.prefetch_factor)) << "; "
        << d.iterators << " iterator(s)\n";
  }
  if (!a.loaders.empty() && a.total.data_wait_us > 0) {
    const auto& lt = a.loader_time;
    out << "  waiting in steps: " << format_us(a.total.data_wait_us) << " (" << format_percent(a.share(a.total.data_wait_us))
        << "): loaded in the training process " << format_us(lt.in_process_us) << ", from workers "
        << format_us(lt.from_workers_us) << ", iterator starts " << format_us(lt.start_us) << "\n";
  }
  if (!a.source_lines) return out.str();
  if (!a.host_reads.empty()) {
    out << "Tensor values read on the host from your lines in steps (" << format_count(a.host_read_count) << "):\n";
    for (const auto& l : a.host_reads) out << "  " << source_line_text(l) << "\n";
  }
  if (!a.call_loops.empty()) {
    out << "Your lines called most often per step:\n";
    for (const auto& l : a.call_loops)
      out << "  " << source_line_text(l) << ", " << format_fixed(static_cast<double>(l.ops) / static_cast<double>(l.count), 1)
          << " operators per call"
          << (l.repeats >= kLoopRepeats ? ", a loop (up to " + format_count(l.repeats) + " in one call of its function)"
                                        : ", " + format_count(l.repeats) + " per call of its function")
          << "\n";
  }
  return out.str();
}

nlohmann::json source_line_json(const SourceLine& l) {
  return {{"where", l.where}, {"code", l.code}, {"via", l.via}, {"count", l.count}, {"ops", l.ops},
          {"small_ops", l.small_ops}, {"repeats", l.repeats}, {"per_step", l.per_step}, {"time_us", l.time_us}};
}

nlohmann::json source_lines_json(const std::vector<SourceLine>& v) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& l : v) arr.push_back(source_line_json(l));
  return arr;
}

nlohmann::json script_json(const TraceAnalysis& a) {
  using nlohmann::json;
  json loaders = json::array();
  for (const auto& d : a.loaders)
    loaders.push_back({{"made_at", d.made_at}, {"code", d.made_text}, {"dataset", d.dataset},
                       {"batch_size", d.batch_size}, {"num_workers", d.num_workers},
                       {"pin_memory", d.pin_memory < 0 ? json() : json(d.pin_memory == 1)},
                       {"persistent_workers", d.persistent_workers < 0 ? json() : json(d.persistent_workers == 1)},
                       {"prefetch_factor", d.prefetch_factor < 0 ? json() : json(d.prefetch_factor)},
                       {"iterators", d.iterators}});
  const auto& lt = a.loader_time;
  return {{"source_lines", a.source_lines},
          {"module_spans", a.module_spans},
          {"cpus", a.cpus},
          {"dataloaders", loaders},
          {"loader_time", {{"in_process_us", lt.in_process_us}, {"from_workers_us", lt.from_workers_us},
                           {"start_us", lt.start_us}, {"starts", lt.starts}, {"wait_per_step_us", lt.wait_per_step}}},
          {"host_reads", source_lines_json(a.host_reads)},
          {"host_read_count", a.host_read_count},
          {"call_loops", source_lines_json(a.call_loops)},
          {"op_loops", source_lines_json(a.op_loops)},
          {"op_overhead_us", a.op_overhead_us},
          {"small_op_us", a.small_op_us}};
}

}  // namespace crosstrain::analyze
