// Values that flow through names and branches: a device count that becomes a process count, an
// availability test stored in a variable, SyncBatchNorm conversion, CUDA tests whose other branch
// makes CPU tensors.
#include "tools/migrate/matcher.h"
#include "tools/migrate/name_uses.h"

namespace crosstrain::migrate {

namespace {

bool is_process_count_name(std::string_view name) {
  return name == "world_size" || name == "nprocs" || name == "nproc" || name == "nproc_per_node" ||
         name == "num_processes";
}

// Position of `arg` among the positional arguments of `args`; -1 for a keyword or when absent.
int positional_index(TSNode args, TSNode arg) {
  int index = 0;
  for (TSNode a : named_children(args)) {
    if (node_type(a) == "keyword_argument" || node_type(a) == "comment") continue;
    if (ts_node_eq(a, arg)) return index;
    ++index;
  }
  return -1;
}

// A legacy CPU tensor type (`torch.FloatTensor`, not `torch.cuda.FloatTensor`) or a `.cpu()` call.
bool makes_cpu_tensors(std::string_view code) {
  for (size_t at = code.find("Tensor"); at != std::string_view::npos; at = code.find("Tensor", at + 1)) {
    size_t dot = code.rfind('.', at);
    if (dot == std::string_view::npos || at - dot > 9 || dot < 5) continue;
    std::string_view kind = code.substr(dot + 1, at - dot - 1);
    if (kind.empty() || kind.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") !=
                            std::string_view::npos)
      continue;
    if (code.substr(dot - 5, 5) == "torch") return true;
  }
  return code.find(".cpu()") != std::string_view::npos;
}

}  // namespace

// --- device counts that count processes ------------------------------------------------------
// Whether `node` (ancestors up[0, n)) becomes a process count: `nprocs=`, the nprocs of
// mp.spawn, a world size, the range of a loop that starts processes, or a divisor; through
// arithmetic and, `hops` deep, through the names it is assigned to.
bool Matcher::reaches_process_count(TSNode node, const std::vector<TSNode>& up, size_t n, int hops) const {
  TSNode cur = node;
  while (n > 0) {
    TSNode parent = up[n - 1];
    std::string_view type = node_type(parent);
    if (type == "parenthesized_expression") {
    } else if (type == "binary_operator") {
      std::string_view op = text(field(parent, "operator"));
      if (ts_node_eq(field(parent, "right"), cur) && (op == "%" || op == "//" || op == "/")) return true;
      if (op != "*" && op != "+") return false;
    } else {
      break;
    }
    cur = parent;
    --n;
  }
  if (n == 0) return false;
  TSNode parent = up[n - 1];
  std::string_view type = node_type(parent);
  if (type == "keyword_argument") return is_process_count_name(text(field(parent, "name")));
  if (type == "argument_list" && n >= 2) {
    TSNode call = up[n - 2];
    std::string_view fn = last_segment(syntax_, field(call, "function"));
    int index = positional_index(parent, cur);
    if ((fn == "spawn" || fn == "start_processes") && index == 2) return true;
    if (fn != "range" || index != 0 || n < 3) return false;
    TSNode loop = up[n - 3];  // `for i in range(n):` or `[... for i in range(n)]`
    if (is_type(loop, "for_statement")) return text(field(loop, "body")).find("Process(") != std::string_view::npos;
    if (is_type(loop, "for_in_clause") && n >= 4) return text(up[n - 4]).find("Process(") != std::string_view::npos;
    return false;
  }
  if (type == "assignment" && ts_node_eq(field(parent, "right"), cur)) {
    TSNode left = field(parent, "left");
    std::string_view last = is_type(left, "attribute") ? text(field(left, "attribute")) : text(left);
    if ((is_type(left, "identifier") || is_type(left, "attribute")) && is_process_count_name(last)) return true;
    if (!is_type(left, "identifier") || hops >= 3) return false;
    for (const NameUse& use : reads_in_scope(syntax_, up, n, text(left)))
      if (reaches_process_count(use.node, use.ancestors, use.ancestors.size(), hops + 1)) return true;
  }
  return false;
}

// `torch.cuda.device_count()` used as a number (`call` is that call, `ancestors` the attribute's).
void Matcher::device_count_number(TSNode call, TSNode matched, const std::vector<TSNode>& ancestors) {
  // `max(1, torch.cuda.device_count())`: already at least one (cpu keeps the query as written).
  if (ancestors.size() >= 3 && is_type(ancestors[ancestors.size() - 2], "argument_list") &&
      text(field(ancestors[ancestors.size() - 3], "function")) == "max" &&
      text(ts_node_named_child(ancestors[ancestors.size() - 2], 0)) == "1")
    return;
  if (reaches_process_count(call, ancestors, ancestors.size() - 1, 0)) {
    const Rule& rule = rule_by_id("process-count");
    plan_.replace(rule, call, expand(per_target(rule)), "");
    asserted_device_counts(call, ancestors);
    return;
  }
  plan_.find(rule_by_id("device-count-number"), matched, std::string(text(call)), target_);
}

// `n = torch.cuda.device_count()` then `assert n >= 2`: one process where no device is visible
// still fails the program's own requirement, at the assert, which is flagged.
void Matcher::asserted_device_counts(TSNode call, const std::vector<TSNode>& ancestors) {
  const size_t n = ancestors.size() - 1;  // ancestors of the call
  if (n == 0 || !is_type(ancestors[n - 1], "assignment")) return;
  TSNode left = field(ancestors[n - 1], "left");
  if (!is_type(left, "identifier") || !ts_node_eq(field(ancestors[n - 1], "right"), call)) return;
  std::set<uint32_t> flagged;
  for (const NameUse& use : reads_in_scope(syntax_, ancestors, n, text(left))) {
    for (size_t i = use.ancestors.size(); i-- > 0;) {
      if (!is_type(use.ancestors[i], "assert_statement")) continue;
      if (!flagged.insert(ts_node_start_byte(use.ancestors[i])).second) break;
      plan_.find(rule_by_id("device-count-number"), use.ancestors[i], std::string(text(use.ancestors[i])).substr(0, 120),
                 target_, "the program asserts on the device count: with none visible it counts one process and "
                          "the assertion stops it here; relax it or take the count from the command line");
      break;
    }
  }
}

// --- availability stored in a variable ----------------------------------------------------------
// True when `expr` is truthy only where `torch.cuda.is_available()` is True:
// `torch.cuda.is_available()`, `flag and <that>`, `True if <that> else False`.
bool Matcher::implies_cuda_available(TSNode expr, int depth) const {
  if (ts_node_is_null(expr) || depth > 16) return false;
  std::string_view type = node_type(expr);
  if (type == "parenthesized_expression") return implies_cuda_available(ts_node_named_child(expr, 0), depth + 1);
  if (type == "call") {
    TSNode function = field(expr, "function");
    // Any `<module>.cuda.is_available()`: this runs before the imports are read.
    if (!is_type(function, "attribute") || !ends_with(text(function), ".cuda.is_available")) return false;
    TSNode cuda = field(function, "object");
    return is_type(cuda, "attribute") && is_type(field(cuda, "object"), "identifier");
  }
  if (type == "boolean_operator") {
    bool left = implies_cuda_available(field(expr, "left"), depth + 1);
    bool right = implies_cuda_available(field(expr, "right"), depth + 1);
    return text(field(expr, "operator")) == "and" ? left || right : left && right;
  }
  if (type == "conditional_expression") {
    std::string_view otherwise = text(ts_node_named_child(expr, 2));
    return implies_cuda_available(ts_node_named_child(expr, 1), depth + 1) &&
           (otherwise == "False" || otherwise == "None" || otherwise == "0");
  }
  return false;
}

// Names (`cuda`, `args.cuda`) assigned a value that implies CUDA is available.
void Matcher::find_availability_names() {
  walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>&) {
    if (node_type(node) != "assignment") return;
    TSNode left = field(node, "left");
    if ((is_type(left, "identifier") || is_type(left, "attribute")) && implies_cuda_available(field(node, "right"), 0))
      guards_.add_availability_name(text(left));
  });
}

