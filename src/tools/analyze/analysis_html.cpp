// The HTML report of `crosstrain analyze --html`: one self-contained page built on
// report::HtmlPage (inline SVG, no scripts, no network). Chart ids are stable so tests and
// headless browsers can find them: steps-R, top-ops-R, top-kernels-R (traces with device kernels),
// op-types-R, memory-R, timeline-R (one step's rows of host and device activity; R = trace index),
// the script's parts of script_html.cpp (findings-R with their lines, phases-R, op-lines-R ...),
// and with several traces a per-rank table (#ranks) first.
#include <algorithm>

#include "report/html_page.h"
#include "report/units.h"
#include "tools/analyze/analysis_report.h"
#include "tools/analyze/rank_compare.h"

namespace crosstrain::analyze {

std::string render_analysis_html(const std::vector<TraceAnalysis>& all) {
  report::HtmlPage page("crosstrain analyze");
  // Findings are prose: left-align them (the page default right-aligns numeric columns).
  page.add_raw("<style>table[id^=findings] td,table[id^=findings] th,table.lines td,table.lines th{text-align:left;"
               "vertical-align:top}td.src code{white-space:pre-wrap}</style>");
  if (all.size() > 1) {
    // The per-rank comparison of the console output: where ranks differ is where to look first.
    std::vector<std::string> head = {"Trace", "Rank", "Steps", "Mean step", "Compute/step", "Device busy"};
    for (int c = 0; c < kStepCategoryCount; ++c) head.push_back(step_category_name(c));
    head.push_back("Findings");
    std::vector<std::vector<std::string>> rows;
    for (const auto& a : all) {
      std::vector<std::string> row = {a.path.substr(a.path.find_last_of('/') + 1), a.rank >= 0 ? std::to_string(a.rank) : "-",
                                      std::to_string(a.steps.size()), report::format_us(a.mean_step_us()),
                                      report::format_us(compute_us_per_step(a)),
                                      a.has_device ? report::format_percent(a.share(a.total.device_busy_us)) : "n/a"};
      for (int c = 0; c < kStepCategoryCount; ++c)
        row.push_back(report::format_percent(a.share(a.total.category_us[static_cast<size_t>(c)])));
      std::string rules;
      for (const auto& f : a.findings) rules += (rules.empty() ? "" : ", ") + f.rule;
      row.push_back(rules.empty() ? "-" : rules);
      rows.push_back(row);
    }
    page.add_heading("Ranks");
    page.add_table(head, rows, "ranks");
    std::vector<std::vector<std::string>> across;
    for (const auto& f : rank_findings(all)) across.push_back({f.title, f.measured, f.evidence, f.threshold, f.suggestion});
    if (across.empty()) page.add_raw("<p class=\"pass\" id=\"rank-findings\">Across ranks: no rule fired.</p>");
    else page.add_table({"Finding", "Measured", "Evidence", "Threshold", "Suggestion"}, across, "rank-findings");
  }
  for (size_t r = 0; r < all.size(); ++r) {
    const TraceAnalysis& a = all[r];
    const std::string suffix = "-" + std::to_string(r);
    std::string title = a.path + (a.rank >= 0 ? " (rank " + std::to_string(a.rank) + ")" : "");
    page.add_heading(title);
    page.add_paragraph(a.format + " trace, " + report::format_count(static_cast<int64_t>(a.span_count)) + " spans, " +
                       std::to_string(a.steps.size()) + " step(s), mean step " + report::format_us(a.mean_step_us()) +
                       (a.has_device ? ", device busy " + report::format_percent(a.share(a.total.device_busy_us)) : ""));

    if (a.device_missing()) page.add_paragraph(device_missing_text(a));
    if (!a.partial_step.empty()) page.add_paragraph(partial_step_text(a));
    // Findings first: they are what the reader acts on.
    add_findings_html(page, a, suffix);

    std::vector<std::string> cats;
    for (int c = 0; c < kStepCategoryCount; ++c) cats.push_back(step_category_name(c));
    // A bar per step up to a readable count; long traces show their first steps (JSON has all).
    constexpr size_t kMaxBars = 100;
    std::vector<report::StackedBar> bars;
    for (const auto& s : a.steps) {
      if (bars.size() == kMaxBars) break;
      report::StackedBar b{s.label, {}};
      for (double v : s.category_us) b.values.push_back(v / 1000.0);
      bars.push_back(b);
    }
    std::string caption = "Step time breakdown";
    if (a.steps.size() > kMaxBars) caption += " (first " + std::to_string(kMaxBars) + " of " + std::to_string(a.steps.size()) + " steps)";
    page.add_stacked_bars("steps" + suffix, caption, cats, bars, "ms");
    add_script_html(page, a, suffix);

    std::vector<report::Slice> top;
    for (size_t i = 0; i < a.operators.size() && top.size() < 10; ++i) {
      const auto& o = a.operators[i];
      double v = a.has_device ? o.device_self_us : o.host_self_us;
      if (v > 0) top.push_back({o.name, v / 1000.0});
    }
    page.add_horizontal_bars("top-ops" + suffix,
                             std::string("Top operators by ") + (a.has_device ? "device" : "host") + " self time", top,
                             "ms");

    page.add_raw(render_timeline_html(a.timeline, "timeline" + suffix));

    if (!a.top_kernels.empty()) {
      std::vector<report::Slice> kernels;
      for (size_t i = 0; i < a.top_kernels.size() && i < 10; ++i)
        kernels.push_back({a.top_kernels[i].name.substr(0, 60), a.top_kernels[i].total_us / 1000.0});
      page.add_horizontal_bars("top-kernels" + suffix, "Top kernels by device time", kernels, "ms");
    }

    std::vector<report::Slice> types;
    for (const auto& t : a.op_types) types.push_back({op_type_name(t.type), a.has_device ? t.device_self_us : t.host_self_us});
    page.add_pie("op-types" + suffix, "Operator types", types);

    if (!a.memory.empty()) {
      std::vector<report::Series> series;
      for (const auto& m : a.memory) {
        report::Series s{m.device + " (peak " + report::format_bytes(m.peak_allocated) + ")", {}};
        for (const auto& [x, y] : m.points) s.points.emplace_back(x / 1000.0, y / (1024.0 * 1024.0));
        series.push_back(s);
      }
      page.add_line_chart("memory" + suffix, "Memory allocated", series, "ms since trace start", "MiB");
    } else {
      page.add_paragraph("No memory events in this trace (record with profile_memory=True).");
    }
  }
  return page.render();
}

}  // namespace crosstrain::analyze
