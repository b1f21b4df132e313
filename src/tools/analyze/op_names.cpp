#include "tools/analyze/op_names.h"

#include <algorithm>
#include <string>
#include <vector>

namespace crosstrain::analyze {

namespace {

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// ASCII case-insensitive substring search, no allocation (it runs once per distinct name).
bool contains_ci(std::string_view hay, std::string_view needle) {
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

bool any_ci(std::string_view name, std::initializer_list<std::string_view> needles) {
  for (auto n : needles)
    if (contains_ci(name, n)) return true;
  return false;
}

}  // namespace

const char* op_type_name(OpType t) {
  static const char* names[] = {"conv", "matmul", "norm", "elementwise", "pooling",
                                "copy", "communication", "optimizer", "other"};
  return names[static_cast<int>(t)];
}

bool is_communication_name(std::string_view n) {
  return any_ci(n, {"nccl", "hccl", "hcom", "gloo", "c10d::", "allreduce", "all_reduce", "allgather", "all_gather",
                    "reduce_scatter", "reducescatter", "alltoall", "all_to_all", "broadcast_", "record_param_comms",
                    "sendrecv"});
}

bool is_host_sync_name(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense" || contains_ci(n, "synchronize") ||
         n == "cudaStreamQuery" || n == "cudaEventQuery";
}

bool is_data_loading_name(std::string_view n) {
  return n == "data_wait" || contains_ci(n, "DataLoader") || contains_ci(n, "dataloader");
}

bool is_profiler_step_name(std::string_view n) { return starts_with(n, "ProfilerStep#"); }

bool is_fp32_input(std::string_view dtypes) {
  bool fp32 = dtypes.find("\"float\"") != std::string_view::npos || dtypes.find("\"double\"") != std::string_view::npos;
  bool half = contains_ci(dtypes, "Half") || contains_ci(dtypes, "BFloat16") || contains_ci(dtypes, "Float8");
  return fp32 && !half;
}

OpType op_type_of(std::string_view n) {
  if (is_communication_name(n)) return OpType::Communication;
  if (any_ci(n, {"optimizer", "_foreach_", "adam", "sgd", "lamb", "fused_sgd"})) return OpType::Optimizer;
  if (any_ci(n, {"conv", "implicit_gemm", "winograd", "dgrad", "wgrad"})) return OpType::Conv;
  if (any_ci(n, {"norm", "bn_fw", "bn_bw"})) return OpType::Norm;
  if (any_ci(n, {"pool"})) return OpType::Pooling;
  if (any_ci(n, {"::mm", "addmm", "bmm", "matmul", "linear", "gemm", "einsum", "baddbmm", "cutlass", "sgemm",
                 "hgemm", "cublas", "attention"}))
    return OpType::Matmul;
  if (any_ci(n, {"copy", "memcpy", "::to", "_to_copy", "contiguous", "clone", "memset"})) return OpType::Copy;
  if (any_ci(n, {"add", "mul", "sub", "div", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
                 "pow", "threshold", "clamp", "where", "softmax", "elementwise", "neg", "abs", "dropout", "fill",
                 "zero_", "hardtanh", "erf", "lerp", "addcmul", "addcdiv", "maximum", "minimum", "nll_loss",
                 "cross_entropy", "mse_loss", "sum", "mean", "reduce_kernel"}))
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
    i.data_loading = is_data_loading_name(n);
    i.profiler_step = is_profiler_step_name(n);
    i.type = op_type_of(n);
    i.memcpy = contains_ci(n, "memcpy");
    i.memset = contains_ci(n, "memset");
    i.fp32_input = is_fp32_input(n);
    known_[id] = 1;
  }
  return info_[id];
}

void classify_spans(Trace& t) {
  NameInfoCache names(t.strings);
  // Category strings, resolved once per distinct id.
  std::vector<int> cat_kind(t.strings.size(), -1);
  auto kind_of_cat = [&](uint32_t cat) -> int {
    if (cat_kind[cat] >= 0) return cat_kind[cat];
    const std::string& c = t.strings.str(cat);
    SpanKind k = SpanKind::Other;
    int known = 1;
    if (c == "cpu_op" || c == "operator") k = SpanKind::CpuOp;
    else if (c == "user_annotation") k = SpanKind::Annotation;
    else if (c == "python_function") k = SpanKind::PythonFunction;
    else if (c == "kernel") k = SpanKind::Kernel;
    else if (c == "gpu_memcpy" || c == "mtia_memcpy") k = SpanKind::Memcpy;
    else if (c == "gpu_memset") k = SpanKind::Memset;
    else if (c.find("runtime") != std::string::npos || c.find("driver") != std::string::npos) k = SpanKind::Runtime;
    else if (c.empty()) known = 0;
    cat_kind[cat] = known ? static_cast<int>(k) : 100;
    return cat_kind[cat];
  };

  // Process roles for category-less traces.
  enum Role { Host, Device, DeviceComm, Api, Ignore };
  bool ascend = false;
  std::unordered_map<int64_t, Role> roles;
  for (const auto& [pid, name] : t.process_names) {
    Role r = Host;
    if (name == "Ascend Hardware" || (contains_ci(name, "NPU") && !contains_ci(name, "MEM"))) r = Device;
    else if (name == "HCCL" || name == "Communication") r = DeviceComm;
    else if (name == "CANN") r = Api;
    else if (name == "Overlap Analysis" || contains_ci(name, "Freq") || contains_ci(name, "MEM") ||
             contains_ci(name, "Stars") || contains_ci(name, "Acc PMU"))
      r = Ignore;
    if (name == "Ascend Hardware" || name == "CANN" || name == "HCCL" || name == "Overlap Analysis") ascend = true;
    roles[pid] = r;
  }
  if (t.format != TraceFormat::Kineto && ascend) t.format = TraceFormat::Ascend;

  for (Span& s : t.spans) {
    const NameInfo& info = names(s.name);
    int ck = kind_of_cat(s.cat);
    SpanKind k;
    if (ck != 100) {
      k = static_cast<SpanKind>(ck);
    } else {
      int64_t pid = t.tracks[s.track].key.pid;
      Role r = Host;
      auto it = roles.find(pid);
      if (it != roles.end()) r = it->second;
      if (pid >= kStringIdFlag) {
        // Legacy autograd export: "CPU functions" and "<DEVICE> functions".
        const std::string& label = t.strings.str(static_cast<uint32_t>(pid - kStringIdFlag));
        if (label.size() > 10 && label.compare(label.size() - 10, 10, " functions") == 0 && label != "CPU functions")
          r = Device;
      }
      switch (r) {
        case Device:
          k = info.memcpy ? SpanKind::Memcpy
              : info.memset ? SpanKind::Memset
              : info.communication ? SpanKind::Communication : SpanKind::Kernel;
          break;
        case DeviceComm: k = SpanKind::Communication; break;
        case Api: k = SpanKind::Runtime; break;
        case Ignore: k = SpanKind::Other; break;
        default:
          if (info.profiler_step || info.data_loading) k = SpanKind::Annotation;
          else if (t.strings.str(s.name).find(".py(") != std::string::npos) k = SpanKind::PythonFunction;
          else k = SpanKind::CpuOp;
      }
    }
    // Steps and data waits are annotations whatever category the writer gave them.
    if (k == SpanKind::CpuOp && (info.profiler_step || t.strings.str(s.name) == "data_wait")) k = SpanKind::Annotation;
    if (k == SpanKind::Kernel && info.communication) k = SpanKind::Communication;
    s.kind = k;
  }
}

}  // namespace crosstrain::analyze
