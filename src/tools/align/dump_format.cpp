#include "tools/align/dump_format.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <stdexcept>

namespace crosstrain::align {

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

std::string opt_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The "op" object of an operator record. Fields a reader does not need to compare are optional, so
// a damaged one costs the report its detail, never the record.
OpOrigin op_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("'op' is not an object");
  OpOrigin o;
  o.op = opt_string(j, "name");
  o.overload = opt_string(j, "overload");
  o.phase = opt_string(j, "phase");
  o.module = opt_string(j, "module");
  o.source = opt_string(j, "source");
  o.code = opt_string(j, "code");
  o.user_source = opt_string(j, "user_source");
  o.user_code = opt_string(j, "user_code");
  auto it = j.find("random");
  o.random = it != j.end() && it->is_boolean() && it->get<bool>();
  return o;
}

std::optional<double> opt_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw std::invalid_argument(std::string("stats field '") + key + "' is not a number");
  return it->get<double>();
}

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

TensorStats stats_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("'stats' is not an object");
  TensorStats s;
  s.max = opt_number(j, "max");
  s.min = opt_number(j, "min");
  s.mean = opt_number(j, "mean");
  s.norm = opt_number(j, "norm");
  for (auto [key, field] : {std::pair{"nan_count", &s.nan_count}, std::pair{"inf_count", &s.inf_count}}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) *field = json_int64(*it, key);
  }
  return s;
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

DumpRecord record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("record is not a JSON object");
  auto need = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    if (it == j.end()) throw std::invalid_argument(std::string("record lacks '") + key + "'");
    return *it;
  };
  DumpRecord r;
  try {
    r.seq = json_int64(need("seq"), "seq");
    r.step = json_int64(need("step"), "step");
    r.name = need("name").get<std::string>();
    r.kind = parse_record_kind(j.value("kind", std::string("other")));
    auto dt = parse_dtype(need("dtype").get<std::string>());
    if (!dt) throw std::invalid_argument("unknown dtype '" + j["dtype"].get<std::string>() + "'");
    r.dtype = *dt;
    r.stored_dtype = r.dtype == DType::BFloat16 ? DType::Float32 : r.dtype;
    if (j.contains("stored_dtype")) {
      auto st = parse_dtype(j["stored_dtype"].get<std::string>());
      if (!st) throw std::invalid_argument("unknown stored_dtype");
      r.stored_dtype = *st;
    }
    const auto& shape = need("shape");
    if (!shape.is_array()) throw std::invalid_argument("'shape' is not a list");
    for (const auto& d : shape) r.shape.push_back(json_int64(d, "shape"));
    for (auto d : r.shape)
      if (d < 0) throw std::invalid_argument("negative dimension in 'shape'");
    r.stats = stats_from_json(need("stats"));
    r.stats.numel = shape_numel(r.shape);
    r.file = j.value("file", std::string());
    if (!r.file.empty() && (r.file[0] == '/' || r.file == ".." || r.file.rfind("../", 0) == 0 ||
                            r.file.find("/../") != std::string::npos ||
                            (r.file.size() >= 3 && r.file.compare(r.file.size() - 3, 3, "/..") == 0)))
      throw std::invalid_argument("'file' " + r.file + " leads out of the dump directory");
    r.device = opt_string(j, "device");
    if (auto it = j.find("op"); it != j.end()) r.op = op_from_json(*it);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("record has a field of the wrong type: ") + e.what());
  }
  return r;
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

}  // namespace crosstrain::align
