#pragma once
// Renderers for TraceAnalysis and TraceDiff: terminal tables, JSON (with schema_version), CSV
// files and the self-contained HTML page. Data in, text out; the only I/O is write_analysis_csv.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/html_page.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_diff.h"

namespace crosstrain::analyze {

enum class OperatorSort { DeviceSelf, HostSelf, HostTotal, Calls };
// Parses "device", "host-self", "host-total", "calls"; throws std::invalid_argument listing them.
OperatorSort parse_operator_sort(const std::string& s);
void sort_operators(std::vector<OperatorStats>& ops, OperatorSort by);

struct RenderOptions {
  size_t top = 20;   // operator rows shown (console, HTML); JSON and CSV carry all of them
};

std::string render_console(const TraceAnalysis& a, const RenderOptions& opt);
// One line per rank: step time, categories, findings; for folders of per-rank traces.
std::string render_rank_summary(const std::vector<TraceAnalysis>& ranks);
std::string render_diff_console(const TraceDiff& d, size_t top);

// The device views: top kernels, launch delays, collectives, pageable copies, AI_CPU tasks,
// online compilation (console text; "" when the trace has none of them) and their JSON.
std::string render_device_views_console(const TraceAnalysis& a, size_t top);
nlohmann::json device_views_to_json(const TraceAnalysis& a);

nlohmann::json findings_to_json(const std::vector<Finding>& findings);
nlohmann::json analysis_to_json(const TraceAnalysis& a);
nlohmann::json analyses_to_json(const std::vector<TraceAnalysis>& all);  // {"schema_version", "traces": [...]}
nlohmann::json diff_to_json(const TraceDiff& d);

// One line for a trace whose launches have no device activity (TraceAnalysis::device_missing):
// the device side was not recorded, so nothing about it is known and its advice is left out.
// "" for other traces.
std::string device_missing_text(const TraceAnalysis& a);
// The note on a last step left out (TraceAnalysis::partial_step); "" when none.
std::string partial_step_text(const TraceAnalysis& a);

// operators.csv and steps.csv (one row per rank and step) in `dir`, created if missing.
void write_analysis_csv(const std::vector<TraceAnalysis>& all, const std::string& dir);
// The files write_analysis_csv writes into `dir` (operators.csv, steps.csv).
std::vector<std::string> analysis_csv_paths(const std::string& dir);

// What the analysis knows about the script (source_report.cpp): a source line as one line of text
// ("train.py:84 loss.item()  x1.0 per step, 3.1 ms <what>"), an operator row's lines, the step
// phases and device idle by phase, then DataLoaders, host reads and loops of calls ("" when none).
std::string source_line_text(const SourceLine& l, const std::string& what = "");
std::string operator_source_text(const OperatorStats& o);
bool has_phases(const TraceAnalysis& a);
std::string render_phases_console(const TraceAnalysis& a);
std::string render_source_console(const TraceAnalysis& a);
nlohmann::json source_lines_json(const std::vector<SourceLine>& lines);
nlohmann::json script_json(const TraceAnalysis& a);

// The HTML parts about the script (script_html.cpp): the findings table (with each finding's lines
// when known), step phases and device idle by phase, top operators with their lines, host reads,
// loops of calls and DataLoaders. `suffix` ("-R") makes the ids unique per trace.
void add_findings_html(report::HtmlPage& page, const TraceAnalysis& a, const std::string& suffix);
void add_script_html(report::HtmlPage& page, const TraceAnalysis& a, const std::string& suffix);

// One HTML page: step-breakdown stacked bars, top-10 operators, operator-type pie, memory curve,
// the advisor's findings; per rank when several traces are given.
std::string render_analysis_html(const std::vector<TraceAnalysis>& all);
// The timeline of one step as an HTML fragment (inline SVG, CSS-only zoom; "" when empty).
std::string render_timeline_html(const TimelineView& v, const std::string& id);

}  // namespace crosstrain::analyze
