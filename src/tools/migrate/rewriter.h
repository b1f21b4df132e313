#pragma once
// Plans the rewrite of one parsed Python file: which byte spans change, into what, under which
// rule, and which CUDA-specific references are left for a human.
//
// The plan only ever replaces or inserts byte spans of the original buffer; everything outside
// them (comments, formatting, docstrings, other strings) is copied verbatim by apply_plan().
// Changes never overlap: when two matches nest, the outer one wins (it already rewrote the inner
// text). Insertions (the device definition, `import torch_npu`) are changes with empty spans.
#include "tools/migrate/change.h"
#include "tools/migrate/python_syntax.h"
#include "tools/migrate/rule_table.h"

#include <string>
#include <string_view>

namespace crosstrain::migrate {

RewritePlan plan_rewrite(const PythonSyntax& syntax, Target target);

// The edits of `plan` in the order they are applied: by start, an insertion before a replacement
// that starts at the same offset, otherwise plan order.
std::vector<const SpanEdit*> ordered_edits(const RewritePlan& plan);

// The source with every edit of `plan` applied.
std::string apply_plan(std::string_view source, const RewritePlan& plan);

}  // namespace crosstrain::migrate
