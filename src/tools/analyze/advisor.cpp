#include "tools/analyze/advisor.h"

#include <algorithm>
#include <vector>

#include "report/units.h"

namespace crosstrain::analyze {

namespace {

using report::format_count;
using report::format_percent;
using report::format_us;

constexpr double kNotApplicable = -1;

double steps(const TraceAnalysis& a) { return a.steps.empty() ? 1.0 : static_cast<double>(a.steps.size()); }
bool device_work(const TraceAnalysis& a) { return a.has_device && a.total.device_busy_us > 0 && a.total.duration_us > 0; }

std::string pct_of_step(const TraceAnalysis&, double v) { return format_percent(v) + " of step time"; }

// "<time> = <share> of step time over <n> step(s)".
std::string share_text(const TraceAnalysis& a, double us) {
  return format_us(us) + " = " + format_percent(a.share(us)) + " of step time over " +
         format_count(static_cast<int64_t>(a.steps.size())) + " step(s)";
}

// Kernel time summed over streams can pass the step's length when streams overlap: then it is said
// as a sum, beside the union (device busy), instead of as a share of the step.
std::string kernel_time_text(const TraceAnalysis& a) {
  if (a.kernel_us <= a.total.device_busy_us || a.total.device_busy_us <= 0) return "all kernels " + share_text(a, a.kernel_us);
  return "all kernels " + format_us(a.kernel_us) + " summed over streams; device busy " +
         share_text(a, a.total.device_busy_us);
}

std::string top_names(const std::vector<NamedTotal>& v, size_t n = 3) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < n; ++i)
    s += (i ? ", " : "") + v[i].name + " x" + format_count(v[i].count) + " (" + format_us(v[i].total_us) + ")";
  return s;
}

double median_other_steps(const TraceAnalysis& a) {
  std::vector<double> d;
  for (size_t i = 1; i < a.steps.size(); ++i) d.push_back(a.steps[i].duration_us);
  if (d.empty()) return 0;
  std::sort(d.begin(), d.end());
  return d[d.size() / 2];
}

double idle_launch_wait_us(const TraceAnalysis& a) {
  return a.idle_launch_latency.mean_us * static_cast<double>(a.idle_launch_latency.count);
}

constexpr double kOneTimeMinShare = 0.10;

// The longest runtime call (waits for the device left out), when the analysis judged it a one-time
// cost (see TraceAnalysis::LongestRuntimeCall).
bool one_time_call(const TraceAnalysis& a) {
  const auto& l = a.longest_runtime_call;
  return !l.name.empty() && l.one_time;
}

// The share of step time of that one-time call, when it is large enough to skew the other findings.
double one_time_share(const TraceAnalysis& a) {
  return one_time_call(a) && a.total.duration_us > 0 ? a.share(a.longest_runtime_call.duration_us) : 0;
}

// "the first cudaLaunchKernel", or "cudaLaunchKernel call #253": which call of its name it was.
std::string which_call(const TraceAnalysis& a) {
  const auto& l = a.longest_runtime_call;
  return l.first ? "the first " + l.name : l.name + " call #" + format_count(l.ordinal);
}

std::string one_time_note(const TraceAnalysis& a) {
  if (one_time_share(a) <= kOneTimeMinShare) return "";
  return "; " + which_call(a) + " of " + format_us(a.longest_runtime_call.duration_us) + " (" +
         format_percent(one_time_share(a)) + " of step time) is a one-time cost inside this (see one_time_call)";
}

// The runtime call name with the most wall-clock time in steps (calls on several threads at once
// counted once: a share of the step, never above it), less a one-time call of that name.
struct PaceSetter {
  const NamedTotal* call = nullptr;
  double us = 0;
};
PaceSetter top_runtime_call(const TraceAnalysis& a) {
  PaceSetter best;
  for (const auto& r : a.runtime_calls) {
    const double us = std::max(0.0, r.wall_us - r.one_time_us);
    if (us > best.us) best = {&r, us};
  }
  return best;
}

}  // namespace

