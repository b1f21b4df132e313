// Matching: one pass over the syntax tree with an explicit ancestor stack (no recursion, so deep
// nesting in hostile input cannot overflow the C++ stack). Each match becomes a candidate Change
// or a Finding; rewrite_plan.cpp then resolves nesting and adds the inserted lines.
#include "tools/migrate/rewriter.h"

#include "tools/migrate/matcher.h"
#include "tools/migrate/name_uses.h"

namespace crosstrain::migrate {

void Matcher::run() {
  find_amp_references();
  find_availability_names();
  walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) { visit(node, ancestors); });
  default_type_restores();
}

void Matcher::visit(TSNode node, const std::vector<TSNode>& ancestors) {
  current_ = node;
  ancestors_ = &ancestors;
  std::string_view type = node_type(node);
  if (type == "import_statement") on_import(node);
  else if (type == "import_from_statement") on_import_from(node);
  else if (type == "assignment") on_assignment(node, ancestors);
  else if (type == "if_statement") on_if(node, ancestors);
  else if (type == "expression_statement") on_expression_statement(node, ancestors);
  else if ((type == "for_statement" || type == "while_statement" || type == "with_statement") && ancestors.size() == 1)
    plan_.note_entry_point();
  bool matchable = type == "attribute" || type == "call" || type == "string" || type == "binary_operator" ||
                   type == "identifier" || type == "concatenated_string";
  bool branches = type == "if_statement" || type == "conditional_expression";
  if ((!matchable && !branches) || guards_.guarded(node, ancestors)) return;
  if (branches) {
    cuda_branch(node);
    return;
  }
  if (type == "attribute") on_attribute(node, ancestors);
  else if (type == "call") on_call(node);
  else if (type == "string") {
    legacy_tensor_type_string(node, ancestors);
    strings_.on_string(node, ancestors);
  }
  else if (type == "concatenated_string") strings_.on_concatenated(node, ancestors);
  else if (type == "binary_operator") strings_.on_build(node, ancestors);
  else if (type == "identifier") on_identifier(node, ancestors);
}

// --- entry points (npu: `import torch_npu` goes only into files that run as programs) ----------
void Matcher::on_if(TSNode node, const std::vector<TSNode>& ancestors) {
  if (ancestors.size() != 1) return;
  std::string_view condition = text(field(node, "condition"));
  if (condition.find("__name__") != std::string_view::npos && condition.find("__main__") != std::string_view::npos)
    plan_.note_entry_point();
}

void Matcher::on_expression_statement(TSNode node, const std::vector<TSNode>& ancestors) {
  if (ancestors.size() == 1 && is_type(ts_node_named_child(node, 0), "call")) plan_.note_entry_point();
}

// --- imports ---------------------------------------------------------------------------------
bool Matcher::report_module(std::string_view module, TSNode node) {
  std::string_view root = module.substr(0, module.find('.'));
  const char* rule = nullptr;
  if (root == "apex") rule = "apex";
  else if (root == "cupy") rule = "cupy";
  else if (root == "pynvml" || root == "nvidia_smi") rule = "pynvml";
  else if (root == "triton") rule = "triton";
  else if (root == "pycuda") rule = "pycuda";
  else if (root == "flash_attn" || root == "flash_attn_interface" || root == "transformer_engine" || root == "xformers")
    rule = "nvidia-kernels";
  else if (has_prefix(module, "numba.cuda")) rule = "numba-cuda";
  else if (module.substr(0, 11) == "nvidia.dali") rule = "dali";
  if (rule) plan_.find(rule_by_id(rule), node, std::string(module), target_);
  return rule != nullptr;
}

// `from torch.cuda import synchronize` / `from torch.cuda import amp`: the names are not followed
// to their uses, so each one that is not valid as written on the target is flagged at the import.
void Matcher::report_torch_cuda_names(std::string_view module, const std::vector<TSNode>& names) {
  if (module.substr(0, 6) != "torch." || !is_cuda_path(module.substr(6))) return;
  for (TSNode child : names) {
    TSNode name = is_type(child, "aliased_import") ? field(child, "name") : child;
    std::string full = std::string(module) + "." + std::string(text(name));
    const Rule* rule = find_torch_api_rule(full.substr(6));
    if (!rule || rule->action == RuleAction::Report || per_target(*rule) == "{keep}") continue;
    plan_.find(rule_by_id("torch.cuda"), name, full, target_,
               "imported by name, its uses are not followed: import torch and write `" + full +
                   "` where it is used, which migrate rewrites");
  }
}

