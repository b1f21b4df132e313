#pragma once
// How spans relate: the host call tree (per thread, by time containment) and the link from each
// device activity to the host call that launched it (Kineto correlation ids first, then flow
// events such as ac2g / cpu_to_cuda / Ascend HostToDevice), and from each device activity to its
// operator: a flow that starts on an operator itself (Ascend's async_npu, torch op -> NPU task)
// decides; otherwise the innermost operator around the launching call. Internal to the analysis.
//
// Cost: O(n log n) in the spans and flows whatever the nesting depth. Finding the span around a
// point in time walks up the call tree by jump pointers (a skew-binary ladder, one per span), so
// a flow into a call stack 100,000 deep costs a few dozen steps, not 100,000.
#include <cstdint>
#include <vector>

#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

constexpr int32_t kNoSpan = -1;

struct SpanLinks {
  std::vector<int32_t> parent;        // enclosing host-tree span on the same thread, or kNoSpan
  std::vector<int32_t> launcher;      // for device spans: the host span that launched it
  std::vector<int32_t> device_op;     // for device spans: the operator it is charged to (kNoSpan if none)
  std::vector<int32_t> op_of;         // innermost CpuOp at or above a host span (kNoSpan if none)
  std::vector<double> child_us;       // summed duration of direct host-tree children
  std::vector<uint32_t> child_count;  // number of direct host-tree children
  // For a runtime call recorded in a process of its own (Ascend's CANN track, which shares the
  // thread id of the host thread that made it): the innermost host span around it on that thread.
  // kNoSpan otherwise. The call's place in its caller's tree, for nesting rules across processes.
  std::vector<int32_t> caller;
  // Host-tree spans, parents before children (each thread's spans in start order).
  std::vector<int32_t> host_order;
  std::vector<int32_t> device_order;  // device spans sorted by start
  // For device spans: the earliest device activity of its launching runtime call. One call can
  // start many (cudaGraphLaunch / hipGraphLaunch: every kernel of the graph carries the call's
  // correlation id; an Ascend aclnn call: several tasks): launch counts and launch delays take
  // the call once, at the start of its first work.
  std::vector<char> first_of_launch;
  // For host-tree spans: 1 when a runtime call runs under it (its children, or a call in a process
  // of its own that it made). Empty when the trace records no runtime call: then nothing is known.
  // What tells loss.item() (a copy from the device under it) from a read of a host tensor.
  std::vector<char> over_runtime_call;
  bool over_runtime(size_t i) const { return over_runtime_call.empty() || over_runtime_call[i]; }
};

SpanLinks link_spans(const Trace& trace);

}  // namespace crosstrain::analyze
