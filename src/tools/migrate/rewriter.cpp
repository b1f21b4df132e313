// Matching: one pass over the syntax tree with an explicit ancestor stack (no recursion, so deep
// nesting in hostile input cannot overflow the C++ stack). Each match becomes a candidate Change
// or a Finding; rewrite_plan.cpp then resolves nesting and adds the inserted lines.
#include "tools/migrate/rewriter.h"

#include "tools/migrate/argument_context.h"
#include "tools/migrate/rewrite_plan.h"

#include <algorithm>
#include <map>

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

class Matcher {
 public:
  Matcher(const PythonSyntax& syntax, Target target, PlanBuilder& plan)
      : syntax_(syntax), target_(target), plan_(plan) {}

  void run() {
    TSTreeCursor cursor = ts_tree_cursor_new(syntax_.root());
    std::vector<TSNode> ancestors;
    for (;;) {
      TSNode node = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(node)) visit(node, ancestors);
      if (ts_tree_cursor_goto_first_child(&cursor)) {
        ancestors.push_back(node);
        continue;
      }
      bool done = false;
      while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
        if (!ts_tree_cursor_goto_parent(&cursor)) {
          done = true;
          break;
        }
        ancestors.pop_back();
      }
      if (done) break;
    }
    ts_tree_cursor_delete(&cursor);
  }

 private:
  std::string_view text(TSNode node) const { return syntax_.text(node); }
  TemplateValues values(std::string_view index = {}, std::string_view prefix = {}) const {
    TemplateValues v;
    v.torch = plan_.torch_name();
    v.index = index;
    v.prefix = prefix;
    v.self_free = agnostic() && in_device_definition();
    return v;
  }

  // True inside the value assigned to a variable named `device` (`device = <here>`): a rewrite
  // there must not read `device`, which is not bound yet.
  bool in_device_definition() const {
    if (!ancestors_) return false;
    uint32_t at = ts_node_start_byte(current_);
    for (auto it = ancestors_->rbegin(); it != ancestors_->rend(); ++it) {
      if (!is_type(*it, "assignment")) continue;
      TSNode left = field(*it, "left"), right = field(*it, "right");
      if (is_type(left, "identifier") && text(left) == "device" && !ts_node_is_null(right) &&
          at >= ts_node_start_byte(right))
        return true;
    }
    return false;
  }

  // Start byte of the innermost function or lambda around the current node; UINT32_MAX = module.
  uint32_t scope() const {
    if (!ancestors_) return UINT32_MAX;
    for (auto it = ancestors_->rbegin(); it != ancestors_->rend(); ++it)
      if (is_type(*it, "function_definition") || is_type(*it, "lambda")) return ts_node_start_byte(*it);
    return UINT32_MAX;
  }

  // The change just added reads the module-level `device` (device-agnostic only).
  void note_device_use() {
    if (agnostic() && !in_device_definition()) plan_.mark_last_uses_device(scope());
  }
  std::string expand(std::string_view templ, std::string_view index = {}, std::string_view prefix = {}) const {
    return expand_template(templ, target_, values(index, prefix));
  }
  std::string_view per_target(const Rule& rule) const { return rule.per_target[static_cast<size_t>(target_)]; }
  bool agnostic() const { return target_ == Target::DeviceAgnostic; }

  void visit(TSNode node, const std::vector<TSNode>& ancestors) {
    current_ = node;
    ancestors_ = &ancestors;
    std::string_view type = node_type(node);
    if (type == "attribute") on_attribute(node, ancestors);
    else if (type == "call") on_call(node);
    else if (type == "string") on_string(node, ancestors);
    else if (type == "import_statement") on_import(node);
    else if (type == "import_from_statement") on_import_from(node);
    else if (type == "assignment") on_assignment(node, ancestors);
    else if (type == "parameters" || type == "lambda_parameters") on_parameters(node);
    else if (type == "global_statement" || type == "nonlocal_statement") on_global(node);
    else if (type == "for_statement") on_for(node);
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
    if (path.substr(0, 4) != "cuda" && path.substr(0, 14) != "backends.cudnn") return;
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
      const Rule& rule = rule_by_id("torch.cuda.amp");
      plan_.replace(rule, module_node, "torch.amp", "import from torch.amp");
      for (TSNode child : names) {
        bool aliased = is_type(child, "aliased_import");
        std::string_view name = text(aliased ? field(child, "name") : child);
        std::string_view local = aliased ? text(field(child, "alias")) : name;
        if (name == "autocast" || name == "GradScaler") amp_names_.emplace(std::string(local), std::string(name));
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
    if (last == "is_cuda") {
      plan_.find(rule_by_id("is_cuda"), node, std::string(text(node)), target_);
      return;
    }
    if (last == "CUDA" && chain.size() >= 1) {
      TSNode object = field(node, "object");
      std::string_view object_text = text(object);
      if (object_text == "ProfilerActivity" || (object_text.size() > 17 &&
          object_text.substr(object_text.size() - 17) == ".ProfilerActivity")) {
        const Rule& rule = rule_by_id("profiler-activity");
        plan_.replace(rule, node, expand(per_target(rule), {}, object_text), "");
        note_device_use();
        return;
      }
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
    if (path.substr(0, 4) != "cuda" && path.substr(0, 14) != "backends.cudnn") return;
    if (path.substr(0, 4) == "cuda" && path.size() > 4 && path[4] != '.') return;  // torch.cudart, ...
    const Rule* rule = find_torch_api_rule(path);
    if (!rule) return;
    std::string_view key = rule->id.substr(6);
    size_t key_segments = static_cast<size_t>(std::count(key.begin(), key.end(), '.')) + 1;
    TSNode matched = chain[chain.size() - key_segments];  // attribute node spanning `torch.<key>`
    std::string api = "torch." + path;
    std::string_view replacement = per_target(*rule);
    if (rule->action == RuleAction::Report || replacement.empty()) {
      plan_.find(*rule, matched, api, target_);
      return;
    }
    bool is_function = is_type(parent, "call") && ts_node_eq(field(parent, "function"), node);
    if (is_function && ts_node_eq(matched, node) &&
        (rule->id == "torch.cuda.amp.autocast" || rule->id == "torch.cuda.amp.GradScaler")) {
      amp_call(*rule, parent, matched, expand(replacement));
      return;
    }
    plan_.replace(*rule, matched, expand(replacement), "");
    if (replacement.find("{device") != std::string_view::npos) note_device_use();
  }

  // --- calls --------------------------------------------------------------------------------------
  void on_call(TSNode call) {
    TSNode function = field(call, "function");
    TSNode args = field(call, "arguments");
    if (is_type(function, "identifier")) {
      std::string_view name = text(function);
      auto amp = amp_names_.find(std::string(name));
      if (amp != amp_names_.end()) {
        amp_call(rule_by_id("torch.cuda.amp." + amp->second), call, TSNode{}, "");
      } else if (name == "is_nccl_available") {
        nccl_available(call, function);
      } else if (name == "CUDAExtension") {
        plan_.find(rule_by_id("cuda-extension"), function, "CUDAExtension", target_);
      }
      return;
    }
    if (!is_type(function, "attribute") || !is_type(args, "argument_list")) return;
    TSNode attr = field(function, "attribute");
    std::string_view method = text(attr);
    if (method == "is_nccl_available") {
      nccl_available(call, attr);
    } else if (method == "CUDAExtension") {
      plan_.find(rule_by_id("cuda-extension"), function, std::string(text(function)), target_);
    } else if (method == "cuda") {
      TSNode object = field(function, "object");
      if (is_type(object, "identifier") && plan_.is_torch_alias(text(object))) return;
      tensor_cuda(call, attr, args);
    }
  }

  void nccl_available(TSNode call, TSNode name) {
    const Rule& rule = rule_by_id("is_nccl_available");
    plan_.replace_span(rule, ts_node_start_byte(name), ts_node_end_byte(call), call, expand(per_target(rule)), "");
    note_device_use();
  }

  // `.cuda(index, non_blocking)` -> `.to(<device>, non_blocking=...)`. Edits stay small (the
  // method name, around the index) so CUDA references inside the arguments are migrated too.
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
    std::vector<SpanEdit> edits;
    edits.push_back({ts_node_start_byte(attr), ts_node_end_byte(attr), "to"});
    // The index expression is kept in place; the target's template is split around it.
    static constexpr std::string_view kMarker = "\x01index\x01";
    std::string wrapped = expand("{device_at_index}", kMarker);
    size_t marker = wrapped.find(kMarker);
    auto wrap = [&](uint32_t index_start, uint32_t index_end, uint32_t replace_from) {
      if (marker == std::string::npos) {
        edits.push_back({replace_from, index_end, wrapped});
        return;
      }
      if (replace_from == index_start) edits.push_back({index_start, index_start, wrapped.substr(0, marker)});
      else edits.push_back({replace_from, index_start, wrapped.substr(0, marker)});
      edits.push_back({index_end, index_end, wrapped.substr(marker + kMarker.size())});
    };
    TSNode index = !positional.empty() ? positional[0] : ts_node_is_null(device_keyword) ? TSNode{} : field(device_keyword, "value");
    uint32_t open = ts_node_start_byte(args) + 1;
    if (ts_node_is_null(index)) {
      edits.push_back({open, open, expand("{device}") + (count ? ", " : "")});
    } else if (text(index) == "None") {
      uint32_t from = ts_node_is_null(device_keyword) ? ts_node_start_byte(index) : ts_node_start_byte(device_keyword);
      edits.push_back({from, ts_node_end_byte(index), expand("{device}")});
    } else {
      uint32_t from = ts_node_is_null(device_keyword) ? ts_node_start_byte(index) : ts_node_start_byte(device_keyword);
      wrap(ts_node_start_byte(index), ts_node_end_byte(index), from);
    }
    if (positional.size() >= 2) {
      uint32_t at = ts_node_start_byte(positional[1]);
      edits.push_back({at, at, "non_blocking="});
    }
    plan_.add(rule, std::move(edits), call, "`" + std::string(text(call)) + "`: " + std::string(rule.message));
    if (!ts_node_is_null(index) && text(index) != "None") plan_.mark_last_keeps_index();
    note_device_use();
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
    note_device_use();
  }

  // --- assignments --------------------------------------------------------------------------------
  // `device = ...`: on device-agnostic the file's own device variable is kept (and rewritten as a
  // whole when it is a plain CUDA device), so no second definition is inserted at module level; in
  // a function it makes `device` a local, which rewrites before it must not read.
  void on_assignment(TSNode node, const std::vector<TSNode>& ancestors) {
    if (!agnostic()) return;
    TSNode left = field(node, "left");
    TSNode right = field(node, "right");
    if (!is_type(left, "identifier") || text(left) != "device") return;
    bool top_level = ancestors.size() == 2 && is_type(ancestors[1], "expression_statement");
    plan_.note_device_binding(scope(), ts_node_end_byte(node), top_level);
    if (!ts_node_is_null(right)) plan_.note_device_assignment(right);
  }

  void on_for(TSNode node) {
    TSNode left = field(node, "left");
    if (agnostic() && is_type(left, "identifier") && text(left) == "device")
      plan_.note_device_binding(scope(), ts_node_end_byte(left), false);
  }

  // A parameter, `global device` or `nonlocal device` binds `device` for the whole function
  // (`parameters` sits inside its function, so scope() names that function).
  void on_parameters(TSNode node) {
    if (!agnostic()) return;
    for (TSNode p : named_children(node)) {
      TSNode name = is_type(p, "identifier") ? p : field(p, "name");
      if (!ts_node_is_null(name) && text(name) == "device") plan_.note_device_parameter(scope());
    }
  }
  void on_global(TSNode node) {
    if (!agnostic()) return;
    for (TSNode name : named_children(node))
      if (text(name) == "device") plan_.note_device_parameter(scope());
  }

  // --- string literals ----------------------------------------------------------------------------
  void on_string(TSNode node, const std::vector<TSNode>& ancestors) {
    std::vector<TSNode> parts = named_children(node);
    if (parts.size() < 2 || !is_type(parts.front(), "string_start") || !is_type(parts.back(), "string_end")) return;
    std::string_view start = text(parts.front());
    bool fstring = start.find_first_of("fF") != std::string_view::npos;
    if (start.find_first_of("bB") != std::string_view::npos) return;
    uint32_t content_begin = ts_node_end_byte(parts.front());
    uint32_t content_end = ts_node_start_byte(parts.back());
    if (content_end < content_begin || content_end - content_begin > 64) return;
    std::string_view content = syntax_.source().substr(content_begin, content_end - content_begin);
    bool interpolated = std::any_of(parts.begin(), parts.end(), [](TSNode p) { return is_type(p, "interpolation"); });
    char quote = start.back();

    if (!interpolated && content.size() > 3 &&
        (content.substr(content.size() - 3) == ".cu" || content.substr(content.size() - 4) == ".cuh")) {
      if (context_of(node, ancestors).kind != ArgContext::Docstring)
        plan_.find(rule_by_id("cuda-extension"), node, std::string(content), target_);
      return;
    }
    if (!interpolated && content == "nccl") {
      if (context_of(node, ancestors).kind == ArgContext::Backend) {
        const Rule& rule = rule_by_id("nccl-backend");
        plan_.replace(rule, node, requote(expand(per_target(rule)), quote), "");
        note_device_use();
      }
      return;
    }
    if (fstring && interpolated && content.substr(0, 5) == "cuda:" && parts.size() > 2 &&
        is_type(parts[1], "string_content")) {
      fstring_device(node, content_begin, ancestors);
      return;
    }
    if (interpolated) return;
    auto [is_cuda, index] = parse_cuda_string(content);
    if (!is_cuda) return;
    auto [context, call_args] = context_of(node, ancestors);
    bool indexed = false;
    std::string replacement;
    const Rule* rule = nullptr;
    switch (context) {
      case ArgContext::Docstring:
        return;
      case ArgContext::None:
      case ArgContext::Backend:
        plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_);
        return;
      case ArgContext::DeviceType:
        rule = &rule_by_id("device-type-string");
        replacement = expand("{device_type}");
        break;
      case ArgContext::Device:
      case ArgContext::MapLocation:
        rule = &rule_by_id("device-string");
        if (index.empty() || (context == ArgContext::MapLocation && agnostic())) replacement = expand("{device}");
        else replacement = indexed_device(index);
        break;
      case ArgContext::TorchDevice: {
        rule = &rule_by_id("device-type-string");
        bool sole = !ts_node_is_null(call_args) && named_children(call_args).size() == 1 &&
                    ts_node_eq(named_children(call_args)[0], node);
        if (index.empty()) replacement = expand("{device_type}");
        else if (sole && agnostic()) replacement = expand("{device_type}") + ", " + std::string(index);
        else replacement = indexed_device(index);
        // torch.device("cuda", rank): the index is the next argument.
        if (!ts_node_is_null(call_args) && named_children(call_args).size() > 1) indexed = true;
        break;
      }
    }
    plan_.replace(*rule, node, requote(replacement, quote), "");
    if (indexed || !index.empty()) plan_.mark_last_keeps_index();
    note_device_use();
  }

  // "cuda:N" -> the target's device at index N; a string stays a string on npu ("npu:N").
  std::string indexed_device(std::string_view index) const {
    if (target_ == Target::Npu) return "\"npu:" + std::string(index) + "\"";
    return expand("{device_at_index}", index);
  }

  // f"cuda:{rank}" -> f"{device.type}:{rank}" / f"npu:{rank}": only the "cuda" bytes change.
  void fstring_device(TSNode node, uint32_t content_begin, const std::vector<TSNode>& ancestors) {
    auto context = context_of(node, ancestors).kind;
    if (context != ArgContext::Device && context != ArgContext::TorchDevice && context != ArgContext::MapLocation) {
      plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_);
      return;
    }
    if (context == ArgContext::MapLocation && agnostic()) {
      plan_.replace(rule_by_id("device-string"), node, expand("{device}"), "");
      note_device_use();
      return;
    }
    std::string type = agnostic() ? "{device.type}" : std::string(target_ == Target::Npu ? "npu" : "cpu");
    if (agnostic() && in_device_definition()) {
      // Inside the f-string the expression may not reuse its quote character (before Python 3.12).
      std::string expr = expand("{device_type}");
      char quote = text(named_children(node).front()).back();
      std::replace(expr.begin(), expr.end(), '"', quote == '"' ? '\'' : '"');
      type = "{" + expr + "}";
    }
    plan_.replace_span(rule_by_id("device-string"), content_begin, content_begin + 4, node, type, "");
    plan_.mark_last_keeps_index();
    note_device_use();
  }

  // A plain "..." replacement keeps the source's quote character.
  static std::string requote(std::string text, char quote) {
    if (quote == '\'' && text.size() >= 2 && text.front() == '"' && text.back() == '"' &&
        text.find('\'') == std::string::npos && text.find('"', 1) == text.size() - 1) {
      text.front() = '\'';
      text.back() = '\'';
    }
    return text;
  }

  ArgumentContext context_of(TSNode node, const std::vector<TSNode>& ancestors) const {
    return classify_string_position(syntax_, node, ancestors,
                                    [this](std::string_view name) { return plan_.is_torch_alias(name); });
  }

  const PythonSyntax& syntax_;
  Target target_;
  TSNode current_{};
  const std::vector<TSNode>* ancestors_ = nullptr;
  PlanBuilder& plan_;
  std::map<std::string, std::string> amp_names_;  // local name -> "autocast" | "GradScaler"
};

}  // namespace

RewritePlan plan_rewrite(const PythonSyntax& syntax, Target target) {
  PlanBuilder plan(syntax, target);
  Matcher(syntax, target, plan).run();
  return plan.finish();
}

}  // namespace crosstrain::migrate
