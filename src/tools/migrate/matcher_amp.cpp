// torch.cuda.amp: autocast and GradScaler calls get their device, custom_fwd/custom_bwd their
// device_type, and a name imported from torch.cuda.amp that is used as a value is flagged.
#include "tools/migrate/matcher.h"

namespace crosstrain::migrate {

// Pre-pass: names imported from torch.cuda.amp that are used other than as the callee of a call
// (`ctx = autocast if amp else nullcontext`). Those uses are flagged and the import is kept.
void Matcher::find_amp_references() {
  std::map<std::string, std::string, std::less<>> imported;  // local name -> name in torch.cuda.amp
  walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>&) {
    if (!is_type(node, "import_from_statement") || text(field(node, "module_name")) != "torch.cuda.amp") return;
    for (TSNode child : named_children(node)) {
      if (is_type(child, "aliased_import"))
        imported.emplace(text(field(child, "alias")), text(field(child, "name")));
      else if (is_type(child, "dotted_name") && !ts_node_eq(child, field(node, "module_name")))
        imported.emplace(text(child), text(child));
    }
  });
  if (imported.empty()) return;
  walk_named(syntax_.root(), [&](TSNode node, const std::vector<TSNode>& ancestors) {
    auto found = imported.find(text(node));
    if (!is_type(node, "identifier") || found == imported.end() || ancestors.empty()) return;
    TSNode parent = ancestors.back();
    if (is_type(parent, "decorator") && is_custom_amp(found->second)) return;
    for (TSNode a : ancestors)
      if (is_type(a, "import_from_statement") || is_type(a, "import_statement")) return;
    if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), node)) {
      // `autocast(**cfg)` cannot be given its device: it stays torch.cuda.amp's, and so does the import.
      std::string_view name = found->second;
      bool ported = name == "autocast" || name == "GradScaler" || is_custom_amp(name);
      if (ported && unpacks_arguments(field(parent, "arguments"))) {
        plan_.find(rule_by_id("torch.cuda.amp." + std::string(name)), parent, std::string(text(parent)), target_,
                   "arguments unpacked with * or **: add the device by hand");
        amp_referenced_.emplace(text(node));
      }
      return;
    }
    if (is_type(parent, "attribute") && !ts_node_eq(field(parent, "object"), node)) return;
    if (is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node)) return;
    if (in_annotation(ancestors)) return;
    amp_referenced_.emplace(text(node));
  });
}

bool Matcher::unpacks_arguments(TSNode args) const {
  for (TSNode arg : named_children(args))
    if (is_type(arg, "list_splat") || is_type(arg, "dictionary_splat")) return true;
  return false;
}

void Matcher::on_identifier(TSNode node, const std::vector<TSNode>& ancestors) {
  auto amp = amp_names_.find(std::string(text(node)));
  if (amp != amp_names_.end() && is_custom_amp(amp->second) && !ancestors.empty() &&
      is_type(ancestors.back(), "decorator")) {
    custom_amp_decorator(rule_by_id("torch.cuda.amp." + amp->second), node, TSNode{}, "");
    return;
  }
  if (!amp_referenced_.count(text(node)) || ancestors.empty()) return;
  TSNode parent = ancestors.back();
  for (TSNode a : ancestors)
    if (is_type(a, "import_from_statement")) return;
  if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), node)) return;
  if (is_type(parent, "attribute") || is_type(parent, "keyword_argument") || in_annotation(ancestors)) return;
  plan_.find(rule_by_id("amp-reference"), node, std::string(text(node)), target_, amp_reference_advice(text(node)));
}

