// The parts of `analyze --html` about the script itself: findings with the lines behind them,
// the step phases, device idle by phase, top operators with their lines, host reads, loops of
// calls and DataLoaders. Ids (R = trace index): findings-R, phases-R, idle-R, op-lines-R,
// host-reads-R, call-loops-R, dataloaders-R.
#include "report/html_page.h"
#include "report/units.h"
#include "tools/analyze/analysis_report.h"

namespace crosstrain::analyze {

namespace {

using report::html_escape;

// A table whose cells are text, except the column `lines_col`, a list of source lines.
std::string lines_table(const std::string& id, const std::vector<std::string>& head,
                        const std::vector<std::pair<std::vector<std::string>, std::vector<SourceLine>>>& rows,
                        size_t lines_col, const std::string& what = "") {
  std::string t = "<table id=\"" + html_escape(id) + "\" class=\"lines\"><thead><tr>";
  for (const auto& h : head) t += "<th>" + html_escape(h) + "</th>";
  t += "</tr></thead><tbody>";
  for (const auto& [cells, lines] : rows) {
    t += "<tr>";
    for (size_t c = 0; c <= cells.size(); ++c) {
      if (c == lines_col) {
        t += "<td class=\"src\">";
        for (size_t i = 0; i < lines.size() && i < 3; ++i)
          t += (i ? "<br>" : "") + std::string("<code>") + html_escape(source_line_text(lines[i], what)) + "</code>";
        t += "</td>";
      }
      if (c < cells.size()) t += "<td>" + html_escape(cells[c]) + "</td>";
    }
    t += "</tr>";
  }
  return t + "</tbody></table>\n";
}

}  // namespace

void add_findings_html(report::HtmlPage& page, const TraceAnalysis& a, const std::string& suffix) {
  if (a.findings.empty()) {
    page.add_raw("<p class=\"pass\" id=\"findings" + suffix + "\">Advisor: no rule fired.</p>");
    return;
  }
  std::vector<std::pair<std::vector<std::string>, std::vector<SourceLine>>> rows;
  for (const auto& f : a.findings) rows.push_back({{f.title, f.measured, f.evidence, f.threshold, f.suggestion}, f.sources});
  if (a.source_lines)
    page.add_raw(lines_table("findings" + suffix, {"Finding", "Measured", "Evidence", "Your lines", "Threshold", "Suggestion"},
                             rows, 3));
  else
    page.add_raw(lines_table("findings" + suffix, {"Finding", "Measured", "Evidence", "Threshold", "Suggestion"}, rows,
                             SIZE_MAX));
}

void add_script_html(report::HtmlPage& page, const TraceAnalysis& a, const std::string& suffix) {
  constexpr size_t kMaxBars = 100;
  if (has_phases(a)) {
    std::vector<std::string> phases;
    for (int p = 0; p < kStepPhaseCount; ++p) phases.push_back(step_phase_name(p));
    std::vector<report::StackedBar> bars, idle;
    for (const auto& s : a.steps) {
      if (bars.size() == kMaxBars) break;
      report::StackedBar b{s.label, {}}, i{s.label, {}};
      for (int p = 0; p < kStepPhaseCount; ++p) {
        b.values.push_back(s.phase_us[static_cast<size_t>(p)] / 1000.0);
        i.values.push_back(s.idle_us[static_cast<size_t>(p)] / 1000.0);
      }
      bars.push_back(b);
      idle.push_back(i);
    }
    page.add_stacked_bars("phases" + suffix,
                          std::string("Step phases on the host") + (a.module_spans ? "" : " (no nn.Module spans: forward unknown)"),
                          phases, bars, "ms");
    if (a.has_device && a.total.duration_us > a.total.device_busy_us)
      page.add_stacked_bars("idle" + suffix, "Device idle time by what the host was doing", phases, idle, "ms");
  }
  if (!a.source_lines) return;
  std::vector<std::pair<std::vector<std::string>, std::vector<SourceLine>>> ops;
  double base = 0;
  for (const auto& o : a.operators) base += a.has_device ? o.device_self_us : o.host_self_us;
  for (size_t i = 0; i < a.operators.size() && i < 10; ++i) {
    const auto& o = a.operators[i];
    const double key = a.has_device ? o.device_self_us : o.host_self_us;
    ops.push_back({{o.name, report::format_count(o.calls), report::format_us(key),
                    report::format_percent(base > 0 ? key / base : 0)},
                   o.sources});
  }
  page.add_raw("<h3>Top operators and your lines</h3>");
  page.add_raw(lines_table("op-lines" + suffix,
                           {"Operator", "Calls", a.has_device ? "Device self" : "Host self", "Share", "Your lines"}, ops, 4));
  if (!a.host_reads.empty()) {
    page.add_raw("<h3>Tensor values read on the host from your lines</h3>");
    std::vector<std::pair<std::vector<std::string>, std::vector<SourceLine>>> rows;
    for (const auto& l : a.host_reads) rows.push_back({{}, {l}});
    page.add_raw(lines_table("host-reads" + suffix, {"Line"}, rows, 0));
  }
  if (!a.call_loops.empty()) {
    page.add_raw("<h3>Your lines called most often per step</h3>");
    std::vector<std::pair<std::vector<std::string>, std::vector<SourceLine>>> rows;
    for (const auto& l : a.call_loops)
      rows.push_back({{report::format_fixed(static_cast<double>(l.ops) / static_cast<double>(std::max<int64_t>(l.count, 1)), 1),
                       report::format_count(l.small_ops), report::format_count(l.repeats) + (l.repeats >= kLoopRepeats ? " (a loop)" : "")},
                      {l}});
    page.add_raw(lines_table("call-loops" + suffix,
                             {"Line", "Operators per call", "Small operators", "Most calls in one call of its function"}, rows, 0));
  }
  if (!a.loaders.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : a.loaders) {
      auto flag = [](int v) { return std::string(v < 0 ? "?" : v ? "yes" : "no"); };
      rows.push_back({d.made_at + (d.made_text.empty() ? "" : " " + d.made_text), d.dataset, std::to_string(d.batch_size),
                      std::to_string(d.num_workers), flag(d.pin_memory), flag(d.persistent_workers),
                      d.prefetch_factor < 0 ? "-" : std::to_string(d.prefetch_factor), std::to_string(d.iterators)});
    }
    page.add_raw("<h3>DataLoaders</h3>");
    page.add_table({"Made at", "Dataset", "Batch", "Workers", "Pinned", "Persistent", "Prefetch", "Iterators"}, rows,
                   "dataloaders" + suffix);
  }
}

}  // namespace crosstrain::analyze
