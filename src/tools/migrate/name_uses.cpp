#include "tools/migrate/name_uses.h"

namespace crosstrain::migrate {

namespace {

bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

bool opens_scope(TSNode node) {
  return is_type(node, "function_definition") || is_type(node, "lambda") || is_type(node, "class_definition");
}

// `node` is read where it stands: not the name of an attribute, a keyword or an assignment target.
bool is_read(TSNode node, const std::vector<TSNode>& ancestors) {
  if (ancestors.empty()) return true;
  TSNode parent = ancestors.back();
  if (is_type(parent, "attribute") && ts_node_eq(field(parent, "attribute"), node)) return false;
  if (is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node)) return false;
  if ((is_type(parent, "assignment") || is_type(parent, "augmented_assignment")) &&
      ts_node_eq(field(parent, "left"), node))
    return is_type(parent, "augmented_assignment");  // `n += 1` reads n
  return true;
}

}  // namespace

std::vector<NameUse> reads_in_scope(const PythonSyntax& syntax, const std::vector<TSNode>& path, size_t depth,
                                    std::string_view name) {
  std::vector<NameUse> uses;
  if (depth == 0) return uses;
  size_t scope = 0;  // index in path of the scope's node (the root when none)
  for (size_t i = depth; i-- > 0;)
    if (is_type(path[i], "function_definition") || is_type(path[i], "lambda")) {
      scope = i;
      break;
    }
  const TSNode scope_node = path[scope];
  walk_named(scope_node, [&](TSNode node, const std::vector<TSNode>& below) {
    if (!is_type(node, "identifier") || syntax.text(node) != name) return;
    for (size_t i = 1; i < below.size(); ++i)
      if (opens_scope(below[i])) return;
    std::vector<TSNode> ancestors(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(scope));
    ancestors.insert(ancestors.end(), below.begin(), below.end());
    if (is_read(node, ancestors)) uses.push_back({node, std::move(ancestors)});
  });
  return uses;
}

std::vector<NameUse> reads_anywhere(const PythonSyntax& syntax, std::string_view spelling) {
  std::vector<NameUse> uses;
  const bool dotted = spelling.find('.') != std::string_view::npos;
  walk_named(syntax.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) {
    if (!is_type(node, dotted ? "attribute" : "identifier") || syntax.text(node) != spelling) return;
    if (is_read(node, ancestors)) uses.push_back({node, ancestors});
  });
  return uses;
}

}  // namespace crosstrain::migrate