// The code a read of a stored availability test decides: the whole `if` (every branch, for a
// negated test), the whole conditional expression, or the right operand of `and`.
std::vector<std::pair<uint32_t, uint32_t>> Matcher::decided_by(std::string_view spelling) const {
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  for (const NameUse& use : reads_anywhere(syntax_, spelling)) {
    TSNode child = use.node;
    for (size_t i = use.ancestors.size(); i-- > 0;) {
      TSNode parent = use.ancestors[i];
      std::string_view type = node_type(parent);
      if (type == "parenthesized_expression" || type == "not_operator" || type == "boolean_operator" ||
          type == "comparison_operator") {
        if (type == "boolean_operator" && text(field(parent, "operator")) == "and" &&
            ts_node_eq(field(parent, "left"), child)) {
          TSNode right = field(parent, "right");
          spans.emplace_back(ts_node_start_byte(right), ts_node_end_byte(right));
        }
        child = parent;
        continue;
      }
      if (((type == "if_statement" || type == "elif_clause" || type == "while_statement") &&
           ts_node_eq(field(parent, "condition"), child)) ||
          (type == "conditional_expression" && ts_node_eq(ts_node_named_child(parent, 1), child))) {
        TSNode whole = type == "elif_clause" && i > 0 ? use.ancestors[i - 1] : parent;
        spans.emplace_back(ts_node_start_byte(whole), ts_node_end_byte(whole));
      }
      break;
    }
  }
  return spans;
}

