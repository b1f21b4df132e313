#include "tools/migrate/value_kinds.h"

#include "tools/migrate/argument_context.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

// The names a binding target introduces: `a`, `a, (b, *c)`; an attribute or subscript target
// (`self.rank = rank`, `table[k] = v`) introduces none.
std::vector<TSNode> bound_names(TSNode target) {
  std::vector<TSNode> names, pending{target};
  while (!pending.empty()) {
    TSNode node = pending.back();
    pending.pop_back();
    if (ts_node_is_null(node)) continue;
    std::string_view type = node_type(node);
    if (type == "identifier") {
      names.push_back(node);
    } else if (type == "pattern_list" || type == "tuple_pattern" || type == "list_pattern" || type == "tuple" ||
               type == "list" || type == "parenthesized_expression" || type == "list_splat_pattern") {
      for (TSNode part : named_children(node)) pending.push_back(part);
    }
  }
  return names;
}

}  // namespace

bool int_like_name(std::string_view name) {
  // Not `local_device`: DeepSpeed's accelerator API spells its device string that way
  // (`local_device = get_accelerator().device_name(local_rank)` is "cuda:0").
  static constexpr std::array<std::string_view, 13> kNames = {
      "rank",      "local_rank", "gpu",        "gpu_id",    "gpu_idx",    "gpu_index",    "device_id",
      "device_idx", "device_index", "gpu_rank", "ddp_local_rank", "gpu_num", "cuda_id"};
  for (std::string_view n : kNames)
    if (n == name) return true;
  return false;
}

uint32_t scope_of(const std::vector<TSNode>& ancestors) {
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
    if (is_type(*it, "function_definition") || is_type(*it, "lambda")) return ts_node_start_byte(*it);
  return UINT32_MAX;
}

ValueKinds::ValueKinds(const PythonSyntax& syntax) : syntax_(syntax) {
  walk_named(syntax.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) {
    auto bind_other = [&](TSNode target) {
      for (TSNode name : bound_names(target))
        values_[{scope_of(ancestors), std::string(syntax.text(name))}].push_back(TSNode{});
    };
    std::string_view type = node_type(node);
    if (type == "assignment") {
      TSNode left = field(node, "left"), right = field(node, "right");
      if (is_type(left, "identifier") && !ts_node_is_null(right))
        values_[{scope_of(ancestors), std::string(syntax.text(left))}].push_back(right);
      else if (!is_type(left, "identifier"))
        bind_other(left);
    } else if (type == "augmented_assignment" || type == "for_statement" || type == "as_pattern_target") {
      bind_other(type == "as_pattern_target" ? ts_node_named_child(node, 0) : field(node, "left"));
    }
  });
}

const std::vector<TSNode>* ValueKinds::values_of(std::string_view name, uint32_t scope) const {
  auto it = values_.find(std::make_pair(scope, std::string(name)));
  if (it == values_.end() && scope != UINT32_MAX) it = values_.find(std::make_pair(UINT32_MAX, std::string(name)));
  return it == values_.end() ? nullptr : &it->second;
}

bool ValueKinds::is_int(TSNode expr, uint32_t scope) const { return kind_of(expr, scope, true, 0); }
bool ValueKinds::is_device(TSNode expr, uint32_t scope) const { return kind_of(expr, scope, false, 0); }

bool ValueKinds::kind_of(TSNode expr, uint32_t scope, bool want_int, int depth) const {
  if (ts_node_is_null(expr) || depth > 4) return false;
  std::string_view type = node_type(expr);
  if (type == "parenthesized_expression") return kind_of(ts_node_named_child(expr, 0), scope, want_int, depth + 1);
  if (type == "integer") return want_int;
  if (type == "string" || type == "concatenated_string") return !want_int;
  if (type == "conditional_expression") {
    // a if test else b: both branches must agree.
    return kind_of(ts_node_named_child(expr, 0), scope, want_int, depth + 1) &&
           kind_of(ts_node_named_child(expr, 2), scope, want_int, depth + 1);
  }
  if (type == "binary_operator") {
    // `rank % n_devices`, `node * per_node + local_rank`: integer arithmetic stays an int.
    std::string_view op = syntax_.text(field(expr, "operator"));
    return want_int && (op == "%" || op == "//" || op == "+" || op == "-" || op == "*") &&
           kind_of(field(expr, "left"), scope, true, depth + 1) && kind_of(field(expr, "right"), scope, true, depth + 1);
  }
  if (type == "call") {
    std::string_view fn = last_segment(syntax_, field(expr, "function"));
    if (!want_int) return fn == "device";
    if (fn == "max" || fn == "min") {
      std::vector<TSNode> args = named_children(field(expr, "arguments"));
      return !args.empty() && std::all_of(args.begin(), args.end(), [&](TSNode a) { return kind_of(a, scope, true, depth + 1); });
    }
    return fn == "int" || fn == "get_rank" || fn == "get_local_rank" || fn == "current_device_index" ||
           fn == "device_count" || fn == "get_world_size";
  }
  if (type == "attribute") {
    std::string_view last = syntax_.text(field(expr, "attribute"));
    return want_int ? int_like_name(last) : last == "device";
  }
  if (type == "identifier") {
    std::string_view name = syntax_.text(expr);
    const std::vector<TSNode>* values = values_of(name, scope);
    if (!values) return want_int && int_like_name(name);
    for (TSNode value : *values)
      if (!kind_of(value, scope, want_int, depth + 1)) return false;
    return true;
  }
  return false;
}

}  // namespace crosstrain::migrate
