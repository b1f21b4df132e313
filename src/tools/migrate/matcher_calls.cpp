// Calls: `.cuda(x)` and `.to(x)` by the kind of x, device keywords, pinned memory, NCCL backends
// and availability, the accelerator memory queries.
#include "tools/migrate/matcher.h"

namespace crosstrain::migrate {

// `Backend.NCCL` is the string "nccl": as a backend it becomes the target's, as in a comparison
// it is flagged where the target's backend makes the test false.
void Matcher::backend_nccl(TSNode node, const std::vector<TSNode>& ancestors) {
  ArgContext context =
      classify_string_position(syntax_, node, ancestors, [&](std::string_view n) { return plan_.is_torch_alias(n); }).kind;
  if (context == ArgContext::Comparison) {
    if (target_ != Target::DeviceAgnostic) plan_.find(rule_by_id("nccl-test"), node, std::string(text(node)), target_);
    return;
  }
  if (context == ArgContext::Keyed) return;
  const Rule& rule = rule_by_id("nccl-backend");
  plan_.replace(rule, node, expand(per_target(rule)), "Backend.NCCL is \"nccl\"");
}

// torch.accelerator.memory.* take the device positionally only: `device=d` loses its keyword.
void Matcher::accelerator_memory_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
  std::vector<SpanEdit> edits{{ts_node_start_byte(name), ts_node_end_byte(name), new_name}};
  TSNode args = field(call, "arguments");
  for (TSNode arg : named_children(args))
    if (is_type(arg, "keyword_argument") && text(field(arg, "name")) == "device")
      edits.push_back({ts_node_start_byte(arg), ts_node_start_byte(field(arg, "value")), ""});
  plan_.add(rule, std::move(edits), call, "device passed positionally: torch.accelerator.memory takes no keywords");
}

// --- calls --------------------------------------------------------------------------------------
void Matcher::on_call(TSNode call) {
  TSNode function = field(call, "function");
  TSNode args = field(call, "arguments");
  if (is_type(function, "identifier")) {
    std::string_view name = text(function);
    auto amp = amp_names_.find(std::string(name));
    if (amp != amp_names_.end() && is_custom_amp(amp->second)) {
      custom_amp_call(rule_by_id("torch.cuda.amp." + amp->second), call, TSNode{}, "");
    } else if (amp != amp_names_.end()) {
      amp_call(rule_by_id("torch.cuda.amp." + amp->second), call, TSNode{}, "");
    } else if (name == "is_nccl_available") {
      nccl_available(call, function);
    } else if (name == "CUDAExtension") {
      plan_.find(rule_by_id("cuda-extension"), function, "CUDAExtension", target_);
    } else if (name == "CDLL" && is_type(args, "argument_list")) {
      cuda_library(call, args);
    }
    if (is_type(args, "argument_list")) {
      device_keywords(call, name, args);
      inline_cuda_extension(call, name, args);
    }
    return;
  }
  if (!is_type(function, "attribute") || !is_type(args, "argument_list")) return;
  TSNode attr = field(function, "attribute");
  std::string_view method = text(attr);
  // `.cuda(device=i)` gets its device from tensor_cuda, which reads the keyword itself.
  if (method != "cuda") device_keywords(call, method, args);
  if (legacy_tensor_type_call(call, function, args)) return;
  if (method == "is_nccl_available") {
    nccl_available(call, attr);
  } else if (method == "CUDAExtension") {
    plan_.find(rule_by_id("cuda-extension"), function, std::string(text(function)), target_);
  } else if (method == "cuda") {
    TSNode object = field(function, "object");
    if (is_type(object, "identifier") && plan_.is_torch_alias(text(object))) return;
    tensor_cuda(call, attr, args);
  } else if (method == "to") {
    int_to(args);
  } else if (method == "format" || method == "join") {
    strings_.on_build(call, *ancestors_);
  } else if (method == "pin_memory") {
    pin_memory_call(call, function, args);
  } else if (method == "convert_sync_batchnorm") {
    sync_batchnorm(call, args);
  } else if (method == "CDLL" || method == "LoadLibrary" || method == "WinDLL" || method == "PyDLL") {
    cuda_library(call, args);
  } else if (method == "device") {
    indexed_torch_device(call, function, args);
  }
  inline_cuda_extension(call, method, args);
  pin_memory_keyword(call, function, args);
}

