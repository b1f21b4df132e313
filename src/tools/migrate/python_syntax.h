#pragma once
// A parsed Python source file, backed by tree-sitter and its Python grammar.
//
// PythonSyntax owns the parser's tree for one source buffer; nodes stay valid while it lives and
// the buffer it was built from is unchanged. It is the only unit that knows tree-sitter's C API
// lifetimes; the rewriter reads nodes through the small helpers below. Construction never throws
// for bad Python: syntax errors show up as has_errors() (tree-sitter always yields a tree).
// Large literal data is blanked before parsing (data_literals.h): offsets, lines and text() are
// those of the source, the inside of such a bracket is one `0` node.
#include <tree_sitter/api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crosstrain::migrate {

// One replacement in a source buffer: bytes [start, end) of the old text become `text`.
struct TextEdit {
  uint32_t start;
  uint32_t end;
  std::string_view text;
};

class PythonSyntax {
 public:
  // Throws std::runtime_error only when the parser itself cannot be set up (ABI mismatch, memory).
  explicit PythonSyntax(std::string_view source);
  // Incremental parse of `source`, which must be `previous.source()` with `edits` applied (sorted,
  // non-overlapping, in the order they were applied). tree-sitter reuses the unchanged parts of
  // the previous tree and yields the tree a fresh parse would.
  PythonSyntax(std::string_view source, const PythonSyntax& previous, const std::vector<TextEdit>& edits);
  ~PythonSyntax();
  PythonSyntax(const PythonSyntax&) = delete;
  PythonSyntax& operator=(const PythonSyntax&) = delete;

  TSNode root() const;
  // True when the tree holds ERROR or MISSING nodes: the file is not valid Python for the grammar.
  bool has_errors() const;
  // 1-based line of the first ERROR/MISSING node, 0 when there is none.
  size_t first_error_line() const;

  std::string_view text(TSNode node) const;
  std::string_view source() const { return source_; }

 private:
  void parse(const TSTree* old_tree);

  std::string_view source_;
  std::string elided_;  // what the parser read when data literals were blanked; empty otherwise
  TSParser* parser_ = nullptr;
  TSTree* tree_ = nullptr;
};

// Grammar ABI version of the linked Python grammar (for diagnostics and tests).
unsigned python_grammar_abi_version();

// Node helpers; a null TSNode is returned where the child does not exist.
std::string_view node_type(TSNode node);
TSNode field(TSNode node, const char* name);
std::vector<TSNode> named_children(TSNode node);
inline size_t line_of(TSNode node) { return ts_node_start_point(node).row + 1; }
inline size_t end_line_of(TSNode node) { return ts_node_end_point(node).row + 1; }

// Calls fn(node, ancestors) for every named node under `root`, root included, in source order;
// `ancestors` runs from the root down to the node's parent.
template <typename Fn>
void walk_named(TSNode root, Fn&& fn) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::vector<TSNode> ancestors;
  for (;;) {
    TSNode node = ts_tree_cursor_current_node(&cursor);
    if (ts_node_is_named(node)) fn(node, ancestors);
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

}  // namespace crosstrain::migrate
