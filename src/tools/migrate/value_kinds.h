#pragma once
// What a Python expression holds, as far as the rewriter needs to know: an integer (a CUDA index
// when passed as a device), a device (torch.device or a device string), or something unknown.
// Built by one pass over the file that records every simple assignment `name = value` per scope
// (function, lambda or module); a name is an int only when every value assigned to it in its scope
// is one (parameters and attributes fall back to their names: rank, local_rank, gpu, ...).
// Internal to tools/migrate: the rewriter asks it before rewriting `.to(x)`, `.cuda(x)`, `device=x`.
#include "tools/migrate/python_syntax.h"

#include <map>
#include <string>
#include <vector>

namespace crosstrain::migrate {

class ValueKinds {
 public:
  explicit ValueKinds(const PythonSyntax& syntax);

  // True when `expr`, evaluated in `scope` (start byte of its function; UINT32_MAX = module), is
  // an int on every path.
  bool is_int(TSNode expr, uint32_t scope) const;
  // True when `expr` is a torch.device or a device string on every path.
  bool is_device(TSNode expr, uint32_t scope) const;

 private:
  bool kind_of(TSNode expr, uint32_t scope, bool want_int, int depth) const;
  const std::vector<TSNode>* values_of(std::string_view name, uint32_t scope) const;

  const PythonSyntax& syntax_;
  // (scope, name) -> every value assigned to the name there; an entry with a null node means the
  // name is also bound another way (for target, with, augmented assignment, tuple unpacking).
  std::map<std::pair<uint32_t, std::string>, std::vector<TSNode>, std::less<>> values_;
};

// Names that hold a device index or process rank by convention (parameters, attributes).
bool int_like_name(std::string_view name);

// Start byte of the innermost function or lambda among `ancestors` (innermost last); UINT32_MAX
// when there is none (module level).
uint32_t scope_of(const std::vector<TSNode>& ancestors);

}  // namespace crosstrain::migrate
