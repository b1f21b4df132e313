#include "tools/align/loss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "report/input_file.h"
#include "tools/align/dump_format.h"
#include "tools/align/dump_writer.h"

namespace crosstrain::align {

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

}  // namespace

LossLog read_loss_log(const std::string& path) {
  return parse_loss_log(report::read_regular_file(path, kMaxLossLogBytes, "loss log"), path);
}

LossLog parse_loss_log(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  LossLog log;
  std::map<int64_t, double> by_step;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    LossPoint pt;
    bool ok = false;
    std::string why = "not a loss record";
    if (line[first] == '{') {
      try {
        auto j = nlohmann::json::parse(line);
        if (!j.is_object()) throw std::invalid_argument("not a JSON object");
        pt.step = json_int64(j.at("step"), "step");
        pt.loss = loss_from_json(j.at("loss"));
        ok = true;
      } catch (const std::exception& e) {
        why = e.what();
      }
    } else {
      ok = parse_text_line(line, pt);
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

}  // namespace crosstrain::align