// `load_inline(..., cuda_sources=...)`, `load(..., extra_cuda_cflags=...)`: CUDA kernels compiled
// at run time, as a CUDAExtension is at install time (`.cu` sources are flagged as strings).
void Matcher::inline_cuda_extension(TSNode call, std::string_view callee, TSNode args) {
  if (callee != "load_inline" && callee != "load") return;
  for (TSNode arg : named_children(args)) {
    if (!is_type(arg, "keyword_argument")) continue;
    std::string_view name = text(field(arg, "name"));
    std::string_view value = text(field(arg, "value"));
    bool cuda = name == "cuda_sources" || name == "extra_cuda_cflags" || (name == "with_cuda" && value != "False" && value != "None");
    if (cuda && value != "None" && value != "[]" && value != "\"\"") {
      plan_.find(rule_by_id("cuda-extension"), call, std::string(callee) + "(" + std::string(name) + "=...)", target_);
      return;
    }
  }
}

// `torch.device("cuda", i)`: on the CPU the index goes, as for "cuda:N" (torch.load refuses a
// cpu:N map_location, and the device may become one). The "cuda" itself is the device type's rule.
void Matcher::indexed_torch_device(TSNode call, TSNode function, TSNode args) {
  TSNode object = field(function, "object");
  if (target_ == Target::Npu || !is_type(object, "identifier") || !plan_.is_torch_alias(text(object))) return;
  TSNode type{}, index{};
  size_t positional = 0;
  for (TSNode arg : named_children(args)) {
    if (is_type(arg, "comment")) continue;
    if (is_type(arg, "keyword_argument")) {
      std::string_view name = text(field(arg, "name"));
      if (name == "type") type = field(arg, "value");
      else if (name == "index") index = field(arg, "value");
      else return;
    } else if (is_type(arg, "list_splat") || is_type(arg, "dictionary_splat")) {
      return;
    } else {
      (positional++ == 0 ? type : index) = arg;
    }
  }
  if (ts_node_is_null(type) || ts_node_is_null(index) || text(index) == "None" || !is_cuda_literal(syntax_, type)) return;
  auto [is_cuda, literal_index] = parse_cuda_string(text(type).substr(1, text(type).size() - 2));
  if (!is_cuda || !literal_index.empty()) return;
  const Rule& rule = rule_by_id("indexed-torch-device");
  std::string torch(plan_.torch_name());
  if (target_ == Target::Cpu) {
    plan_.replace_span(rule, ts_node_start_byte(args) + 1, ts_node_end_byte(args) - 1, call, "\"cpu\"",
                       "`" + std::string(text(call)) + "`: " + std::string(rule.message));
    return;
  }
  uint32_t start = ts_node_start_byte(call), end = ts_node_end_byte(call);
  plan_.add(rule,
            {{start, start, "("},
             {ts_node_start_byte(type), ts_node_end_byte(type), expand("{device_type}")},
             {end, end, " if _accel_device.type != \"cpu\" else " + torch + ".device(\"cpu\"))"}},
            call, "`" + std::string(text(call)) + "`: " + std::string(rule.message));
}

// `ctypes.CDLL("libcudart.so")`: a CUDA library loaded by name, which exists only with NVIDIA's driver.
void Matcher::cuda_library(TSNode call, TSNode args) {
  static const char* kLibraries[] = {"libcuda", "cudart", "nvcuda", "nvrtc", "cublas", "cudnn", "nccl",
                                     "cufft", "curand", "cusparse", "cusolver", "nvidia-ml", "nvml"};
  std::vector<TSNode> list = named_children(args);
  if (list.empty() || !is_type(list[0], "string")) return;
  std::string_view library = text(list[0]);
  if (std::any_of(std::begin(kLibraries), std::end(kLibraries), [&](const char* n) { return contains_ci(library, n); }))
    plan_.find(rule_by_id("cuda-library"), call, std::string(text(call)), target_);
}