// `from torch.cuda import synchronize, device_count`: when the target's device module has every
// name under the same name (each name's rule rewrites torch.cuda.X to torch.npu.X, or torch.cpu.X),
// the import takes them from there and every use follows: torch_npu.npu (the module torch_npu
// registers as torch.npu, importable before `import torch_npu` has run) or torch.cpu. Otherwise
// (device-agnostic, a name the target lacks or spells otherwise, `*`) each name is flagged, as are
// on the CPU the names whose calls the CPU's rewrite checks at the call, which a bare name hides:
// Event (enable_timing does not time there), Stream (no device argument) and current_stream (its
// stream lacks synchronize and query).
static bool cpu_checks_its_calls(std::string_view name) {
  return name == "Event" || name == "Stream" || name == "current_stream";
}

bool Matcher::rename_torch_cuda_import(TSNode module_node, const std::vector<TSNode>& names) {
  if (text(module_node) != "torch.cuda" || names.empty()) return false;
  if (target_ != Target::Npu && target_ != Target::Cpu) return false;
  const std::string same = target_ == Target::Npu ? "{torch}.npu." : "{torch}.cpu.";
  std::vector<std::pair<const Rule*, TSNode>> renamed;
  for (TSNode child : names) {
    if (!is_type(child, "aliased_import") && !is_type(child, "dotted_name")) return false;
    TSNode name = is_type(child, "aliased_import") ? field(child, "name") : child;
    const std::string n(text(name));
    const Rule* rule = find_torch_api_rule("cuda." + n);
    if (!rule || rule->action != RuleAction::Rewrite || rule->id != "torch.cuda." + n ||
        per_target(*rule) != same + n || (target_ == Target::Cpu && cpu_checks_its_calls(n)))
      return false;
    renamed.emplace_back(rule, name);
  }
  const std::string module = target_ == Target::Npu ? "torch_npu.npu" : "torch.cpu";
  plan_.replace(*renamed.front().first, module_node, module, "import from " + module);
  for (size_t i = 1; i < renamed.size(); ++i)  // counted as converted: their uses follow the module
    plan_.replace(*renamed[i].first, renamed[i].second, std::string(text(renamed[i].second)), "import from " + module);
  return true;
}

void Matcher::on_import(TSNode node) {
  for (TSNode child : named_children(node)) {
    TSNode name = is_type(child, "aliased_import") ? field(child, "name") : child;
    std::string_view module = text(name);
    if (module == "torch_npu") plan_.note_torch_npu_import();
    if (module == "torch" || module.substr(0, 6) == "torch.") {
      if (is_type(child, "aliased_import")) {
        if (module == "torch") plan_.add_torch_alias(text(field(child, "alias")));
        else if (module.substr(0, 10) == "torch.cuda")
          plan_.find(rule_by_id("torch.cuda"), child, std::string(module), target_,
                     "uses through this alias are not followed: import torch and use the device-generic API");
      } else {
        plan_.add_torch_alias("torch");
      }
    }
    report_torch_module(module, name);
    report_module(module, name);
  }
}

// `import torch.cuda.nvtx` / `from torch.backends import cudnn`: report what the module is.
void Matcher::report_torch_module(std::string_view module, TSNode node) {
  if (module.substr(0, 6) != "torch.") return;
  std::string_view path = module.substr(6);
  if (!is_cuda_path(path)) return;
  const Rule* rule = find_torch_api_rule(path);
  if (rule && rule->action == RuleAction::Report) plan_.find(*rule, node, std::string(module), target_);
}

