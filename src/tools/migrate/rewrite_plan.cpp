#include "tools/migrate/rewrite_plan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace crosstrain::migrate {

PlanBuilder::PlanBuilder(const PythonSyntax& syntax, Target target) : syntax_(syntax), target_(target) {
  std::string_view src = syntax.source();
  line_starts_.push_back(0);
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
}

size_t PlanBuilder::line_at(uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<size_t>(std::distance(line_starts_.begin(), it));
}

void PlanBuilder::add_torch_alias(std::string_view name) {
  // Rewrites spell torch the way the file first imported it.
  if (!alias_recorded_) torch_name_ = std::string(name);
  alias_recorded_ = true;
  torch_aliases_.emplace(name);
}

bool PlanBuilder::is_torch_alias(std::string_view name) const { return torch_aliases_.count(name) > 0; }

void PlanBuilder::note_device_binding(uint32_t scope, uint32_t end, bool top_level) {
  if (top_level) scope = UINT32_MAX;
  auto [it, fresh] = first_binding_end_.emplace(scope, end);
  if (!fresh) it->second = std::min(it->second, end);
}


void PlanBuilder::replace(const Rule& rule, TSNode node, std::string text, std::string message) {
  replace_span(rule, ts_node_start_byte(node), ts_node_end_byte(node), node, std::move(text), std::move(message));
}

void PlanBuilder::replace_span(const Rule& rule, uint32_t start, uint32_t end, TSNode node, std::string text,
                               std::string message) {
  std::vector<SpanEdit> edits;
  edits.push_back({start, end, std::move(text)});
  add(rule, std::move(edits), node, std::move(message));
}

void PlanBuilder::add(const Rule& rule, std::vector<SpanEdit> edits, TSNode node, std::string message) {
  if (edits.empty()) return;
  Change change;
  change.rule = &rule;
  change.start = edits.front().start;
  change.end = edits.front().end;
  for (const auto& e : edits) {
    change.start = std::min(change.start, e.start);
    change.end = std::max(change.end, e.end);
  }
  change.edits = std::move(edits);
  change.start_line = line_at(change.start);
  change.end_line = line_at(change.end > change.start ? change.end - 1 : change.start);
  change.before = std::string(syntax_.source().substr(change.start, change.end - change.start));
  change.subject = ts_node_is_null(node) ? change.before : std::string(syntax_.text(node));
  if (message.empty() && change.edits.size() == 1) {
    message = "`" + change.before + "` -> `" + change.edits.front().text + "`";
    if (!rule.message.empty()) message += ": " + std::string(rule.message);
  } else if (message.empty()) {
    message = std::string(rule.message);
  }
  change.message = std::move(message);
  change.uses_device = std::any_of(change.edits.begin(), change.edits.end(),
                                   [](const SpanEdit& e) { return e.text.find("_accel_device") != std::string::npos; });
  candidates_.push_back(std::move(change));
}

void PlanBuilder::find(const Rule& rule, TSNode node, std::string api, Target target, std::string advice) {
  Finding f;
  f.rule = &rule;
  f.line = line_of(node);
  f.api = std::move(api);
  if (advice.empty()) advice = std::string(rule.per_target[static_cast<size_t>(target)]);
  if (advice.empty()) advice = std::string(rule.message);
  f.advice = std::move(advice);
  f.start = ts_node_start_byte(node);
  f.end = ts_node_end_byte(node);
  findings_.push_back(std::move(f));
}

void PlanBuilder::replace_guard(const Rule& rule, TSNode node, std::string text, uint32_t body_start,
                                uint32_t body_end) {
  replace_guard(rule, node, std::move(text), std::vector<std::pair<uint32_t, uint32_t>>{{body_start, body_end}});
}

void PlanBuilder::replace_guard(const Rule& rule, TSNode node, std::string text,
                                std::vector<std::pair<uint32_t, uint32_t>> bodies) {
  size_t index = candidates_.size();
  replace(rule, node, std::move(text), "");
  if (candidates_.size() > index) guard_bodies_[index] = std::move(bodies);
}

