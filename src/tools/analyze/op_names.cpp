#include "tools/analyze/op_names.h"

#include <algorithm>
#include <string>
#include <vector>

namespace crosstrain::analyze {

namespace {

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string_view capped(std::string_view s) { return s.substr(0, kMaxClassifiedNameBytes); }

// ASCII case-insensitive substring search, no allocation (it runs once per distinct name).
bool contains_ci(std::string_view hay, std::string_view needle) {
  hay = capped(hay);
  if (needle.empty()) return true;
  if (needle.size() > hay.size()) return false;
  const char first = lower(needle[0]);
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (lower(hay[i]) != first) continue;
    size_t k = 1;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool any_ci(std::string_view name, std::initializer_list<std::string_view> needles) {
  for (auto n : needles)
    if (contains_ci(name, n)) return true;
  return false;
}

// Whole-word match: the name split at every character that is not a letter or digit
// ("aten::log_softmax" -> aten, log, softmax), each word compared case-insensitively. So "exp"
// matches aten::exp but not aten::expand.
bool any_word_ci(std::string_view name, std::initializer_list<std::string_view> words) {
  name = capped(name);
  size_t i = 0;
  while (i < name.size()) {
    while (i < name.size() && !is_word_char(name[i])) ++i;
    size_t j = i;
    while (j < name.size() && is_word_char(name[j])) ++j;
    std::string_view w = name.substr(i, j - i);
    for (auto n : words) {
      if (n.size() != w.size()) continue;
      size_t k = 0;
      while (k < n.size() && lower(w[k]) == n[k]) ++k;
      if (k == n.size()) return true;
    }
    i = j;
  }
  return false;
}

}  // namespace

const char* op_type_name(OpType t) {
  static const char* names[] = {"conv", "matmul", "norm", "elementwise", "pooling",
                                "copy", "communication", "optimizer", "other"};
  return names[static_cast<int>(t)];
}

// No bare "broadcast": aten::broadcast_to / broadcast_tensors and the elementwise kernels of
// broadcasting binary ops (type_specialized_broadcast_kernel_launcher) are compute; the broadcast
// collectives carry a backend name (c10d::broadcast_, nccl:broadcast, ncclKernel_Broadcast_*,
// gloo:broadcast, hcom_broadcast_).
bool is_communication_name(std::string_view n) {
  return any_ci(n, {"nccl", "hccl", "hcom", "gloo", "c10d::", "allreduce", "all_reduce", "allgather", "all_gather",
                    "reduce_scatter", "reducescatter", "alltoall", "all_to_all", "all2all", "record_param_comms",
                    "sendrecv"});
}

namespace {

// CUDA's and HIP's documentation: these frees (and cudaFreeArray) synchronize the device before
// they return; the stream-ordered ones (cudaFreeAsync, hipFreeAsync) do not.
bool is_synchronizing_free_name(std::string_view n) {
  for (std::string_view f : {"cudaFree", "cudaFreeHost", "cudaFreeArray", "cudaFreeMipmappedArray", "cuMemFree",
                             "cuMemFree_v2", "cuMemFreeHost", "hipFree", "hipFreeHost", "hipHostFree",
                             "hipFreeArray"})
    if (n == f) return true;
  return false;
}

}  // namespace

bool is_value_read_name(std::string_view n) { return n == "aten::item" || n == "aten::_local_scalar_dense"; }

bool is_host_sync_name(std::string_view n) {
  return is_value_read_name(n) || contains_ci(n, "synchronize") || is_synchronizing_free_name(n);
}

bool is_allocator_call_name(std::string_view n) {
  // The Ascend profiler prefixes its CANN calls ("AscendCL@aclrtMalloc").
  if (starts_with(n, "AscendCL@")) n.remove_prefix(9);
  for (std::string_view p : {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaHostRegister", "cudaHostUnregister",
                             "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemCreate", "cuMemRelease",
                             "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree", "hipExtMallocWithFlags",
                             "aclrtMalloc", "aclrtFree"})
    if (starts_with(n, p)) return !contains_ci(n, "async");  // stream-ordered calls return at once
  return false;
}

bool is_launch_call_name(std::string_view n) {
  if (starts_with(n, "AscendCL@")) n.remove_prefix(9);
  if (starts_with(n, "aclnn") || starts_with(n, "aclop")) return true;  // an Ascend operator's tasks
  for (std::string_view p : {"cuda", "cu", "hip", "aclrt"})
    if (starts_with(n, p)) {
      const std::string_view rest = n.substr(p.size());
      return contains_ci(rest, "launch") || starts_with(rest, "Memcpy") || starts_with(rest, "Memset");
    }
  return false;
}

bool is_blocking_copy_call_name(std::string_view n) {
  if (starts_with(n, "AscendCL@")) n.remove_prefix(9);
  for (std::string_view p : {"cuda", "cu", "hip", "aclrt"})
    if (starts_with(n, p)) return starts_with(n.substr(p.size()), "Memcpy") && !contains_ci(n, "async");
  return false;
}

bool is_mode_identity_name(std::string_view n) {
  for (std::string_view d : {"aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::feature_dropout_",
                             "aten::alpha_dropout", "aten::alpha_dropout_", "aten::feature_alpha_dropout",
                             "aten::feature_alpha_dropout_"})
    if (n == d) return true;
  return false;
}

TaskClass ascend_task_class(std::string_view raw) {
  if (raw.empty() || raw.size() > 64) return TaskClass::Unknown;
  std::string t;
  for (char c : raw) t += c == ' ' || c == '-' ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  if (ends_with(t, "_SQE")) t.resize(t.size() - 4);
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names)
      if (t == n) return true;
    return false;
  };
  auto begins = [&](std::initializer_list<std::string_view> prefixes) {
    for (auto p : prefixes)
      if (starts_with(t, p)) return true;
    return false;
  };
  if (begins({"EVENT_", "CAPTURE_"}) || is({"STREAM_WAIT", "WAIT", "PLACE_HOLDER", "PROFILING_ENABLE",
                                            "PROFILING_DISABLE"}))
    return TaskClass::StreamSync;
  if (begins({"NOTIFY_", "WRITE_VALUE", "SDMA", "RDMA", "REDUCE_", "HCCL", "HCOM", "ROCCE"})) return TaskClass::Collective;
  if (t.find("MEMCPY") != std::string::npos) return TaskClass::Copy;
  if (begins({"AI_CORE", "AI_VECTOR", "AI_CPU", "AICPU", "AICORE", "AIV", "AIC", "MIX_", "KERNEL_", "FFTS_PLUS", "FUSION",
              "DSA"}))
    return TaskClass::Compute;
  return TaskClass::Unknown;
}

