// The advisor's rules about the script's own code and DataLoaders: they need the source lines and
// DataLoader settings `crosstrain run --profile` records (call_sites.h) and stay silent without.
#include <algorithm>
#include <string>
#include <vector>

#include "report/units.h"
#include "tools/analyze/advisor.h"

namespace crosstrain::analyze {

namespace {

using report::format_count;
using report::format_fixed;
using report::format_percent;
using report::format_us;

constexpr double kNotApplicable = -1;
constexpr double kLoopCallsPerStep = 32;  // a line called this often per step in loops (op_loops)
constexpr int64_t kLoopOpsPerCall = 4;    // ... each call issuing only a few operators
constexpr double kLoopSmallShare = 0.5;   // ... most of them small (TraceAnalysis::small_op_us)
constexpr double kLoopMinShare = 0.005;   // ... costing at least this share of the step here
constexpr size_t kBurstMinSteps = 5;      // bursts need this many steps to tell from a hiccup

bool has_steps(const TraceAnalysis& a) {
  return !a.steps.empty() && a.steps.front().label != "trace" && a.total.duration_us > 0;
}
double nsteps(const TraceAnalysis& a) { return static_cast<double>(std::max<size_t>(a.steps.size(), 1)); }

std::string share_text(const TraceAnalysis& a, double us) {
  return format_us(us) + " = " + format_percent(a.share(us)) + " of step time over " +
         format_count(static_cast<int64_t>(a.steps.size())) + " step(s)";
}

std::string line_text(const SourceLine& l) {
  return l.where + (l.code.empty() ? "" : " " + l.code);
}

std::vector<SourceLine> loop_lines(const TraceAnalysis& a) {
  std::vector<SourceLine> out;
  for (const auto& l : a.op_loops)
    if (l.per_step >= kLoopCallsPerStep && l.ops > 0 && l.ops <= kLoopOpsPerCall * l.count &&
        static_cast<double>(l.small_ops) >= kLoopSmallShare * static_cast<double>(l.ops) &&
        a.share(l.time_us) >= kLoopMinShare)
      out.push_back(l);
  return out;
}

// Each step's data-loading time over its duration.
std::vector<double> wait_shares(const TraceAnalysis& a) {
  std::vector<double> v;
  const auto& w = a.loader_time.wait_per_step;
  for (size_t k = 0; k < w.size() && k < a.steps.size(); ++k)
    v.push_back(a.steps[k].duration_us > 0 ? w[k] / a.steps[k].duration_us : 0);
  return v;
}

// The median step's share: a loader that makes every step wait, not one hiccup of the machine.
double median_wait_share(const TraceAnalysis& a) {
  auto v = wait_shares(a);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Steps that waited more than a tenth of their time, when the median step did not.
size_t burst_steps(const TraceAnalysis& a) {
  size_t n = 0;
  for (double x : wait_shares(a)) n += x > 0.1 ? 1 : 0;
  return n;
}

double batch_wait_us(const TraceAnalysis& a) { return a.loader_time.in_process_us + a.loader_time.from_workers_us; }
bool in_process(const TraceAnalysis& a) { return a.loader_time.in_process_us >= a.loader_time.from_workers_us; }

// The loaders the waits came from: those without workers for in-process waits, else those with.
std::vector<const DataLoaderSettings*> waiting_loaders(const TraceAnalysis& a, bool without_workers) {
  std::vector<const DataLoaderSettings*> out;
  for (const auto& d : a.loaders)
    if ((d.num_workers == 0) == without_workers && d.iterators > 0) out.push_back(&d);
  return out;
}

std::string flag(int v) { return v < 0 ? "?" : v ? "True" : "False"; }

std::string settings_text(const DataLoaderSettings& d) {
  std::string s = "DataLoader";
  if (!d.made_at.empty()) s += " made at " + d.made_at;
  s += " (" + (d.dataset.empty() ? std::string() : d.dataset + ", ") + "batch_size=" + std::to_string(d.batch_size) +
       ", num_workers=" + std::to_string(d.num_workers) + ", pin_memory=" + flag(d.pin_memory) +
       ", persistent_workers=" + flag(d.persistent_workers) + ", prefetch_factor=" +
       (d.prefetch_factor < 0 ? std::string("None") : std::to_string(d.prefetch_factor)) + ")";
  return s;
}

std::string loaders_text(const std::vector<const DataLoaderSettings*>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 3; ++i) s += (i ? "; " : "") + settings_text(*v[i]);
  return s;
}

std::string per_step_waits(const TraceAnalysis& a) {
  std::string s;
  const auto& w = a.loader_time.wait_per_step;
  for (size_t i = 0; i < w.size() && i < 8; ++i) s += (i ? ", " : "") + format_us(w[i]);
  return s + (w.size() > 8 ? ", ..." : "");
}

std::string where_waited(const TraceAnalysis& a) {
  auto it = a.lines.find("data_loading");
  if (it == a.lines.end() || it->second.empty()) return "";
  return " at " + line_text(it->second.front());
}

std::string cpus_text(const TraceAnalysis& a) {
  return a.cpus > 0 ? "; the training process can use " + std::to_string(a.cpus) + " CPU(s)" : "";
}

std::vector<SourceLine> loader_lines(const TraceAnalysis& a, const std::vector<const DataLoaderSettings*>& loaders,
                                     const char* waits_rule) {
  std::vector<SourceLine> out;
  for (const auto* d : loaders)
    if (!d->made_at.empty()) out.push_back({d->made_at, d->made_text, "", d->iterators, 0, 0, 0, 0, 0});
  auto it = a.lines.find(waits_rule);
  if (it != a.lines.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

double pageable_to_device_us(const TraceAnalysis& a) {
  double us = 0;
  for (const auto& c : a.pageable_copies)
    if (c.name.find("HtoD") != std::string::npos || c.name.find("Host -> Device") != std::string::npos) us += c.total_us;
  return us;
}

bool unpinned_loader(const TraceAnalysis& a) {
  for (const auto& d : a.loaders)
    if (d.pin_memory == 0 && d.iterators > 0) return true;
  return false;
}

bool restarting_workers(const TraceAnalysis& a) {
  for (const auto& d : a.loaders)
    if (d.num_workers > 0 && d.persistent_workers == 0) return true;
  return false;
}

}  // namespace

const std::vector<AdvisorRule>& script_rules() {
  static const std::vector<AdvisorRule> rules = {
    {"host_read", "Tensor values read on the host every step", 0.999, ">= 1 per step from your lines (host-only traces)",
     "On an accelerator each read (.item(), .tolist(), .cpu(), .numpy(), nonzero, a tensor in an `if` or a print) "
     "waits until the device has finished all the work queued before it, so the host stops feeding the device "
     "every step: keep running values on the device (total += loss.detach()) and read them every N steps.",
     [](const TraceAnalysis& a) {
       if (a.has_device || !a.source_lines || !has_steps(a)) return kNotApplicable;
       return static_cast<double>(a.host_read_count) / nsteps(a);
     },
     [](const TraceAnalysis& a, double v) {
       return format_fixed(v, 1) + " per step" + (a.host_reads.empty() ? "" : " (" + a.host_reads.front().where + ")");
     },
     [](const TraceAnalysis& a) {
       double us = 0;
       for (const auto& l : a.host_reads) us += l.time_us;
       return format_count(a.host_read_count) + " reads in " + format_count(static_cast<int64_t>(a.steps.size())) +
              " steps from " + format_count(static_cast<int64_t>(a.host_reads.size())) +
              " line(s) of yours; " + (a.device_missing() ? "with the device's activity not recorded" : "on this host-only run") +
              " they took " + share_text(a, us);
     }},
    {"python_op_loop", "A Python loop issues many small operators", kLoopCallsPerStep - 0.01,
     ">= 32 calls per step from one line in loops (the same function >= 4 times in one call of its own function), "
     "<= 4 operators each, most of them small, >= 0.5% of step time",
     "Each operator pays for a Python call, the dispatcher and, on an accelerator, a kernel launch: replace the "
     "loop by one call over all the tensors (torch._foreach_mul_/_foreach_add_/_foreach_lerp_ ... over lists of "
     "parameters, one batched operation instead of one per sample or element), or torch.compile the function.",
     [](const TraceAnalysis& a) {
       const auto lines = loop_lines(a);
       if (!a.source_lines || !has_steps(a) || lines.empty()) return kNotApplicable;
       return lines.front().per_step;
     },
     [](const TraceAnalysis& a, double v) {
       const auto lines = loop_lines(a);
       return format_fixed(v, 0) + " calls per step in a loop at " + lines.front().where + ", " +
              format_percent(a.share(lines.front().time_us)) + " of step time";
     },
     [](const TraceAnalysis& a) {
       std::string s;
       for (const auto& l : loop_lines(a))
         s += (s.empty() ? "" : "; ") + line_text(l) + ": " + format_fixed(l.per_step, 0) + " calls per step (up to " +
              format_count(l.repeats) + " in one call of its function) with " +
              format_fixed(static_cast<double>(l.small_ops) / nsteps(a), 0) + " small operators per step (of " +
              format_fixed(static_cast<double>(l.ops) / nsteps(a), 0) + "), " + share_text(a, l.time_us);
       return s + "; small: at most " + format_us(a.small_op_us) + " each, " + format_fixed(kSmallOpOverheads, 0) +
              "x this trace's per-operator cost of " +
              format_us(a.op_overhead_us);
     }},
    {"dataloader_workers", "The DataLoader's workers do not keep up", 0.05,
     "> 5% of the median step waiting for batches",
     "With num_workers=0 the training process decodes and transforms every batch itself while the model waits: "
     "load in worker processes (num_workers from 2 up to the CPUs the process can use, with persistent_workers=True). "
     "If workers already load and every step still waits, the transforms cost more than they can deliver: more "
     "workers, cheaper augmentation (or on the device), pre-decoded or smaller images.",
     [](const TraceAnalysis& a) {
       if (a.loaders.empty() || !has_steps(a) || batch_wait_us(a) <= 0) return kNotApplicable;
       return median_wait_share(a);
     },
     [](const TraceAnalysis& a, double v) {
       const auto l = waiting_loaders(a, in_process(a));
       const std::string workers = l.size() == 1 ? "num_workers=" + std::to_string(l.front()->num_workers) + ": " : "";
       return workers + format_percent(v) + " of the median step " +
              (in_process(a) ? "loading batches in the training process" : "waiting for the workers' batches");
     },
     [](const TraceAnalysis& a) {
       return loaders_text(waiting_loaders(a, in_process(a))) + "; waited " + share_text(a, batch_wait_us(a)) +
              where_waited(a) + " (per step: " + per_step_waits(a) + ")" + cpus_text(a);
     }},
    {"dataloader_prefetch", "The DataLoader's queue runs dry in some steps", 0.05,
     "> 5% of step time waiting for workers, in 2 or more steps but not the median one (>= 5 steps)",
     "The workers keep up on average but not in every step (uneven samples, a slow disk, workers sharing CPUs): "
     "let each worker keep more batches ready (prefetch_factor, default 2) and add workers if CPUs allow.",
     [](const TraceAnalysis& a) {
       if (a.loaders.empty() || !has_steps(a) || in_process(a) || a.steps.size() < kBurstMinSteps ||
           median_wait_share(a) > 0.05 || burst_steps(a) < 2 || a.loader_time.from_workers_us <= 0)
         return kNotApplicable;
       return a.share(a.loader_time.from_workers_us);
     },
     [](const TraceAnalysis& a, double v) { return format_percent(v) + " of step time waiting for the workers"; },
     [](const TraceAnalysis& a) {
       return loaders_text(waiting_loaders(a, false)) + "; waited " + share_text(a, a.loader_time.from_workers_us) +
              where_waited(a) + " (per step: " + per_step_waits(a) + ")" + cpus_text(a);
     }},
    {"dataloader_persistent_workers", "DataLoader workers start again inside the steps", 0.05,
     "> 5% of step time starting iterators (persistent_workers=False)",
     "With persistent_workers=False every `for batch in loader` (each epoch) starts num_workers new processes, "
     "which import, rebuild the dataset and fill the queue before the first batch arrives: set "
     "persistent_workers=True.",
     [](const TraceAnalysis& a) {
       if (a.loaders.empty() || !has_steps(a) || a.loader_time.start_us <= 0 || !restarting_workers(a)) return kNotApplicable;
       return a.share(a.loader_time.start_us);
     },
     [](const TraceAnalysis& a, double v) {
       return format_percent(v) + " of step time in " + format_count(a.loader_time.starts) + " iterator start(s)";
     },
     [](const TraceAnalysis& a) {
       return loaders_text(waiting_loaders(a, false)) + "; DataLoader.__iter__ and the wait for its first batch: " +
              share_text(a, a.loader_time.start_us);
     }},
    {"dataloader_pin_memory", "Batches are copied to the device from pageable memory", 0.01,
     "> 1% of step time in pageable host-to-device copies (pin_memory=False)",
     "A copy from pageable memory is staged by the driver through a pinned buffer and cannot overlap with "
     "compute: set pin_memory=True in the DataLoader and move batches with .to(device, non_blocking=True).",
     [](const TraceAnalysis& a) {
       if (!a.has_device || !unpinned_loader(a) || !has_steps(a) || pageable_to_device_us(a) <= 0) return kNotApplicable;
       return a.share(pageable_to_device_us(a));
     },
     [](const TraceAnalysis& a, double v) { return format_percent(v) + " of step time"; },
     [](const TraceAnalysis& a) {
       std::vector<const DataLoaderSettings*> unpinned;
       for (const auto& d : a.loaders)
         if (d.pin_memory == 0 && d.iterators > 0) unpinned.push_back(&d);
       return loaders_text(unpinned) + "; pageable host-to-device copies " + share_text(a, pageable_to_device_us(a));
     }},
  };
  return rules;
}

std::vector<SourceLine> rule_sources(const TraceAnalysis& a, const std::string& id) {
  if (id == "host_read") return a.host_reads;
  if (id == "python_op_loop") return loop_lines(a);
  if (id == "dataloader_workers") return loader_lines(a, waiting_loaders(a, in_process(a)), "data_loading");
  if (id == "dataloader_prefetch" || id == "dataloader_persistent_workers")
    return loader_lines(a, waiting_loaders(a, false), "data_loading");
  if (id == "dataloader_pin_memory") {
    std::vector<const DataLoaderSettings*> unpinned;
    for (const auto& d : a.loaders)
      if (d.pin_memory == 0 && d.iterators > 0) unpinned.push_back(&d);
    return loader_lines(a, unpinned, "pageable_copy");
  }
  auto it = a.lines.find(id);
  return it == a.lines.end() ? std::vector<SourceLine>{} : it->second;
}

}  // namespace crosstrain::analyze