// A guard whose body keeps a flagged call must keep answering "CUDA only" (False elsewhere), and a
// flagged call keeps its arguments as written: a migrated argument of an unmigrated call helps nobody.
std::vector<Change> PlanBuilder::drop_unsafe(std::vector<Change> candidates) const {
  auto flagged_within = [&](uint32_t start, uint32_t end) {
    return std::any_of(findings_.begin(), findings_.end(), [&](const Finding& f) {
      return finding_fails_check(*f.rule) && f.start >= start && f.end <= end;
    });
  };
  std::vector<Change> kept;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto guard = guard_bodies_.find(i);
    if (guard != guard_bodies_.end() &&
        std::any_of(guard->second.begin(), guard->second.end(),
                    [&](const std::pair<uint32_t, uint32_t>& body) { return flagged_within(body.first, body.second); }))
      continue;
    const Change& c = candidates[i];
    bool inside_kept = std::any_of(kept_.begin(), kept_.end(), [&](const std::pair<uint32_t, uint32_t>& span) {
      return c.start >= span.first && c.end <= span.second;
    });
    if (!inside_kept) kept.push_back(std::move(candidates[i]));
  }
  return kept;
}

// Outer matches first; a change is kept only when none of its edits conflicts with a kept edit:
// two replacements conflict when they share bytes, an insertion when it falls strictly inside a
// replacement. Kept replacements are disjoint, so ordered containers answer each query in log n.
std::vector<Change> PlanBuilder::resolve_nesting(std::vector<Change> candidates) const {
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Change& a, const Change& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::map<uint32_t, uint32_t> replaced;  // start -> end, disjoint
  std::multiset<uint32_t> inserted_at;
  auto conflicts = [&](uint32_t a, uint32_t b) {
    auto it = replaced.upper_bound(a);
    if (it != replaced.begin()) {
      auto prev = std::prev(it);
      if (prev->second > a && (a < b || prev->first < a)) return true;
    }
    if (a == b) return false;
    if (it != replaced.end() && it->first < b) return true;
    auto ins = inserted_at.upper_bound(a);
    return ins != inserted_at.end() && *ins < b;
  };
  std::vector<Change> accepted;
  for (auto& change : candidates) {
    bool clash = std::any_of(change.edits.begin(), change.edits.end(),
                             [&](const SpanEdit& e) { return conflicts(e.start, e.end); });
    if (clash) continue;
    for (const auto& e : change.edits) {
      if (e.start == e.end) inserted_at.insert(e.start);
      else replaced.emplace(e.start, e.end);
    }
    accepted.push_back(std::move(change));
  }
  return accepted;
}

RewritePlan PlanBuilder::finish() {
  std::vector<Change> accepted = resolve_nesting(drop_unsafe(std::move(candidates_)));
  if (!accepted.empty()) insert_module_lines(accepted);
  std::stable_sort(accepted.begin(), accepted.end(), [](const Change& a, const Change& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.inserted_line && !b.inserted_line;
  });
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const Finding& a, const Finding& b) { return a.line < b.line; });
  RewritePlan plan;
  plan.changes = std::move(accepted);
  plan.findings = std::move(findings_);
  return plan;
}

Change PlanBuilder::inserted(const Rule& rule, uint32_t offset, std::string line) const {
  Change change;
  change.rule = &rule;
  change.start = change.end = offset;
  change.start_line = change.end_line = line_at(offset);
  change.inserted_line = true;
  change.message = "inserted `" + line + "`";
  if (!rule.message.empty()) change.message += ": " + std::string(rule.message);
  // Inserted lines follow the file's line ending (CRLF files stay CRLF).
  std::string_view src = syntax_.source();
  size_t first_newline = src.find('\n');
  std::string newline = first_newline != std::string_view::npos && first_newline > 0 && src[first_newline - 1] == '\r'
                            ? "\r\n"
                            : "\n";
  std::string text = line + newline;
  if (offset == src.size() && !src.empty() && src.back() != '\n') text = newline + text;
  change.edits.push_back({offset, offset, std::move(text)});
  return change;
}

