#pragma once
// Device strings in migrated code: "cuda" and "nccl" literals, "cuda:N", f"cuda:{i}",
// 'cuda:{}'.format(i), 'cuda:%d' % i, and the `device_ids=` values that wrap like them. A string
// stays a string (the target's device type), an indexed one keeps its index on accelerators and
// becomes "cpu" on the CPU; comparisons, tables and docstrings are left alone. Internal to
// tools/migrate: the rewriter's matcher hands it the string-shaped nodes it meets.
#include "tools/migrate/argument_context.h"
#include "tools/migrate/cuda_guard.h"
#include "tools/migrate/rewrite_plan.h"

#include <string>
#include <vector>

namespace crosstrain::migrate {

class DeviceStrings {
 public:
  DeviceStrings(const PythonSyntax& syntax, Target target, PlanBuilder& plan, const CudaGuards& guards)
      : syntax_(syntax), target_(target), plan_(plan), guards_(guards) {}

  void on_string(TSNode node, const std::vector<TSNode>& ancestors);
  // `<string>.format(...)` calls and `<string> % x` operations that build "cuda:<index>".
  void on_format_call(TSNode call, const std::vector<TSNode>& ancestors);
  void on_percent_format(TSNode node, const std::vector<TSNode>& ancestors);
  // Replaces `value` by the rule's template around {value}, keeping the value's bytes in place so
  // rewrites inside it still apply.
  void wrap_value(const Rule& rule, TSNode value, TSNode subject);

 private:
  static bool is_primary(TSNode node);
  bool starts_with_cuda_index(TSNode node) const;
  void device_string_expression(TSNode node, const std::vector<TSNode>& ancestors);
  bool already_replaced(TSNode node, const std::vector<TSNode>& ancestors) const;
  bool sole_argument(TSNode node, const std::vector<TSNode>& ancestors) const;
  void cuda_test_operand(TSNode node, const std::vector<TSNode>& ancestors, char quote);
  void fstring_device(TSNode node, uint32_t content_begin, const std::vector<TSNode>& ancestors);
  static std::string requote(std::string text, char quote);
  ArgumentContext context_of(TSNode node, const std::vector<TSNode>& ancestors) const;
  std::string_view text(TSNode node) const { return syntax_.text(node); }
  std::string expand(std::string_view templ) const;
  std::string expand_value(std::string_view templ, std::string_view value) const;
  std::string_view per_target(const Rule& rule) const { return rule.per_target[static_cast<size_t>(target_)]; }
  bool agnostic() const { return target_ == Target::DeviceAgnostic; }

  const PythonSyntax& syntax_;
  Target target_;
  PlanBuilder& plan_;
  const CudaGuards& guards_;
};

}  // namespace crosstrain::migrate
