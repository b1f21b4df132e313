#include "tools/migrate/argument_context.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

ArgContext name_context(std::string_view name) {
  if (contains_ci(name, "device")) return ArgContext::Device;
  if (contains_ci(name, "backend")) return ArgContext::Backend;
  return ArgContext::None;
}

std::string_view string_content(const PythonSyntax& syntax, TSNode node) {
  std::string_view s = syntax.text(node);
  size_t open = s.find_first_of("\"'");
  if (open == std::string_view::npos) return {};
  size_t close = s.find_last_of("\"'");
  return close > open ? s.substr(open + 1, close - open - 1) : std::string_view{};
}

// The name a value is stored under: `x`, `self.x`, `cfg["x"]`.
std::string_view target_name(const PythonSyntax& syntax, TSNode left) {
  if (is_type(left, "subscript")) {
    TSNode index = field(left, "subscript");
    return is_type(index, "string") ? string_content(syntax, index) : std::string_view{};
  }
  return last_segment(syntax, left);
}

// `parser.add_argument("--device", default="cuda")`: the option's names (and dest=) say what its
// default is.
ArgContext option_context(const PythonSyntax& syntax, TSNode call) {
  if (!is_type(call, "call") || last_segment(syntax, field(call, "function")) != "add_argument") return ArgContext::None;
  for (TSNode arg : named_children(field(call, "arguments"))) {
    TSNode name = arg;
    if (is_type(arg, "keyword_argument")) {
      if (syntax.text(field(arg, "name")) != "dest") continue;
      name = field(arg, "value");
    }
    if (!is_type(name, "string")) continue;
    ArgContext context = name_context(string_content(syntax, name));
    if (context != ArgContext::None) return context;
  }
  return ArgContext::None;
}

// absl's `flags.DEFINE_string("device", "cuda", ...)`: the flag's name says what its default is.
ArgContext flag_context(const PythonSyntax& syntax, TSNode arguments) {
  std::vector<TSNode> args = named_children(arguments);
  return !args.empty() && is_type(args[0], "string") ? name_context(string_content(syntax, args[0])) : ArgContext::None;
}

// Calls whose string arguments are text: messages and paths, never devices.
bool takes_text(const PythonSyntax& syntax, TSNode function) {
  static const std::set<std::string_view> kText = {
      "print", "info", "debug", "warning", "warn", "error", "critical", "exception", "write",
      "open", "Path", "PurePath", "PosixPath", "glob", "iglob", "listdir", "makedirs", "mkdir",
      "exists", "isdir", "isfile", "joinpath"};
  std::string_view fn = last_segment(syntax, function);
  std::string_view callee = syntax.text(function);
  return kText.count(fn) || (callee.size() >= 9 && callee.substr(callee.size() - 9) == "path.join");
}

bool is_attribute_builtin(std::string_view fn) {
  return fn == "getattr" || fn == "hasattr" || fn == "setattr" || fn == "delattr";
}

// An assignment statement directly in a class body: a class attribute (an Enum member).
bool in_class_body(const std::vector<TSNode>& ancestors, size_t assignment) {
  return assignment >= 3 && is_type(ancestors[assignment - 1], "expression_statement") &&
         is_type(ancestors[assignment - 2], "block") && is_type(ancestors[assignment - 3], "class_definition");
}

}  // namespace

bool contains_ci(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return it != text.end();
}

bool equals_ignoring_case(std::string_view text, std::string_view lower) {
  return text.size() == lower.size() && contains_ci(text, lower);
}

std::pair<bool, std::string_view> parse_cuda_string(std::string_view value) {
  if (value == "cuda") return {true, {}};
  if (value.size() > 5 && value.substr(0, 5) == "cuda:") {
    std::string_view digits = value.substr(5);
    if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return {true, digits};
  }
  return {false, {}};
}

std::string_view last_segment(const PythonSyntax& syntax, TSNode node) {
  if (is_type(node, "attribute")) return syntax.text(field(node, "attribute"));
  if (is_type(node, "identifier")) return syntax.text(node);
  return {};
}