bool is_data_loading_name(std::string_view n) { return n == "data_wait" || contains_ci(n, "dataloader"); }

bool is_profiler_step_name(std::string_view n) { return starts_with(n, "ProfilerStep#"); }

bool is_autograd_wrapper_name(std::string_view n) {
  if (contains_ci(n, "evaluate_function:") || contains_ci(n, "autograd::")) return true;
  // "<Op>Backward[<digits>]": the autograd node names torch gives its backward functions, with a
  // version digit in recent torch ("AddmmBackward0") and mostly without one in torch 1.8-1.9
  // ("AddmmBackward", "CudnnConvolutionBackward"; "ReluBackward1" had one; a Python autograd.Function's
  // node is its class name and "Backward"). A node name is one identifier: no namespace, no spaces,
  // no call syntax ("aten::convolution_backward" is an operator).
  n = capped(n);
  size_t e = n.size();
  while (e > 0 && n[e - 1] >= '0' && n[e - 1] <= '9') --e;
  constexpr std::string_view kNode = "Backward";
  if (e <= kNode.size() || !ends_with(n.substr(0, e), kNode)) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return is_word_char(c) || c == '_'; });
}

bool is_online_compile_name(std::string_view n) { return contains_ci(n, "aclopCompile"); }

// A device's DMA transfer named as such (MTIA's "dma_request" events, with a direction and a size in
// their args): a copy, not a kernel.
bool is_dma_name(std::string_view n) {
  return n.size() >= 4 && (n.substr(0, 4) == "dma_" || n.substr(0, 4) == "DMA_" || n.substr(0, 4) == "Dma_");
}

bool is_pageable_copy_name(std::string_view n) { return contains_ci(n, "memcpy") && contains_ci(n, "pageable"); }

bool is_fp32_input(std::string_view dtypes) {
  dtypes = capped(dtypes);
  bool fp32 = dtypes.find("\"float\"") != std::string_view::npos || dtypes.find("\"double\"") != std::string_view::npos;
  bool half = contains_ci(dtypes, "Half") || contains_ci(dtypes, "BFloat16") || contains_ci(dtypes, "Float8");
  return fp32 && !half;
}

