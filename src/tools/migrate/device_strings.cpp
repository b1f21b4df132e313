#include "tools/migrate/device_strings.h"

#include "tools/migrate/name_uses.h"

#include <algorithm>
#include <cctype>

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

}  // namespace

std::string DeviceStrings::expand(std::string_view templ) const {
  TemplateValues v;
  v.torch = plan_.torch_name();
  return expand_template(templ, target_, v);
}

std::string DeviceStrings::expand_value(std::string_view templ, std::string_view value) const {
  TemplateValues v;
  v.torch = plan_.torch_name();
  v.value = value;
  return expand_template(templ, target_, v);
}

// Replaces `value` by the rule's template around {value}, keeping the value's bytes in place so
// rewrites inside it still apply.
void DeviceStrings::wrap_value(const Rule& rule, TSNode value, TSNode subject) {
  static constexpr std::string_view kMarker = "\x01value\x01";
  std::vector<SpanEdit> edits = wrap_span(expand_value(per_target(rule), kMarker), kMarker, ts_node_start_byte(value),
                                          ts_node_end_byte(value), !is_primary(value));
  plan_.add(rule, std::move(edits), subject,
            "`" + std::string(text(subject)) + "`: " + std::string(rule.message));
}

bool DeviceStrings::is_primary(TSNode node) {
  std::string_view type = node_type(node);
  return type == "identifier" || type == "attribute" || type == "call" || type == "string" || type == "list" ||
         type == "tuple" || type == "parenthesized_expression" || type == "subscript" || type == "integer";
}

// A whole expression that yields "cuda:<index>" (a formatted string, an f-string, a literal).
void DeviceStrings::device_string_expression(TSNode node, const std::vector<TSNode>& ancestors) {
  if (already_replaced(node, ancestors)) return;
  ArgContext context = settled_context(node, ancestors);
  if (context == ArgContext::Text) return;
  if (context == ArgContext::Docstring || context == ArgContext::Comparison || context == ArgContext::Keyed) {
    if (context == ArgContext::Comparison && target_ == Target::Npu)
      plan_.find(rule_by_id("cuda-test"), node, std::string(text(node)), target_);
    return;
  }
  const Rule& rule = rule_by_id("device-string-format");
  if (target_ == Target::Cpu) {
    plan_.replace(rule, node, "\"cpu\"", "");
    return;
  }
  wrap_value(rule, node, node);
}

// `<expr>.replace("cuda", ...)`: a device string expression migrated before.
bool DeviceStrings::already_replaced(TSNode node, const std::vector<TSNode>& ancestors) const {
  TSNode child = node;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    if (is_type(*it, "parenthesized_expression")) {
      child = *it;
      continue;
    }
    return is_type(*it, "attribute") && ts_node_eq(field(*it, "object"), child) &&
           text(field(*it, "attribute")) == "replace";
  }
  return false;
}

// --- string literals ----------------------------------------------------------------------------
void DeviceStrings::on_string(TSNode node, const std::vector<TSNode>& ancestors) {
  // A part of `"cuda" ":0"`: the concatenation is judged whole (on_concatenated).
  if (!ancestors.empty() && is_type(ancestors.back(), "concatenated_string")) return;
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
  if (!interpolated) {
    on_text(node, content, start.back(), ancestors);
    return;
  }
  if (piece_of_build(node, ancestors)) return;
  if (fstring && content.substr(0, 5) == "cuda:" && parts.size() > 2 && is_type(parts[1], "string_content")) {
    fstring_device(node, content_begin, ancestors);
    return;
  }
  if (fstring && literal_text(node).text == "cuda") on_build(node, ancestors);
}

// `"cuda" ":0"`: one string, its whole value; with an f-string part, a string built from pieces.
void DeviceStrings::on_concatenated(TSNode node, const std::vector<TSNode>& ancestors) {
  std::vector<TSNode> parts = named_children(node);
  if (parts.empty() || !is_type(parts.front(), "string")) return;
  for (TSNode part : parts) {
    std::string_view start = text(ts_node_named_child(part, 0));
    if (start.find_first_of("bB") != std::string_view::npos) return;
  }
  Leading lead = literal_text(node);
  if (lead.text.size() > 64) return;
  if (lead.whole) {
    on_text(node, lead.text, text(ts_node_named_child(parts.front(), 0)).back(), ancestors);
    return;
  }
  if (piece_of_build(node, ancestors)) return;
  if (lead.text == "cuda" || lead.text.substr(0, 5) == "cuda:") device_string_expression(node, ancestors);
}