void Matcher::on_import_from(TSNode node) {
  TSNode module_node = field(node, "module_name");
  std::string_view module = text(module_node);
  std::vector<TSNode> names;
  for (TSNode child : named_children(node))
    if (!ts_node_eq(child, module_node) && !is_type(child, "comment")) names.push_back(child);
  if (module == "torch.cuda.amp") {
    // Renaming the import is proven only when every use of the imported names is a call that
    // gets its device argument; a name passed around as a value keeps torch.cuda.amp.
    bool referenced = false;
    for (TSNode child : names) {
      bool aliased = is_type(child, "aliased_import");
      std::string_view local = text(aliased ? field(child, "alias") : child);
      referenced = referenced || amp_referenced_.count(std::string(local));
    }
    if (referenced) return;
    const Rule& rule = rule_by_id("torch.cuda.amp");
    plan_.replace(rule, module_node, "torch.amp", "import from torch.amp");
    for (TSNode child : names) {
      bool aliased = is_type(child, "aliased_import");
      std::string_view name = text(aliased ? field(child, "name") : child);
      std::string_view local = aliased ? text(field(child, "alias")) : name;
      if (name == "autocast" || name == "GradScaler" || is_custom_amp(name))
        amp_names_.emplace(std::string(local), std::string(name));
    }
    return;
  }
  if (module == "torch.utils.cpp_extension") {
    for (TSNode child : names)
      if (contains_ci(text(child), "cudaextension")) plan_.find(rule_by_id("cuda-extension"), child, "CUDAExtension", target_);
  }
  for (TSNode child : names) {
    TSNode name = is_type(child, "aliased_import") ? field(child, "name") : child;
    std::string full = std::string(module) + "." + std::string(text(name));
    report_torch_module(full, name);
  }
  if (!rename_torch_cuda_import(module_node, names)) report_torch_cuda_names(module, names);
  if (report_module(module, module_node)) return;
  // `from numba import cuda`: the library is named by what is imported from it.
  for (TSNode child : names) {
    TSNode name = is_type(child, "aliased_import") ? field(child, "name") : child;
    if (report_module(std::string(module) + "." + std::string(text(name)), name)) return;
  }
}

