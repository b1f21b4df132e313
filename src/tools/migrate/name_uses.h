#pragma once
// Where a stored value is read: every identifier of a name in the scope that binds it (not in a
// nested function, lambda or class), or every attribute spelled the same anywhere in the file,
// each with its ancestors from the root, so the rewriter can judge each read as it judges the
// expression itself. Internal to tools/migrate.
#include "tools/migrate/python_syntax.h"

#include <string_view>
#include <vector>

namespace crosstrain::migrate {

struct NameUse {
  TSNode node;
  std::vector<TSNode> ancestors;  // root first, the node's parent last
};

// Reads of identifier `name` in the scope of a node whose ancestors are path[0, depth) (root
// first): the innermost function or lambda among them, or the module. Assignment targets,
// attribute names (`x.name`) and keyword names (`f(name=...)`) are not reads.
std::vector<NameUse> reads_in_scope(const PythonSyntax& syntax, const std::vector<TSNode>& path, size_t depth,
                                    std::string_view name);

// Reads of `spelling` (an identifier or a dotted attribute such as `args.cuda`) anywhere in the
// file, in any scope: an over-approximation, for questions where a read too many is safe.
std::vector<NameUse> reads_anywhere(const PythonSyntax& syntax, std::string_view spelling);

}  // namespace crosstrain::migrate