namespace {

inline bool is_ident_char(char c) { return is_word_char(c) || c == '_'; }

// "ns::op[.overload]" with one plain namespace (aten::mm, fbgemm::permute_2D_sparse_data,
// quantized::linear): the operator's own name, since the namespace says nothing of what it
// computes (fbgemm is not a GEMM, fb:: is not a convolution). Other names (kernels, templates,
// Ascend's, autograd's) are typed whole.
std::string_view op_base(std::string_view n) {
  const size_t sep = n.find("::");
  if (sep == std::string_view::npos || sep == 0 || n.find("::", sep + 2) != std::string_view::npos) return n;
  for (size_t i = 0; i < n.size(); ++i)
    if (i != sep && i != sep + 1 && !is_ident_char(n[i]) && n[i] != '.') return n;
  return n.substr(sep + 2);
}

// `stem` (lower case) where the next character is not a lower-case letter: a word of its own or
// the end of a CamelCase one (conv2d, Conv2D, ConvTranspose, _conv_, LayerNorm, RMSNorm,
// batch_norm), not the start of another word (convex, convert, normal_).
bool names_stem(std::string_view n, std::string_view stem) {
  n = capped(n);
  for (size_t i = 0; i + stem.size() <= n.size(); ++i) {
    size_t k = 0;
    while (k < stem.size() && lower(n[i + k]) == stem[k]) ++k;
    if (k < stem.size()) continue;
    const size_t next = i + stem.size();
    if (next == n.size() || !(n[next] >= 'a' && n[next] <= 'z')) return true;
  }
  return false;
}

bool names_conv(std::string_view n) {
  return names_stem(n, "conv") || any_ci(n, {"convolution", "convolve", "implicit_gemm", "winograd", "dgrad", "wgrad"});
}

bool names_norm(std::string_view n) {
  return names_stem(n, "norm") || any_ci(n, {"normalization", "bn_fw", "bn_bw"});
}

// "gemm" in a kernel or operator name, but not fbgemm's (its embedding and sparse kernels).
bool names_gemm(std::string_view n) {
  n = capped(n);
  for (size_t at = 0; at + 4 <= n.size(); ++at) {
    if (!contains_ci(n.substr(at, 4), "gemm")) continue;
    if (at >= 2 && lower(n[at - 2]) == 'f' && lower(n[at - 1]) == 'b') continue;
    return true;
  }
  return false;
}

}  // namespace

OpType op_type_of(std::string_view name) {
  if (is_communication_name(name)) return OpType::Communication;
  if (is_autograd_wrapper_name(name)) return OpType::Other;
  const std::string_view n = op_base(name);
  if (any_ci(n, {"optimizer", "_foreach_", "adam", "sgd", "lamb", "fused_sgd"})) return OpType::Optimizer;
  if (names_conv(n)) return OpType::Conv;
  if (names_norm(n)) return OpType::Norm;
  if (any_ci(n, {"pool"})) return OpType::Pooling;
  // aclnnMm / aclnnBatchMatMul / MatMulV2 are Ascend's; "mm" as a whole word is aten::mm's base.
  if (names_gemm(n) ||
      any_ci(n, {"addmm", "bmm", "matmul", "linear", "einsum", "cutlass", "cublas", "attention", "aclnnMm"}) ||
      any_word_ci(n, {"mm"}))
    return OpType::Matmul;
  // resolve_neg / resolve_conj materialise a lazily negated or conjugated tensor: a copy.
  if (any_ci(n, {"copy", "memcpy", "_to_copy", "contiguous", "clone", "memset"}) || n == "to" ||
      starts_with(n, "to.") || starts_with(n, "to_") || n == "resolve_neg" || n == "resolve_conj")
    return OpType::Copy;
  if (any_ci(n, {"elementwise", "reduce_kernel", "softmax", "relu", "gelu", "silu", "sigmoid"}) ||
      any_word_ci(n, {"add", "mul", "sub", "div", "tanh", "exp", "log", "sqrt", "rsqrt", "pow", "threshold", "clamp",
                      "where", "neg", "abs", "dropout", "fill", "zero", "hardtanh", "erf", "lerp", "addcmul", "addcdiv",
                      "maximum", "minimum", "nll", "cross", "mse", "sum", "mean", "aclnnadd", "aclnnmul", "aclnnsub",
                      "aclnndiv", "aclnnexp", "aclnncast", "cast"}))
    return OpType::Elementwise;
  return OpType::Other;
}

const NameInfo& NameInfoCache::operator()(uint32_t id) {
  if (id >= known_.size()) {
    known_.resize(strings_.size(), 0);
    info_.resize(strings_.size());
  }
  if (!known_[id]) {
    const std::string& n = strings_.str(id);
    NameInfo& i = info_[id];
    known_[id] = 1;
    // Every step has its own name; they need no other classification.
    if (is_profiler_step_name(n)) {
      i.profiler_step = true;
      return i;
    }
    i.communication = is_communication_name(n);
    i.host_sync = is_host_sync_name(n);
    i.value_read = is_value_read_name(n);
    i.data_loading = is_data_loading_name(n);
    i.autograd_wrapper = is_autograd_wrapper_name(n);
    i.online_compile = is_online_compile_name(n);
    i.pageable_copy = is_pageable_copy_name(n);
    i.type = op_type_of(n);
    i.memcpy = contains_ci(n, "memcpy") || is_dma_name(n);
    i.memset = contains_ci(n, "memset");
    i.allocator_call = is_allocator_call_name(n);
    i.launch_call = is_launch_call_name(n);
    i.blocking_copy = is_blocking_copy_call_name(n);
    i.mode_identity = is_mode_identity_name(n);
    i.task_class = ascend_task_class(n);
    i.ai_cpu = i.task_class == TaskClass::Compute && (contains_ci(n, "AI_CPU") || contains_ci(n, "AICPU"));
    i.fp32_input = is_fp32_input(n);
  }
  return info_[id];
}

}  // namespace crosstrain::analyze
