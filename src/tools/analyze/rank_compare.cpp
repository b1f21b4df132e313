#include "tools/analyze/rank_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/units.h"

namespace crosstrain::analyze {

namespace {

double op_time(const TraceAnalysis& a, const OperatorStats& o) { return a.has_device ? o.device_self_us : o.host_self_us; }

double per_step(const TraceAnalysis& a, double us) { return a.steps.empty() ? 0 : us / static_cast<double>(a.steps.size()); }

double comm_us_per_step(const TraceAnalysis& a) {
  return per_step(a, a.total.category_us[static_cast<size_t>(StepCategory::Communication)]);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string ratio_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", r);
  return buf;
}

// Where the straggler's extra time went, against one typical rank: the operators that grew most,
// and whether both ran the same operators as often (slower at the same work) or not (more work).
std::string operator_evidence(const TraceAnalysis& slow, const TraceAnalysis& typical) {
  std::map<std::string, std::pair<const OperatorStats*, const OperatorStats*>> by_name;
  for (const auto& o : slow.operators) by_name[o.name].first = &o;
  for (const auto& o : typical.operators) by_name[o.name].second = &o;
  struct Row {
    std::string name;
    double delta;
    int64_t calls_slow, calls_typical;
  };
  std::vector<Row> rows;
  std::vector<Row> call_changes;
  for (const auto& [name, p] : by_name) {
    const auto* s = p.first;
    const auto* t = p.second;
    if ((s && s->type == OpType::Communication) || (t && t->type == OpType::Communication)) continue;
    Row r{name, per_step(slow, s ? op_time(slow, *s) : 0) - per_step(typical, t ? op_time(typical, *t) : 0),
          s ? s->calls : 0, t ? t->calls : 0};
    rows.push_back(r);
    const double steps_ratio = static_cast<double>(slow.steps.size()) / static_cast<double>(typical.steps.size());
    if (static_cast<double>(r.calls_slow) != static_cast<double>(r.calls_typical) * steps_ratio) call_changes.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.delta > b.delta; });
  std::ostringstream out;
  out << "per step against rank " << typical.rank << ":";
  for (size_t i = 0; i < rows.size() && i < 3 && rows[i].delta > 0; ++i)
    out << (i ? ", " : " ") << rows[i].name << " +" << report::format_us(rows[i].delta);
  if (call_changes.empty()) {
    out << "; the same operators ran as often on both (slower at the same work)";
  } else {
    std::sort(call_changes.begin(), call_changes.end(), [](const Row& a, const Row& b) { return a.delta > b.delta; });
    const auto& c = call_changes.front();
    out << "; " << call_changes.size() << " operator(s) ran a different number of times (" << c.name << ": "
        << c.calls_slow << " calls against " << c.calls_typical << "): the ranks did not do the same work";
  }
  return out.str();
}

}  // namespace

double compute_us_per_step(const TraceAnalysis& a) {
  double us = 0;
  for (const auto& o : a.operators)
    if (o.type != OpType::Communication) us += op_time(a, o);
  return per_step(a, us);
}

std::vector<Finding> rank_findings(const std::vector<TraceAnalysis>& ranks) {
  struct Rank {
    const TraceAnalysis* trace;  // the one with the most steps stands for the rank in the evidence
    double compute_us;           // per step, over every trace of the rank
    double comm_us;              // likewise
    size_t steps;
  };
  // A rank may have several traces (one per profiling cycle: tensorboard_trace_handler with a
  // repeating schedule writes them into one folder). They are that rank's steps, all of them
  // compared with the other ranks' steps, never one cycle of a rank with another of the same.
  std::map<int, Rank> by_rank;
  for (const auto& a : ranks) {
    const double us = a.rank >= 0 && !a.steps.empty() ? compute_us_per_step(a) : 0;
    if (!(us > 0)) continue;
    const double n = static_cast<double>(a.steps.size());
    auto [it, fresh] = by_rank.emplace(a.rank, Rank{&a, 0, 0, 0});
    Rank& r = it->second;
    const double before = static_cast<double>(r.steps);
    r.compute_us = (r.compute_us * before + us * n) / (before + n);
    r.comm_us = (r.comm_us * before + comm_us_per_step(a) * n) / (before + n);
    r.steps += a.steps.size();
    if (!fresh && a.steps.size() > r.trace->steps.size()) r.trace = &a;
  }
  std::vector<Rank> usable;
  for (const auto& [rank, r] : by_rank) usable.push_back(r);
  if (usable.size() < 2) return {};
  const auto slow_it = std::max_element(usable.begin(), usable.end(),
                                        [](const Rank& x, const Rank& y) { return x.compute_us < y.compute_us; });
  const Rank slow = *slow_it;
  usable.erase(slow_it);  // the other ranks from here on
  std::vector<double> others, waits;
  for (const auto& r : usable) {
    others.push_back(r.compute_us);
    waits.push_back(r.comm_us);
  }
  const double typical_us = median(others);
  const double ratio = slow.compute_us / typical_us;
  if (!(ratio > kStragglerRatio)) return {};
  // The rank whose compute is nearest the median of the others stands for them in the evidence.
  const Rank typical = *std::min_element(usable.begin(), usable.end(), [&](const Rank& x, const Rank& y) {
    return std::abs(x.compute_us - typical_us) < std::abs(y.compute_us - typical_us);
  });
  const TraceAnalysis* slowest = slow.trace;
  const double slow_us = slow.compute_us;
  const double extra_wait = median(waits) - slow.comm_us;

  Finding f;
  f.rule = "straggler";
  f.title = "Rank " + std::to_string(slowest->rank) + " is a straggler";
  f.value = ratio;
  f.measured = "rank " + std::to_string(slowest->rank) + " computes " + report::format_us(slow_us) + " per step, " +
               ratio_text(ratio) + " the median of the other ranks (" + report::format_us(typical_us) + ")";
  f.threshold = "> " + ratio_text(kStragglerRatio) + " the median of the other ranks";
  f.evidence = operator_evidence(*slowest, *typical.trace);
  if (extra_wait > 0)
    f.evidence += "; the other ranks (median) spend " + report::format_us(extra_wait) +
                  " more per step in communication than rank " + std::to_string(slowest->rank) +
                  ": they wait for it, so their communication share measures that wait, not the network";
  f.suggestion = "Find why rank " + std::to_string(slowest->rank) +
                 " is slower: a slower, throttled or shared device or core (other processes, clocks: nvidia-smi -q -d "
                 "PERFORMANCE or npu-smi info; on CPUs bind each rank to its own cores), a data shard with more work "
                 "(longer sequences, larger images), or work only that rank does (logging, evaluation, checkpoints on "
                 "rank 0). The job runs at the pace of its slowest rank.";
  return {f};
}

std::string render_rank_findings(const std::vector<Finding>& findings) {
  std::ostringstream out;
  out << "Across ranks: ";
  if (findings.empty()) out << "no rule fired\n";
  else out << findings.size() << " finding(s)\n";
  for (const auto& f : findings)
    out << "  [" << f.rule << "] " << f.title << ": " << f.measured << " (threshold " << f.threshold << ")\n"
        << "    evidence: " << f.evidence << "\n"
        << "    -> " << f.suggestion << "\n";
  return out.str();
}

}  // namespace crosstrain::analyze