// torch.cuda.amp.custom_fwd(...) is torch.amp.custom_fwd(..., device_type="cuda"): the keyword
// goes after the last argument (a keyword-only parameter, so after any positional one).
void Matcher::custom_amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
  TSNode args = field(call, "arguments");
  if (!is_type(args, "argument_list")) return;
  std::vector<TSNode> list;
  for (TSNode arg : named_children(args))
    if (!is_type(arg, "comment")) list.push_back(arg);
  std::string keyword = "device_type=" + expand("{device_type}");
  std::vector<SpanEdit> edits;
  if (!ts_node_is_null(name)) edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
  if (list.empty()) {
    uint32_t open = ts_node_start_byte(args) + 1;
    edits.push_back({open, open, keyword});
  } else {
    uint32_t after = ts_node_end_byte(list.back());
    edits.push_back({after, after, ", " + keyword});
  }
  plan_.add(rule, std::move(edits), call, std::string(rule.message));
}

// `@torch.cuda.amp.custom_fwd` decorates with device_type "cuda"; torch.amp.custom_fwd called
// with only device_type returns the decorator that does the same.
void Matcher::custom_amp_decorator(const Rule& rule, TSNode reference, TSNode name, const std::string& new_name) {
  std::vector<SpanEdit> edits;
  if (!ts_node_is_null(name)) edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
  uint32_t end = ts_node_end_byte(reference);
  edits.push_back({end, end, "(device_type=" + expand("{device_type}") + ")"});
  plan_.add(rule, std::move(edits), reference, std::string(rule.message));
}

// A reference to GradScaler needs the device bound as its first argument, one to autocast the
// device type (the rule's own advice).
std::string Matcher::amp_reference_advice(std::string_view api) const {
  std::string_view last = api.substr(api.rfind('.') == std::string_view::npos ? 0 : api.rfind('.') + 1);
  if (is_custom_amp(last))
    return "torch.amp." + std::string(last) + " needs device_type: use functools.partial(torch.amp." +
           std::string(last) + ", device_type=" + expand("{device_type}") + ")";
  if (api.size() < 10 || api.substr(api.size() - 10) != "GradScaler") return {};
  return "torch.amp.GradScaler needs the device: use functools.partial(torch.amp.GradScaler, " +
         expand("{device_type}") + ")";
}

// torch.cuda.amp.autocast(...) / GradScaler(...) -> torch.amp.*, adding the device argument.
// `name` is the attribute chain to rename (null for a name imported from torch.cuda.amp).
void Matcher::amp_call(const Rule& rule, TSNode call, TSNode name, const std::string& new_name) {
  TSNode args = field(call, "arguments");
  if (!is_type(args, "argument_list")) return;
  std::vector<TSNode> positional;
  size_t count = 0;
  for (TSNode arg : named_children(args)) {
    std::string_view type = node_type(arg);
    if (type == "comment") continue;
    if (type == "list_splat" || type == "dictionary_splat") {
      plan_.find(rule, call, std::string(text(call)), target_, "arguments unpacked with * or **: add the device by hand");
      plan_.keep_as_written(call);
      return;
    }
    if (type != "keyword_argument") positional.push_back(arg);
    ++count;
  }
  std::vector<SpanEdit> edits;
  if (!ts_node_is_null(name))
    edits.push_back({ts_node_start_byte(name), ts_node_end_byte(name), new_name});
  uint32_t open = ts_node_start_byte(args) + 1;
  std::string device_type = expand("{device_type}");
  bool autocast = rule.id == "torch.cuda.amp.autocast";
  if (autocast) {
    edits.push_back({open, open, "device_type=" + device_type + (count ? ", " : "")});
    static const char* kNames[] = {"enabled=", "dtype=", "cache_enabled="};
    for (size_t i = 0; i < positional.size() && i < 3; ++i) {
      uint32_t at = ts_node_start_byte(positional[i]);
      edits.push_back({at, at, kNames[i]});
    }
  } else if (positional.empty()) {
    edits.push_back({open, open, "device=" + device_type + (count ? ", " : "")});
  } else {
    edits.push_back({open, open, device_type + ", "});
  }
  plan_.add(rule, std::move(edits), call, std::string(rule.message));
}

}  // namespace crosstrain::migrate