// A piece of a larger string-building expression: that expression decides (on_build), unless the
// piece lies too deep in it for the verdict to reach (then it is flagged here).
bool DeviceStrings::piece_of_build(TSNode node, const std::vector<TSNode>& ancestors) {
  if (!is_cuda_piece(node)) return false;
  bool too_deep = false;
  TSNode root = build_root(node, ancestors, &too_deep);
  size_t depth = 0;  // levels from the build's root down to the piece; its verdict looks 32 deep
  for (auto it = ancestors.rbegin(); !ts_node_is_null(root) && it != ancestors.rend() && !ts_node_eq(*it, root); ++it)
    ++depth;
  if (too_deep || depth >= 30) {
    plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_,
               "a \"cuda\" piece deep inside a string built here: build the device string from the target's type");
    return true;
  }
  return !ts_node_is_null(root);
}

// A string without interpolations whose value is `content` (a literal, or a concatenation).
void DeviceStrings::on_text(TSNode node, std::string_view content, char quote, const std::vector<TSNode>& ancestors) {
  if (content.size() > 3 && (content.substr(content.size() - 3) == ".cu" || content.substr(content.size() - 4) == ".cuh")) {
    if (context_of(node, ancestors).kind != ArgContext::Docstring)
      plan_.find(rule_by_id("cuda-extension"), node, std::string(content), target_);
    return;
  }
  if (content == "CUDA_VISIBLE_DEVICES") {
    if (context_of(node, ancestors).kind != ArgContext::Docstring)
      plan_.find(rule_by_id("cuda-visible-devices"), node, std::string(content), target_);
    return;
  }
  if (content == "PYTORCH_CUDA_ALLOC_CONF" || content == "CUDA_LAUNCH_BLOCKING" || content == "CUDA_DEVICE_MAX_CONNECTIONS") {
    if (context_of(node, ancestors).kind != ArgContext::Docstring)
      plan_.find(rule_by_id("cuda-env"), node, std::string(content), target_);
    return;
  }
  if (content == "flash_attention_2" || content == "flash_attention_3") {
    ArgContext context = context_of(node, ancestors).kind;
    if (context != ArgContext::Docstring && context != ArgContext::Comparison && context != ArgContext::Keyed &&
        context != ArgContext::Text)
      plan_.find(rule_by_id("nvidia-kernels"), node, std::string(text(node)), target_);
    return;
  }
  if (composite_backend(node, content, quote, ancestors)) return;
  // torch.distributed.Backend lower-cases its name: "NCCL" is the same backend.
  if (equals_ignoring_case(content, "nccl")) {
    nccl_text(node, quote, ancestors);
    return;
  }
  if (piece_of_build(node, ancestors)) return;
  auto [is_cuda, index] = parse_cuda_string(content);
  if (!is_cuda) {
    // A "cuda:" prefix or template ("cuda:{}", "cuda:%d") used on its own, e.g. kept in a name.
    bool prefix = content == "cuda:" || content.substr(0, 6) == "cuda:{" || content.substr(0, 6) == "cuda:%";
    ArgContext context = prefix ? context_of(node, ancestors).kind : ArgContext::Docstring;
    if (context != ArgContext::Docstring && context != ArgContext::Comparison && context != ArgContext::Keyed &&
        context != ArgContext::Text)
      plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_,
                 "a device prefix kept apart from its index: build the device string from the target's type (" +
                     expand("{device_type}") + ") where it is used");
    return;
  }
  ArgContext context = settled_context(node, ancestors);
  if (context == ArgContext::Docstring || context == ArgContext::Keyed || context == ArgContext::Text) return;
  if (context == ArgContext::Comparison) {
    cuda_test_operand(node, ancestors, quote);
    return;
  }
  if (!index.empty()) {
    // "cuda:1": npu keeps a literal; elsewhere the index goes on the CPU, in torch.device("cuda:1")
    // too (a device that may become torch.load's map_location, which refuses cpu:1).
    if (target_ == Target::Npu) {
      plan_.replace(rule_by_id("device-string"), node, requote("\"npu:" + std::string(index) + "\"", quote), "");
    } else if (target_ == Target::DeviceAgnostic) {
      plan_.replace(rule_by_id("device-string-format"), node,
                    "(f\"{" + expand("{device_type}") + "}:" + std::string(index) + "\" if " + expand("{device_type}") +
                        " != \"cpu\" else \"cpu\")", "");
    } else {
      device_string_expression(node, ancestors);
    }
    return;
  }
  // "cuda" stays a string: the target's device type, equal to "cuda" wherever CUDA is the device.
  const Rule& rule = rule_by_id(context == ArgContext::Device || context == ArgContext::MapLocation
                                    ? "device-string" : "device-type-string");
  plan_.replace(rule, node, requote(expand("{device_type}"), quote), "");
}

