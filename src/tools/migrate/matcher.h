#pragma once
// The matcher of rewriter.cpp: one pass over the syntax tree that turns each CUDA-specific match
// into a candidate change or a finding of the plan. Its handlers live by topic: rewriter.cpp
// (traversal, imports, attribute chains), matcher_calls.cpp (calls: .cuda(), devices, pinned
// memory, backends), matcher_amp.cpp (torch.cuda.amp names and calls), matcher_flow.cpp (process
// counts, stored availability tests), matcher_tensor_types.cpp (legacy CUDA tensor types),
// matcher_diagnostics.cpp (reporting-only torch.cuda calls).
#include "tools/migrate/argument_context.h"
#include "tools/migrate/cuda_guard.h"
#include "tools/migrate/device_strings.h"
#include "tools/migrate/rewrite_plan.h"
#include "tools/migrate/value_kinds.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace crosstrain::migrate {

inline bool is_type(TSNode node, std::string_view type) { return node_type(node) == type; }

// The torch.<path> references the rule table speaks about: torch.cuda (not torch.cudart),
// torch.backends.cudnn / .cuda settings and the autograd profiler's NVTX ranges.
inline bool has_prefix(std::string_view path, std::string_view prefix) {
  return path.substr(0, prefix.size()) == prefix && (path.size() == prefix.size() || path[prefix.size()] == '.');
}
inline bool is_cuda_path(std::string_view path) {
  return has_prefix(path, "cuda") || has_prefix(path, "backends.cudnn") || has_prefix(path, "backends.cuda") ||
         has_prefix(path, "autograd.profiler.emit_nvtx");
}

// A test that passes only where an accelerator is present (`torch.accelerator.is_available()`,
// `torch.cuda.is_available()`, `_accel_device.type != "cpu"`), not negated.
inline bool is_availability_test(std::string_view test) {
  if (test.find("not ") != std::string_view::npos) return false;
  return test.find("is_available()") != std::string_view::npos ||
         test.find("_accel_device.type != \"cpu\"") != std::string_view::npos;
}

// Inside a type annotation (`scaler: Optional[GradScaler]`, `-> GradScaler`): evaluated at most
// once, never called.
inline bool in_annotation(const std::vector<TSNode>& ancestors) {
  return std::any_of(ancestors.begin(), ancestors.end(), [](TSNode a) { return is_type(a, "type"); });
}

struct LegacyTensorType;

class Matcher {
 public:
  Matcher(const PythonSyntax& syntax, Target target, PlanBuilder& plan)
      : syntax_(syntax), target_(target), plan_(plan), kinds_(syntax), guards_(syntax, target == Target::Cpu),
        strings_(syntax, target, plan, guards_) {}

  void run();

 private:
  std::string_view text(TSNode node) const { return syntax_.text(node); }
  TemplateValues values(std::string_view index = {}, std::string_view prefix = {}) const {
    TemplateValues v;
    v.torch = plan_.torch_name();
    v.index = index;
    v.prefix = prefix;
    return v;
  }

  // Start byte of the innermost function or lambda around the current node; UINT32_MAX = module.
  uint32_t scope() const { return ancestors_ ? scope_of(*ancestors_) : UINT32_MAX; }

  std::string expand(std::string_view templ, std::string_view index = {}, std::string_view prefix = {}) const {
    return expand_template(templ, target_, values(index, prefix));
  }
  std::string expand_value(std::string_view templ, std::string_view value) const {
    TemplateValues v = values();
    v.value = value;
    return expand_template(templ, target_, v);
  }
  std::string_view per_target(const Rule& rule) const { return rule.per_target[static_cast<size_t>(target_)]; }
  bool agnostic() const { return target_ == Target::DeviceAgnostic; }

