// Legacy CUDA tensor types: `torch.cuda.FloatTensor` and its name "torch.cuda.FloatTensor", given
// to `x.type(...)` or `torch.set_default_tensor_type(...)`. Off CUDA both raise ("Found no NVIDIA
// driver"), at the call or at the first `torch.Tensor(...)`. Rewritten where the result is the same
// on CUDA; every other use of such a type is flagged.
#include "tools/migrate/matcher.h"

#include <array>
#include <cctype>

namespace crosstrain::migrate {

struct LegacyTensorType {
  std::string_view name;
  std::string_view dtype;
  bool floating;  // set_default_tensor_type takes only these
};

namespace {

constexpr std::array<LegacyTensorType, 10> kLegacyTensorTypes = {{
    {"FloatTensor", "float32", true}, {"DoubleTensor", "float64", true}, {"HalfTensor", "float16", true},
    {"BFloat16Tensor", "bfloat16", true}, {"ByteTensor", "uint8", false}, {"CharTensor", "int8", false},
    {"ShortTensor", "int16", false}, {"IntTensor", "int32", false}, {"LongTensor", "int64", false},
    {"BoolTensor", "bool", false},
}};

const LegacyTensorType* legacy_type(std::string_view name) {
  for (const auto& t : kLegacyTensorTypes)
    if (t.name == name) return &t;
  return nullptr;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

// The type a node names when it is `<torch>.cuda.<X>Tensor` or the string "torch.cuda.<X>Tensor".
const LegacyTensorType* Matcher::cuda_tensor_type(TSNode node) const {
  std::string_view name;
  if (is_type(node, "string")) {
    std::string_view t = text(node);
    if (t.size() < 2 || (t.front() != '"' && t.front() != '\'')) return nullptr;
    std::string_view content = t.substr(1, t.size() - 2);
    if (content.substr(0, 11) != "torch.cuda.") return nullptr;
    name = content.substr(11);
  } else if (is_type(node, "attribute")) {
    TSNode cuda = field(node, "object");
    if (!is_type(cuda, "attribute") || text(field(cuda, "attribute")) != "cuda") return nullptr;
    TSNode base = field(cuda, "object");
    if (!is_type(base, "identifier") || !plan_.is_torch_alias(text(base))) return nullptr;
    name = text(field(node, "attribute"));
  } else {
    return nullptr;
  }
  return legacy_type(name);
}

// `Tensor(` as a name of its own (torch.Tensor(...), Tensor(...)): the legacy constructor, which
// follows set_default_tensor_type but not set_default_device.
bool Matcher::calls_legacy_constructor() const {
  std::string_view src = syntax_.source();
  for (size_t at = src.find("Tensor"); at != std::string_view::npos; at = src.find("Tensor", at + 6)) {
    if (at > 0 && identifier_char(src[at - 1])) continue;
    size_t next = src.find_first_not_of(" \t", at + 6);
    if (next != std::string_view::npos && src[next] == '(') return true;
  }
  return false;
}

// The one argument of a call (positional or `keyword=`), else null.
TSNode Matcher::sole_argument(TSNode args, std::string_view keyword) const {
  std::vector<TSNode> list;
  for (TSNode arg : named_children(args))
    if (!is_type(arg, "comment")) list.push_back(arg);
  if (list.size() != 1) return {};
  if (!is_type(list[0], "keyword_argument")) return list[0];
  return text(field(list[0], "name")) == keyword ? field(list[0], "value") : TSNode{};
}

// `x.type(<cuda type>)` -> `x.type(<dtype>).to(<device>)`: Tensor.type and Module.type cast (every
// parameter and buffer, for a module), then the move is the one `.cuda()` makes.
// `torch.set_default_tensor_type(<cuda floating type>)` as a statement ->
// `torch.set_default_dtype(<dtype>); torch.set_default_device(<device>)`, unless the file calls the
// legacy `torch.Tensor(...)` constructor, which only the former places on the device.
bool Matcher::legacy_tensor_type_call(TSNode call, TSNode function, TSNode args) {
  std::string_view method = text(field(function, "attribute"));
  bool set_default = method == "set_default_tensor_type";
  if (method != "type" && !set_default) return false;
  TSNode object = field(function, "object");
  if (set_default && !(is_type(object, "identifier") && plan_.is_torch_alias(text(object)))) return false;
  TSNode type_node = sole_argument(args, set_default ? "t" : "dtype");
  const LegacyTensorType* type = ts_node_is_null(type_node) ? nullptr : cuda_tensor_type(type_node);
  TSNode statement = ancestors_->empty() ? TSNode{} : ancestors_->back();
  bool alone = is_type(statement, "expression_statement") && ts_node_named_child_count(statement) == 1;
  if (!type) {
    if (set_default) default_type_restores_.emplace_back(call, alone);
    return false;
  }
  const Rule& rule = rule_by_id("legacy-tensor-type");
  std::string torch(plan_.torch_name());
  std::string dtype = torch + "." + std::string(type->dtype);
  if (!set_default) {
    handled_tensor_types_.insert(ts_node_start_byte(type_node));
    uint32_t end = ts_node_end_byte(call);
    plan_.add(rule,
              {{ts_node_start_byte(args) + 1, ts_node_end_byte(args) - 1, dtype},
               {end, end, ".to(" + expand("{device}") + ")"}},
              call, "`" + std::string(text(call)) + "`: cast, then moved as .cuda() moves");
    return true;
  }
  if (!type->floating || !alone || calls_legacy_constructor()) return false;
  handled_tensor_types_.insert(ts_node_start_byte(type_node));
  default_device_set_ = true;
  plan_.replace(rule, call,
                torch + ".set_default_dtype(" + dtype + "); " + torch + ".set_default_device(" + expand("{device}") + ")",
                "");
  return true;
}

// `torch.set_default_tensor_type(torch.FloatTensor)` (or any type but a CUDA one) restores CPU
// tensors after a CUDA default type, but not the default device its rewrite set: without the
// reset, factories keep making tensors on the accelerator. The reset adds nothing the original
// had (only the rewrite sets the default device), so it follows every such call once a CUDA
// default type was rewritten; one that is not a statement of its own cannot take it and is flagged.
void Matcher::default_type_restores() {
  if (!default_device_set_) return;
  const Rule& rule = rule_by_id("legacy-tensor-type");
  std::string reset = "; " + std::string(plan_.torch_name()) + ".set_default_device(None)";
  for (const auto& [call, alone] : default_type_restores_) {
    if (alone) {
      uint32_t end = ts_node_end_byte(call);
      plan_.add(rule, {{end, end, reset}}, call,
                "`" + std::string(text(call)) + "`: the default type restored, and the default device set above reset");
    } else {
      plan_.find(rule_by_id("legacy-tensor-type-unproven"), call, std::string(text(call)), target_,
                 "restores the default type after a CUDA one that became set_default_device: reset the device "
                 "too, with torch.set_default_device(None) after it");
    }
  }
}

// A CUDA tensor type's name, as a string, anywhere but a rewritten call: flagged.
void Matcher::legacy_tensor_type_string(TSNode node, const std::vector<TSNode>& ancestors) {
  if (!cuda_tensor_type(node) || handled_tensor_types_.count(ts_node_start_byte(node))) return;
  ArgContext context = classify_string_position(syntax_, node, ancestors, [this](std::string_view name) {
                         return plan_.is_torch_alias(name);
                       }).kind;
  if (context == ArgContext::Docstring || context == ArgContext::Comparison || context == ArgContext::Keyed) return;
  plan_.find(rule_by_id("legacy-tensor-type-unproven"), node, std::string(text(node)), target_);
}

}  // namespace crosstrain::migrate