namespace {

const std::vector<AdvisorRule>& trace_rules() {
  static const std::vector<AdvisorRule> rules = {
    // First: one call that takes most of the trace skews every other figure.
    {"one_time_call", "One runtime call takes a large share of the trace", kOneTimeMinShare,
     "> 10% of step time; no wait for the device; the first call of its name > 10x the median of the others, or "
     "any call >= 100x that median and most of its name's time",
     "This is a one-time cost, not the step's: with lazy module loading (CUDA_MODULE_LOADING=LAZY, the default "
     "since CUDA 11.7) the first launch of each kernel loads its module, whichever call of the trace that is, and "
     "libraries (cuBLAS, cuDNN, NCCL) set up their handles at their first call. Leave the first steps out of the profile (torch.profiler.schedule with "
     "wait/warmup steps) or set CUDA_MODULE_LOADING=EAGER to pay it at start-up; read the other findings of this "
     "trace with that call in mind.",
     [](const TraceAnalysis& a) { return one_time_call(a) && a.total.duration_us > 0 ? one_time_share(a) : kNotApplicable; },
     [](const TraceAnalysis& a, double v) {
       return which_call(a) + " took " + format_us(a.longest_runtime_call.duration_us) + " = " + format_percent(v) +
              " of step time";
     },
     [](const TraceAnalysis& a) {
       const auto& l = a.longest_runtime_call;
       std::string s = l.name + " x" + format_count(l.calls) + " in steps: " +
                       (l.first ? std::string("the first") : "call #" + format_count(l.ordinal)) + " took " +
                       format_us(l.duration_us) + " at +" + format_us(l.offset_in_step_us) + " into " + l.step;
       return s + ", the other " + format_count(l.calls - 1) + " median " + format_us(l.others_median_us) + " each, " +
              format_us(l.others_total_us) + " in all; " + share_text(a, l.duration_us);
     }},
    // When the allocator stalls the host, data loading and launches look slow because of it.
    {"allocator", "Device memory is allocated and freed inside the step", 0.05, "> 5% of step time",
     "Each step calls the driver's allocator, and frees (cudaFree, hipFree) wait for the whole device: keep "
     "PyTorch's caching allocator on (unset PYTORCH_NO_CUDA_MEMORY_CACHING / PYTORCH_NO_HIP_MEMORY_CACHING), "
     "do not call torch.cuda.empty_cache() in the loop, keep tensor shapes steady, and against fragmentation "
     "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm).",
     [](const TraceAnalysis& a) {
       return a.allocator_us > 0 && a.total.duration_us > 0 ? a.share(a.allocator_us) : kNotApplicable;
     },
     pct_of_step,
     [](const TraceAnalysis& a) {
       return "allocation calls " + top_names(a.allocator_calls) + "; host time " + share_text(a, a.allocator_us);
     }},
    // After the allocator, which names its own calls more precisely.
    {"runtime_call", "A runtime call takes a large share of the step", 0.10, "> 10% of step time (one-time calls left out)",
     "A runtime call sets the pace of the step: a synchronize or blocking copy (cudaStreamSynchronize, cudaMemcpy, "
     "aclrtSynchronizeStream) waits for the device (see host_sync: remove .item()/.cpu() from the step), allocation "
     "and free calls are the allocator's (see allocator), launch calls are the host's cost per kernel (fewer, larger "
     "kernels: torch.compile, CUDA graphs); any other call is worth a look on the timeline around it.",
     [](const TraceAnalysis& a) {
       const PaceSetter p = top_runtime_call(a);
       return p.call && a.total.duration_us > 0 ? a.share(p.us) : kNotApplicable;
     },
     [](const TraceAnalysis& a, double v) { return top_runtime_call(a).call->name + ": " + format_percent(v) + " of step time"; },
     [](const TraceAnalysis& a) {
       const PaceSetter p = top_runtime_call(a);
       std::string s = p.call->name + " x" + format_count(p.call->count) + " in steps, " + share_text(a, p.us);
       if (p.call->one_time_us > 0)
         s += " (without one call of " + format_us(p.call->one_time_us) + ", a one-time cost: " +
              format_us(p.call->wall_us) + " with it)";
       if (p.call->total_us > p.call->wall_us * 1.001)
         s += "; " + format_us(p.call->total_us) + " summed over threads, which ran it at the same time";
       return s + "; runtime calls by time: " + top_names(a.runtime_calls);
     }},
    {"data_loading", "Data loading stalls the step", 0.05, "> 5% of step time",
     "Raise DataLoader num_workers, set pin_memory=True and persistent_workers=True, prefetch, or move "
     "decoding/augmentation off the training process.",
     // With the script's DataLoaders known (crosstrain run), the dataloader_* rules judge instead.
     [](const TraceAnalysis& a) {
       return a.total.duration_us > 0 && a.loaders.empty() ? a.share(a.total.data_wait_us) : kNotApplicable;
     },
     pct_of_step,
     [](const TraceAnalysis& a) {
       std::string s = "data-loading spans (data_wait, enumerate(DataLoader)...): " + share_text(a, a.total.data_wait_us);
       if (a.allocator_in_data_loading_us > 0)
         s += "; " + format_us(a.allocator_in_data_loading_us) +
              " of it in memory allocation calls (see the allocator finding)";
       return s;
     }},
    {"dataloader_bound", "Steps bound by the DataLoader", 0.25, "> 25% of steps spend over half their time loading data",
     "The training loop waits for batches most of those steps: more DataLoader workers, cheaper transforms, "
     "caching decoded samples, or a faster storage path.",
     [](const TraceAnalysis& a) {
       if (a.steps.size() < 2 || a.steps.front().label == "trace") return kNotApplicable;
       return static_cast<double>(a.data_bound_steps) / steps(a);
     },
     [](const TraceAnalysis& a, double v) {
       return format_count(a.data_bound_steps) + " of " + format_count(static_cast<int64_t>(a.steps.size())) +
              " steps data-bound (" + format_percent(v) + ")";
     },
     [](const TraceAnalysis& a) { return "data-loading spans: " + share_text(a, a.total.data_wait_us); }},
    {"short_device_ops", "Many short device operations", 0.5, "> 50% of kernels under 10 us (>= 100 kernels/step)",
     "Fuse small operations (torch.compile, fused optimizers with foreach/fused=True, fused norms) or capture "
     "the step with CUDA graphs / NPU graph mode to cut per-kernel launch cost.",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || static_cast<double>(a.kernel_count) / steps(a) < 100) return kNotApplicable;
       return static_cast<double>(a.short_kernel_count) / static_cast<double>(a.kernel_count);
     },
     [](const TraceAnalysis& a, double v) {
       return format_percent(v) + " of " + format_count(a.kernel_count) + " kernels under 10 us";
     },
     [](const TraceAnalysis& a) {
       return format_count(a.short_kernel_count) + " kernels under 10 us of " + format_count(a.kernel_count) +
              "; " + kernel_time_text(a);
     }},
    {"host_sync", "Host synchronizations inside the step", 0, "> 0 per step",
     "Remove .item(), .cpu(), .tolist(), print(tensor) and explicit synchronize() calls from the step; "
     "accumulate metrics on the device and read them every N steps.",
     [](const TraceAnalysis& a) { return device_work(a) ? static_cast<double>(a.host_sync_count) / steps(a) : kNotApplicable; },
     [](const TraceAnalysis& a, double v) {
       std::string top = a.host_syncs.empty() ? "" : " (mostly " + a.host_syncs.front().name + ")";
       return report::format_fixed(v, 1) + " per step" + top;
     },
     [](const TraceAnalysis& a) { return top_names(a.host_syncs) + "; host time " + share_text(a, a.host_sync_us); }},
    {"device_idle", "Device idle during the step", 0.10, "> 10% of step time",
     "The device waits on the host: overlap data loading, avoid host syncs, make the host launch faster "
     "(torch.compile, CUDA graphs) or give the device more work per launch (larger batch).",
     [](const TraceAnalysis& a) { return device_work(a) ? 1.0 - a.share(a.total.device_busy_us) : kNotApplicable; },
     [](const TraceAnalysis& a, double v) {
       std::string s = format_percent(v) + " of step time idle";
       if (a.launches > 0)
         s += ", " + format_percent(static_cast<double>(a.launches_into_idle) / static_cast<double>(a.launches)) +
              " of launches found the device idle";
       return s;
     },
     [](const TraceAnalysis& a) {
       std::string s = "device busy " + share_text(a, a.total.device_busy_us) + "; " + format_count(a.idle_gap_count) +
                       " idle gaps >= " + format_us(a.idle_gap_min_us) + " totalling " + format_us(a.idle_gap_us);
       if (a.total.device_window_us > 0)
         s += "; idle " + format_percent(1.0 - a.total.device_busy_us / a.total.device_window_us) +
              " counted from each step's first device activity";
       return s + one_time_note(a);
     }},
    {"host_bound_launch", "Host-bound kernel launches", 0.5, "> 50% of launches into an idle device (>= 50 launches)",
     "The host issues work slower than the device runs it: CUDA graphs or torch.compile(mode=\"reduce-overhead\"), "
     "fewer and larger kernels, a larger batch.",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || a.launches < 50) return kNotApplicable;
       return static_cast<double>(a.launches_into_idle) / static_cast<double>(a.launches);
     },
     [](const TraceAnalysis&, double v) { return format_percent(v) + " of launches found the device idle"; },
     [](const TraceAnalysis& a) {
       return format_count(a.launches_into_idle) + " of " + format_count(a.launches) +
              " launches (runtime call -> device activity) started on an idle device" + one_time_note(a);
     }},
    {"launch_delay", "Launched work waits to start on an idle device", 0.05, "> 5% of step time",
     "Each launch leaves the device idle between the launch call and the start of its work: fewer, larger "
     "kernels (fusion, torch.compile), CUDA graphs / NPU graph mode, or an idle-free launch queue.",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || a.idle_launch_latency.count < 10) return kNotApplicable;
       return a.share(idle_launch_wait_us(a));
     },
     pct_of_step,
     [](const TraceAnalysis& a) {
       const auto& d = a.idle_launch_latency;
       return format_count(d.count) + " launches into an idle device waited median " + format_us(d.p50_us) + ", p95 " +
              format_us(d.p95_us) + " from the end of the launch call to the start of the work: " +
              share_text(a, idle_launch_wait_us(a));
     }},
    {"communication", "Communication takes a large share of the step", 0.10, "> 10% of step time",
     "Overlap gradients' all-reduce with backward (DDP bucket_cap_mb, gradient_as_bucket_view), use "
     "gradient accumulation (no_sync) to communicate less often, or compress gradients (bf16 hooks).",
     [](const TraceAnalysis& a) { return a.total.duration_us > 0 && a.total.comm_us > 0 ? a.share(a.total.comm_us) : kNotApplicable; },
     pct_of_step,
     [](const TraceAnalysis& a) {
       std::string top;
       for (size_t i = 0; i < a.collectives.size() && i < 3; ++i)
         top += (i ? ", " : "; ") + a.collectives[i].name + " x" + format_count(a.collectives[i].count);
       return "communication spans " + share_text(a, a.total.comm_us) + top;
     }},
    {"comm_overlap", "Communication poorly overlapped with compute", 0.5, "< 50% overlapped (comm > 1% of step)",
     "Start collectives earlier (smaller DDP buckets, async_op=True and wait later) so they run under "
     "backward kernels instead of after them.",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || a.total.comm_us <= 0.01 * a.total.duration_us) return kNotApplicable;
       return 1.0 - a.total.comm_overlapped_us / a.total.comm_us;  // measured: the exposed share
     },
     [](const TraceAnalysis&, double v) { return format_percent(1.0 - v) + " of communication overlapped with compute"; },
     [](const TraceAnalysis& a) {
       return "device collectives " + format_us(a.total.comm_us) + ", of which " + format_us(a.total.comm_overlapped_us) +
              " under compute kernels; exposed " + share_text(a, a.total.comm_us - a.total.comm_overlapped_us);
     }},
    {"fp32_matmul", "FP32 matmul/conv on a device with tensor cores", 0.5, "> 50% of matmul/conv time in fp32",
     "Train with automatic mixed precision (torch.autocast with bf16/fp16 plus GradScaler for fp16, or "
     "`crosstrain train --amp`), or allow TF32 (torch.backends.cuda.matmul.allow_tf32).",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || !a.tensor_cores || a.matmul_conv_us <= 0) return kNotApplicable;
       return a.matmul_conv_fp32_us / a.matmul_conv_us;
     },
     [](const TraceAnalysis&, double v) { return format_percent(v) + " of matmul/conv time in fp32"; },
     [](const TraceAnalysis& a) {
       return "matmul/conv operators with fp32 inputs launched " + format_us(a.matmul_conv_fp32_us) + " of " +
              format_us(a.matmul_conv_us) + " matmul/conv device time; " + share_text(a, a.matmul_conv_fp32_us);
     }},
    {"cpu_fallback", "Operators fell back to the CPU", 0.01, "> 1% of step time",
     "These compute operators launched no device work: check that their inputs are on the device, and "
     "for out-of-tree backends whether the operator is implemented (e.g. torch_npu's fallback list).",
     [](const TraceAnalysis& a) { return device_work(a) ? a.cpu_fallback_us / a.total.duration_us : kNotApplicable; },
     [](const TraceAnalysis& a, double v) {
       std::string names;
       for (size_t i = 0; i < a.cpu_fallback.size() && i < 3; ++i) names += (i ? ", " : " (") + a.cpu_fallback[i].name;
       return format_percent(v) + " of step time" + (names.empty() ? "" : names + ")");
     },
     [](const TraceAnalysis& a) { return top_names(a.cpu_fallback) + "; host self time " + share_text(a, a.cpu_fallback_us); }},
    {"small_batch", "Batch too small for the device", 0.5, "device busy < 50% with steps under 10 ms",
     "Each step is mostly fixed overhead: raise the batch size (scale the learning rate, or use gradient "
     "accumulation to keep the effective batch) until the device is busy most of the step.",
     [](const TraceAnalysis& a) {
       if (!device_work(a) || a.steps.empty() || a.mean_step_us() >= 10000) return kNotApplicable;
       // The rule fires when the *free* share exceeds the threshold, so report 1 - busy.
       return 1.0 - a.share(a.total.device_busy_us);
     },
     [](const TraceAnalysis& a, double v) {
       return "device busy " + format_percent(1.0 - v) + " of a " + format_us(a.mean_step_us()) + " step";
     },
     [](const TraceAnalysis& a) { return "device busy " + share_text(a, a.total.device_busy_us) + one_time_note(a); }},
    {"pageable_copy", "Copies between the device and pageable host memory", 0.01, "> 1% of step time",
     "A copy to or from pageable memory is staged and synchronous: use pin_memory=True in the DataLoader, "
     ".to(device, non_blocking=True) from pinned tensors, and keep results on the device instead of .cpu() "
     "every step.",
     [](const TraceAnalysis& a) { return device_work(a) && a.pageable_copy_us > 0 ? a.share(a.pageable_copy_us) : kNotApplicable; },
     pct_of_step,
     [](const TraceAnalysis& a) { return top_names(a.pageable_copies) + "; device time " + share_text(a, a.pageable_copy_us); }},
    {"warmup_step", "The first step is much slower than the rest", 2.0, "> 2x the median of the other steps (>= 3 steps)",
     "The first step pays for compilation, autotuning and allocation (torch.compile, cudnn.benchmark, "
     "online operator compilation on NPUs, caching allocator growth): leave warm-up steps out of "
     "measurements (profiler schedule warmup), and on Ascend prefer binary kernels "
     "(torch.npu.set_compile_mode(jit_compile=False)).",
     [](const TraceAnalysis& a) {
       double m = median_other_steps(a);
       if (a.steps.size() < 3 || a.steps.front().label == "trace" || m <= 0) return kNotApplicable;
       return a.steps.front().duration_us / m;
     },
     [](const TraceAnalysis&, double v) { return report::format_fixed(v, 1) + "x the median step"; },
     [](const TraceAnalysis& a) {
       std::string s = a.steps.front().label + " took " + format_us(a.steps.front().duration_us) +
                       ", the median of the other " + format_count(static_cast<int64_t>(a.steps.size() - 1)) +
                       " steps " + format_us(median_other_steps(a));
       if (a.online_compile_us > 0) s += "; online operator compilation in the trace: " + format_us(a.online_compile_us);
       return s + one_time_note(a);
     }},
    {"online_compile", "Operators compiled online during the step", 0.01, "> 1% of step time",
     "The NPU compiles operators at run time (aclopCompileAndExecute): use the prebuilt binary kernels "
     "(torch.npu.set_compile_mode(jit_compile=False)), keep input shapes fixed (pad or bucket), and "
     "keep compilation out of measured steps.",
     [](const TraceAnalysis& a) { return a.online_compile_us > 0 && a.total.duration_us > 0 ? a.share(a.online_compile_us) : kNotApplicable; },
     pct_of_step,
     [](const TraceAnalysis& a) { return "compile calls by operator: " + top_names(a.online_compile) + "; " + share_text(a, a.online_compile_us); }},
    {"ai_cpu_fallback", "Operators ran on the NPU's AI CPU", 0.01, "> 1% of step time",
     "These tasks ran on the AI CPU instead of an AI Core (no AI Core kernel for the op, dtype or shape): "
     "change the dtype (int64 inputs often fall back), replace the op, or move it out of the step.",
     [](const TraceAnalysis& a) { return a.ai_cpu_us > 0 && a.total.duration_us > 0 ? a.share(a.ai_cpu_us) : kNotApplicable; },
     pct_of_step,
     [](const TraceAnalysis& a) { return "AI_CPU tasks: " + top_names(a.ai_cpu_tasks) + "; " + share_text(a, a.ai_cpu_us); }},
  };
  return rules;
}

}  // namespace

const std::vector<AdvisorRule>& advisor_rules() {
  static const std::vector<AdvisorRule> rules = [] {
    std::vector<AdvisorRule> all = trace_rules();
    all.insert(all.end(), script_rules().begin(), script_rules().end());
    return all;
  }();
  return rules;
}

std::vector<Finding> run_advisor(const TraceAnalysis& a) {
  std::vector<Finding> out;
  for (const auto& r : advisor_rules()) {
    double v = r.measure(a);
    if (v < 0) continue;
    // host_sync fires on any sync; the others on strictly exceeding their threshold.
    if (!(v > r.threshold)) continue;
    out.push_back({r.id, r.title, r.describe(a, v), r.threshold_text, v, r.suggestion, r.evidence(a), rule_sources(a, r.id)});
  }
  return out;
}

}  // namespace crosstrain::analyze
