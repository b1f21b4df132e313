#include "tools/analyze/advisor.h"

#include "report/units.h"

namespace crosstrain::analyze {

namespace {

using report::format_percent;
using report::format_us;

constexpr double kNotApplicable = -1;

double steps(const TraceAnalysis& a) { return a.steps.empty() ? 1.0 : static_cast<double>(a.steps.size()); }

std::string pct_of_step(const TraceAnalysis&, double v) { return format_percent(v) + " of step time"; }

const std::vector<AdvisorRule> kRules = {
    {"data_loading", "Data loading stalls the step", 0.05, "> 5% of step time",
     "Raise DataLoader num_workers, set pin_memory=True and persistent_workers=True, prefetch, or move "
     "decoding/augmentation off the training process.",
     [](const TraceAnalysis& a) { return a.total.duration_us > 0 ? a.share(a.total.data_wait_us) : kNotApplicable; },
     pct_of_step},
    {"short_device_ops", "Many short device operations", 0.5, "> 50% of kernels under 10 us (>= 100 kernels/step)",
     "Fuse small operations (torch.compile, fused optimizers with foreach/fused=True, fused norms) or capture "
     "the step with CUDA graphs / NPU graph mode to cut per-kernel launch cost.",
     [](const TraceAnalysis& a) {
       if (!a.has_device || static_cast<double>(a.kernel_count) / steps(a) < 100) return kNotApplicable;
       return static_cast<double>(a.short_kernel_count) / static_cast<double>(a.kernel_count);
     },
     [](const TraceAnalysis& a, double v) {
       return format_percent(v) + " of " + report::format_count(a.kernel_count) + " kernels under 10 us";
     }},
    {"host_sync", "Host synchronizations inside the step", 0, "> 0 per step",
     "Remove .item(), .cpu(), .tolist(), print(tensor) and explicit synchronize() calls from the step; "
     "accumulate metrics on the device and read them every N steps.",
     [](const TraceAnalysis& a) { return a.has_device ? static_cast<double>(a.host_sync_count) / steps(a) : kNotApplicable; },
     [](const TraceAnalysis& a, double v) {
       std::string top = a.host_syncs.empty() ? "" : " (mostly " + a.host_syncs.front().name + ")";
       return report::format_fixed(v, 1) + " per step" + top;
     }},
    {"device_idle", "Device idle during the step", 0.10, "> 10% of step time",
     "The device waits on the host: overlap data loading, avoid host syncs, make the host launch faster "
     "(torch.compile, CUDA graphs) or give the device more work per launch (larger batch).",
     [](const TraceAnalysis& a) {
       if (!a.has_device || a.total.duration_us <= 0) return kNotApplicable;
       return 1.0 - a.share(a.total.device_busy_us);
     },
     [](const TraceAnalysis& a, double v) {
       std::string s = format_percent(v) + " of step time idle";
       if (a.launches > 0)
         s += ", " + format_percent(static_cast<double>(a.launches_into_idle) / static_cast<double>(a.launches)) +
              " of launches found the device idle";
       return s;
     }},
    {"host_bound_launch", "Host-bound kernel launches", 0.5, "> 50% of launches into an idle device (>= 50 launches)",
     "The host issues work slower than the device runs it: CUDA graphs or torch.compile(mode=\"reduce-overhead\"), "
     "fewer and larger kernels, a larger batch.",
     [](const TraceAnalysis& a) {
       if (a.launches < 50) return kNotApplicable;
       return static_cast<double>(a.launches_into_idle) / static_cast<double>(a.launches);
     },
     [](const TraceAnalysis&, double v) { return format_percent(v) + " of launches found the device idle"; }},
    {"communication", "Communication takes a large share of the step", 0.10, "> 10% of step time",
     "Overlap gradients' all-reduce with backward (DDP bucket_cap_mb, gradient_as_bucket_view), use "
     "gradient accumulation (no_sync) to communicate less often, or compress gradients (bf16 hooks).",
     [](const TraceAnalysis& a) { return a.total.duration_us > 0 ? a.share(a.total.comm_us) : kNotApplicable; },
     pct_of_step},
    {"comm_overlap", "Communication poorly overlapped with compute", 0.5, "< 50% overlapped (comm > 1% of step)",
     "Start collectives earlier (smaller DDP buckets, async_op=True and wait later) so they run under "
     "backward kernels instead of after them.",
     [](const TraceAnalysis& a) {
       if (a.total.comm_us <= 0.01 * a.total.duration_us) return kNotApplicable;
       return 1.0 - a.total.comm_overlapped_us / a.total.comm_us;  // measured: the exposed share
     },
     [](const TraceAnalysis& a, double v) {
       return format_percent(1.0 - v) + " of communication overlapped with compute";
     }},
    {"fp32_matmul", "FP32 matmul/conv on a device with tensor cores", 0.5, "> 50% of matmul/conv time in fp32",
     "Train with automatic mixed precision (torch.autocast with bf16/fp16 plus GradScaler for fp16, or "
     "`crosstrain train --amp`), or allow TF32 (torch.backends.cuda.matmul.allow_tf32).",
     [](const TraceAnalysis& a) {
       if (!a.tensor_cores || a.matmul_conv_us <= 0) return kNotApplicable;
       return a.matmul_conv_fp32_us / a.matmul_conv_us;
     },
     [](const TraceAnalysis&, double v) { return format_percent(v) + " of matmul/conv time in fp32"; }},
    {"cpu_fallback", "Operators fell back to the CPU", 0.01, "> 1% of step time",
     "These compute operators launched no device work: check that their inputs are on the device, and "
     "for out-of-tree backends whether the operator is implemented (e.g. torch_npu's fallback list).",
     [](const TraceAnalysis& a) {
       if (!a.has_device || a.total.duration_us <= 0) return kNotApplicable;
       return a.cpu_fallback_us / a.total.duration_us;
     },
     [](const TraceAnalysis& a, double v) {
       std::string names;
       for (size_t i = 0; i < a.cpu_fallback.size() && i < 3; ++i) names += (i ? ", " : " (") + a.cpu_fallback[i].name;
       return format_percent(v) + " of step time" + (names.empty() ? "" : names + ")");
     }},
    {"small_batch", "Batch too small for the device", 0.5, "device busy < 50% with steps under 10 ms",
     "Each step is mostly fixed overhead: raise the batch size (scale the learning rate, or use gradient "
     "accumulation to keep the effective batch) until the device is busy most of the step.",
     [](const TraceAnalysis& a) {
       if (!a.has_device || a.steps.empty() || a.mean_step_us() >= 10000) return kNotApplicable;
       // The rule fires when the *free* share exceeds the threshold, so report 1 - busy.
       return 1.0 - a.share(a.total.device_busy_us);
     },
     [](const TraceAnalysis& a, double v) {
       return "device busy " + format_percent(1.0 - v) + " of a " + format_us(a.mean_step_us()) + " step";
     }},
};

}  // namespace

const std::vector<AdvisorRule>& advisor_rules() { return kRules; }

std::vector<Finding> run_advisor(const TraceAnalysis& a) {
  std::vector<Finding> out;
  for (const auto& r : kRules) {
    double v = r.measure(a);
    if (v < 0) continue;
    // host_sync fires on any sync; the others on strictly exceeding their threshold.
    if (!(v > r.threshold)) continue;
    out.push_back({r.id, r.title, r.describe(a, v), r.threshold_text, v, r.suggestion});
  }
  return out;
}

}  // namespace crosstrain::analyze