// `torch.cuda.is_available()` inside the value stored in a name (`cuda = True if ... else False`,
// `ancestors` ending with the call), a value true only where the test is: the code the reads of
// that name decide. The test is rewritten
// unless that code keeps a flagged CUDA call, which must then stay out of reach wherever CUDA is
// not the device. Empty when the value is not stored.
std::vector<std::pair<uint32_t, uint32_t>> Matcher::stored_availability(const std::vector<TSNode>& ancestors) const {
  TSNode child = ancestors.back();  // the call
  for (size_t i = ancestors.size() - 1; i-- > 0;) {
    TSNode parent = ancestors[i];
    std::string_view type = node_type(parent);
    if (type == "parenthesized_expression" || type == "boolean_operator" || type == "not_operator" ||
        type == "conditional_expression" || type == "comparison_operator") {
      child = parent;
      continue;
    }
    if (type != "assignment" || !ts_node_eq(field(parent, "right"), child)) return {};
    TSNode left = field(parent, "left");
    if (!is_type(left, "identifier") && !is_type(left, "attribute")) return {};
    // Only a stored test: a value the test merely chooses (`device = "cuda" if ... else "cpu"`) is
    // rewritten with it, and its reads (`device == "cuda"`) test the value, not availability.
    if (!implies_cuda_available(child, 0)) return {};
    return decided_by(text(left));
  }
  return {};
}

// --- SyncBatchNorm -----------------------------------------------------------------------------
// DDP over CPU modules refuses SyncBatchNorm layers; without an accelerator the module keeps
// its BatchNorm. npu keeps the conversion (torch_npu runs SyncBatchNorm).
void Matcher::sync_batchnorm(TSNode call, TSNode args) {
  if (target_ == Target::Npu || availability_guarded(call)) return;
  std::vector<TSNode> list;
  for (TSNode a : named_children(args))
    if (!is_type(a, "comment")) list.push_back(a);
  TSNode module = list.empty() ? TSNode{} : list[0];
  bool plain = !ts_node_is_null(module) && (is_type(module, "identifier") || is_type(module, "attribute")) &&
               text(module).find('(') == std::string_view::npos;
  if (!plain) {
    plan_.find(rule_by_id("sync-batchnorm-unproven"), call, std::string(text(call)), target_);
    return;
  }
  const Rule& rule = rule_by_id("sync-batchnorm");
  uint32_t start = ts_node_start_byte(call), end = ts_node_end_byte(call);
  if (agnostic())
    plan_.add(rule, {{start, start, "("}, {end, end, " if _accel_device.type != \"cpu\" else " + std::string(text(module)) + ")"}},
              call, "converted only with an accelerator; on the CPU the module keeps its BatchNorm layers");
  else
    plan_.replace(rule, call, std::string(text(module)), "no SyncBatchNorm on the CPU: the module keeps its BatchNorm layers");
}

// --- CUDA tests whose other branch makes CPU tensors -------------------------------------------
// `Tensor = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor`: on another accelerator
// x takes the other branch and meets CPU tensors.
void Matcher::cuda_branch(TSNode node) {
  if (target_ == Target::Cpu) return;
  TSNode condition{}, other{};
  uint32_t other_start = 0, other_end = 0;
  if (is_type(node, "if_statement") || is_type(node, "elif_clause")) {
    condition = field(node, "condition");
    TSNode consequence = field(node, "consequence");
    other_start = ts_node_end_byte(consequence);
    other_end = ts_node_end_byte(node);
    if (is_type(node, "elif_clause")) return;  // judged with its if_statement
  } else if (is_type(node, "conditional_expression")) {
    condition = ts_node_named_child(node, 1);
    other = ts_node_named_child(node, 2);
    other_start = ts_node_start_byte(other);
    other_end = ts_node_end_byte(other);
  } else {
    return;
  }
  if (other_end <= other_start || !guards_.is_device_cuda_test(condition)) return;
  if (!makes_cpu_tensors(syntax_.source().substr(other_start, other_end - other_start))) return;
  plan_.find(rule_by_id("cuda-branch-cpu-tensors"), condition, std::string(text(condition)), target_);
}

}  // namespace crosstrain::migrate
