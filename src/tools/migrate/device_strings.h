#pragma once
// Device strings in migrated code: "cuda" and "nccl" literals, "cuda:N", f"cuda:{i}",
// 'cuda:{}'.format(i), 'cuda:%d' % i, and the `device_ids=` values that wrap like them. A string
// stays a string (the target's device type), an indexed one keeps its index on accelerators and
// becomes "cpu" on the CPU; comparisons, tables and docstrings are left alone. Strings built from
// pieces are judged whole (device_string_builds.cpp). Internal to tools/migrate: the rewriter's
// matcher hands it the string-shaped nodes it meets.
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
  // Implicitly concatenated literals (`"cuda" ":0"`), judged as the one string they make.
  void on_concatenated(TSNode node, const std::vector<TSNode>& ancestors);
  // Expressions that build a string from pieces (`+`, `%`, `"...".format(...)`, `"...".join(...)`):
  // one that yields "cuda:<index>" (or names a "cuda" piece where a device is expected) is
  // rewritten whole; another with a "cuda" piece is flagged (cuda-string).
  void on_build(TSNode node, const std::vector<TSNode>& ancestors);
  // Replaces `value` by the rule's template around {value}, keeping the value's bytes in place so
  // rewrites inside it still apply.
  void wrap_value(const Rule& rule, TSNode value, TSNode subject);

 private:
  struct Leading {
    std::string text;    // the known beginning of the string
    bool whole = false;  // it is the whole string
  };
  Leading literal_text(TSNode node) const;
  Leading leading_text(TSNode node, int depth) const;
  bool is_string_method_call(TSNode call) const;
  // `too_deep`: the piece lies deeper in its build than the verdict looks (a generated chain).
  TSNode build_root(TSNode node, const std::vector<TSNode>& ancestors, bool* too_deep = nullptr) const;
  bool is_cuda_piece(TSNode node) const;
  bool has_cuda_piece(TSNode node, int depth) const;

  static bool is_primary(TSNode node);
  bool piece_of_build(TSNode node, const std::vector<TSNode>& ancestors);
  void on_text(TSNode node, std::string_view content, char quote, const std::vector<TSNode>& ancestors);
  void nccl_text(TSNode node, char quote, const std::vector<TSNode>& ancestors);
  bool composite_backend(TSNode node, std::string_view content, char quote, const std::vector<TSNode>& ancestors);
  ArgContext settled_context(TSNode node, const std::vector<TSNode>& ancestors);
  bool read_as(const ArgumentContext& where, const std::vector<TSNode>& ancestors, bool (*wanted)(ArgContext)) const;
  void device_string_expression(TSNode node, const std::vector<TSNode>& ancestors);
  bool already_replaced(TSNode node, const std::vector<TSNode>& ancestors) const;
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
