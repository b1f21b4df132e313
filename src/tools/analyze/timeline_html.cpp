// The HTML timeline of one step: a row per host thread (outermost operators), its runtime calls
// and each device stream, drawn as inline SVG. Zoom (1x, 4x, 16x) is CSS-only (radio buttons
// widen the scrolled canvas), so the page stays free of scripts. Ticks fall on round times.
#include <cmath>
#include <sstream>

#include "report/html_page.h"
#include "report/units.h"
#include "tools/analyze/analysis_report.h"

namespace crosstrain::analyze {

namespace {

constexpr int kRowPx = 18;

// A 1-2-5 step giving about `target` ticks over `span`.
double round_tick(double span, int target) {
  if (span <= 0) return 1;
  double raw = span / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string pct(double v) {
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

}  // namespace

std::string render_timeline_html(const TimelineView& v, const std::string& id) {
  if (v.rows.empty() || v.duration_us <= 0) return "";
  std::ostringstream o;
  const std::string z = "tlz-" + id;
  o << "<style>.tl{display:flex;font:11px sans-serif}.tl-labels{flex:0 0 180px;padding-top:16px}"
       ".tl-labels div{height:" << kRowPx << "px;line-height:" << kRowPx << "px;white-space:nowrap;overflow:hidden}"
       ".tl-scroll{overflow-x:auto;flex:1}.tl-inner{position:relative;width:100%}"
       ".tl-tick{position:absolute;top:0;font-size:10px;color:#555;white-space:nowrap}"
    << "#" << z << "4:checked~.tl .tl-inner{width:400%}#" << z << "16:checked~.tl .tl-inner{width:1600%}</style>\n";
  o << "<div class=\"timeline\" id=\"" << id << "\"><p>Timeline of " << report::html_escape(v.step) << " ("
    << report::format_us(v.duration_us) << "; hover a bar for its name)";
  if (v.dropped > 0) o << ", " << v.dropped << " bars left out";
  o << "</p>\n";
  for (int zoom : {1, 4, 16})
    o << "<input type=\"radio\" name=\"" << z << "\" id=\"" << z << zoom << "\"" << (zoom == 1 ? " checked" : "")
      << "><label for=\"" << z << zoom << "\">" << zoom << "x</label> ";
  o << "\n<div class=\"tl\"><div class=\"tl-labels\">";
  for (const auto& r : v.rows) o << "<div>" << report::html_escape(r.label) << "</div>";
  o << "</div><div class=\"tl-scroll\"><div class=\"tl-inner\">";
  double tick = round_tick(v.duration_us, 10);
  for (double t = 0; t <= v.duration_us + 1e-9; t += tick)
    // Labels near the right edge end at their tick instead of starting there, so they stay inside.
    o << "<span class=\"tl-tick\" style=\"left:" << pct(100.0 * t / v.duration_us) << "%"
      << (t > 0.9 * v.duration_us ? ";transform:translateX(-100%)" : "") << "\">" << report::format_us(t) << "</span>";
  const int height = static_cast<int>(v.rows.size()) * kRowPx;
  o << "<svg class=\"chart chart-timeline\" viewBox=\"0 0 1000 " << height << "\" preserveAspectRatio=\"none\" "
    << "style=\"display:block;width:100%;height:" << height << "px;margin-top:16px\">";
  for (double t = 0; t <= v.duration_us + 1e-9; t += tick)
    o << "<line x1=\"" << pct(1000 * t / v.duration_us) << "\" x2=\"" << pct(1000 * t / v.duration_us)
      << "\" y1=\"0\" y2=\"" << height << "\" stroke=\"#ddd\" vector-effect=\"non-scaling-stroke\"/>";
  for (size_t r = 0; r < v.rows.size(); ++r)
    for (const auto& b : v.rows[r].bars) {
      double x = 1000 * b.start_us / v.duration_us, w = std::max(1000 * b.duration_us / v.duration_us, 0.05);
      o << "<rect class=\"mark\" x=\"" << pct(x) << "\" y=\"" << r * kRowPx + 2 << "\" width=\"" << pct(w)
        << "\" height=\"" << kRowPx - 4 << "\" fill=\"" << report::chart_color(static_cast<size_t>(b.category))
        << "\"><title>" << report::html_escape(b.name) << " +" << report::format_us(b.start_us) << ", "
        << report::format_us(b.duration_us) << "</title></rect>";
    }
  o << "</svg></div></div></div></div>\n";
  return o.str();
}

}  // namespace crosstrain::analyze