namespace {

bool is_import(TSNode node) {
  std::string_view type = node_type(node);
  return type == "import_statement" || type == "import_from_statement" || type == "future_import_statement";
}

// Start of the line after the node (so a trailing comment stays on its own line), or the end of
// the file.
uint32_t after_line_of(TSNode node, std::string_view src) {
  size_t newline = src.find('\n', ts_node_end_byte(node));
  return newline == std::string_view::npos ? static_cast<uint32_t>(src.size()) : static_cast<uint32_t>(newline + 1);
}

// Whether `stmt` imports torch (`import torch`, `import torch as th`, `import torch.nn`) somewhere
// inside it, outside functions and classes; `alias` receives the name it binds.
bool imports_torch_within(const PythonSyntax& syntax, TSNode stmt, std::string& alias) {
  bool found = false;
  walk_named(stmt, [&](TSNode node, const std::vector<TSNode>& ancestors) {
    if (found || node_type(node) != "import_statement") return;
    for (TSNode a : ancestors)
      if (node_type(a) == "function_definition" || node_type(a) == "class_definition") return;
    for (TSNode name : named_children(node)) {
      bool aliased = node_type(name) == "aliased_import";
      std::string_view module = syntax.text(aliased ? field(name, "name") : name);
      if (module != "torch" && (aliased || module.substr(0, 6) != "torch.")) continue;
      alias = aliased ? std::string(syntax.text(field(name, "alias"))) : "torch";
      found = true;
    }
  });
  return found;
}

}  // namespace

// `try: import torch / except ImportError: torch = None`: torch is optional, and what is inserted
// must not make it mandatory. The first module-level statement that imports torch only
// conditionally (try, if, with) when no plain `import torch` comes before it; null otherwise.
TSNode PlanBuilder::optional_torch_import(const std::vector<TSNode>& statements, std::string& alias) const {
  for (TSNode stmt : statements) {
    std::string_view type = node_type(stmt);
    if (type == "import_statement" && imports_torch_within(syntax_, stmt, alias)) return {};
    if ((type == "try_statement" || type == "if_statement" || type == "with_statement") &&
        imports_torch_within(syntax_, stmt, alias))
      return stmt;
  }
  return {};
}

