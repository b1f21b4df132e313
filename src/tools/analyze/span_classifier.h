#pragma once
// Decides what every span of a freshly read Trace is (Span::kind) and refines Trace::format.
//
// Three sources, strongest first:
// 1. The category, case-insensitively, for every generation Kineto has written: torch >= 1.11
//    ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "cuda_runtime", "privateuse1_runtime",
//    "mtia_runtime" ...) and torch 1.8-1.10 ("Operator", "Kernel", "Runtime", "Memcpy", "Memset",
//    "Python", "DataLoader"). Any category containing "kernel", "memcpy", "memset", "runtime" or
//    "driver" is read as that kind, whatever vendor prefix it carries.
// 2. Structure, for categories no table knows: a span that shares a correlation id with a host
//    runtime call, or that a flow from a host thread points at, is device activity, and so is
//    every span of a process that holds such spans. This is how a device type nobody listed
//    (MTIA, an out-of-tree PrivateUse1 backend) is still seen as a device.
// 3. Process names, for category-less formats: the legacy autograd export ("CUDA functions") and
//    the Ascend PyTorch Profiler ("Ascend Hardware" tasks, "CANN" calls, "HCCL"/"Communication"
//    collectives), where a task's "Task Type" says what it is first (op_names.h, TaskClass): an
//    operator's kernel, a copy, one of HCCL's tasks ("Notify Wait", "SDMA" ...: communication), or
//    a stream waiting on an event (not work).
#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

void classify_spans(Trace& trace);

}  // namespace crosstrain::analyze
