// Device strings built from pieces: "cuda:" + str(i), "".join(["cuda:", str(i)]),
// "{}:{}".format("cuda", i), "%s:%d" % ("cuda", i), f"cuda{suffix}". The whole expression is the
// unit: a "cuda" piece rewritten alone would give "cpu:0", which torch.load refuses, and a
// "cuda:" prefix left alone keeps the program on CUDA while --check passes.
#include "tools/migrate/device_strings.h"

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "cuda", "cuda:" or "cuda:<digits>": the beginning of a device string, not of a message.
bool device_like(std::string_view lead) {
  if (lead == "cuda") return true;
  if (!starts_with(lead, "cuda:")) return false;
  return lead.find_first_not_of("0123456789", 5) == std::string_view::npos;
}

}  // namespace

// A plain (not bytes) string's text up to its first interpolation; `whole` when it has none.
DeviceStrings::Leading DeviceStrings::literal_text(TSNode node) const {
  if (is_type(node, "concatenated_string")) {
    Leading lead{"", true};
    for (TSNode part : named_children(node)) {
      Leading piece = literal_text(part);
      lead.text += piece.text;
      if (!piece.whole) return {lead.text, false};
    }
    return lead;
  }
  std::vector<TSNode> parts = named_children(node);
  if (parts.size() < 2 || !is_type(parts.front(), "string_start")) return {};
  if (text(parts.front()).find_first_of("bB") != std::string_view::npos) return {};
  Leading lead{"", true};
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    if (!is_type(parts[i], "string_content")) {
      lead.whole = false;
      break;
    }
    lead.text += text(parts[i]);
  }
  return lead;
}

// The known beginning of the string an expression builds.
DeviceStrings::Leading DeviceStrings::leading_text(TSNode node, int depth) const {
  if (depth > 32) return {};
  std::string_view type = node_type(node);
  if (type == "string" || type == "concatenated_string") return literal_text(node);
  if (type == "parenthesized_expression") return leading_text(ts_node_named_child(node, 0), depth + 1);
  if (type == "binary_operator") {
    std::string_view op = text(field(node, "operator"));
    Leading left = leading_text(field(node, "left"), depth + 1);
    if (op == "%") return {left.text.substr(0, left.text.find('%')), false};
    if (op != "+" || !left.whole) return op == "+" ? left : Leading{};
    Leading right = leading_text(field(node, "right"), depth + 1);
    return {left.text + right.text, right.whole};
  }
  if (type != "call") return {};
  TSNode function = field(node, "function");
  if (!is_type(function, "attribute") || !is_type(field(function, "object"), "string")) return {};
  std::string_view method = text(field(function, "attribute"));
  Leading object = literal_text(field(function, "object"));
  if (method == "format") return {object.text.substr(0, object.text.find('{')), false};
  if (method != "join") return {};
  std::vector<TSNode> args = named_children(field(node, "arguments"));
  if (args.size() != 1 || (!is_type(args[0], "list") && !is_type(args[0], "tuple"))) return {};
  Leading lead{"", true};
  std::vector<TSNode> items = named_children(args[0]);
  for (size_t i = 0; i < items.size() && lead.whole; ++i) {
    Leading item = leading_text(items[i], depth + 1);
    lead.text += (i ? object.text : "") + item.text;
    lead.whole = item.whole && object.whole;
  }
  return lead;
}

// `"...".format(...)` / `"...".join(...)`: a call that builds a string from a literal.
bool DeviceStrings::is_string_method_call(TSNode call) const {
  if (!is_type(call, "call")) return false;
  TSNode function = field(call, "function");
  if (!is_type(function, "attribute") || !is_type(field(function, "object"), "string")) return false;
  std::string_view method = text(field(function, "attribute"));
  return method == "format" || method == "join";
}

