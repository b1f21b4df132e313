#pragma once
// Collects the matches of one file into a RewritePlan: keeps candidates and findings, resolves
// nested matches (outer wins), and inserts the module-level lines a rewrite needs (the definition
// of `_accel_device`, `import torch_npu` in a program's entry file).
// Internal to tools/migrate: rewriter.cpp feeds it, plan_rewrite() returns what finish() builds.
#include "tools/migrate/python_syntax.h"
#include "tools/migrate/rewriter.h"
#include "tools/migrate/rule_table.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace crosstrain::migrate {

// The edits that put the bytes [start, end) of a value where `marker` stands in `wrapped`: the
// value's own bytes stay, so rewrites inside it still apply (in parentheses when `parens`).
// Without the marker, `wrapped` replaces them.
std::vector<SpanEdit> wrap_span(const std::string& wrapped, std::string_view marker, uint32_t start, uint32_t end,
                                bool parens = false);

class PlanBuilder {
 public:
  PlanBuilder(const PythonSyntax& syntax, Target target);

  void add_torch_alias(std::string_view name);
  bool is_torch_alias(std::string_view name) const;
  std::string_view torch_name() const { return torch_name_; }
  void note_torch_npu_import() { has_torch_npu_ = true; }
  // `_accel_device` becomes bound at module level once execution passes `end`.
  void note_device_binding(uint32_t scope, uint32_t end, bool top_level);
  // The file runs as a program (a `__main__` guard or a module-level call).
  void note_entry_point() { entry_point_ = true; }

  void replace(const Rule& rule, TSNode node, std::string text, std::string message);
  void replace_span(const Rule& rule, uint32_t start, uint32_t end, TSNode node, std::string text, std::string message);
  void add(const Rule& rule, std::vector<SpanEdit> edits, TSNode node, std::string message);
  void find(const Rule& rule, TSNode node, std::string api, Target target, std::string advice = {});
  // A rewrite of a test (`torch.cuda.is_available()`) that is dropped when the code it guards,
  // [body_start, body_end), keeps a finding that fails --check: the test then stays as written.
  void replace_guard(const Rule& rule, TSNode node, std::string text, uint32_t body_start, uint32_t body_end);
  // The same for a test whose value is stored and tested elsewhere: it guards every span given.
  void replace_guard(const Rule& rule, TSNode node, std::string text, std::vector<std::pair<uint32_t, uint32_t>> bodies);
  // A flagged call stays as written, arguments included: no rewrite is made inside `node`.
  void keep_as_written(TSNode node) { kept_.emplace_back(ts_node_start_byte(node), ts_node_end_byte(node)); }

  RewritePlan finish();

 private:
  size_t line_at(uint32_t offset) const;  // 1-based
  std::vector<Change> resolve_nesting(std::vector<Change> candidates) const;
  std::vector<Change> drop_unsafe(std::vector<Change> candidates) const;
  void insert_module_lines(std::vector<Change>& accepted);
  TSNode optional_torch_import(const std::vector<TSNode>& statements, std::string& alias) const;
  Change inserted(const Rule& rule, uint32_t offset, std::string line) const;

  const PythonSyntax& syntax_;
  Target target_;
  std::vector<uint32_t> line_starts_;
  std::set<std::string, std::less<>> torch_aliases_{"torch"};
  std::string torch_name_ = "torch";
  bool alias_recorded_ = false;
  bool has_torch_npu_ = false;
  bool entry_point_ = false;
  std::map<uint32_t, uint32_t> first_binding_end_;  // scope -> where `_accel_device` is first bound
  std::vector<Change> candidates_;
  std::vector<Finding> findings_;
  std::map<size_t, std::vector<std::pair<uint32_t, uint32_t>>> guard_bodies_;  // candidate index -> guarded code
  std::vector<std::pair<uint32_t, uint32_t>> kept_;                // spans of flagged calls
};

}  // namespace crosstrain::migrate