ArgumentContext classify_string_position(const PythonSyntax& syntax, TSNode node, const std::vector<TSNode>& ancestors,
                                         const std::function<bool(std::string_view)>& is_torch) {
  static const std::set<std::string_view> kPassThrough = {
      "conditional_expression", "parenthesized_expression", "boolean_operator", "list", "tuple",
      "expression_list", "set"};
  auto text = [&syntax](TSNode n) { return syntax.text(n); };
  TSNode child = node;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    TSNode parent = *it;
    std::string_view type = node_type(parent);
    if (kPassThrough.count(type)) {
      child = parent;
      continue;
    }
    if (type == "expression_statement") return {ArgContext::Docstring, {}};
    // Tests and tables already name the device they mean: {"cuda": "nccl", "npu": "hccl"}.
    if (type == "comparison_operator") return {ArgContext::Comparison, {}};
    // A configuration entry {"device": "cuda"} is a device; other keys and values are not.
    if (type == "pair" && ts_node_eq(field(parent, "value"), child)) {
      // map_location={"cuda:1": "cuda:0"}: each value is where the storages saved under its key go.
      if (it + 2 < ancestors.rend() && is_type(*(it + 1), "dictionary") && is_type(*(it + 2), "keyword_argument") &&
          text(field(*(it + 2), "name")) == "map_location")
        return {ArgContext::MapLocation, {}};
      TSNode key = field(parent, "key");
      ArgContext context = is_type(key, "string") ? name_context(text(key)) : ArgContext::None;
      if (context != ArgContext::None) return {context, {}};
    }
    if (type == "dictionary" || type == "pair" || type == "subscript" || type == "dictionary_comprehension")
      return {ArgContext::Keyed, {}};
    if (type == "keyword_argument") {
      std::string_view name = text(field(parent, "name"));
      TSNode call = (it + 2 < ancestors.rend()) ? *(it + 2) : TSNode{};
      if (name == "device_type") return {ArgContext::DeviceType, {}};
      if (name == "device" && is_type(call, "call") && last_segment(syntax, field(call, "function")) == "GradScaler")
        return {ArgContext::DeviceType, {}};
      if (name == "map_location") return {ArgContext::MapLocation, {}};
      if (name == "choices") return {ArgContext::Keyed, {}};
      if (name == "device" || name == "output_device") return {ArgContext::Device, {}};
      if (name == "backend") return {ArgContext::Backend, {}};
      if (name == "default") return {option_context(syntax, call), {}};
      // use_device=, target_device=, device_map=: a keyword named for a device takes one.
      return {name_context(name) == ArgContext::Device ? ArgContext::Device : ArgContext::None, {}};
    }
    if (type == "argument_list") {
      TSNode call = (it + 1 < ancestors.rend()) ? *(it + 1) : TSNode{};
      if (!is_type(call, "call")) return {ArgContext::None, {}};
      size_t position = 0;
      for (TSNode arg : named_children(parent)) {
        if (ts_node_eq(arg, child)) break;
        if (!is_type(arg, "keyword_argument") && !is_type(arg, "comment")) ++position;
      }
      TSNode function = field(call, "function");
      std::string_view fn = last_segment(syntax, function);
      if (takes_text(syntax, function) || (position == 1 && is_attribute_builtin(text(function))))
        return {ArgContext::Text, {}};
      if (position == 1 && fn.substr(0, 7) == "DEFINE_") return {flag_context(syntax, parent), {}};
      if (position != 0) return {ArgContext::None, {}};
      TSNode object = is_type(function, "attribute") ? field(function, "object") : TSNode{};
      bool torch_attribute = is_type(object, "identifier") && is_torch(text(object));
      if (fn == "startswith" || fn == "endswith") return {ArgContext::Comparison, {}};
      // String methods take text, not devices (and a migrated `.replace("cuda", ...)` stays as is).
      if (fn == "replace" || fn == "find" || fn == "split" || fn == "count") return {ArgContext::Keyed, {}};
      if (fn == "to" || fn == "set_default_device" || fn == "set_device") return {ArgContext::Device, parent};
      if (fn == "device" && (text(function) == "device" || torch_attribute)) return {ArgContext::TorchDevice, parent};
      if (fn == "autocast" || fn == "GradScaler" || fn == "init_device_mesh" || fn == "DeviceMesh")
        return {ArgContext::DeviceType, parent};
      if (fn == "init_process_group" || fn == "new_group") return {ArgContext::Backend, parent};
      return {ArgContext::None, {}};
    }
    if (type == "assignment" || type == "augmented_assignment") {
      TSNode left = field(parent, "left");
      if (ts_node_eq(left, child)) return {ArgContext::None, {}};
      ArgContext context = name_context(target_name(syntax, left));
      size_t index = static_cast<size_t>(ancestors.rend() - it) - 1;
      if (context == ArgContext::None && in_class_body(ancestors, index)) return {ArgContext::Text, {}};
      if (context == ArgContext::None && is_type(left, "identifier") && type == "assignment")
        return {ArgContext::None, {}, index};
      return {context, {}};
    }
    if (type == "default_parameter" || type == "typed_default_parameter")
      return {name_context(text(field(parent, "name"))), {}};
    // `def get_device(): return "cuda"`: the function's name says what it returns.
    if (type == "return_statement") {
      for (auto up = it + 1; up != ancestors.rend(); ++up)
        if (is_type(*up, "function_definition")) return {name_context(text(field(*up, "name"))), {}};
      return {ArgContext::None, {}};
    }
    return {ArgContext::None, {}};
  }
  return {ArgContext::None, {}};
}

}  // namespace crosstrain::migrate
