// Matching: one pass over the syntax tree with an explicit ancestor stack (no recursion, so deep
// nesting in hostile input cannot overflow the C++ stack). Each match becomes a candidate Change
// or a Finding; rewrite_plan.cpp then resolves nesting and adds the inserted lines.
#include "tools/migrate/rewriter.h"

#include "tools/migrate/argument_context.h"
#include "tools/migrate/cuda_guard.h"
#include "tools/migrate/device_strings.h"
#include "tools/migrate/rewrite_plan.h"
#include "tools/migrate/value_kinds.h"

#include <algorithm>
#include <map>
#include <set>

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

// Inside a type annotation (`scaler: Optional[GradScaler]`, `-> GradScaler`): evaluated at most
// once, never called.
// The torch.<path> references the rule table speaks about: torch.cuda (not torch.cudart),
// torch.backends.cudnn / .cuda settings and the autograd profiler's NVTX ranges.
bool has_prefix(std::string_view path, std::string_view prefix) {
  return path.substr(0, prefix.size()) == prefix && (path.size() == prefix.size() || path[prefix.size()] == '.');
}
bool is_cuda_path(std::string_view path) {
  return has_prefix(path, "cuda") || has_prefix(path, "backends.cudnn") || has_prefix(path, "backends.cuda") ||
         has_prefix(path, "autograd.profiler.emit_nvtx");
}

// A test that passes only where an accelerator is present (`torch.accelerator.is_available()`,
// `torch.cuda.is_available()`, `_accel_device.type != "cpu"`), not negated.
bool is_availability_test(std::string_view test) {
  if (test.find("not ") != std::string_view::npos) return false;
  return test.find("is_available()") != std::string_view::npos ||
         test.find("_accel_device.type != \"cpu\"") != std::string_view::npos;
}

bool in_annotation(const std::vector<TSNode>& ancestors) {
  return std::any_of(ancestors.begin(), ancestors.end(), [](TSNode a) { return is_type(a, "type"); });
}

class Matcher {
 public:
  Matcher(const PythonSyntax& syntax, Target target, PlanBuilder& plan)
      : syntax_(syntax), target_(target), plan_(plan), kinds_(syntax), guards_(syntax, target == Target::Cpu), strings_(syntax, target, plan, guards_) {}

