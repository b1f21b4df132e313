#pragma once
// The migration rules, as data: every rewrite and every "needs a human" finding that
// `crosstrain migrate` can produce comes from one row of rule_table(), and docs/MIGRATE.md documents
// the same rows. A rule says what it matches, what it becomes for each target, and why.
//
// Replacement templates use placeholders that the rewriter fills from the matched code and from
// the target's row in target_table():
//   {torch}            the name torch is imported as in the file (`import torch as th` -> th)
//   {device}           the target's device expression        (device | "npu" | "cpu")
//   {device_type}      the target's device-type string       (device.type | "npu" | "cpu")
//   {device_at_index}  the target's device for an index      (uses {index})
//   {backend}          the target's collective backend       (default for device | "hccl" | "gloo")
//   {index}            the device index written in the code  (`.cuda(1)`, "cuda:1")
//   {prefix}           the matched expression's own prefix   (`ProfilerActivity`)
//   {value}            the matched expression as written
// A replacement "{keep}" means the reference is portable for that target: no change, no finding.
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace crosstrain::migrate {

enum class Target { DeviceAgnostic = 0, Npu = 1, Cpu = 2 };
constexpr size_t kTargetCount = 3;

std::string_view target_name(Target target);   // "device-agnostic", "npu", "cpu"
// Throws std::invalid_argument naming the valid targets.
Target parse_target(std::string_view name);

// What a target's placeholders expand to (before {torch} and {index} are filled in).
struct TargetSpec {
  Target target;
  std::string_view device;
  std::string_view device_type;
  std::string_view device_at_index;
  std::string_view backend;
  std::string_view description;
};
const TargetSpec& target_spec(Target target);

enum class RuleAction {
  Rewrite,  // the code is changed
  Report,   // the code is left alone and listed in unsupported.csv with the rule's advice
};

struct Rule {
  std::string_view id;        // stable name, used in reports: "torch.cuda.is_available"
  std::string_view family;    // API family for the statistics: "device-api", "amp", ...
  std::string_view matches;   // what the rule matches, in words (documentation and --list-rules)
  RuleAction action;
  // Per target (indexed by Target): the replacement template for Rewrite rules, or the advice for
  // Report rules. An empty replacement in a Rewrite rule means "report instead" for that target.
  std::array<std::string_view, kTargetCount> per_target;
  std::string_view message;   // why this change is made / what to watch for
};

const std::vector<Rule>& rule_table();
// Whether a finding of this rule fails `--check`: settings that other devices ignore
// (torch.backends.cudnn.*, torch.backends.cuda.*) are reported but do not.
bool finding_fails_check(const Rule& rule);
// Throws std::invalid_argument listing the valid ids (a miss is a programming or input error).
const Rule& rule_by_id(std::string_view id);
// The rule for a `torch.<path>` reference (path without the torch prefix, e.g. "cuda.amp.autocast"):
// the longest rule whose key is the path or a dotted prefix of it; nullptr when none applies.
const Rule* find_torch_api_rule(std::string_view path);

// Expands the placeholders of a template for one target; unknown placeholders are kept verbatim.
struct TemplateValues {
  std::string_view torch = "torch";
  std::string_view index;
  std::string_view prefix;
  std::string_view value;  // {value}: the matched expression as written
};
std::string expand_template(std::string_view templ, Target target, const TemplateValues& values);

}  // namespace crosstrain::migrate