// --- pinned memory -------------------------------------------------------------------------------
// Pinning needs an accelerator: without one `.pin_memory()` and `pin_memory=True` raise. npu keeps
// them (torch_npu pins for the NPU); DataLoader(pin_memory=True) only warns and is not matched.
bool Matcher::availability_guarded(TSNode node) const {
  TSNode child = node;
  const std::vector<TSNode>& up = *ancestors_;
  for (auto it = up.rbegin(); it != up.rend(); ++it) {
    TSNode parent = *it;
    std::string_view type = node_type(parent);
    if ((type == "if_statement" || type == "elif_clause") && ts_node_eq(field(parent, "consequence"), child) &&
        is_availability_test(text(field(parent, "condition"))))
      return true;
    if (type == "conditional_expression" && ts_node_eq(ts_node_named_child(parent, 0), child) &&
        is_availability_test(text(ts_node_named_child(parent, 1))))
      return true;
    if (type == "boolean_operator" && text(field(parent, "operator")) == "and" &&
        ts_node_eq(field(parent, "right"), child) && is_availability_test(text(field(parent, "left"))))
      return true;
    child = parent;
  }
  return false;
}

// A tensor no other name refers to: the result of a torch factory or of a `new_*` method.
bool Matcher::is_fresh_tensor(TSNode expr) const {
  if (!is_type(expr, "call")) return false;
  TSNode function = field(expr, "function");
  if (!is_type(function, "attribute")) return false;
  std::string_view name = text(field(function, "attribute"));
  if (name.substr(0, 4) == "new_") return true;
  TSNode object = field(function, "object");
  if (!is_type(object, "identifier") || !plan_.is_torch_alias(text(object))) return false;
  static const std::set<std::string_view> kFactories = {
      "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
      "tensor", "empty_strided", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
      "stack", "cat"};
  return kFactories.count(name) > 0;
}

// The statement is the only one on its lines (it may be followed by a comment).
bool Matcher::alone_on_line(TSNode statement) const {
  std::string_view src = syntax_.source();
  uint32_t start = ts_node_start_byte(statement), end = ts_node_end_byte(statement);
  size_t line_start = src.rfind('\n', start == 0 ? 0 : start - 1);
  line_start = line_start == std::string_view::npos || start == 0 ? 0 : line_start + 1;
  if (src.substr(line_start, start - line_start).find_first_not_of(" \t") != std::string_view::npos) return false;
  size_t line_end = src.find('\n', end);
  std::string_view rest = src.substr(end, (line_end == std::string_view::npos ? src.size() : line_end) - end);
  size_t first = rest.find_first_not_of(" \t\r");
  return first == std::string_view::npos || rest[first] == '#';
}

void Matcher::pin_memory_call(TSNode call, TSNode function, TSNode args) {
  if (target_ == Target::Npu || ts_node_named_child_count(args) != 0 || availability_guarded(call)) return;
  const Rule& rule = rule_by_id("pin-memory");
  TSNode object = field(function, "object");
  TSNode parent = ancestors_->empty() ? TSNode{} : ancestors_->back();
  uint32_t start = ts_node_start_byte(call), end = ts_node_end_byte(call), object_end = ts_node_end_byte(object);
  std::string object_text(text(object));
  bool plain = object_text.find('(') == std::string::npos;  // a name or attribute: dropping it drops nothing
  if (is_type(parent, "expression_statement") && ts_node_named_child_count(parent) == 1 && alone_on_line(parent)) {
    if (agnostic()) plan_.add(rule, {{start, start, "if _accel_device.type != \"cpu\": "}}, call, "pinned only with an accelerator");
    else if (plain) plan_.replace(rule, call, "pass", "`" + std::string(text(call)) + "` dropped: nothing to pin on the CPU");
    else plan_.replace_span(rule, object_end, end, call, "", "pin dropped: nothing to pin on the CPU");
    return;
  }
  if (is_fresh_tensor(object) && object_text.find("cuda") == std::string::npos) {
    if (agnostic())
      plan_.add(rule, {{start, start, "("}, {end, end, " if _accel_device.type != \"cpu\" else " + object_text + ")"}}, call,
                "pinned only with an accelerator; the tensor is new, so no one sees the difference");
    else plan_.replace_span(rule, object_end, end, call, "", "pin dropped: the tensor is new, so no one sees the difference");
    return;
  }
  plan_.find(rule_by_id("pin-memory-unproven"), call, std::string(text(call)), target_);
}

