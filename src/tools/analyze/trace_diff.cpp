#include "tools/analyze/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace crosstrain::analyze {

const char* diff_status_name(DiffStatus s) {
  switch (s) {
    case DiffStatus::Appeared: return "appeared";
    case DiffStatus::Vanished: return "vanished";
    case DiffStatus::Gone: return "gone";
    case DiffStatus::Slower: return "slower";
    case DiffStatus::Faster: return "faster";
    case DiffStatus::Same: return "same";
  }
  return "?";
}

TraceDiff diff_analyses(const TraceAnalysis& a, const TraceAnalysis& b, double same_fraction) {
  TraceDiff d;
  d.a_path = a.path, d.b_path = b.path;
  auto has_steps = [](const TraceAnalysis& x) { return !x.steps.empty() && x.steps.front().label != "trace"; };
  d.per_step = has_steps(a) && has_steps(b);
  double na = d.per_step ? static_cast<double>(a.steps.size()) : 1.0;
  double nb = d.per_step ? static_cast<double>(b.steps.size()) : 1.0;
  d.a_step_us = a.total.duration_us / na, d.b_step_us = b.total.duration_us / nb;
  bool device = a.has_device || b.has_device;
  auto device_of = [](const TraceAnalysis& x) {
    if (!x.has_device) return std::string("cpu");
    return x.device_name.empty() ? std::string("a device (") + x.format + " trace)" : x.device_name;
  };
  d.a_device = device_of(a), d.b_device = device_of(b);
  // Names are compared only when both traces carry one (old Kineto traces have no deviceProperties).
  bool named = !a.device_name.empty() && !b.device_name.empty();
  if (a.has_device != b.has_device)
    d.warning = "A ran on " + d.a_device + ", B on " + d.b_device +
                ": one side has no device activity, so its operator times are host times";
  else if (named && a.device_name != b.device_name)
    d.warning = "A ran on " + d.a_device + ", B on " + d.b_device + ": operator and kernel times compare different hardware";
  d.time_basis = device ? "device self" : "host self";

  // name -> (present in a, a time, present in b, b time)
  struct Side {
    bool in_a = false, in_b = false;
    double a = 0, b = 0;
  };
  std::map<std::string, Side> ops;
  for (const auto& o : a.operators) {
    auto& s = ops[o.name];
    s.in_a = true;
    s.a += (device ? o.device_self_us : o.host_self_us) / na;
  }
  for (const auto& o : b.operators) {
    auto& s = ops[o.name];
    s.in_b = true;
    s.b += (device ? o.device_self_us : o.host_self_us) / nb;
  }
  auto status = [&](bool in_a, bool in_b, double x, double y) {
    if (x == 0 && y == 0) return DiffStatus::Same;
    if (!in_a || x == 0) return DiffStatus::Appeared;
    if (!in_b) return DiffStatus::Vanished;
    if (y == 0) return DiffStatus::Gone;
    double tol = std::max(1.0, same_fraction * std::max(std::fabs(x), std::fabs(y)));
    if (std::fabs(y - x) <= tol) return DiffStatus::Same;
    return y > x ? DiffStatus::Slower : DiffStatus::Faster;
  };
  for (const auto& [name, s] : ops) d.rows.push_back({"operator", name, s.a, s.b, status(s.in_a, s.in_b, s.a, s.b)});
  for (int c = 0; c < kStepCategoryCount; ++c) {
    double x = a.total.category_us[static_cast<size_t>(c)] / na, y = b.total.category_us[static_cast<size_t>(c)] / nb;
    d.rows.push_back({"category", step_category_name(c), x, y, status(x > 0, y > 0, x, y)});
  }
  d.rows.erase(std::remove_if(d.rows.begin(), d.rows.end(), [](const DiffRow& r) { return r.a_us == 0 && r.b_us == 0; }),
               d.rows.end());
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::fabs(x.delta_us()) > std::fabs(y.delta_us());
  });
  return d;
}

}  // namespace crosstrain::analyze
