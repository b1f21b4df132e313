#include "report/html_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace crosstrain::report {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string short_num(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < 1e-3))
    std::snprintf(buf, sizeof buf, "%.2g", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string legend(const std::vector<std::string>& names) {
  std::string out = "<div class=\"legend\">";
  for (size_t i = 0; i < names.size(); ++i)
    out += "<span><i style=\"background:" + chart_color(i) + "\"></i>" + html_escape(names[i]) + "</span>";
  return out + "</div>";
}

constexpr double kW = 720, kH = 300, kL = 70, kR = 20, kT = 20, kB = 40;

}  // namespace

const std::string& chart_color(size_t index) {
  static const std::vector<std::string> palette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[index % palette.size()];
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::add_heading(const std::string& text) { body_ += "<h2>" + html_escape(text) + "</h2>\n"; }
void HtmlPage::add_paragraph(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }
void HtmlPage::add_raw(const std::string& html) { body_ += html + "\n"; }

void HtmlPage::add_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         const std::string& id) {
  std::string t = "<table" + (id.empty() ? std::string() : " id=\"" + html_escape(id) + "\"") + "><thead><tr>";
  for (const auto& h : header) t += "<th>" + html_escape(h) + "</th>";
  t += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    t += "<tr>";
    for (const auto& c : r) t += "<td>" + html_escape(c) + "</td>";
    t += "</tr>";
  }
  body_ += t + "</tbody></table>\n";
}

void HtmlPage::add_line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series,
                              const std::string& x_label, const std::string& y_label, bool log_y) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto ty = [&](double y) { return log_y ? std::log10(std::max(y, 1e-30)) : y; };
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, ty(y)), y1 = std::max(y1, ty(y));
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1, y0 -= 1;
  auto px = [&](double x) { return kL + (x - x0) / (x1 - x0) * (kW - kL - kR); };
  auto py = [&](double y) { return kH - kB - (ty(y) - y0) / (y1 - y0) * (kH - kT - kB); };

  std::string svg = "<figure><figcaption>" + html_escape(title) + "</figcaption><svg class=\"chart chart-line\" id=\"" +
                    html_escape(id) + "\" viewBox=\"0 0 " + num(kW) + " " + num(kH) + "\" role=\"img\">";
  svg += "<line class=\"axis\" x1=\"" + num(kL) + "\" y1=\"" + num(kH - kB) + "\" x2=\"" + num(kW - kR) + "\" y2=\"" +
         num(kH - kB) + "\"/>";
  svg += "<line class=\"axis\" x1=\"" + num(kL) + "\" y1=\"" + num(kT) + "\" x2=\"" + num(kL) + "\" y2=\"" +
         num(kH - kB) + "\"/>";
  for (int i = 0; i <= 4; ++i) {
    double yv = y0 + (y1 - y0) * i / 4.0;
    double yp = kH - kB - (kH - kT - kB) * i / 4.0;
    svg += "<text class=\"tick\" x=\"" + num(kL - 6) + "\" y=\"" + num(yp + 4) + "\" text-anchor=\"end\">" +
           short_num(log_y ? std::pow(10.0, yv) : yv) + "</text>";
    double xv = x0 + (x1 - x0) * i / 4.0;
    svg += "<text class=\"tick\" x=\"" + num(px(xv)) + "\" y=\"" + num(kH - kB + 16) + "\" text-anchor=\"middle\">" +
           short_num(xv) + "</text>";
  }
  svg += "<text class=\"label\" x=\"" + num((kL + kW - kR) / 2) + "\" y=\"" + num(kH - 4) +
         "\" text-anchor=\"middle\">" + html_escape(x_label) + "</text>";
  svg += "<text class=\"label\" transform=\"translate(14," + num((kT + kH - kB) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(y_label) + "</text>";
  std::vector<std::string> names;
  for (size_t i = 0; i < series.size(); ++i) {
    names.push_back(series[i].name);
    std::string d;
    bool pen_up = true;
    for (auto [x, y] : series[i].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) {
        pen_up = true;
        continue;
      }
      d += (pen_up ? "M" : "L") + num(px(x)) + " " + num(py(y)) + " ";
      pen_up = false;
    }
    svg += "<path class=\"mark\" data-series=\"" + html_escape(series[i].name) + "\" d=\"" + d +
           "\" fill=\"none\" stroke=\"" + chart_color(i) + "\" stroke-width=\"1.5\"/>";
  }
  svg += "</svg>" + legend(names) + "</figure>";
  body_ += svg + "\n";
}