// `"cuda:nccl,cpu:gloo"`: a backend per device type. In a backend position its CUDA entry becomes
// the target's (the rest stays; on the CPU the rest alone, with cpu:gloo when no entry names the
// CPU); a CUDA entry with another backend, or such a string elsewhere, is flagged (nccl-string).
bool DeviceStrings::composite_backend(TSNode node, std::string_view content, char quote,
                                      const std::vector<TSNode>& ancestors) {
  if (!contains_ci(content, "cuda:")) return false;
  auto word = [](std::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; });
  };
  bool list = content.find(',') != std::string_view::npos;
  if (!list && !equals_ignoring_case(content, "cuda:nccl")) return false;
  std::vector<std::string_view> rest;
  bool cuda_nccl = false, other_cuda = false, cpu_entry = false;
  for (size_t at = 0; at <= content.size();) {
    size_t comma = std::min(content.find(',', at), content.size());
    std::string_view entry = content.substr(at, comma - at);
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view device = entry.substr(0, colon), backend = entry.substr(colon + 1);
    if (!word(device) || !word(backend)) return false;  // not a per-device list ("cuda:0,cuda:1", a message)
    if (equals_ignoring_case(device, "cuda")) {
      (equals_ignoring_case(backend, "nccl") ? cuda_nccl : other_cuda) = true;
    } else {
      cpu_entry = cpu_entry || equals_ignoring_case(device, "cpu");
      rest.push_back(entry);
    }
    at = comma + 1;
  }
  if (!cuda_nccl && !other_cuda) return false;
  ArgumentContext where = context_of(node, ancestors);
  ArgContext context = where.kind;
  if (context == ArgContext::Docstring || context == ArgContext::Comparison || context == ArgContext::Keyed ||
      context == ArgContext::Text)
    return true;
  auto backend = [](ArgContext kind) { return kind == ArgContext::Backend; };
  if (other_cuda || (context != ArgContext::Backend && !read_as(where, ancestors, backend))) {
    plan_.find(rule_by_id("nccl-string"), node, std::string(text(node)), target_,
               other_cuda ? "a CUDA entry with a backend other than NCCL: give the target's device its backend by hand"
                          : std::string{});
    return true;
  }
  std::string others;
  for (std::string_view entry : rest) others += "," + std::string(entry);
  std::string on_cpu = cpu_entry ? others.substr(1) : "cpu:gloo" + others;
  const Rule& rule = rule_by_id("composite-backend");
  std::string replacement;
  if (target_ == Target::Npu) {
    replacement = requote("\"npu:hccl" + others + "\"", quote);
  } else if (target_ == Target::Cpu) {
    replacement = requote("\"" + on_cpu + "\"", quote);
  } else {
    replacement = "(f\"{_accel_device.type}:{" + std::string(plan_.torch_name()) +
                  ".distributed.get_default_backend_for_device(_accel_device)}" + others +
                  "\" if _accel_device.type != \"cpu\" else \"" + on_cpu + "\")";
  }
  plan_.replace(rule, node, replacement, "");
  return true;
}

// "nccl" is a backend only where a backend is given (backend=, init_process_group, a name or
// option *backend*); elsewhere it is text, or flagged when it may become one (nccl-string).
void DeviceStrings::nccl_text(TSNode node, char quote, const std::vector<TSNode>& ancestors) {
  ArgumentContext where = context_of(node, ancestors);
  ArgContext context = where.kind;
  if (context == ArgContext::Comparison && target_ != Target::DeviceAgnostic)
    plan_.find(rule_by_id("nccl-test"), node, std::string(text(node)), target_);
  if (context == ArgContext::Docstring || context == ArgContext::Comparison || context == ArgContext::Keyed ||
      context == ArgContext::Text)
    return;
  auto backend = [](ArgContext kind) { return kind == ArgContext::Backend; };
  if (context != ArgContext::Backend && !read_as(where, ancestors, backend)) {
    plan_.find(rule_by_id("nccl-string"), node, std::string(text(node)), target_);
    return;
  }
  const Rule& rule = rule_by_id("nccl-backend");
  plan_.replace(rule, node, requote(expand(per_target(rule)), quote), "");
}

