#include "tools/migrate/cuda_guard.h"

#include "tools/migrate/argument_context.h"

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

}  // namespace

bool is_cuda_literal(const PythonSyntax& syntax, TSNode node) {
  if (!is_type(node, "string")) return false;
  std::vector<TSNode> parts = named_children(node);
  if (parts.size() < 2 || !is_type(parts.front(), "string_start")) return false;
  if (parts.size() == 3 && !is_type(parts[1], "string_content")) return false;
  if (parts.size() > 3) return false;
  std::string_view start = syntax.text(parts.front());
  if (start.find_first_of("bBfF") != std::string_view::npos) return false;
  uint32_t begin = ts_node_end_byte(parts.front()), end = ts_node_start_byte(parts.back());
  if (end < begin) return false;
  return parse_cuda_string(syntax.source().substr(begin, end - begin)).first;
}

bool CudaGuards::is_cuda_test(TSNode condition) const {
  if (ts_node_is_null(condition)) return false;
  uint32_t key = ts_node_start_byte(condition);
  auto it = tests_.find(key);
  if (it != tests_.end()) return it->second;
  bool result = test_uncached(condition, 0, availability_);
  tests_.emplace(key, result);
  return result;
}

bool CudaGuards::test_uncached(TSNode node, int depth, bool availability) const {
  if (ts_node_is_null(node) || depth > 8) return false;
  std::string_view type = node_type(node);
  if (type == "parenthesized_expression") return test_uncached(ts_node_named_child(node, 0), depth + 1, availability);
  if (availability && (type == "identifier" || type == "attribute") && availability_names_.count(syntax_.text(node)))
    return true;
  if (type == "boolean_operator") {
    bool left = test_uncached(field(node, "left"), depth + 1, availability);
    bool right = test_uncached(field(node, "right"), depth + 1, availability);
    std::string_view op = syntax_.text(field(node, "operator"));
    return op == "and" ? (left || right) : (left && right);
  }
  if (type == "attribute") return syntax_.text(field(node, "attribute")) == "is_cuda";
  if (type == "call") {
    TSNode function = field(node, "function");
    if (availability && syntax_.text(function) == "torch.cuda.is_available") return true;
    if (!is_type(function, "attribute") || syntax_.text(field(function, "attribute")) != "startswith") return false;
    std::vector<TSNode> args = named_children(field(node, "arguments"));
    return !args.empty() && is_type(args[0], "string") && syntax_.text(args[0]).find("cuda") != std::string_view::npos;
  }
  if (type == "comparison_operator") {
    bool cuda = false;
    for (TSNode operand : named_children(node)) cuda = cuda || is_cuda_literal(syntax_, operand);
    if (!cuda) return false;
    // Only positive tests guard: `!=` and `not in` pass for every other device.
    uint32_t n = ts_node_child_count(node);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode child = ts_node_child(node, i);
      if (ts_node_is_named(child)) continue;
      std::string_view op = syntax_.text(child);
      if (op == "!=" || op == "not" || op == "not in" || op == "is not") return false;
    }
    return true;
  }
  return false;
}

bool CudaGuards::is_type_derivation(TSNode conditional) const {
  if (!is_type(conditional, "conditional_expression")) return false;
  TSNode value = ts_node_named_child(conditional, 0);
  TSNode test = ts_node_named_child(conditional, 1);
  return is_cuda_literal(syntax_, value) && is_type(test, "comparison_operator") && is_cuda_test(test);
}

bool CudaGuards::guarded(TSNode node, const std::vector<TSNode>& ancestors) const {
  TSNode child = node;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    TSNode parent = *it;
    std::string_view type = node_type(parent);
    if (type == "if_statement" || type == "elif_clause") {
      if (ts_node_eq(field(parent, "consequence"), child) && is_cuda_test(field(parent, "condition"))) return true;
    } else if (type == "boolean_operator") {
      if (ts_node_eq(field(parent, "right"), child) && syntax_.text(field(parent, "operator")) == "and" &&
          is_cuda_test(field(parent, "left")))
        return true;
    } else if (type == "conditional_expression") {
      if (ts_node_eq(ts_node_named_child(parent, 0), child) && is_cuda_test(ts_node_named_child(parent, 1)) &&
          !is_type_derivation(parent))
        return true;
    }
    child = parent;
  }
  return false;
}

}  // namespace crosstrain::migrate