void HtmlPage::add_stacked_bars(const std::string& id, const std::string& title,
                                const std::vector<std::string>& categories, const std::vector<StackedBar>& bars,
                                const std::string& y_label) {
  double top = 0;
  for (const auto& b : bars) {
    double s = 0;
    for (double v : b.values) s += std::max(0.0, v);
    top = std::max(top, s);
  }
  if (top <= 0) top = 1;
  const double plot_w = kW - kL - kR, plot_h = kH - kT - kB;
  const double slot = bars.empty() ? plot_w : plot_w / static_cast<double>(bars.size());
  const double bw = std::max(2.0, slot * 0.7);
  std::string svg = "<figure><figcaption>" + html_escape(title) +
                    "</figcaption><svg class=\"chart chart-stacked\" id=\"" + html_escape(id) + "\" viewBox=\"0 0 " +
                    num(kW) + " " + num(kH) + "\" role=\"img\">";
  svg += "<line class=\"axis\" x1=\"" + num(kL) + "\" y1=\"" + num(kH - kB) + "\" x2=\"" + num(kW - kR) + "\" y2=\"" +
         num(kH - kB) + "\"/>";
  for (int i = 0; i <= 4; ++i) {
    double yp = kH - kB - plot_h * i / 4.0;
    svg += "<text class=\"tick\" x=\"" + num(kL - 6) + "\" y=\"" + num(yp + 4) + "\" text-anchor=\"end\">" +
           short_num(top * i / 4.0) + "</text>";
  }
  svg += "<text class=\"label\" transform=\"translate(14," + num((kT + kH - kB) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(y_label) + "</text>";
  for (size_t b = 0; b < bars.size(); ++b) {
    double x = kL + slot * static_cast<double>(b) + (slot - bw) / 2;
    double y = kH - kB;
    for (size_t c = 0; c < bars[b].values.size() && c < categories.size(); ++c) {
      double h = std::max(0.0, bars[b].values[c]) / top * plot_h;
      if (h <= 0) continue;
      y -= h;
      svg += "<rect class=\"mark\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(bw) + "\" height=\"" +
             num(h) + "\" fill=\"" + chart_color(c) + "\"><title>" + html_escape(bars[b].label + " " + categories[c]) +
             ": " + short_num(bars[b].values[c]) + "</title></rect>";
    }
    if (bars.size() <= 24)
      svg += "<text class=\"tick\" x=\"" + num(x + bw / 2) + "\" y=\"" + num(kH - kB + 16) +
             "\" text-anchor=\"middle\">" + html_escape(bars[b].label) + "</text>";
  }
  svg += "</svg>" + legend(categories) + "</figure>";
  body_ += svg + "\n";
}

void HtmlPage::add_horizontal_bars(const std::string& id, const std::string& title, const std::vector<Slice>& bars,
                                   const std::string& unit) {
  double top = 0;
  for (const auto& b : bars) top = std::max(top, b.value);
  if (top <= 0) top = 1;
  const double row = 22, label_w = 260, h = row * static_cast<double>(bars.size()) + 10;
  std::string svg = "<figure><figcaption>" + html_escape(title) + "</figcaption><svg class=\"chart chart-hbar\" id=\"" +
                    html_escape(id) + "\" viewBox=\"0 0 " + num(kW) + " " + num(h) + "\" role=\"img\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    double y = 5 + row * static_cast<double>(i);
    double w = std::max(0.0, bars[i].value) / top * (kW - label_w - 90);
    std::string label = bars[i].label.size() > 40 ? bars[i].label.substr(0, 38) + "…" : bars[i].label;
    svg += "<text class=\"tick\" x=\"" + num(label_w - 6) + "\" y=\"" + num(y + 14) + "\" text-anchor=\"end\">" +
           html_escape(label) + "</text>";
    svg += "<rect class=\"mark\" x=\"" + num(label_w) + "\" y=\"" + num(y + 3) + "\" width=\"" + num(w) +
           "\" height=\"" + num(row - 6) + "\" fill=\"" + chart_color(0) + "\"><title>" + html_escape(bars[i].label) +
           "</title></rect>";
    svg += "<text class=\"tick\" x=\"" + num(label_w + w + 6) + "\" y=\"" + num(y + 14) + "\">" +
           short_num(bars[i].value) + " " + html_escape(unit) + "</text>";
  }
  body_ += svg + "</svg></figure>\n";
}

void HtmlPage::add_pie(const std::string& id, const std::string& title, const std::vector<Slice>& slices) {
  double total = 0;
  for (const auto& s : slices) total += std::max(0.0, s.value);
  const double cx = 150, cy = 150, r = 130;
  std::string svg = "<figure><figcaption>" + html_escape(title) + "</figcaption><svg class=\"chart chart-pie\" id=\"" +
                    html_escape(id) + "\" viewBox=\"0 0 300 300\" width=\"300\" role=\"img\">";
  double angle = -M_PI / 2;
  std::vector<std::string> names;
  for (size_t i = 0; i < slices.size(); ++i) {
    names.push_back(slices[i].label);
    double v = std::max(0.0, slices[i].value);
    if (total <= 0 || v <= 0) continue;
    double sweep = v / total * 2 * M_PI;
    std::string t = "<title>" + html_escape(slices[i].label) + ": " + num(v / total * 100) + "%</title>";
    if (sweep >= 2 * M_PI - 1e-9) {
      svg += "<circle class=\"mark\" cx=\"150\" cy=\"150\" r=\"130\" fill=\"" + chart_color(i) + "\">" + t + "</circle>";
    } else {
      double a2 = angle + sweep;
      svg += "<path class=\"mark\" d=\"M" + num(cx) + " " + num(cy) + " L" + num(cx + r * std::cos(angle)) + " " +
             num(cy + r * std::sin(angle)) + " A" + num(r) + " " + num(r) + " 0 " + (sweep > M_PI ? "1" : "0") +
             " 1 " + num(cx + r * std::cos(a2)) + " " + num(cy + r * std::sin(a2)) + " Z\" fill=\"" +
             chart_color(i) + "\">" + t + "</path>";
    }
    angle += sweep;
  }
  body_ += svg + "</svg>" + legend(names) + "</figure>\n";
}

std::string HtmlPage::render() const {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title_) +
         "</title><style>"
         "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:980px;color:#222}"
         "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
         "table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;"
         "text-align:right}th:first-child,td:first-child{text-align:left}th{background:#f5f5f5}"
         "figure{margin:12px 0}figcaption{font-weight:600;margin-bottom:4px}svg.chart{max-width:100%}"
         ".axis{stroke:#888}.tick{font-size:11px;fill:#555}.label{font-size:12px;fill:#333}"
         ".legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;"
         "margin-right:4px}.warn{color:#b26b00}.error{color:#c0392b}.pass{color:#2e7d32}"
         "</style></head><body><h1>" +
         html_escape(title_) + "</h1>\n" + body_ + "</body></html>\n";
}

}  // namespace crosstrain::report
