#include "tools/analyze/step_phases.h"

#include <algorithm>
#include <string_view>

#include "tools/analyze/op_names.h"

namespace crosstrain::analyze {

namespace {

// Sweep labels: the phases up to Other (not a label: the absence of the others), then the
// device's activity and its host-to-device copies.
constexpr int kDevice = kStepPhaseCount;
constexpr int kHtoD = kStepPhaseCount + 1;
constexpr int kLabels = kStepPhaseCount + 2;

constexpr StepPhase kPhaseOrder[] = {StepPhase::DataWait, StepPhase::ToDevice, StepPhase::Backward,
                                     StepPhase::Optimizer, StepPhase::Forward, StepPhase::HostSync};
constexpr StepPhase kIdleOrder[] = {StepPhase::DataWait, StepPhase::HostSync, StepPhase::ToDevice,
                                    StepPhase::Backward, StepPhase::Optimizer, StepPhase::Forward};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_backward_python(std::string_view n) {
  // torch's entry points: Tensor.backward ("torch/_tensor.py(570): backward"), autograd.backward
  // and autograd.grad, and the engine call under them.
  return (starts_with(n, "torch/") && (ends_with(n, "): backward") || ends_with(n, "): grad"))) ||
         n.find("run_backward") != std::string_view::npos;
}

// The phase a span stands for, by its name and the kinds of span its writer records it with: torch's
// own spans, and the user scopes crosstrain's trainer opens around its phases (tools/train/trainer.cpp,
// phase_name; its data_wait is a data-loading name).
struct PhaseRule {
  StepPhase phase = StepPhase::Other;
  uint32_t kinds = 0;  // one bit per SpanKind
};
constexpr uint32_t kind_bit(SpanKind k) { return 1u << static_cast<unsigned>(k); }
constexpr uint32_t kAnnotation = kind_bit(SpanKind::Annotation);

constexpr uint32_t kCpuOp = kind_bit(SpanKind::CpuOp);

PhaseRule phase_rule(std::string_view name, bool data_loading) {
  if (data_loading) return {StepPhase::DataWait, kAnnotation};
  // torch.optim's record_function spans: user_annotation in newer torch, category "Operator" (read
  // as an operator) in torch 1.8's Kineto traces.
  if (starts_with(name, "Optimizer.step#") || starts_with(name, "Optimizer.zero_grad#"))
    return {StepPhase::Optimizer, kAnnotation | kCpuOp};
  if (name == "optimizer_step") return {StepPhase::Optimizer, kAnnotation};
  if (name == "backward") return {StepPhase::Backward, kAnnotation};
  if (name == "forward") return {StepPhase::Forward, kAnnotation};
  if (is_backward_python(name)) return {StepPhase::Backward, kCpuOp | kind_bit(SpanKind::PythonFunction)};
  // The autograd engine's operators: "autograd::engine::evaluate_function: AddmmBackward0" in newer
  // torch; torch 1.8 wrote only the bare nodes ("AddmmBackward", "torch::autograd::AccumulateGrad"),
  // on the engine's thread.
  if (is_autograd_wrapper_name(name)) return {StepPhase::Backward, kCpuOp};
  if (starts_with(name, "nn.Module: ")) return {StepPhase::Forward, kind_bit(SpanKind::PythonFunction)};
  return {};
}

// A span's phase by its name (Other when none), the rule decided once per interned name (traces
// repeat a few thousand names millions of times).
class NamedPhases {
 public:
  NamedPhases(const Trace& t, NameInfoCache& names)
      : t_(t), names_(names), rule_(t.strings.size()), known_(t.strings.size(), 0) {}

  StepPhase operator()(const Span& s) {
    if (!known_[s.name]) {
      rule_[s.name] = phase_rule(t_.strings.str(s.name), names_(s.name).data_loading);
      known_[s.name] = 1;
    }
    const PhaseRule& r = rule_[s.name];
    return (r.kinds & kind_bit(s.kind)) != 0 ? r.phase : StepPhase::Other;
  }

 private:
  const Trace& t_;
  NameInfoCache& names_;
  std::vector<PhaseRule> rule_;
  std::vector<char> known_;
};

}  // namespace

bool holds_update(const Trace& t, NameInfoCache& names, double start, double end) {
  NamedPhases phase(t, names);
  for (const Span& s : t.spans) {
    if (is_device(s.kind) || s.ts < start || s.ts >= end) continue;
    const StepPhase p = phase(s);
    if (p == StepPhase::Backward || p == StepPhase::Optimizer) return true;
  }
  return false;
}

namespace {

struct Edge {
  double t;
  int8_t label;
  int8_t delta;
};

// DataLoader spans in steps by iterator kind. An iterator's start (the agent's DataLoader.__iter__
// span) counts with the wait for its first batch, which is when the new workers deliver.
void loader_time(const Trace& t, const std::vector<StepWindow>& windows, NameInfoCache& names, TraceAnalysis& out) {
  auto& lt = out.loader_time;
  lt.wait_per_step.assign(windows.size(), 0);
  std::vector<size_t> spans;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].kind == SpanKind::Annotation && names(t.spans[i].name).data_loading) spans.push_back(i);
  std::sort(spans.begin(), spans.end(), [&](size_t a, size_t b) { return t.spans[a].ts < t.spans[b].ts; });
  bool after_start = false;
  for (size_t i : spans) {
    const Span& s = t.spans[i];
    const std::string& name = t.strings.str(s.name);
    const int k = window_of(windows, s.ts);
    const bool start = starts_with(name, "DataLoader.__iter__");
    const bool first = after_start && !start && name.find("_MultiProcessingDataLoaderIter") != std::string::npos;
    after_start = start || (after_start && name.find("__next__") == std::string::npos);
    if (k < 0) continue;
    const StepWindow& w = windows[static_cast<size_t>(k)];
    const double us = std::max(0.0, std::min(s.end(), w.end) - std::max(s.ts, w.start));
    lt.wait_per_step[static_cast<size_t>(k)] += us;
    if (start) ++lt.starts;
    if (start || first) lt.start_us += us;
    else if (name.find("_SingleProcessDataLoaderIter") != std::string::npos) lt.in_process_us += us;
    else if (name.find("_MultiProcessingDataLoaderIter") != std::string::npos) lt.from_workers_us += us;
  }
}

}  // namespace

