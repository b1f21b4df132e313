#include "tools/dump/loss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>

#include "report/input_file.h"
#include "report/json_scanner.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/dump_writer.h"

namespace crosstrain::dump {

namespace {

bool parse_text_line(const std::string& line, LossPoint& out) {
  std::string s = line;
  std::replace(s.begin(), s.end(), ',', ' ');
  const char* p = s.c_str();
  char* end = nullptr;
  long long step = std::strtoll(p, &end, 10);
  if (end == p) return false;
  p = end;
  double loss = std::strtod(p, &end);  // strtod reads "nan" and "inf" too
  if (end == p) return false;
  while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
  if (*end != '\0') return false;
  out = {step, loss};
  return true;
}

// The loss of a JSON line: a number, null (NaN) or the strings "nan", "inf", "-inf" (and
// Python's spellings). Anything else is named by its type, without reading it: a value nested
// a million deep costs nothing.
double read_loss_value(report::JsonScanner& js) {
  const char c = js.peek();
  if (c == 'n') return js.read_null(), std::nan("");
  if (c == '-' || (c >= '0' && c <= '9')) return js.read_number().value;
  if (c == '"') {
    const std::string s(js.read_string());
    if (s == "nan" || s == "NaN") return std::nan("");
    if (s == "inf" || s == "Infinity") return INFINITY;
    if (s == "-inf" || s == "-Infinity") return -INFINITY;
    throw std::invalid_argument("loss is not a number but the string \"" + s.substr(0, 40) + "\"");
  }
  const char* type = c == '[' ? "an array" : c == '{' ? "an object" : c == 't' || c == 'f' ? "a boolean" : "no JSON value";
  throw std::invalid_argument(std::string("loss is not a number but ") + type);
}

// {"step": N, "loss": X, ...} starting at the scanner's position and ending before `line_end`;
// other members are skipped (within the scanner's nesting limit).
LossPoint parse_json_line(report::JsonScanner& js, size_t line_end) {
  js.expect('{', "opening a loss record");
  std::optional<int64_t> step;
  std::optional<double> loss;
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string key(js.read_string());
    js.expect(':', "after a key");
    if (key == "step") {
      const char c = js.peek();
      if (c != '-' && (c < '0' || c > '9')) throw std::invalid_argument("'step' is not an integer");
      step = js.read_int();
    } else if (key == "loss") {
      loss = read_loss_value(js);
    } else {
      js.skip_value();
    }
    if (js.offset() > line_end) throw std::invalid_argument("the record runs past the end of its line");
  }
  if (js.offset() > line_end) throw std::invalid_argument("the record runs past the end of its line");
  if (!step) throw std::invalid_argument("no 'step'");
  if (!loss) throw std::invalid_argument("no 'loss'");
  return {*step, *loss};
}

}  // namespace

LossLog read_loss_log(const std::string& path) {
  return parse_loss_log(report::read_regular_file(path, kMaxLossLogBytes, "loss log"), path);
}

LossLog parse_loss_log(const std::string& text, const std::string& path) {
  LossLog log;
  std::map<int64_t, double> by_step;
  // One scanner over the whole text (it needs the NUL that ends a std::string), moved to each
  // JSON line's start: no copy of the text and no tree of a line, however it is nested.
  report::JsonScanner js(text.data(), text.size(), path);
  int64_t line_no = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    const size_t first = text.find_first_not_of(" \t\r", begin);
    const size_t line_begin = begin;
    begin = end + 1;
    if (first >= end || text[first] == '#') continue;
    LossPoint pt;
    bool ok = false;
    std::string why = "not a loss record";
    if (text[first] == '{') {
      try {
        js.seek(first);
        pt = parse_json_line(js, end);
        if (text.find_first_not_of(" \t\r", js.offset()) < end) throw std::invalid_argument("text after the record");
        ok = true;
      } catch (const report::JsonFormatError& e) {
        why = e.offset() >= line_begin && e.offset() <= end
                  ? "column " + std::to_string(e.offset() - line_begin + 1) + ": " + e.reason()
                  : e.reason();
      } catch (const std::exception& e) {
        why = e.what();
      }
    } else {
      ok = parse_text_line(text.substr(line_begin, end - line_begin), pt);
      if (!ok && line_no == 1) continue;  // a header such as "step,loss"
    }
    if (!ok) {
      log.problems.push_back(path + " line " + std::to_string(line_no) + ": " + why);
      continue;
    }
    by_step[pt.step] = pt.loss;
  }
  for (auto [s, l] : by_step) log.points.push_back({s, l});
  return log;
}

LossComparison compare_losses(const LossLog& a, const LossLog& b, double rtol) {
  LossComparison c;
  c.rtol = rtol;
  size_t i = 0, j = 0;
  double sum = 0;
  int64_t finite_n = 0;
  while (i < a.points.size() || j < b.points.size()) {
    if (j == b.points.size() || (i < a.points.size() && a.points[i].step < b.points[j].step)) {
      ++c.only_in_a;
      ++i;
      continue;
    }
    if (i == a.points.size() || b.points[j].step < a.points[i].step) {
      ++c.only_in_b;
      ++j;
      continue;
    }
    LossStepDiff d{a.points[i].step, a.points[i].loss, b.points[j].loss, 0.0};
    if (std::isnan(d.a) && std::isnan(d.b)) {
      d.rel_diff = 0.0;
    } else if (!std::isfinite(d.a) || !std::isfinite(d.b)) {
      d.rel_diff = d.a == d.b ? 0.0 : INFINITY;
    } else if (d.a != d.b) {
      d.rel_diff = std::fabs(d.a - d.b) / std::max(std::fabs(d.a), 1e-300);
    }
    if (std::isfinite(d.rel_diff)) {
      sum += d.rel_diff;
      ++finite_n;
    }
    if (d.rel_diff > rtol) {
      ++c.steps_beyond;
      if (!c.first_step_beyond) c.first_step_beyond = d.step;
    }
    if (c.steps.empty() || d.rel_diff > c.max_rel_diff) {
      c.max_rel_diff = d.rel_diff;
      c.max_rel_step = d.step;
    }
    c.steps.push_back(d);
    ++i;
    ++j;
  }
  c.mean_rel_diff = finite_n ? sum / static_cast<double>(finite_n) : 0.0;
  return c;
}

}  // namespace crosstrain::dump
