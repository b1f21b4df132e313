#pragma once
// What names in a trace mean: which operator names are communication, host syncs or data loading,
// which copies touch pageable host memory, which runtime calls compile operators online, and the
// operator-type buckets of the summary. Matching is by documented substrings and whole words
// (docs/ANALYZE.md), case-insensitive.
//
// Cost: every test looks at no more than the first kMaxClassifiedNameBytes of a name, so a
// pathological 200 MB name costs what a 4 KiB one does; real operator and kernel names are far
// shorter (the longest templated CUDA kernel names run to ~2 KiB).
#include <cstddef>
#include <string_view>
#include <vector>

#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

constexpr size_t kMaxClassifiedNameBytes = 4096;

enum class OpType { Conv, Matmul, Norm, Elementwise, Pooling, Copy, Communication, Optimizer, Other };
constexpr int kOpTypeCount = 9;
const char* op_type_name(OpType t);

// Buckets an operator or kernel name ("aten::addmm", "volta_sgemm_128x64_nn", "aclnnMm").
OpType op_type_of(std::string_view name);

bool is_communication_name(std::string_view name);   // NCCL/HCCL/gloo collectives, c10d ops
// Calls that block the host until the device catches up: aten::item, aten::_local_scalar_dense,
// *synchronize* (cudaStreamSynchronize, aclrtSynchronizeStream ...), and the device frees that
// wait for all work first (cudaFree, hipFree, cudaFreeHost ...; not cudaFreeAsync). cudaEventQuery
// and cudaStreamQuery only poll and return at once: not syncs.
bool is_host_sync_name(std::string_view name);
// The syncs that read a tensor's value to the host (aten::item, aten::_local_scalar_dense): they
// wait for the device only when the tensor is on it, which the runtime copy under them shows.
bool is_value_read_name(std::string_view name);
// Runtime calls that allocate or release device or pinned host memory (cudaMalloc, cudaFree,
// hipMalloc, hipFree, cudaHostAlloc, aclrtMalloc, aclrtFree ...): with PyTorch's caching
// allocator working they are rare; every step paying for them means it is off or thrashing.
bool is_allocator_call_name(std::string_view name);
// Runtime calls that copy synchronously (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD_v2, hipMemcpy,
// aclrtMemcpy; not the *Async ones): the host waits for the copy, and on the default stream for the
// work queued before it, so their length says little about the call's own cost.
bool is_blocking_copy_call_name(std::string_view name);
// Runtime calls that give the device work: kernel and graph launches (cudaLaunchKernel,
// cuLaunchKernel, cudaGraphLaunch, hipLaunchKernel, aclrtLaunchKernel ...), copies and fills
// (cudaMemcpyAsync, hipMemsetAsync ...) and Ascend's operator calls (aclnn*, aclop*). A trace that
// has them and no device activity was recorded without the device's activities.
bool is_launch_call_name(std::string_view name);
// Operators that are the identity in some modes and then launch nothing on purpose: dropout in
// eval mode or with p=0 (aten::dropout, feature_dropout, alpha_dropout ...).
bool is_mode_identity_name(std::string_view name);

// What an Ascend NPU task is, from its "Task Type", whichever spelling the profiler used: the
// core names of kernel_details.csv (AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC ...), the host task
// types of level 0 (KERNEL_AICORE, KERNEL_AIVEC ...), the device types of FFTS+ tasks ("Notify
// Wait", "SDMA", "Write Value" ...) or the SQE types ("NOTIFY_WAIT_SQE"). Compared case-blind,
// with spaces read as underscores and a "_SQE" suffix dropped.
enum class TaskClass : uint8_t {
  Unknown,      // "Other", "N/A", a type no table knows: decided by the task's name
  Compute,      // an operator's kernel on an AI Core, vector core, AI CPU or MIX core
  Copy,         // MEMCPY_ASYNC
  Collective,   // HCCL's tasks: notify record/wait, write value, SDMA/RDMA transfers, inline reduce
  StreamSync,   // a stream waiting for an event of another stream (EVENT_*, STREAM_WAIT): not work
};
TaskClass ascend_task_class(std::string_view task_type);
bool is_data_loading_name(std::string_view name);    // data_wait, DataLoader iterators
bool is_profiler_step_name(std::string_view name);   // "ProfilerStep#N"
// Autograd's bookkeeping around the real operators: "AddBackward0" (torch 1.8-1.9: "AddmmBackward",
// no digit), "autograd::engine::evaluate_function: AddBackward0", "torch::autograd::AccumulateGrad".
bool is_autograd_wrapper_name(std::string_view name);
// Operators compiled at run time (Ascend aclopCompileAndExecute, aclopCompile ...).
bool is_online_compile_name(std::string_view name);
// A device copy to or from pageable host memory: "Memcpy DtoH (Device -> Pageable)".
bool is_pageable_copy_name(std::string_view name);
bool is_dma_name(std::string_view name);  // a device DMA transfer ("dma_request"): a copy
// "float", "double" inputs, no half types: a matmul/conv that runs in fp32.
bool is_fp32_input(std::string_view dtypes_json);

// Everything the analysis asks about a name, computed once per interned string: a trace repeats
// the same few thousand names millions of times.
struct NameInfo {
  bool communication = false;
  bool host_sync = false;
  bool value_read = false;       // see is_value_read_name
  bool data_loading = false;
  bool profiler_step = false;
  bool autograd_wrapper = false;
  bool online_compile = false;
  bool pageable_copy = false;
  bool memcpy = false;           // device activity named like a copy ("Memcpy HtoD", Ascend MEMCPY tasks)
  bool memset = false;
  bool allocator_call = false;
  bool launch_call = false;      // see is_launch_call_name
  bool blocking_copy = false;    // see is_blocking_copy_call_name
  bool mode_identity = false;
  bool ai_cpu = false;           // as an Ascend "Task Type": AI_CPU, KERNEL_AICPU ...
  TaskClass task_class = TaskClass::Unknown;  // as an Ascend "Task Type"
  bool fp32_input = false;       // when the string is an "Input type" list: see is_fp32_input
  OpType type = OpType::Other;
};

class NameInfoCache {
 public:
  explicit NameInfoCache(const StringTable& strings) : strings_(strings) {}
  const NameInfo& operator()(uint32_t id);

 private:
  const StringTable& strings_;
  std::vector<NameInfo> info_;
  std::vector<char> known_;
};

}  // namespace crosstrain::analyze
