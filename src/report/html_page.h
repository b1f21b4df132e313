#pragma once
// Self-contained HTML reports: one file, inline CSS and SVG, no scripts or fonts fetched from the
// network. Charts are plain SVG so headless browsers and tests can find them by id/class:
// every chart is `<svg class="chart chart-KIND" id="ID">` with one element of class "mark" per
// drawn datum (bar segment, pie slice, line path, point).
#include <string>
#include <utility>
#include <vector>

namespace crosstrain::report {

std::string html_escape(const std::string& s);

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
};

struct StackedBar {
  std::string label;                               // x-axis label, e.g. "step 3"
  std::vector<double> values;                      // one per category, same order as categories
};

struct Slice {
  std::string label;
  double value;
};

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void add_heading(const std::string& text);               // <h2>
  void add_paragraph(const std::string& text);             // escaped text
  void add_raw(const std::string& html);                   // trusted markup
  void add_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::string& id = "");
  void add_line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series,
                      const std::string& x_label, const std::string& y_label, bool log_y = false);
  void add_stacked_bars(const std::string& id, const std::string& title,
                        const std::vector<std::string>& categories, const std::vector<StackedBar>& bars,
                        const std::string& y_label);
  void add_horizontal_bars(const std::string& id, const std::string& title, const std::vector<Slice>& bars,
                           const std::string& unit);
  void add_pie(const std::string& id, const std::string& title, const std::vector<Slice>& slices);

  std::string render() const;

 private:
  std::string title_;
  std::string body_;
};

// A fixed palette shared by all charts so categories keep their colour across reports.
const std::string& chart_color(size_t index);

}  // namespace crosstrain::report
