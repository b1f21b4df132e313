#pragma once
// Each step's time by phase of the training loop, and the device's idle time by what the host was
// doing meanwhile (internal to the analysis). Phases are found by what torch itself records, and by
// the user scopes crosstrain's trainer opens around its phases (`train`/`bench --profile`, both
// recorders; tools/train/trainer.cpp, phase_name):
//   data wait   DataLoader spans (torch's enumerate(DataLoader)#...__next__, the agent's
//               DataLoader.__iter__), the trainer's data_wait
//   to device   host-to-device copies ("Memcpy HtoD ..."): the copy operator that made one, outermost
//               (aten::to, _to_copy, copy_: x.to(device)), or only the runtime call that launched it
//               when it was made inside another operator (cuDNN's parameter copy in a convolution)
//   host sync   sync calls (aten::item, *synchronize*) outside the phases below
//   forward     nn.Module calls of the Python stack (with_stack and with_modules), the trainer's forward
//   backward    the autograd engine's operators (autograd::engine::evaluate_function: ...; in
//               torch 1.8 the bare nodes, AddmmBackward, torch::autograd::AccumulateGrad) and
//               Python's entry into it (Tensor.backward, torch.autograd.backward, run_backward), the
//               trainer's backward
//   optimizer   torch.optim's spans (Optimizer.step#..., Optimizer.zero_grad#...; operators in
//               torch 1.8's traces), the trainer's
//               optimizer_step
//   other       anything else: Python between the phases, logging, the profiler's own step, the
//               trainer's grad_sync, unscale_clip and scaler_update (as GradScaler's unscale_ and
//               update are in a Python loop)
// Also each step's host-to-device copy time on the device.
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/span_links.h"
#include "tools/analyze/step_timeline.h"

namespace crosstrain::analyze {

void compute_step_phases(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                         NameInfoCache& names, TraceAnalysis& out);

// Whether host spans starting inside [start, end) do backward or optimizer work (by their names, as
// the phases above find them).
bool holds_update(const Trace& t, NameInfoCache& names, double start, double end);

// "Memcpy HtoD (Pageable -> Device)", "Memcpy H2D", "Memcpy Host -> Device": a copy to the device.
bool is_host_to_device_copy_name(const std::string& name);

}  // namespace crosstrain::analyze