// `pin_memory=True` of a torch factory (`torch.empty`, `x.new_zeros`).
void Matcher::pin_memory_keyword(TSNode call, TSNode function, TSNode args) {
  if (target_ == Target::Npu) return;
  TSNode object = field(function, "object");
  bool factory = text(field(function, "attribute")).substr(0, 4) == "new_" ||
                 (is_type(object, "identifier") && plan_.is_torch_alias(text(object)));
  if (!factory) return;
  for (TSNode arg : named_children(args)) {
    if (!is_type(arg, "keyword_argument") || text(field(arg, "name")) != "pin_memory") continue;
    TSNode value = field(arg, "value");
    std::string_view v = text(value);
    if (v == "False" || v == "None" || is_availability_test(v) || availability_guarded(call)) return;
    if (v == "True")
      plan_.replace(rule_by_id("pin-memory"), value, agnostic() ? "_accel_device.type != \"cpu\"" : "False",
                    "pinned only with an accelerator");
    else plan_.find(rule_by_id("pin-memory-unproven"), arg, std::string(text(arg)), target_);
  }
}

// `device_ids=[rank]` / `output_device=rank` of (Distributed)DataParallel: indices mean CUDA
// devices and must be None for CPU modules; `device=rank` of any call means cuda:rank.
void Matcher::device_keywords(TSNode call, std::string_view callee, TSNode args) {
  bool parallel = callee == "DistributedDataParallel" || callee == "DDP" || callee == "DataParallel";
  for (TSNode arg : named_children(args)) {
    if (!is_type(arg, "keyword_argument")) continue;
    std::string_view name = text(field(arg, "name"));
    TSNode value = field(arg, "value");
    if (parallel && (name == "device_ids" || name == "output_device")) {
      if (text(value) == "None" || text(value).find("_accel_device.type != ") != std::string_view::npos) continue;
      if (target_ == Target::Npu) continue;
      const Rule& rule = rule_by_id("device-ids");
      strings_.wrap_value(rule, value, call);
    } else if (name == "device") {
      device_value(value);
    }
  }
}

// An int passed as a device: `.to(rank)`, `device=rank` -> the target's device at that index.
void Matcher::int_device(TSNode value) {
  const Rule& rule = rule_by_id("int-rank-device");
  static constexpr std::string_view kMarker = "\x01index\x01";
  std::vector<SpanEdit> edits =
      wrap_span(expand(per_target(rule), kMarker), kMarker, ts_node_start_byte(value), ts_node_end_byte(value));
  plan_.add(rule, std::move(edits), value, "`" + std::string(text(value)) + "`: " + std::string(rule.message));
}

void Matcher::int_to(TSNode args) {
  std::vector<TSNode> list = named_children(args);
  if (list.empty() || is_type(list[0], "keyword_argument")) return;
  device_value(list[0]);
}

// `.to(x)` / `device=x`: an int becomes the target's device at x. A name that conventionally
// holds an index (rank, gpu, ...) but is bound here to something unknown (a loop, a call) is
// flagged; on cpu, where every placement means "cpu", it is rewritten all the same.
void Matcher::device_value(TSNode value) {
  if (kinds_.is_int(value, scope())) {
    int_device(value);
  } else if (is_type(value, "identifier") && int_like_name(text(value)) && !kinds_.is_device(value, scope())) {
    if (target_ == Target::Cpu) int_device(value);
    else plan_.find(rule_by_id("int-device"), value, std::string(text(value)), target_);
  }
}

void Matcher::nccl_available(TSNode call, TSNode name) {
  const Rule& rule = rule_by_id("is_nccl_available");
  plan_.replace_span(rule, ts_node_start_byte(name), ts_node_end_byte(call), call, expand(per_target(rule)), "");
}