  void run() {
    find_amp_references();
    walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) { visit(node, ancestors); });
  }

 private:
  std::string_view text(TSNode node) const { return syntax_.text(node); }
  TemplateValues values(std::string_view index = {}, std::string_view prefix = {}) const {
    TemplateValues v;
    v.torch = plan_.torch_name();
    v.index = index;
    v.prefix = prefix;
    return v;
  }

  // Start byte of the innermost function or lambda around the current node; UINT32_MAX = module.
  uint32_t scope() const { return ancestors_ ? scope_of(*ancestors_) : UINT32_MAX; }

  std::string expand(std::string_view templ, std::string_view index = {}, std::string_view prefix = {}) const {
    return expand_template(templ, target_, values(index, prefix));
  }
  std::string expand_value(std::string_view templ, std::string_view value) const {
    TemplateValues v = values();
    v.value = value;
    return expand_template(templ, target_, v);
  }
  std::string_view per_target(const Rule& rule) const { return rule.per_target[static_cast<size_t>(target_)]; }
  bool agnostic() const { return target_ == Target::DeviceAgnostic; }

  void visit(TSNode node, const std::vector<TSNode>& ancestors) {
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
                     type == "identifier";
    if (!matchable || guards_.guarded(node, ancestors)) return;
    if (type == "attribute") on_attribute(node, ancestors);
    else if (type == "call") on_call(node);
    else if (type == "string") strings_.on_string(node, ancestors);
    else if (type == "binary_operator") strings_.on_percent_format(node, ancestors);
    else if (type == "identifier") on_identifier(node, ancestors);
  }

  // --- entry points (npu: `import torch_npu` goes only into files that run as programs) ----------
  void on_if(TSNode node, const std::vector<TSNode>& ancestors) {
    if (ancestors.size() != 1) return;
    std::string_view condition = text(field(node, "condition"));
    if (condition.find("__name__") != std::string_view::npos && condition.find("__main__") != std::string_view::npos)
      plan_.note_entry_point();
  }
  void on_expression_statement(TSNode node, const std::vector<TSNode>& ancestors) {
    if (ancestors.size() == 1 && is_type(ts_node_named_child(node, 0), "call")) plan_.note_entry_point();
  }

  // --- imports ---------------------------------------------------------------------------------
  void report_module(std::string_view module, TSNode node) {
    std::string_view root = module.substr(0, module.find('.'));
    const char* rule = nullptr;
    if (root == "apex") rule = "apex";
    else if (root == "cupy") rule = "cupy";
    else if (root == "pynvml" || root == "nvidia_smi") rule = "pynvml";
    else if (root == "triton") rule = "triton";
    else if (module.substr(0, 11) == "nvidia.dali") rule = "dali";
    if (rule) plan_.find(rule_by_id(rule), node, std::string(module), target_);
  }

  void on_import(TSNode node) {
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
  void report_torch_module(std::string_view module, TSNode node) {
    if (module.substr(0, 6) != "torch.") return;
    std::string_view path = module.substr(6);
    if (!is_cuda_path(path)) return;
    const Rule* rule = find_torch_api_rule(path);
    if (rule && rule->action == RuleAction::Report) plan_.find(*rule, node, std::string(module), target_);
  }

  void on_import_from(TSNode node) {
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
    report_module(module, module_node);
  }

  // Pre-pass: names imported from torch.cuda.amp that are used other than as the callee of a call
  // (`ctx = autocast if amp else nullcontext`). Those uses are flagged and the import is kept.
  void find_amp_references() {
    std::map<std::string, std::string, std::less<>> imported;  // local name -> name in torch.cuda.amp
    walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>&) {
      if (!is_type(node, "import_from_statement") || text(field(node, "module_name")) != "torch.cuda.amp") return;
      for (TSNode child : named_children(node)) {
        if (is_type(child, "aliased_import"))
          imported.emplace(text(field(child, "alias")), text(field(child, "name")));
        else if (is_type(child, "dotted_name") && !ts_node_eq(child, field(node, "module_name")))
          imported.emplace(text(child), text(child));
      }
    });
    if (imported.empty()) return;
    walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) {
      auto found = imported.find(text(node));
      if (!is_type(node, "identifier") || found == imported.end() || ancestors.empty()) return;
      TSNode parent = ancestors.back();
      if (is_type(parent, "decorator") && is_custom_amp(found->second)) return;
      for (TSNode a : ancestors)
        if (is_type(a, "import_from_statement") || is_type(a, "import_statement")) return;
      if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), node)) return;
      if (is_type(parent, "attribute") && !ts_node_eq(field(parent, "object"), node)) return;
      if (is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node)) return;
      if (in_annotation(ancestors)) return;
      amp_referenced_.emplace(text(node));
    });
  }

  void on_identifier(TSNode node, const std::vector<TSNode>& ancestors) {
    auto amp = amp_names_.find(std::string(text(node)));
    if (amp != amp_names_.end() && is_custom_amp(amp->second) && !ancestors.empty() &&
        is_type(ancestors.back(), "decorator")) {
      custom_amp_decorator(rule_by_id("torch.cuda.amp." + amp->second), node, TSNode{}, "");
      return;
    }
    if (!amp_referenced_.count(text(node)) || ancestors.empty()) return;
    TSNode parent = ancestors.back();
    for (TSNode a : ancestors)
      if (is_type(a, "import_from_statement")) return;
    if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), node)) return;
    if (is_type(parent, "attribute") || is_type(parent, "keyword_argument") || in_annotation(ancestors)) return;
    plan_.find(rule_by_id("amp-reference"), node, std::string(text(node)), target_, amp_reference_advice(text(node)));
  }

  // --- attribute chains --------------------------------------------------------------------------
  // `torch.cuda.x.y`: outermost attribute node of a chain whose base is an identifier.
  void on_attribute(TSNode node, const std::vector<TSNode>& ancestors) {
    TSNode parent = ancestors.empty() ? TSNode{} : ancestors.back();
    if (is_type(parent, "attribute") && ts_node_eq(field(parent, "object"), node)) return;

    std::vector<TSNode> chain;  // chain[0] = outermost attribute node
    TSNode cur = node;
    while (is_type(cur, "attribute")) {
      chain.push_back(cur);
      cur = field(cur, "object");
    }
    std::string_view last = text(field(node, "attribute"));
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
    if (base == "apex" || base == "cupy" || base == "pynvml" || base == "triton") {
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
    if (!is_cuda_path(path)) return;
    const Rule* rule = find_torch_api_rule(path);
    if (!rule) return;
    std::string_view key = rule->id.substr(6);
    size_t key_segments = static_cast<size_t>(std::count(key.begin(), key.end(), '.')) + 1;
    TSNode matched = chain[chain.size() - key_segments];  // attribute node spanning `torch.<key>`
    std::string api = "torch." + path;
    std::string_view replacement = per_target(*rule);
    bool is_function = is_type(parent, "call") && ts_node_eq(field(parent, "function"), node);
    if (replacement == "{keep}" && !(rule->id == "torch.cuda.device_count" && !is_tested(parent, ancestors))) return;
    if (rule->action == RuleAction::Report || replacement.empty()) {
      plan_.find(*rule, matched, api, target_);
      if (finding_fails_check(*rule) && is_type(parent, "call")) plan_.keep_as_written(parent);
      return;
    }
    if (rule->id == "torch.cuda.device_count" && (!is_function || !is_tested(parent, ancestors))) {
      plan_.find(rule_by_id("device-count-number"), matched, std::string(is_function ? text(parent) : text(node)), target_);
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
    if (rule->family == "memory" && is_function && ts_node_eq(matched, node) &&
        replacement.find("accelerator.memory") != std::string_view::npos) {
      accelerator_memory_call(*rule, parent, matched, expand(replacement));
      return;
    }
    if (rule->id == "torch.cuda.is_available" && is_function && ts_node_eq(matched, node)) {
      uint32_t body_start = 0, body_end = 0;
      if (guarded_body(ancestors, body_start, body_end)) {
        plan_.replace_guard(*rule, matched, expand(replacement), body_start, body_end);
        return;
      }
    }
    plan_.replace(*rule, matched, expand(replacement), "");
  }

  // The code `torch.cuda.is_available()` (the callee's call is ancestors.back()) guards: the body
  // of its `if`/`elif`, the first branch of its conditional expression, the right operand of `and`.
  bool guarded_body(const std::vector<TSNode>& ancestors, uint32_t& start, uint32_t& end) const {
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

  static bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  }

  // `Backend.NCCL` is the string "nccl": as a backend it becomes the target's, as in a comparison
  // it is flagged where the target's backend makes the test false.
  void backend_nccl(TSNode node, const std::vector<TSNode>& ancestors) {
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

  static bool is_custom_amp(std::string_view name) { return name == "custom_fwd" || name == "custom_bwd"; }

  // torch.cuda.amp.custom_fwd(...) is torch.amp.custom_fwd(..., device_type="cuda"): the keyword
  // goes after the last argument (a keyword-only parameter, so after any positional one).
  void custom_amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
    TSNode args = field(call, "arguments");
    if (!is_type(args, "argument_list")) return;
    std::vector<TSNode> list;
    for (TSNode arg : named_children(args))
      if (!is_type(arg, "comment")) list.push_back(arg);
    std::string keyword = "device_type=" + expand("{device_type}");
    std::vector<SpanEdit> edits;
    if (!ts_node_is_null(name)) edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
    if (list.empty()) {
      uint32_t open = ts_node_start_byte(args) + 1;
      edits.push_back({open, open, keyword});
    } else {
      uint32_t after = ts_node_end_byte(list.back());
      edits.push_back({after, after, ", " + keyword});
    }
    plan_.add(rule, std::move(edits), call, std::string(rule.message));
  }

  // `@torch.cuda.amp.custom_fwd` decorates with device_type "cuda"; torch.amp.custom_fwd called
  // with only device_type returns the decorator that does the same.
  void custom_amp_decorator(const Rule& rule, TSNode reference, TSNode name, const std::string& new_name) {
    std::vector<SpanEdit> edits;
    if (!ts_node_is_null(name)) edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
    uint32_t end = ts_node_end_byte(reference);
    edits.push_back({end, end, "(device_type=" + expand("{device_type}") + ")"});
    plan_.add(rule, std::move(edits), reference, std::string(rule.message));
  }

  // torch.accelerator.memory.* take the device positionally only: `device=d` loses its keyword.
  void accelerator_memory_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
    std::vector<SpanEdit> edits{{ts_node_start_byte(name), ts_node_end_byte(name), new_name}};
    TSNode args = field(call, "arguments");
    for (TSNode arg : named_children(args))
      if (is_type(arg, "keyword_argument") && text(field(arg, "name")) == "device")
        edits.push_back({ts_node_start_byte(arg), ts_node_start_byte(field(arg, "value")), ""});
    plan_.add(rule, std::move(edits), call, "device passed positionally: torch.accelerator.memory takes no keywords");
  }

  // A reference to GradScaler needs the device bound as its first argument, one to autocast the
  // device type (the rule's own advice).
  std::string amp_reference_advice(std::string_view api) const {
    std::string_view last = api.substr(api.rfind('.') == std::string_view::npos ? 0 : api.rfind('.') + 1);
    if (is_custom_amp(last))
      return "torch.amp." + std::string(last) + " needs device_type: use functools.partial(torch.amp." +
             std::string(last) + ", device_type=" + expand("{device_type}") + ")";
    if (api.size() < 10 || api.substr(api.size() - 10) != "GradScaler") return {};
    return "torch.amp.GradScaler needs the device: use functools.partial(torch.amp.GradScaler, " +
           expand("{device_type}") + ")";
  }

  // `torch.cuda.device_count()` whose value is only tested (`if n:`, `n > 0`, `not n`) or shown
  // (print, logging, an f-string): not used as a process count or to build device lists.
  bool is_tested(TSNode call, const std::vector<TSNode>& ancestors) const {
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
  bool times_events(TSNode call) const {
    for (TSNode arg : named_children(field(call, "arguments")))
      if (is_type(arg, "keyword_argument") && text(field(arg, "name")) == "enable_timing" &&
          text(field(arg, "value")) != "False")
        return true;
    return false;
  }

  // --- calls --------------------------------------------------------------------------------------
  void on_call(TSNode call) {
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
      }
      if (is_type(args, "argument_list")) device_keywords(call, name, args);
      return;
    }
    if (!is_type(function, "attribute") || !is_type(args, "argument_list")) return;
    TSNode attr = field(function, "attribute");
    std::string_view method = text(attr);
    device_keywords(call, method, args);
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
    } else if (method == "format") {
      strings_.on_format_call(call, *ancestors_);
    } else if (method == "pin_memory") {
      pin_memory_call(call, function, args);
    }
    pin_memory_keyword(call, function, args);
  }

  // --- pinned memory -------------------------------------------------------------------------------
  // Pinning needs an accelerator: without one `.pin_memory()` and `pin_memory=True` raise. npu keeps
  // them (torch_npu pins for the NPU); DataLoader(pin_memory=True) only warns and is not matched.
  bool availability_guarded(TSNode node) const {
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
  bool is_fresh_tensor(TSNode expr) const {
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
  bool alone_on_line(TSNode statement) const {
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

  void pin_memory_call(TSNode call, TSNode function, TSNode args) {
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
  void pin_memory_keyword(TSNode call, TSNode function, TSNode args) {
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
  void device_keywords(TSNode call, std::string_view callee, TSNode args) {
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
  void int_device(TSNode value) {
    const Rule& rule = rule_by_id("int-rank-device");
    static constexpr std::string_view kMarker = "\x01index\x01";
    std::string wrapped = expand(per_target(rule), kMarker);
    size_t marker = wrapped.find(kMarker);
    std::vector<SpanEdit> edits;
    uint32_t start = ts_node_start_byte(value), end = ts_node_end_byte(value);
    if (marker == std::string::npos) {
      edits.push_back({start, end, wrapped});
    } else {
      edits.push_back({start, start, wrapped.substr(0, marker)});
      edits.push_back({end, end, wrapped.substr(marker + kMarker.size())});
    }
    plan_.add(rule, std::move(edits), value, "`" + std::string(text(value)) + "`: " + std::string(rule.message));
  }

  void int_to(TSNode args) {
    std::vector<TSNode> list = named_children(args);
    if (list.empty() || is_type(list[0], "keyword_argument")) return;
    device_value(list[0]);
  }

  // `.to(x)` / `device=x`: an int becomes the target's device at x. A name that conventionally
  // holds an index (rank, gpu, ...) but is bound here to something unknown (a loop, a call) is
  // flagged; on cpu, where every placement means "cpu", it is rewritten all the same.
  void device_value(TSNode value) {
    if (kinds_.is_int(value, scope())) {
      int_device(value);
    } else if (is_type(value, "identifier") && int_like_name(text(value)) && !kinds_.is_device(value, scope())) {
      if (target_ == Target::Cpu) int_device(value);
      else plan_.find(rule_by_id("int-device"), value, std::string(text(value)), target_);
    }
  }

  void nccl_available(TSNode call, TSNode name) {
    const Rule& rule = rule_by_id("is_nccl_available");
    plan_.replace_span(rule, ts_node_start_byte(name), ts_node_end_byte(call), call, expand(per_target(rule)), "");
  }

  // `.cuda(x, non_blocking)` -> `.to(<device>, non_blocking=...)`, proven per kind of x: no x (the
  // current CUDA device, as `.to("cuda")`), an int (cuda:x), a device (x itself). Anything else is
  // flagged: `.cuda(x)` with x of unknown kind cannot be rewritten safely.
  void tensor_cuda(TSNode call, TSNode attr, TSNode args) {
    const Rule& rule = rule_by_id("tensor.cuda");
    std::vector<TSNode> positional;
    TSNode device_keyword{};
    size_t count = 0;
    for (TSNode arg : named_children(args)) {
      std::string_view type = node_type(arg);
      if (type == "comment") continue;
      if (type == "list_splat" || type == "dictionary_splat") {
        plan_.find(rule, call, std::string(text(call)), target_, "arguments unpacked with * or **: port by hand");
        return;
      }
      if (type == "keyword_argument") {
        if (text(field(arg, "name")) == "device") {
          if (count != 0) {  // `.to()` takes the device first; a late device= keyword is rare
            plan_.find(rule, call, std::string(text(call)), target_, "device= after other arguments: port by hand");
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
  bool is_storage(TSNode object) const {
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

  // torch.cuda.amp.autocast(...) / GradScaler(...) -> torch.amp.*, adding the device argument.
  // `name` is the attribute chain to rename (null for a name imported from torch.cuda.amp).
  void amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
    TSNode args = field(call, "arguments");
    if (!is_type(args, "argument_list")) return;
    std::vector<TSNode> positional;
    size_t count = 0;
    for (TSNode arg : named_children(args)) {
      std::string_view type = node_type(arg);
      if (type == "comment") continue;
      if (type == "list_splat" || type == "dictionary_splat") {
        plan_.find(rule, call, std::string(text(call)), target_, "arguments unpacked with * or **: add the device by hand");
        return;
      }
      if (type != "keyword_argument") positional.push_back(arg);
      ++count;
    }
    std::vector<SpanEdit> edits;
    if (!ts_node_is_null(name))
      edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
    uint32_t open = ts_node_start_byte(args) + 1;
    std::string device_type = expand("{device_type}");
    bool autocast = rule.id == "torch.cuda.amp.autocast";
    if (autocast) {
      edits.push_back({open, open, "device_type=" + device_type + (count ? ", " : "")});
      static const char* kNames[] = {"enabled=", "dtype=", "cache_enabled="};
      for (size_t i = 0; i < positional.size() && i < 3; ++i) {
        uint32_t at = ts_node_start_byte(positional[i]);
        edits.push_back({at, at, kNames[i]});
      }
    } else if (positional.empty()) {
      edits.push_back({open, open, "device=" + device_type + (count ? ", " : "")});
    } else {
      edits.push_back({open, open, device_type + ", "});
    }
    plan_.add(rule, std::move(edits), call, std::string(rule.message));
  }

  // --- assignments --------------------------------------------------------------------------------
  // A module-level `_accel_device = ...` (a previous migration's, or the file's own) means the
  // definition is not inserted again.
  void on_assignment(TSNode node, const std::vector<TSNode>& ancestors) {
    TSNode left = field(node, "left");
    if (!is_type(left, "identifier") || text(left) != "_accel_device") return;
    bool top_level = ancestors.size() == 2 && is_type(ancestors[1], "expression_statement");
    if (top_level) plan_.note_device_binding(UINT32_MAX, ts_node_end_byte(node), true);
  }

  const PythonSyntax& syntax_;
  Target target_;
  TSNode current_{};
  const std::vector<TSNode>* ancestors_ = nullptr;
  PlanBuilder& plan_;
  ValueKinds kinds_;
  CudaGuards guards_;
  DeviceStrings strings_;
  std::map<std::string, std::string> amp_names_;  // local name -> "autocast" | "GradScaler" | "custom_fwd" | ...
  std::set<std::string, std::less<>> amp_referenced_;  // of those, names used as values
};

}  // namespace

RewritePlan plan_rewrite(const PythonSyntax& syntax, Target target) {
  PlanBuilder plan(syntax, target);
  Matcher(syntax, target, plan).run();
  return plan.finish();
}

}  // namespace crosstrain::migrate