// --- attribute chains --------------------------------------------------------------------------
// `torch.cuda.x.y`: outermost attribute node of a chain whose base is an identifier.
void Matcher::on_attribute(TSNode node, const std::vector<TSNode>& ancestors) {
  TSNode parent = ancestors.empty() ? TSNode{} : ancestors.back();
  if (is_type(parent, "attribute") && ts_node_eq(field(parent, "object"), node)) return;

  std::vector<TSNode> chain;  // chain[0] = outermost attribute node
  TSNode cur = node;
  while (is_type(cur, "attribute")) {
    chain.push_back(cur);
    cur = field(cur, "object");
  }
  std::string_view last = text(field(node, "attribute"));
  if (last == "cuda" && cuda_method_reference(node, ancestors)) return;
  if (last == "CUDA" && chain.size() >= 1) {
    TSNode object = field(node, "object");
    std::string_view object_text = text(object);
    if (object_text == "ProfilerActivity" || (object_text.size() > 17 &&
        object_text.substr(object_text.size() - 17) == ".ProfilerActivity")) {
      const Rule& rule = rule_by_id("profiler-activity");
      plan_.replace(rule, node, expand(per_target(rule), {}, object_text), "");
      return;
    }
  }
  if (last == "NCCL" && (text(field(node, "object")) == "Backend" || ends_with(text(field(node, "object")), ".Backend"))) {
    backend_nccl(node, ancestors);
    return;
  }
  if (!is_type(cur, "identifier")) return;
  std::string_view base = text(cur);
  if (base == "apex" || base == "cupy" || base == "pynvml" || base == "triton" || base == "pycuda" ||
      base == "flash_attn" || base == "transformer_engine" || base == "xformers" ||
      (base == "numba" && has_prefix(text(node).substr(6), "cuda"))) {
    report_module(text(node), node);
    return;
  }
  if (!plan_.is_torch_alias(base)) return;

  // Dotted path after the base, innermost first in `chain` reversed.
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += '.';
    path += text(field(*it, "attribute"));
  }
  if (!is_cuda_path(path) || handled_tensor_types_.count(ts_node_start_byte(node))) return;
  const Rule* rule = find_torch_api_rule(path);
  if (!rule) return;
  std::string_view key = rule->id.substr(6);
  size_t key_segments = static_cast<size_t>(std::count(key.begin(), key.end(), '.')) + 1;
  TSNode matched = chain[chain.size() - key_segments];  // attribute node spanning `torch.<key>`
  std::string api = "torch." + path;
  std::string_view replacement = per_target(*rule);
  bool is_function = is_type(parent, "call") && ts_node_eq(field(parent, "function"), node);
  // `torch.cuda.synchronize = f`, `torch.cuda.amp = m`: a patch of torch.cuda. Renamed, it would
  // patch another module (torch.amp, torch.cpu, the device's module), which the program never meant.
  if (has_prefix(path, "cuda") && is_store_target(node, ancestors)) {
    plan_.find(rule_by_id("torch-cuda-store"), node, api, target_);
    return;
  }
  // `amp = torch.cuda.amp`, `hasattr(torch.cuda.amp, "common")`: torch.amp is another module (its
  // autocast needs device_type); only the names the rule table lists are rewritten.
  if (rule->id == "torch.cuda.amp") {
    plan_.find(rule_by_id("amp-module"), node, api, target_);
    return;
  }
  if (replacement == "{keep}" && !(rule->id == "torch.cuda.device_count" && !is_tested(parent, ancestors))) return;
  if (rule->action == RuleAction::Report || replacement.empty()) {
    if (is_function && diagnostic_call(path, parent, ancestors)) return;
    plan_.find(*rule, matched, api, target_);
    if (finding_fails_check(*rule) && is_type(parent, "call")) plan_.keep_as_written(parent);
    return;
  }
  if (rule->id == "torch.cuda.device_count" && (!is_function || !is_tested(parent, ancestors))) {
    if (is_function && ts_node_eq(matched, node)) device_count_number(parent, matched, ancestors);
    else plan_.find(rule_by_id("device-count-number"), matched, std::string(is_function ? text(parent) : text(node)), target_);
    return;
  }
  if (rule->id == "torch.cuda.Event" && target_ != Target::Npu && is_function && times_events(parent)) {
    plan_.find(rule_by_id("event-timing"), parent, std::string(text(parent)), target_);
    return;
  }
  if (rule->id == "torch.cuda.amp.autocast" || rule->id == "torch.cuda.amp.GradScaler") {
    bool whole = ts_node_eq(matched, node);
    if (is_function && whole) amp_call(*rule, parent, matched, expand(replacement));
    else if (whole && in_annotation(ancestors))
      plan_.replace(*rule, matched, expand(replacement), "in a type annotation: the torch.amp class it derives from");
    else plan_.find(rule_by_id("amp-reference"), node, std::string(text(node)), target_, amp_reference_advice(path));
    return;
  }
  if (rule->id == "torch.cuda.amp.custom_fwd" || rule->id == "torch.cuda.amp.custom_bwd") {
    bool whole = ts_node_eq(matched, node);
    if (whole && is_function) custom_amp_call(*rule, parent, matched, expand(replacement));
    else if (whole && is_type(parent, "decorator")) custom_amp_decorator(*rule, node, matched, expand(replacement));
    else plan_.find(rule_by_id("amp-reference"), node, std::string(text(node)), target_, amp_reference_advice(path));
    return;
  }
  if (cpu_stream_use(*rule, matched, node, ancestors)) return;
  if (rule->family == "memory" && is_function && ts_node_eq(matched, node) &&
      replacement.find("accelerator.memory") != std::string_view::npos) {
    accelerator_memory_call(*rule, parent, matched, expand(replacement));
    return;
  }
  if (rule->id == "torch.cuda.is_available" && is_function && ts_node_eq(matched, node)) {
    uint32_t body_start = 0, body_end = 0;
    std::vector<std::pair<uint32_t, uint32_t>> guarded = stored_availability(ancestors);
    if (guarded_body(ancestors, body_start, body_end)) guarded.emplace_back(body_start, body_end);
    if (!guarded.empty()) {
      plan_.replace_guard(*rule, matched, expand(replacement), std::move(guarded));
      return;
    }
  }
  plan_.replace(*rule, matched, expand(replacement), "");
}

// `move = model.cuda` then `move()`, `fn = torch.Tensor.cuda`: the method referenced, not called,
// so no call is there to rewrite. Other `x.cuda` values (`args.cuda`, a flag) are not methods.
bool Matcher::cuda_method_reference(TSNode node, const std::vector<TSNode>& ancestors) {
  TSNode parent = ancestors.empty() ? TSNode{} : ancestors.back();
  if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), node)) return false;
  TSNode object = field(node, "object");
  if (is_type(object, "identifier") && plan_.is_torch_alias(text(object))) return false;
  std::string_view owner = last_segment(syntax_, object);
  bool of_class = owner == "Module" || ends_with(owner, "Tensor");
  bool called_later = false;
  if (!of_class && is_type(parent, "assignment") && ts_node_eq(field(parent, "right"), node) &&
      is_type(field(parent, "left"), "identifier")) {
    for (const NameUse& use : reads_in_scope(syntax_, ancestors, ancestors.size() - 1, text(field(parent, "left")))) {
      TSNode up = use.ancestors.empty() ? TSNode{} : use.ancestors.back();
      called_later = called_later || (is_type(up, "call") && ts_node_eq(field(up, "function"), use.node));
    }
  }
  if (!of_class && !called_later) return false;
  plan_.find(rule_by_id("cuda-method-reference"), node, std::string(text(node)), target_);
  return true;
}

