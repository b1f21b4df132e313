#include "tools/migrate/python_syntax.h"

#include "tools/migrate/data_literals.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

extern "C" const TSLanguage* tree_sitter_python(void);

namespace crosstrain::migrate {

PythonSyntax::PythonSyntax(std::string_view source) : source_(source), elided_(elide_data_literals(source)) {
  parse(nullptr);
  if (!elided_.empty() && has_errors()) {  // blanking went wrong somehow: read the source as it is
    ts_tree_delete(tree_);
    ts_parser_delete(parser_);
    elided_.clear();
    parse(nullptr);
  }
}

namespace {

// Byte offset -> (row, byte column) of one buffer.
class PointIndex {
 public:
  explicit PointIndex(std::string_view text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(static_cast<uint32_t>(i + 1));
  }
  TSPoint at(uint32_t offset) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    auto row = static_cast<uint32_t>(it - starts_.begin() - 1);
    return {row, offset - starts_[row]};
  }

 private:
  std::vector<uint32_t> starts_;
};

}  // namespace

PythonSyntax::PythonSyntax(std::string_view source, const PythonSyntax& previous, const std::vector<TextEdit>& edits)
    : source_(source), elided_(elide_data_literals(source)) {
  // The old tree describes what the parser read before: reuse it only when what it reads now is
  // that text with the same edits, else parse afresh.
  std::string_view old_read = previous.elided_.empty() ? previous.source_ : std::string_view(previous.elided_);
  std::string_view new_read = elided_.empty() ? source_ : std::string_view(elided_);
  bool same = new_read.size() == old_read.size() + [&] {
    int64_t growth = 0;
    for (const auto& e : edits) growth += static_cast<int64_t>(e.text.size()) - static_cast<int64_t>(e.end - e.start);
    return growth;
  }();
  for (size_t k = 0, pos = 0, at = 0; same && k <= edits.size(); ++k) {
    size_t stop = k < edits.size() ? edits[k].start : old_read.size();
    same = old_read.substr(pos, stop - pos) == new_read.substr(at, stop - pos);
    at += stop - pos;
    if (k < edits.size()) {
      same = same && new_read.substr(at, edits[k].text.size()) == edits[k].text;
      at += edits[k].text.size();
      pos = edits[k].end;
    }
  }
  if (!same) {
    parse(nullptr);
    return;
  }
  TSTree* old_tree = ts_tree_copy(previous.tree_);
  PointIndex old_points(previous.source_), new_points(source);
  int64_t delta = 0;
  for (const auto& e : edits) {
    // Positions before this edit are final; the old extent is measured in the old text.
    auto start = static_cast<uint32_t>(static_cast<int64_t>(e.start) + delta);
    TSPoint start_point = new_points.at(start);
    TSPoint old_start = old_points.at(e.start), old_end = old_points.at(e.end);
    TSPoint old_end_point = old_end.row == old_start.row
                                ? TSPoint{start_point.row, start_point.column + (old_end.column - old_start.column)}
                                : TSPoint{start_point.row + (old_end.row - old_start.row), old_end.column};
    auto new_end = static_cast<uint32_t>(start + e.text.size());
    TSInputEdit edit{start, start + (e.end - e.start), new_end, start_point, old_end_point, new_points.at(new_end)};
    ts_tree_edit(old_tree, &edit);
    delta += static_cast<int64_t>(e.text.size()) - static_cast<int64_t>(e.end - e.start);
  }
  try {
    parse(old_tree);
  } catch (...) {
    ts_tree_delete(old_tree);
    throw;
  }
  ts_tree_delete(old_tree);
}

void PythonSyntax::parse(const TSTree* old_tree) {
  if (source_.size() > UINT32_MAX) throw std::runtime_error("file larger than 4 GiB");
  parser_ = ts_parser_new();
  if (!parser_ || !ts_parser_set_language(parser_, tree_sitter_python())) {
    if (parser_) ts_parser_delete(parser_);
    throw std::runtime_error("tree-sitter could not load the Python grammar (ABI mismatch)");
  }
  std::string_view read = elided_.empty() ? source_ : std::string_view(elided_);
  tree_ = ts_parser_parse_string(parser_, old_tree, read.data(), static_cast<uint32_t>(read.size()));
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