void PlanBuilder::insert_module_lines(std::vector<Change>& accepted) {
  std::string_view src = syntax_.source();
  std::vector<TSNode> statements;
  for (TSNode child : named_children(syntax_.root()))
    if (node_type(child) != "comment") statements.push_back(child);
  if (statements.empty()) return;

  // Where a module-level line goes: after the last import that precedes statement `limit`, else
  // after a leading docstring, else at the start of the first statement's line.
  auto anchor_offset = [&](size_t limit, auto&& prefer) -> uint32_t {
    int chosen = -1;
    for (size_t i = 0; i < limit && i < statements.size(); ++i)
      if (is_import(statements[i])) {
        chosen = static_cast<int>(i);
        if (prefer(statements[i])) break;
      }
    if (chosen >= 0) return after_line_of(statements[static_cast<size_t>(chosen)], src);
    TSNode first = statements[0];
    if (limit > 0 && node_type(first) == "expression_statement" && ts_node_named_child_count(first) == 1 &&
        node_type(ts_node_named_child(first, 0)) == "string")
      return after_line_of(first, src);
    return line_starts_[line_at(ts_node_start_byte(first)) - 1];
  };
  auto statement_index = [&](uint32_t offset) {
    size_t i = 0;
    while (i + 1 < statements.size() && ts_node_start_byte(statements[i + 1]) <= offset) ++i;
    return i;
  };
  auto never = [](TSNode) { return false; };
  std::string optional_alias;
  TSNode optional = optional_torch_import(statements, optional_alias);
  const bool torch_optional = !ts_node_is_null(optional);
  // A guard that holds where the optional import bound torch (the name may be None or unbound).
  const std::string torch_present = "globals().get(\"" + optional_alias + "\") is not None";

  if (target_ == Target::DeviceAgnostic) {
    // The definition goes before the first module-level statement that contains a use, so every
    // read of `_accel_device` (functions and class bodies run after their statement) finds it bound.
    auto module_binding = first_binding_end_.find(UINT32_MAX);
    bool needed = false;
    uint32_t first_use = UINT32_MAX;
    for (const auto& c : accepted) {
      if (!c.uses_device) continue;
      first_use = std::min(first_use, c.start);
      if (module_binding == first_binding_end_.end() || c.start < module_binding->second) needed = true;
    }
    if (needed) {
      size_t limit = statement_index(first_use);
      if (ts_node_start_byte(statements[limit]) > first_use) limit = 0;
      uint32_t offset = anchor_offset(limit, never);
      if (torch_optional) offset = std::max(offset, after_line_of(optional, src));
      // The definition needs torch bound at module level before it.
      std::string torch = torch_optional ? optional_alias : "torch";
      bool bound = torch_optional;
      for (TSNode stmt : statements) {
        if (ts_node_start_byte(stmt) >= offset) break;
        if (node_type(stmt) != "import_statement") continue;
        for (TSNode name : named_children(stmt)) {
          bool aliased = node_type(name) == "aliased_import";
          std::string_view module = syntax_.text(aliased ? field(name, "name") : name);
          if (aliased && module == "torch") {
            torch = std::string(syntax_.text(field(name, "alias")));
            bound = true;
          } else if (!aliased && (module == "torch" || module.substr(0, 6) == "torch.")) {
            torch = "torch";
            bound = true;
          }
        }
        if (bound) break;
      }
      const Rule& rule = rule_by_id("device-definition");
      std::string line = expand_template(rule.per_target[0], target_, TemplateValues{torch, {}, {}, {}});
      if (torch_optional) {
        std::string value = line.substr(line.find(" = ") + 3);
        line = "_accel_device = (" + value + ") if " + torch_present + " else None";
      }
      if (!bound) accepted.push_back(inserted(rule, offset, "import torch"));
      accepted.push_back(inserted(rule, offset, line));
    }
  }
  // Library modules stay free of it: the program's entry file registers the device once.
  if (target_ == Target::Npu && !has_torch_npu_ && entry_point_) {
    auto imports_torch = [&](TSNode stmt) {
      std::string_view t = syntax_.text(stmt);
      return t.substr(0, 12) == "import torch" || t.substr(0, 10) == "from torch";
    };
    if (torch_optional) {
      accepted.push_back(inserted(rule_by_id("import-torch-npu"), after_line_of(optional, src),
                                  "if " + torch_present + ": import torch_npu"));
      return;
    }
    uint32_t offset = anchor_offset(statements.size(), imports_torch);
    accepted.push_back(inserted(rule_by_id("import-torch-npu"), offset, "import torch_npu"));
  }
}

std::vector<SpanEdit> wrap_span(const std::string& wrapped, std::string_view marker, uint32_t start, uint32_t end,
                                bool parens) {
  const size_t at = wrapped.find(marker);
  if (at == std::string::npos) return {{start, end, wrapped}};
  return {{start, start, wrapped.substr(0, at) + (parens ? "(" : "")},
          {end, end, (parens ? ")" : "") + wrapped.substr(at + marker.size())}};
}

std::vector<const SpanEdit*> ordered_edits(const RewritePlan& plan) {
  struct Ordered {
    const SpanEdit* edit;
    size_t order;
  };
  std::vector<Ordered> edits;
  for (const auto& change : plan.changes)
    for (const auto& e : change.edits) edits.push_back({&e, edits.size()});
  std::stable_sort(edits.begin(), edits.end(), [](const Ordered& a, const Ordered& b) {
    if (a.edit->start != b.edit->start) return a.edit->start < b.edit->start;
    bool a_insert = a.edit->start == a.edit->end, b_insert = b.edit->start == b.edit->end;
    if (a_insert != b_insert) return a_insert;
    return a.order < b.order;
  });
  std::vector<const SpanEdit*> out;
  out.reserve(edits.size());
  for (const auto& o : edits) out.push_back(o.edit);
  return out;
}

std::string apply_plan(std::string_view source, const RewritePlan& plan) {
  std::string out;
  out.reserve(source.size() + source.size() / 8);
  size_t pos = 0;
  for (const SpanEdit* e : ordered_edits(plan)) {
    if (e->start < pos || e->end > source.size()) continue;  // never happens after resolve_nesting
    out.append(source.substr(pos, e->start - pos));
    out += e->text;
    pos = e->end;
  }
  out.append(source.substr(pos));
  return out;
}

}  // namespace crosstrain::migrate