  static bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  }
  static bool is_custom_amp(std::string_view name) { return name == "custom_fwd" || name == "custom_bwd"; }

  // rewriter.cpp: traversal, entry points, imports, attribute chains, assignments.
  void visit(TSNode node, const std::vector<TSNode>& ancestors);
  void on_if(TSNode node, const std::vector<TSNode>& ancestors);
  void on_expression_statement(TSNode node, const std::vector<TSNode>& ancestors);
  bool report_module(std::string_view module, TSNode node);
  void report_torch_cuda_names(std::string_view module, const std::vector<TSNode>& names);
  bool rename_torch_cuda_import(TSNode module_node, const std::vector<TSNode>& names);
  void on_import(TSNode node);
  void report_torch_module(std::string_view module, TSNode node);
  void on_import_from(TSNode node);
  void on_attribute(TSNode node, const std::vector<TSNode>& ancestors);
  bool cuda_method_reference(TSNode node, const std::vector<TSNode>& ancestors);
  bool guarded_body(const std::vector<TSNode>& ancestors, uint32_t& start, uint32_t& end) const;
  bool is_tested(TSNode call, const std::vector<TSNode>& ancestors) const;
  bool times_events(TSNode call) const;
  void on_assignment(TSNode node, const std::vector<TSNode>& ancestors);
  static bool is_store_target(TSNode node, const std::vector<TSNode>& ancestors);
  bool cpu_stream_use(const Rule& rule, TSNode matched, TSNode node, const std::vector<TSNode>& ancestors);
  void cpu_stream_methods(const Rule& rule, TSNode call, const std::vector<TSNode>& ancestors);

  // matcher_amp.cpp
  void find_amp_references();
  bool unpacks_arguments(TSNode args) const;
  void on_identifier(TSNode node, const std::vector<TSNode>& ancestors);
  void custom_amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name);
  void custom_amp_decorator(const Rule& rule, TSNode reference, TSNode name, const std::string& new_name);
  std::string amp_reference_advice(std::string_view api) const;
  void amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name);

  // matcher_flow.cpp
  bool reaches_process_count(TSNode node, const std::vector<TSNode>& up, size_t n, int hops) const;
  void device_count_number(TSNode call, TSNode matched, const std::vector<TSNode>& ancestors);
  void asserted_device_counts(TSNode call, const std::vector<TSNode>& ancestors);
  bool implies_cuda_available(TSNode expr, int depth) const;
  void find_availability_names();
  std::vector<std::pair<uint32_t, uint32_t>> decided_by(std::string_view spelling) const;
  std::vector<std::pair<uint32_t, uint32_t>> stored_availability(const std::vector<TSNode>& ancestors) const;
  void sync_batchnorm(TSNode call, TSNode args);
  void cuda_branch(TSNode node);

  // matcher_diagnostics.cpp
  enum class Report { No, Value, Statement };
  Report reported_only(const std::vector<TSNode>& up, size_t call_index) const;
  bool diagnostic_call(std::string_view path, TSNode call, const std::vector<TSNode>& ancestors);

  // matcher_tensor_types.cpp
  const LegacyTensorType* cuda_tensor_type(TSNode node) const;
  bool calls_legacy_constructor() const;
  TSNode sole_argument(TSNode args, std::string_view keyword) const;
  bool legacy_tensor_type_call(TSNode call, TSNode function, TSNode args);
  void legacy_tensor_type_string(TSNode node, const std::vector<TSNode>& ancestors);
  void default_type_restores();

  // matcher_calls.cpp
  void on_call(TSNode call);
  void backend_nccl(TSNode node, const std::vector<TSNode>& ancestors);
  void accelerator_memory_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name);
  bool availability_guarded(TSNode node) const;
  bool is_fresh_tensor(TSNode expr) const;
  bool alone_on_line(TSNode statement) const;
  void pin_memory_call(TSNode call, TSNode function, TSNode args);
  void pin_memory_keyword(TSNode call, TSNode function, TSNode args);
  void device_keywords(TSNode call, std::string_view callee, TSNode args);
  void int_device(TSNode value);
  void int_to(TSNode args);
  void device_value(TSNode value);
  void nccl_available(TSNode call, TSNode name);
  void cuda_library(TSNode call, TSNode args);
  void inline_cuda_extension(TSNode call, std::string_view callee, TSNode args);
  void indexed_torch_device(TSNode call, TSNode function, TSNode args);
  void tensor_cuda(TSNode call, TSNode attr, TSNode args);
  bool is_storage(TSNode object) const;

  const PythonSyntax& syntax_;
  Target target_;
  TSNode current_{};
  const std::vector<TSNode>* ancestors_ = nullptr;
  PlanBuilder& plan_;
  ValueKinds kinds_;
  CudaGuards guards_;
  DeviceStrings strings_;
  std::map<std::string, std::string> amp_names_;  // local name -> "autocast" | "GradScaler" | "custom_fwd" | ...
  std::set<std::string, std::less<>> amp_referenced_;  // of those, names used as values
  std::set<uint32_t> handled_tensor_types_;  // start bytes of CUDA tensor types in rewritten calls
  // set_default_tensor_type calls with another type (a restore), and whether a CUDA one became
  // set_default_device: then each restore must reset the default device too.
  std::vector<std::pair<TSNode, bool>> default_type_restores_;  // call, alone in its statement
  bool default_device_set_ = false;
  std::set<uint32_t> flagged_stream_uses_;  // start bytes of stream method uses already flagged
};

}  // namespace crosstrain::migrate