// The outermost string-building expression `node` is a piece of (null when it is none): operands
// of `+` and `%`, the template and arguments of `.format`, the items given to `.join`.
TSNode DeviceStrings::build_root(TSNode node, const std::vector<TSNode>& ancestors, bool* too_deep) const {
  if (too_deep) *too_deep = false;
  TSNode root{}, child = node;
  bool in_container = false;
  // Bounded, so a generated chain of thousands of `+` costs linear time, not quadratic.
  const size_t stop = ancestors.size() > 64 ? ancestors.size() - 64 : 0;
  for (size_t i = ancestors.size(); i-- > stop;) {
    TSNode parent = ancestors[i];
    std::string_view type = node_type(parent);
    if (type == "parenthesized_expression") {
      child = parent;
      continue;
    }
    if (type == "tuple" || type == "list") {
      in_container = true;
      child = parent;
      continue;
    }
    if (type == "binary_operator") {
      std::string_view op = text(field(parent, "operator"));
      bool operand_of_percent = op == "%" && (!in_container || ts_node_eq(field(parent, "right"), child));
      if (!operand_of_percent && (op != "+" || in_container)) break;
      root = child = parent;
      in_container = false;
      continue;
    }
    TSNode call = i > 0 ? ancestors[i - 1] : TSNode{};
    if (type == "argument_list" && is_string_method_call(call)) {
      root = child = call;
      in_container = false;
      --i;
      continue;
    }
    if (type == "attribute" && ts_node_eq(field(parent, "object"), child) && !in_container && is_string_method_call(call)) {
      root = child = call;
      --i;
      continue;
    }
    return root;
  }
  // The walk stopped inside a build: its root, and so its verdict, is out of reach.
  if (too_deep && !ts_node_is_null(root)) *too_deep = true;
  return root;
}

// A string piece that names CUDA: "cuda", "cuda:N", a "cuda:" prefix or template, an f-string
// beginning so.
bool DeviceStrings::is_cuda_piece(TSNode node) const {
  if (!is_type(node, "string") && !is_type(node, "concatenated_string")) return false;
  Leading lead = literal_text(node);
  return device_like(lead.text) || starts_with(lead.text, "cuda:{") || starts_with(lead.text, "cuda:%");
}

// Whether a "cuda" piece reaches the string `node` builds: through `+` operands, the template and
// the operand (or tuple) of `%`, and the template and arguments of `.format` / the items of `.join`.
bool DeviceStrings::has_cuda_piece(TSNode node, int depth) const {
  if (depth > 32) return false;
  if (is_cuda_piece(node)) return true;
  std::string_view type = node_type(node);
  std::vector<TSNode> parts;
  if (type == "parenthesized_expression") {
    parts = named_children(node);
  } else if (type == "binary_operator") {
    std::string_view op = text(field(node, "operator"));
    if (op != "+" && op != "%") return false;
    parts = {field(node, "left"), field(node, "right")};
    if (op == "%" && (is_type(parts[1], "tuple") || is_type(parts[1], "parenthesized_expression"))) {
      std::vector<TSNode> items = named_children(parts[1]);
      parts.insert(parts.end(), items.begin(), items.end());
    }
  } else if (is_string_method_call(node)) {
    parts.push_back(field(field(node, "function"), "object"));
    for (TSNode arg : named_children(field(node, "arguments"))) {
      if (is_type(arg, "list") || is_type(arg, "tuple")) {
        std::vector<TSNode> items = named_children(arg);
        parts.insert(parts.end(), items.begin(), items.end());
      } else {
        parts.push_back(arg);
      }
    }
  }
  for (TSNode part : parts)
    if (has_cuda_piece(part, depth + 1)) return true;
  return false;
}

// A string-building expression that is not itself a piece of a larger one.
void DeviceStrings::on_build(TSNode node, const std::vector<TSNode>& ancestors) {
  if (!ts_node_is_null(build_root(node, ancestors))) return;
  Leading lead = leading_text(node, 0);
  bool shaped = device_like(lead.text) && !(lead.whole && lead.text.size() == 5);
  if (!shaped && !has_cuda_piece(node, 0)) return;
  ArgContext context = context_of(node, ancestors).kind;
  bool device = context == ArgContext::Device || context == ArgContext::MapLocation ||
                context == ArgContext::TorchDevice || context == ArgContext::DeviceType;
  if (context == ArgContext::Text) return;
  if (shaped || device || context == ArgContext::Docstring || context == ArgContext::Comparison ||
      context == ArgContext::Keyed) {
    device_string_expression(node, ancestors);
    return;
  }
  plan_.find(rule_by_id("cuda-string"), node, std::string(text(node)), target_,
             "a \"cuda\" piece of a string built here: build the device string from the target's type "
             "(" + expand("{device_type}") + ") or pass a torch.device");
}

}  // namespace crosstrain::migrate
