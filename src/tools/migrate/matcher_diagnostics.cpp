// Diagnostic-only CUDA calls: `print(torch.cuda.memory_summary())`, `torch.cuda.get_device_name()`
// in a log line, `torch.cuda.reset_peak_memory_stats()` as a statement. Off CUDA they raise (after
// a whole epoch, where they sit at its end), yet nothing the program computes depends on them.
// Where the value only reaches the terminal or a log, or is dropped, the call runs on the target's
// device module when that module has it, and otherwise gives "n/a" (None for a statement). The
// call is unchanged on CUDA, whose module is torch.cuda.
#include "tools/migrate/matcher.h"

namespace crosstrain::migrate {

namespace {

// torch.cuda functions that only report on the device or reset its counters (torch.cuda memory
// and device-information APIs; torch.accelerator.memory covers the statistics rewritten elsewhere).
const std::set<std::string_view> kDiagnostics = {
    "memory_summary", "memory_snapshot", "memory_stats_as_nested_dict", "list_gpu_processes", "get_device_name",
    "get_device_properties", "get_device_capability", "mem_get_info", "utilization", "temperature", "power_draw",
    "clock_rate", "memory_usage", "memory_cached", "max_memory_cached", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached", "reset_accumulated_memory_stats"};

// Whether torch_npu's torch.npu has the function: the rule's npu column lists them (and
// test_migrate_npu_names checks that list against torch_npu's sources).
bool npu_has(std::string_view name) {
  std::string_view listed = rule_by_id("diagnostic-guard").per_target[static_cast<size_t>(Target::Npu)];
  std::string needle = "torch.npu." + std::string(name);
  for (size_t at = listed.find(needle); at != std::string_view::npos; at = listed.find(needle, at + 1)) {
    char next = at + needle.size() < listed.size() ? listed[at + needle.size()] : ' ';
    if (next == ',' || next == ')') return true;
  }
  return false;
}

bool is_reporter(std::string_view name) {
  return name == "print" || name == "info" || name == "debug" || name == "warning" || name == "warn" ||
         name == "error" || name == "critical" || name == "log" || name == "write";
}

}  // namespace

// Where a call's value goes only to the terminal or a log (Value), or nowhere (Statement).
Matcher::Report Matcher::reported_only(const std::vector<TSNode>& up, size_t call_index) const {
  if (call_index == 0) return Report::No;
  TSNode call = up[call_index];
  TSNode parent = up[call_index - 1];
  std::string_view type = node_type(parent);
  if (type == "expression_statement") return ts_node_named_child_count(parent) == 1 ? Report::Statement : Report::No;
  if (type == "interpolation") {
    for (TSNode child : named_children(parent))
      if (is_type(child, "format_specifier")) return Report::No;
    return Report::Value;
  }
  if (type != "argument_list" || call_index < 2) return Report::No;
  TSNode outer = up[call_index - 2];
  std::string_view fn = last_segment(syntax_, field(outer, "function"));
  if (is_reporter(fn)) return Report::Value;
  // str(torch.cuda.get_device_name()) given to print.
  if (fn == "str" && ts_node_named_child_count(parent) == 1 && ts_node_eq(ts_node_named_child(parent, 0), call))
    return reported_only(up, call_index - 2) == Report::Value ? Report::Value : Report::No;
  return Report::No;
}

bool Matcher::diagnostic_call(std::string_view path, TSNode call, const std::vector<TSNode>& ancestors) {
  if (path.substr(0, 5) != "cuda.") return false;
  std::string name(path.substr(5));
  if (!kDiagnostics.count(name) || ancestors.empty()) return false;
  std::vector<TSNode> up(ancestors.begin(), ancestors.end());  // up.back() is the call
  Report report = reported_only(up, up.size() - 1);
  if (report == Report::No) return false;
  std::string torch(plan_.torch_name());
  std::string module = agnostic() ? torch + ".get_device_module(_accel_device)"
                                  : torch + (target_ == Target::Npu ? ".npu" : ".cpu");
  const Rule& rule = rule_by_id("diagnostic-guard");
  uint32_t start = ts_node_start_byte(call), open = ts_node_start_byte(field(call, "arguments"));
  uint32_t end = ts_node_end_byte(call);
  std::string called = "`" + std::string(text(call)) + "`";
  if (target_ == Target::Npu && npu_has(name)) {
    plan_.add(rule, {{start, open, module + "." + name}}, call, called + ": torch_npu's " + module + "." + name);
    return true;
  }
  // Inside an f-string field, quotes other than the f-string's own (Python before 3.12 ends the
  // f-string at its own quote character).
  char quote = '"';
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
    if (is_type(*it, "string")) {
      if (text(*it).find('"') < text(*it).find('\'')) quote = '\'';
      break;
    }
  const std::string q(1, quote);
  std::string fallback = report == Report::Value ? q + "n/a" + q : "None";
  plan_.add(rule,
            {{start, open, "(" + module + "." + name},
             {end, end, " if hasattr(" + module + ", " + q + name + q + ") else " + fallback + ")"}},
            call, called + ": runs where " + module + " has " + name + ", else " + fallback);
  return true;
}

}  // namespace crosstrain::migrate
