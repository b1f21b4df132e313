#include "tools/migrate/python_syntax.h"

#include <cstring>
#include <stdexcept>

extern "C" const TSLanguage* tree_sitter_python(void);

namespace crosstrain::migrate {

PythonSyntax::PythonSyntax(std::string_view source) : source_(source) {
  if (source.size() > UINT32_MAX) throw std::runtime_error("file larger than 4 GiB");
  parser_ = ts_parser_new();
  if (!parser_ || !ts_parser_set_language(parser_, tree_sitter_python())) {
    if (parser_) ts_parser_delete(parser_);
    throw std::runtime_error("tree-sitter could not load the Python grammar (ABI mismatch)");
  }
  tree_ = ts_parser_parse_string(parser_, nullptr, source.data(), static_cast<uint32_t>(source.size()));
  if (!tree_) {
    ts_parser_delete(parser_);
    throw std::runtime_error("tree-sitter failed to parse");
  }
}

PythonSyntax::~PythonSyntax() {
  ts_tree_delete(tree_);
  ts_parser_delete(parser_);
}

TSNode PythonSyntax::root() const { return ts_tree_root_node(tree_); }

bool PythonSyntax::has_errors() const { return ts_node_has_error(root()); }

size_t PythonSyntax::first_error_line() const {
  TSNode node = root();
  if (!ts_node_has_error(node)) return 0;
  // Descend into the first child that carries the error until the error node itself.
  for (;;) {
    if (ts_node_is_error(node) || ts_node_is_missing(node)) return line_of(node);
    bool descended = false;
    uint32_t count = ts_node_child_count(node);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode child = ts_node_child(node, i);
      if (ts_node_has_error(child)) {
        node = child;
        descended = true;
        break;
      }
    }
    if (!descended) return line_of(node);
  }
}

std::string_view PythonSyntax::text(TSNode node) const {
  uint32_t start = ts_node_start_byte(node), end = ts_node_end_byte(node);
  if (end > source_.size() || start > end) return {};
  return source_.substr(start, end - start);
}

unsigned python_grammar_abi_version() { return ts_language_version(tree_sitter_python()); }

std::string_view node_type(TSNode node) {
  if (ts_node_is_null(node)) return {};
  return ts_node_type(node);
}

TSNode field(TSNode node, const char* name) {
  return ts_node_child_by_field_name(node, name, static_cast<uint32_t>(std::strlen(name)));
}

std::vector<TSNode> named_children(TSNode node) {
  std::vector<TSNode> out;
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode child = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(child)) out.push_back(child);
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
  return out;
}

}  // namespace crosstrain::migrate