// The code `torch.cuda.is_available()` (the callee's call is ancestors.back()) guards: the body
// of its `if`/`elif`, the first branch of its conditional expression, the right operand of `and`.
bool Matcher::guarded_body(const std::vector<TSNode>& ancestors, uint32_t& start, uint32_t& end) const {
  if (ancestors.empty()) return false;
  TSNode child = ancestors.back();
  for (size_t i = ancestors.size() - 1; i-- > 0;) {
    TSNode parent = ancestors[i];
    std::string_view type = node_type(parent);
    TSNode body{};
    if (type == "parenthesized_expression") {
      child = parent;
      continue;
    }
    if (type == "boolean_operator" && text(field(parent, "operator")) == "and") {
      if (ts_node_eq(field(parent, "left"), child)) body = field(parent, "right");
      else {
        child = parent;
        continue;
      }
    } else if ((type == "if_statement" || type == "elif_clause") && ts_node_eq(field(parent, "condition"), child)) {
      body = field(parent, "consequence");
    } else if (type == "conditional_expression" && ts_node_eq(ts_node_named_child(parent, 1), child)) {
      body = ts_node_named_child(parent, 0);
    }
    if (ts_node_is_null(body)) return false;
    // Inside an if's condition, the if's body is what the whole condition guards.
    for (size_t j = i; j-- > 0;) {
      std::string_view up = node_type(ancestors[j]);
      if ((up == "if_statement" || up == "elif_clause") && ts_node_eq(field(ancestors[j], "condition"), ancestors[j + 1])) {
        body = field(ancestors[j], "consequence");
        break;
      }
      if (up != "boolean_operator" && up != "parenthesized_expression") break;
    }
    start = ts_node_start_byte(body);
    end = ts_node_end_byte(body);
    return true;
  }
  return false;
}

// `torch.cuda.device_count()` whose value is only tested (`if n:`, `n > 0`, `not n`) or shown
// (print, logging, an f-string): not used as a process count or to build device lists.
bool Matcher::is_tested(TSNode call, const std::vector<TSNode>& ancestors) const {
  if (ancestors.size() < 2) return false;
  TSNode parent = ancestors[ancestors.size() - 2];
  std::string_view type = node_type(parent);
  if (type == "comparison_operator" || type == "not_operator" || type == "interpolation") return true;
  if (type == "argument_list" && ancestors.size() >= 3) {
    std::string_view fn = last_segment(syntax_, field(ancestors[ancestors.size() - 3], "function"));
    return fn == "print" || fn == "info" || fn == "debug" || fn == "warning" || fn == "log" || fn == "format";
  }
  if (type == "if_statement" || type == "elif_clause" || type == "while_statement")
    return ts_node_eq(field(parent, "condition"), call);
  if (type == "boolean_operator") return true;
  return false;
}

// Event(enable_timing=...) with anything but a literal False.
bool Matcher::times_events(TSNode call) const {
  for (TSNode arg : named_children(field(call, "arguments")))
    if (is_type(arg, "keyword_argument") && text(field(arg, "name")) == "enable_timing" &&
        text(field(arg, "value")) != "False")
      return true;
  return false;
}

// `node` is (part of) what an assignment, augmented assignment or `del` stores to or deletes.
bool Matcher::is_store_target(TSNode node, const std::vector<TSNode>& ancestors) {
  TSNode child = node;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    std::string_view type = node_type(*it);
    if (type == "pattern_list" || type == "tuple_pattern" || type == "list_pattern" || type == "expression_list" ||
        type == "tuple" || type == "list" || type == "list_splat_pattern") {
      child = *it;
      continue;
    }
    if (type == "assignment" || type == "augmented_assignment") return ts_node_eq(field(*it, "left"), child);
    return type == "delete_statement";
  }
  return false;
}