// `.cuda(x, non_blocking)` -> `.to(<device>, non_blocking=...)`, proven per kind of x: no x (the
// current CUDA device, as `.to("cuda")`), an int (cuda:x), a device (x itself). Anything else is
// flagged: `.cuda(x)` with x of unknown kind cannot be rewritten safely.
void Matcher::tensor_cuda(TSNode call, TSNode attr, TSNode args) {
  const Rule& rule = rule_by_id("tensor.cuda");
  std::vector<TSNode> positional;
  TSNode device_keyword{};
  size_t count = 0;
  for (TSNode arg : named_children(args)) {
    std::string_view type = node_type(arg);
    if (type == "comment") continue;
    if (type == "list_splat" || type == "dictionary_splat") {
      plan_.find(rule, call, std::string(text(call)), target_, "arguments unpacked with * or **: port by hand");
      plan_.keep_as_written(call);
      return;
    }
    if (type == "keyword_argument") {
      if (text(field(arg, "name")) == "device") {
        if (count != 0) {  // `.to()` takes the device first; a late device= keyword is rare
          plan_.find(rule, call, std::string(text(call)), target_, "device= after other arguments: port by hand");
          plan_.keep_as_written(call);
          return;
        }
        device_keyword = arg;
      }
    } else {
      positional.push_back(arg);
    }
    ++count;
  }
  TSNode index = !positional.empty() ? positional[0] : ts_node_is_null(device_keyword) ? TSNode{} : field(device_keyword, "value");
  bool none = !ts_node_is_null(index) && text(index) == "None";
  bool is_int = !ts_node_is_null(index) && !none && kinds_.is_int(index, scope());
  bool is_device = !ts_node_is_null(index) && !none && !is_int && kinds_.is_device(index, scope());
  if (!ts_node_is_null(index) && !none && !is_int && !is_device && target_ != Target::Cpu) {
    plan_.find(rule_by_id("int-device"), call, std::string(text(call)), target_,
               "`" + std::string(text(index)) + "` may be an index or a device: write .to(torch.device(" +
                   std::string(expand("{device_type}")) + ", i)) for an index, .to(d) for a device");
    plan_.keep_as_written(call);
    return;
  }
  // A storage's .to() takes the device only by keyword; a tensor's or module's positionally.
  std::string keyword = is_storage(field(field(call, "function"), "object")) ? "device=" : "";
  std::vector<SpanEdit> edits;
  edits.push_back({ts_node_start_byte(attr), ts_node_end_byte(attr), "to"});
  uint32_t open = ts_node_start_byte(args) + 1;
  if (ts_node_is_null(index)) {
    edits.push_back({open, open, keyword + expand("{device}") + (count ? ", " : "")});
  } else {
    uint32_t from = ts_node_is_null(device_keyword) ? ts_node_start_byte(index) : ts_node_start_byte(device_keyword);
    uint32_t start = ts_node_start_byte(index), end = ts_node_end_byte(index);
    if (none || target_ == Target::Cpu) {
      edits.push_back({from, end, keyword + expand("{device}")});
    } else if (is_device) {
      if (from != start && keyword.empty()) edits.push_back({from, start, ""});
      else if (from == start && !keyword.empty()) edits.push_back({start, start, keyword});
    } else {
      static constexpr std::string_view kMarker = "\x01index\x01";
      std::string wrapped = expand("{device_at_index}", kMarker);
      size_t marker = wrapped.find(kMarker);
      edits.push_back({from, start, keyword + wrapped.substr(0, marker)});
      edits.push_back({end, end, wrapped.substr(marker + kMarker.size())});
    }
  }
  if (positional.size() >= 2) {
    uint32_t at = ts_node_start_byte(positional[1]);
    edits.push_back({at, at, "non_blocking="});
  }
  plan_.add(rule, std::move(edits), call, "`" + std::string(text(call)) + "`: " + std::string(rule.message));
}

// `lambda storage, loc: storage.cuda()` passed to torch.load (as map_location or its second
// argument): `object` is the lambda's first parameter, which torch.load binds to a storage.
bool Matcher::is_storage(TSNode object) const {
  if (!is_type(object, "identifier")) return false;
  const std::vector<TSNode>& up = *ancestors_;
  for (size_t i = up.size(); i-- > 1;) {
    if (!is_type(up[i], "lambda")) continue;
    TSNode params = field(up[i], "parameters");
    if (ts_node_is_null(params) || ts_node_named_child_count(params) == 0 ||
        text(ts_node_named_child(params, 0)) != text(object))
      return false;
    TSNode parent = up[i - 1];
    if (is_type(parent, "keyword_argument")) return text(field(parent, "name")) == "map_location";
    return is_type(parent, "argument_list") && i >= 2 && last_segment(syntax_, field(up[i - 2], "function")) == "load";
  }
  return false;
}

}  // namespace crosstrain::migrate
