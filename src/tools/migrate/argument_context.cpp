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
      return {ArgContext::None, {}};
    }
    if (type == "argument_list") {
      TSNode call = (it + 1 < ancestors.rend()) ? *(it + 1) : TSNode{};
      if (!is_type(call, "call")) return {ArgContext::None, {}};
      size_t position = 0;
      for (TSNode arg : named_children(parent)) {
        if (ts_node_eq(arg, child)) break;
        if (!is_type(arg, "keyword_argument") && !is_type(arg, "comment")) ++position;
      }
      if (position != 0) return {ArgContext::None, {}};
      TSNode function = field(call, "function");
      std::string_view fn = last_segment(syntax, function);
      TSNode object = is_type(function, "attribute") ? field(function, "object") : TSNode{};
      bool torch_attribute = is_type(object, "identifier") && is_torch(text(object));
      if (fn == "startswith" || fn == "endswith") return {ArgContext::Comparison, {}};
      // String methods take text, not devices (and a migrated `.replace("cuda", ...)` stays as is).
      if (fn == "replace" || fn == "find" || fn == "split" || fn == "count") return {ArgContext::Keyed, {}};
      if (fn == "to" || fn == "set_default_device") return {ArgContext::Device, parent};
      if (fn == "device" && (text(function) == "device" || torch_attribute)) return {ArgContext::TorchDevice, parent};
      if (fn == "autocast" || fn == "GradScaler") return {ArgContext::DeviceType, parent};
      if (fn == "init_process_group" || fn == "new_group") return {ArgContext::Backend, parent};
      return {ArgContext::None, {}};
    }
    if (type == "assignment" || type == "augmented_assignment") {
      TSNode left = field(parent, "left");
      if (ts_node_eq(left, child)) return {ArgContext::None, {}};
      return {name_context(last_segment(syntax, left)), {}};
    }
    if (type == "default_parameter" || type == "typed_default_parameter")
      return {name_context(text(field(parent, "name"))), {}};
    return {ArgContext::None, {}};
  }
  return {ArgContext::None, {}};
}

}  // namespace crosstrain::migrate