// On the CPU (cpu, and device-agnostic's fallback) torch.cpu.Stream takes only `priority` and
// has only wait_stream, wait_event and record_event (torch 2.11). A stream made with a device,
// an attribute of the class (`Stream.priority_range()`), or a method it lacks
// (`current_stream().synchronize()`, `s.synchronize()` of a stream named here) is flagged.
bool Matcher::cpu_stream_use(const Rule& rule, TSNode matched, TSNode node, const std::vector<TSNode>& ancestors) {
  if (target_ == Target::Npu) return false;
  bool stream_class = rule.id == "torch.cuda.Stream";
  if (!stream_class && rule.id != "torch.cuda.current_stream") return false;
  std::string where = agnostic() ? "without an accelerator, torch.cpu.Stream" : "torch.cpu.Stream";
  if (!ts_node_eq(matched, node)) {
    plan_.find(rule, node, std::string(text(node)), target_,
               where + " has no `" + std::string(text(field(node, "attribute"))) +
                   "`: choose the value without it (the default priority is 0)");
    return true;
  }
  TSNode parent = ancestors.empty() ? TSNode{} : ancestors.back();
  if (!is_type(parent, "call") || !ts_node_eq(field(parent, "function"), node)) return false;
  if (stream_class) {
    for (TSNode arg : named_children(field(parent, "arguments"))) {
      if (is_type(arg, "comment") || (is_type(arg, "keyword_argument") && text(field(arg, "name")) == "priority")) continue;
      plan_.find(rule, parent, std::string(text(parent)), target_,
                 where + " takes only priority=: drop the device (a stream of the current device)");
      plan_.keep_as_written(parent);
      return true;
    }
  }
  cpu_stream_methods(rule, parent, ancestors);
  return false;
}

// The methods called on a stream made here: on it directly, or through the name it is stored in
// (every read of that spelling in the file; one too many only flags more).
void Matcher::cpu_stream_methods(const Rule& rule, TSNode call, const std::vector<TSNode>& ancestors) {
  auto portable = [](std::string_view m) { return m == "wait_stream" || m == "wait_event" || m == "record_event"; };
  std::string where = agnostic() ? "without an accelerator, torch.cpu.Stream" : "torch.cpu.Stream";
  auto check = [&](TSNode object, const std::vector<TSNode>& up) {
    if (up.empty() || !is_type(up.back(), "attribute") || !ts_node_eq(field(up.back(), "object"), object)) return;
    TSNode use = up.back();
    std::string_view method = text(field(use, "attribute"));
    if (portable(method) || !flagged_stream_uses_.insert(ts_node_start_byte(use)).second) return;
    std::string advice = where + " has only wait_stream, wait_event and record_event";
    if (method == "synchronize") advice += ": synchronize the device module instead (it waits for every stream)";
    plan_.find(rule, use, std::string(text(use)), target_, advice);
    TSNode use_call = up.size() >= 2 ? up[up.size() - 2] : TSNode{};
    bool called = is_type(use_call, "call") && ts_node_eq(field(use_call, "function"), use);
    plan_.keep_as_written(called ? use_call : use);  // `torch.cuda.current_stream().synchronize()` stays whole
  };
  std::vector<TSNode> up(ancestors.begin(), ancestors.end() - 1);  // `ancestors` ends with the call
  check(call, up);
  TSNode parent = up.empty() ? TSNode{} : up.back();
  if (!is_type(parent, "assignment") || !ts_node_eq(field(parent, "right"), call)) return;
  TSNode left = field(parent, "left");
  if (!is_type(left, "identifier") && !is_type(left, "attribute")) return;
  for (const NameUse& use : reads_anywhere(syntax_, text(left))) check(use.node, use.ancestors);
}

// --- assignments --------------------------------------------------------------------------------
// A module-level `_accel_device = ...` (a previous migration's, or the file's own) means the
// definition is not inserted again.
void Matcher::on_assignment(TSNode node, const std::vector<TSNode>& ancestors) {
  TSNode left = field(node, "left");
  if (!is_type(left, "identifier") || text(left) != "_accel_device") return;
  bool top_level = ancestors.size() == 2 && is_type(ancestors[1], "expression_statement");
  if (top_level) plan_.note_device_binding(UINT32_MAX, ts_node_end_byte(node), true);
}

RewritePlan plan_rewrite(const PythonSyntax& syntax, Target target) {
  PlanBuilder plan(syntax, target);
  Matcher(syntax, target, plan).run();
  return plan.finish();
}

}  // namespace crosstrain::migrate
