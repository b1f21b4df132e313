#include "tools/dump/dump_format.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <stdexcept>

namespace crosstrain::dump {

namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
  int rank;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::Float64, "float64", 8, 5},  {DType::Float32, "float32", 4, 4}, {DType::Float16, "float16", 2, 3},
    {DType::BFloat16, "bfloat16", 2, 2}, {DType::Int64, "int64", 8, 1},   {DType::Int32, "int32", 4, 1},
    {DType::UInt8, "uint8", 1, 1},       {DType::Bool, "bool", 1, 0},
};

const DTypeInfo& info(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d;
  return kDTypes[1];
}

struct KindInfo {
  RecordKind kind;
  const char* name;
  int phase;
};
constexpr KindInfo kKinds[] = {
    {RecordKind::Forward, "forward", 0},          {RecordKind::Loss, "loss", 0},
    {RecordKind::GradOutput, "grad_output", 1},   {RecordKind::ParamGrad, "param_grad", 2},
    {RecordKind::ParamGradUnscaled, "param_grad_unscaled", 2}, {RecordKind::LossScale, "loss_scale", 2},
    {RecordKind::OpForward, "op_forward", 0},     {RecordKind::OpBackward, "op_backward", 1},
    {RecordKind::OpOptimizer, "op_optimizer", 2}, {RecordKind::Other, "other", 2},
};

}  // namespace

std::string dump_mode_name(DumpMode m) { return m == DumpMode::Stats ? "stats" : "tensors"; }

DumpMode parse_dump_mode(const std::string& s) {
  if (s == "stats") return DumpMode::Stats;
  if (s == "tensors") return DumpMode::Tensors;
  throw std::invalid_argument("unknown dump mode '" + s + "' (valid: stats, tensors)");
}

std::string dtype_name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(const std::string& s) {
  for (const auto& d : kDTypes)
    if (s == d.name) return d.type;
  return std::nullopt;
}

size_t dtype_size(DType t) { return info(t).size; }

std::optional<DType> parse_precision(const std::string& s) {
  std::string p = s;
  for (auto& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* needle) { return p.find(needle) != std::string::npos; };
  if (has("bf16") || has("bfloat16")) return DType::BFloat16;
  if (has("fp16") || has("float16") || p == "half") return DType::Float16;
  if (has("fp64") || has("float64") || p == "double") return DType::Float64;
  if (has("fp32") || has("float32") || p == "float") return DType::Float32;
  return std::nullopt;
}
bool dtype_is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
int dtype_precision_rank(DType t) { return info(t).rank; }

std::string record_kind_name(RecordKind k) {
  for (const auto& d : kKinds)
    if (d.kind == k) return d.name;
  return "other";
}

RecordKind parse_record_kind(const std::string& s) {
  for (const auto& d : kKinds)
    if (s == d.name) return d.kind;
  return RecordKind::Other;
}

int record_kind_phase(RecordKind k) {
  for (const auto& d : kKinds)
    if (d.kind == k) return d.phase;
  return 2;
}

nlohmann::json stats_to_json(const TensorStats& s) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"max", opt(s.max)},   {"min", opt(s.min)},           {"mean", opt(s.mean)},
          {"norm", opt(s.norm)}, {"nan_count", s.nan_count}, {"inf_count", s.inf_count}};
}

int64_t json_int64(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw std::invalid_argument("'" + what + "' is out of range");
  if (!v.is_number_integer()) throw std::invalid_argument("'" + what + "' is not an integer");
  return v.get<int64_t>();
}

nlohmann::json record_to_json(const DumpRecord& r) {
  nlohmann::json j = {{"seq", r.seq},
                      {"step", r.step},
                      {"name", r.name},
                      {"kind", record_kind_name(r.kind)},
                      {"dtype", dtype_name(r.dtype)},
                      {"shape", r.shape},
                      {"stats", stats_to_json(r.stats)}};
  if (!r.file.empty()) {
    j["file"] = r.file;
    j["stored_dtype"] = dtype_name(r.stored_dtype);
  }
  if (!r.device.empty()) j["device"] = r.device;
  if (r.op) {
    const OpOrigin& o = *r.op;
    nlohmann::json op = {{"name", o.op}, {"overload", o.overload}, {"phase", o.phase}, {"module", o.module}};
    for (auto [key, value] : {std::pair{"source", &o.source}, std::pair{"code", &o.code},
                              std::pair{"user_source", &o.user_source}, std::pair{"user_code", &o.user_code}})
      if (!value->empty()) op[key] = *value;
    if (o.random) op["random"] = true;
    j["op"] = std::move(op);
  }
  return j;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  // Shapes come from files: a zero anywhere makes 0 whatever the other dimensions are, and a
  // product past int64 is refused rather than wrapped.
  for (auto d : shape)
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_to_string(shape));
  if (std::find(shape.begin(), shape.end(), int64_t{0}) != shape.end()) return 0;
  int64_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw std::invalid_argument("shape " + shape_to_string(shape) + " has more than 2^63 elements");
  return n;
}

std::string record_name(RecordKind kind, const std::string& path) {
  if (kind == RecordKind::Loss || kind == RecordKind::LossScale) return record_kind_name(kind);
  return record_kind_name(kind) + "/" + path;
}

StepSelection StepSelection::parse(const std::string& text) {
  StepSelection sel;
  size_t pos = 0;
  auto bad = [&]() { return std::invalid_argument("bad step list '" + text + "' (expected e.g. 0-4,10,20-22)"); };
  auto number = [&](size_t& p) {
    size_t start = p;
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
    if (p == start || p - start > 15) throw bad();
    return std::stoll(text.substr(start, p - start));
  };
  while (pos < text.size()) {
    int64_t lo = number(pos), hi = lo;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      hi = number(pos);
      if (hi < lo) throw bad();
    }
    sel.ranges_.emplace_back(lo, hi);
    if (pos < text.size()) {
      if (text[pos] != ',') throw bad();
      if (++pos == text.size()) throw bad();
    }
  }
  return sel;
}

bool StepSelection::contains(int64_t step) const {
  if (ranges_.empty()) return true;
  for (auto [lo, hi] : ranges_)
    if (step >= lo && step <= hi) return true;
  return false;
}

}  // namespace crosstrain::dump