// The context of a device-shaped string, settled: the value of a name that is read as a device
// (`dev = "cuda"; x.to(dev)`) is a Device; in any other position that is not a device, a test, a
// table or text, the string is flagged (cuda-string) and Text is returned, so it is left alone.
ArgContext DeviceStrings::settled_context(TSNode node, const std::vector<TSNode>& ancestors) {
  ArgumentContext where = context_of(node, ancestors);
  ArgContext context = where.kind;
  if (context != ArgContext::None && context != ArgContext::Backend) return context;
  if (read_as(where, ancestors, is_device_position)) return ArgContext::Device;
  plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_,
             "a device string outside a device position: if it becomes a device, write the target's type (" +
                 expand("{device_type}") + ") there");
  return ArgContext::Text;
}

// Whether the name `where` assigns is read, in its scope, in a position `wanted` accepts.
bool DeviceStrings::read_as(const ArgumentContext& where, const std::vector<TSNode>& ancestors,
                            bool (*wanted)(ArgContext)) const {
  if (where.assignment == 0 || where.assignment >= ancestors.size()) return false;
  TSNode left = field(ancestors[where.assignment], "left");
  for (const NameUse& use : reads_in_scope(syntax_, ancestors, where.assignment, text(left)))
    if (wanted(context_of(use.node, use.ancestors).kind)) return true;
  return false;
}

// "cuda" compared with a device: left alone (the test is right on CUDA and false elsewhere),
// except in `"cuda" if <this test> else ...`, where test and result change together.
void DeviceStrings::cuda_test_operand(TSNode node, const std::vector<TSNode>& ancestors, char quote) {
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    if (!is_type(*it, "conditional_expression")) continue;
    if (guards_.is_type_derivation(*it)) {
      // Only where the derived string is itself rewritten (a device position): else both stay.
      std::vector<TSNode> above(ancestors.begin(), ancestors.begin() + (ancestors.rend() - it - 1));
      ArgumentContext where = context_of(*it, above);
      if (is_device_position(where.kind) || read_as(where, above, is_device_position))
        plan_.replace(rule_by_id("device-type-string"), node, requote(expand("{device_type}"), quote), "");
      return;
    }
    break;
  }
  if (target_ == Target::Npu) plan_.find(rule_by_id("cuda-test"), node, std::string(text(node)), target_);
}

// f"cuda:{rank}": npu changes only the "cuda" bytes; elsewhere the whole string is a device
// string expression.
void DeviceStrings::fstring_device(TSNode node, uint32_t content_begin, const std::vector<TSNode>& ancestors) {
  if (target_ != Target::Npu) {
    device_string_expression(node, ancestors);
    return;
  }
  ArgContext context = settled_context(node, ancestors);
  if (context == ArgContext::Docstring || context == ArgContext::Keyed || context == ArgContext::Text) return;
  if (context == ArgContext::Comparison) {
    plan_.find(rule_by_id("cuda-test"), node, std::string(text(node)), target_);
    return;
  }
  plan_.replace_span(rule_by_id("device-string"), content_begin, content_begin + 4, node, "npu", "");
}

// A plain "..." replacement keeps the source's quote character.
std::string DeviceStrings::requote(std::string text, char quote) {
  if (quote == '\'' && text.size() >= 2 && text.front() == '"' && text.back() == '"' &&
      text.find('\'') == std::string::npos && text.find('"', 1) == text.size() - 1) {
    text.front() = '\'';
    text.back() = '\'';
  }
  return text;
}

ArgumentContext DeviceStrings::context_of(TSNode node, const std::vector<TSNode>& ancestors) const {
  return classify_string_position(syntax_, node, ancestors,
                                  [this](std::string_view name) { return plan_.is_torch_alias(name); });
}

}  // namespace crosstrain::migrate