bool is_host_to_device_copy_name(const std::string& n) {
  return n.find("HtoD") != std::string::npos || n.find("H2D") != std::string::npos ||
         n.find("Host -> Device") != std::string::npos || n.find("Host to Device") != std::string::npos;
}

void compute_step_phases(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows,
                         NameInfoCache& names, TraceAnalysis& out) {
  if (windows.empty()) return;
  const double lo = windows.front().start, hi = windows.back().end;
  std::vector<Edge> edges;
  auto add = [&](const Span& s, int label) {
    const double a = std::max(s.ts, lo), b = std::min(s.end(), hi);
    if (b <= a) return;
    edges.push_back({a, static_cast<int8_t>(label), 1});
    edges.push_back({b, static_cast<int8_t>(label), -1});
  };
  // What the host spent on each host-to-device copy: the copy operator that made it, outermost
  // (aten::to around aten::_to_copy around aten::copy_: x.to(device) whole), or, when the copy was
  // made inside some other operator (cuDNN and cuBLAS copy a few bytes of parameters inside
  // aten::cudnn_convolution or aten::addmm, whose host time is an algorithm search or a handle's
  // setup), only the runtime call that launched it.
  std::vector<char> copies_to_device(t.spans.size(), 0);
  auto is_copy_op = [&](int32_t op) { return op != kNoSpan && names(t.spans[static_cast<size_t>(op)].name).type == OpType::Copy; };
  for (int32_t d : L.device_order) {
    const Span& s = t.spans[static_cast<size_t>(d)];
    if (s.kind != SpanKind::Memcpy || !is_host_to_device_copy_name(t.strings.str(s.name))) continue;
    add(s, kHtoD);
    const int32_t l = L.launcher[static_cast<size_t>(d)];
    const int k = window_of(windows, l != kNoSpan ? t.spans[static_cast<size_t>(l)].ts : s.ts);
    if (k >= 0) ++out.steps[static_cast<size_t>(k)].h2d_copies;
    int32_t op = L.device_op[static_cast<size_t>(d)];
    if (is_copy_op(op)) {
      for (int32_t p = L.parent[static_cast<size_t>(op)]; p != kNoSpan && is_copy_op(L.op_of[static_cast<size_t>(p)]);
           p = L.parent[static_cast<size_t>(op)])
        op = L.op_of[static_cast<size_t>(p)];
      copies_to_device[static_cast<size_t>(op)] = 1;
    } else if (l != kNoSpan && t.spans[static_cast<size_t>(l)].kind == SpanKind::Runtime) {
      copies_to_device[static_cast<size_t>(l)] = 1;
    }
  }
  NamedPhases named_phase(t, names);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (is_device(s.kind)) {
      add(s, kDevice);
      continue;
    }
    if (is_host_tree(s.kind) && names(s.name).host_sync && (!names(s.name).value_read || L.over_runtime(i)))
      add(s, static_cast<int>(StepPhase::HostSync));  // not a read of a host tensor (see SpanLinks)
    if (copies_to_device[i]) {
      add(s, static_cast<int>(StepPhase::ToDevice));
      continue;
    }
    const StepPhase p = named_phase(s);
    if (p == StepPhase::Other) continue;
    if (p == StepPhase::Forward) out.module_spans = true;
    add(s, static_cast<int>(p));
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });

  int active[kLabels] = {};
  size_t w = 0;
  auto segment = [&](double a, double b) {
    if (b <= a) return;
    auto first_of = [&](const auto& order) {
      for (StepPhase p : order)
        if (active[static_cast<int>(p)] > 0) return p;
      return StepPhase::Other;
    };
    const StepPhase phase = first_of(kPhaseOrder);
    const bool idle = out.has_device && active[kDevice] == 0;
    const StepPhase cause = idle ? first_of(kIdleOrder) : StepPhase::Other;
    while (w < windows.size() && windows[w].end <= a) ++w;
    for (size_t k = w; k < windows.size() && windows[k].start < b; ++k) {
      const double x = std::max(a, windows[k].start), y = std::min(b, windows[k].end);
      if (y <= x) continue;
      StepBreakdown& s = out.steps[k];
      s.phase_us[static_cast<size_t>(phase)] += y - x;
      if (idle) s.idle_us[static_cast<size_t>(cause)] += y - x;
      if (active[kHtoD] > 0) s.h2d_us += y - x;
    }
  };
  double prev = lo;
  for (size_t e = 0; e < edges.size();) {
    const double now = edges[e].t;
    segment(prev, now);
    for (; e < edges.size() && edges[e].t == now; ++e) active[edges[e].label] += edges[e].delta;
    prev = now;
  }
  segment(prev, hi);

  loader_time(t, windows, names, out);
  for (const auto& s : out.steps) {
    for (int p = 0; p < kStepPhaseCount; ++p) {
      out.total.phase_us[static_cast<size_t>(p)] += s.phase_us[static_cast<size_t>(p)];
      out.total.idle_us[static_cast<size_t>(p)] += s.idle_us[static_cast<size_t>(p)];
    }
    out.total.h2d_us += s.h2d_us;
    out.total.h2d_copies += s.h2d_copies;
  }
}

}  // namespace crosstrain::analyze
