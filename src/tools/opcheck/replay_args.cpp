#include "tools/opcheck/replay_args.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/jit_type.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/input_file.h"
#include "tools/dump/npy.h"

namespace crosstrain::opcheck {

namespace {

struct NamedType {
  const char* name;
  at::ScalarType type;
};
constexpr NamedType kScalarTypes[] = {
    {"float32", at::kFloat},   {"float64", at::kDouble},       {"float16", at::kHalf},
    {"bfloat16", at::kBFloat16}, {"int64", at::kLong},         {"int32", at::kInt},
    {"int16", at::kShort},     {"int8", at::kChar},            {"uint8", at::kByte},
    {"bool", at::kBool},       {"complex64", at::kComplexFloat}, {"complex128", at::kComplexDouble},
    {"float8_e4m3fn", at::kFloat8_e4m3fn}, {"float8_e5m2", at::kFloat8_e5m2},
};

at::ScalarType from_dump_dtype(dump::DType t) {
  switch (t) {
    case dump::DType::Float32: return at::kFloat;
    case dump::DType::Float64: return at::kDouble;
    case dump::DType::Float16: return at::kHalf;
    case dump::DType::BFloat16: return at::kBFloat16;
    case dump::DType::Int64: return at::kLong;
    case dump::DType::Int32: return at::kInt;
    case dump::DType::UInt8: return at::kByte;
    case dump::DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

// A short rendering of a JSON value for messages (a damaged value may be large).
std::string brief(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string type_text(const c10::TypePtr& t) { return t->str(); }

class Decoder {
 public:
  explicit Decoder(InputCache& cache) : cache_(cache) {}

  RecordedValue value(const c10::Argument& arg, const nlohmann::json& v) {
    arg_ = arg.name();
    n_ = arg.N().value_or(1);
    return convert(v, arg.real_type());
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw ArgumentError("argument '" + arg_ + "': " + why); }

  // The recorder writes {"unsupported": why} for a value it could not keep (a complex tensor, a
  // symbolic size, the dump's byte limit reached).
  void refuse_unsupported(const nlohmann::json& v) const {
    if (!v.is_object() || !v.contains("unsupported")) return;
    const auto& why = v["unsupported"];
    fail("not recorded (" + (why.is_string() ? why.get<std::string>() : brief(why)) + ")");
  }

  RecordedValue convert(const nlohmann::json& v, const c10::TypePtr& type) {
    refuse_unsupported(v);
    if (auto opt = type->cast<c10::OptionalType>()) {
      if (v.is_null()) return RecordedValue{};
      return convert(v, opt->getElementType());
    }
    if (v.is_null()) fail("null for a non-optional " + type_text(type));
    RecordedValue r;
    switch (type->kind()) {
      case c10::TypeKind::TensorType:
        r.kind = RecordedValue::Kind::Tensor;
        r.tensors.push_back(tensor(v));
        return r;
      case c10::TypeKind::ListType: return list(v, type->expectRef<c10::ListType>().getElementType());
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType: r.value = integer(v); return r;
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType: r.value = real(v); return r;
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType: r.value = boolean(v); return r;
      case c10::TypeKind::NumberType: r.value = scalar(v); return r;
      case c10::TypeKind::StringType:
        if (!v.is_string()) fail("expected a string, got " + brief(v));
        r.value = v.get<std::string>();
        return r;
      case c10::TypeKind::ScalarTypeType:
        r.kind = RecordedValue::Kind::ScalarType;
        r.value = static_cast<int64_t>(dtype(v));
        return r;
      case c10::TypeKind::LayoutType: r.value = static_cast<int64_t>(layout(v)); return r;
      case c10::TypeKind::MemoryFormatType: r.value = static_cast<int64_t>(memory_format(v)); return r;
      case c10::TypeKind::DeviceObjType:
        r.kind = RecordedValue::Kind::Device;
        r.value = device(v);
        return r;
      default: fail("type " + type_text(type) + " is not replayed");
    }
  }

  std::string tagged(const nlohmann::json& v, const char* key) const {
    if (!v.is_object() || !v.contains(key) || !v[key].is_string())
      fail(std::string("expected {\"") + key + "\": ...}, got " + brief(v));
    return v[key].get<std::string>();
  }

  int64_t integer(const nlohmann::json& v) const {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("integer out of range");
      return v.get<int64_t>();
    }
    fail("expected an integer, got " + brief(v));
  }

  double real(const nlohmann::json& v) const {
    if (v.is_number()) return v.get<double>();
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    const std::string s = tagged(v, "float");
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    fail("unknown float '" + s + "'");
  }

  bool boolean(const nlohmann::json& v) const {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return v.get<int64_t>() == 1;
    fail("expected a bool, got " + brief(v));
  }

  c10::Scalar scalar(const nlohmann::json& v) const {
    if (v.is_boolean()) return c10::Scalar(v.get<bool>());
    if (v.is_number_integer()) return c10::Scalar(integer(v));
    return c10::Scalar(real(v));
  }

  at::ScalarType dtype(const nlohmann::json& v) const {
    const std::string s = tagged(v, "dtype");
    auto t = parse_scalar_type(s);
    if (!t) fail("unknown dtype '" + s + "'");
    return *t;
  }

  at::Layout layout(const nlohmann::json& v) const {
    const std::string s = tagged(v, "layout");
    if (s == "strided") return at::kStrided;
    if (s == "sparse_coo") return at::kSparse;
    if (s == "sparse_csr") return at::kSparseCsr;
    fail("layout '" + s + "' is not replayed");
  }

  at::MemoryFormat memory_format(const nlohmann::json& v) const {
    const std::string s = tagged(v, "memory_format");
    if (s == "contiguous_format") return at::MemoryFormat::Contiguous;
    if (s == "preserve_format") return at::MemoryFormat::Preserve;
    if (s == "channels_last") return at::MemoryFormat::ChannelsLast;
    if (s == "channels_last_3d") return at::MemoryFormat::ChannelsLast3d;
    fail("unknown memory format '" + s + "'");
  }

  // Kept as text: a run's device type ("npu") need not be known to this process.
  std::string device(const nlohmann::json& v) const { return tagged(v, "device"); }

  RecordedTensor tensor(const nlohmann::json& v) {
    refuse_unsupported(v);
    RecordedTensor t;
    if (v.is_number() || v.is_boolean() || (v.is_object() && v.contains("float"))) {
      // A Python number where the schema takes a Tensor: the binding wraps it (float -> double).
      t.stored = at::native::wrapped_scalar_tensor(scalar(v));
      t.dtype = t.stored.scalar_type();
      t.wrapped = true;
      return t;
    }
    const std::string file = tagged(v, "tensor");
    auto dt = v.contains("dtype") && v["dtype"].is_string() ? parse_scalar_type(v["dtype"].get<std::string>())
                                                             : std::nullopt;
    if (!dt) fail("tensor " + file + " has no known dtype");
    if (!v.contains("shape") || !v["shape"].is_array()) fail("tensor " + file + " has no shape");
    std::vector<int64_t> shape;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) fail("tensor " + file + " has a bad shape " + brief(v["shape"]));
      shape.push_back(d.get<int64_t>());
    }
    if (v.contains("device") && v["device"].is_string()) t.device = v["device"].get<std::string>();
    try {
      t.stored = cache_.get(file);
    } catch (const ArgumentError& e) {
      fail(e.what());
    }
    t.dtype = *dt;
    t.file = file;
    const bool widened = *dt == at::kBFloat16 && t.stored.scalar_type() == at::kFloat;
    if (t.stored.scalar_type() != *dt && !widened)
      fail(file + " holds " + scalar_type_name(t.stored.scalar_type()) + ", the record says " + scalar_type_name(*dt));
    if (t.stored.sizes() != at::IntArrayRef(shape))
      fail(file + " has shape " + c10::str(t.stored.sizes()) + ", the record says " + c10::str(at::IntArrayRef(shape)));
    return t;
  }

  RecordedValue list(const nlohmann::json& v, const c10::TypePtr& elem) {
    RecordedValue r;
    const c10::TypeKind k = elem->kind();
    const bool int_like = k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType;
    if (int_like && v.is_number_integer()) {  // `stride=2` for an int[2]: Python repeats it N times
      r.value = c10::List<int64_t>(std::vector<int64_t>(static_cast<size_t>(std::max(n_, 1)), integer(v)));
      return r;
    }
    if (!v.is_array()) fail("expected a list, got " + brief(v));
    if (k == c10::TypeKind::TensorType) {
      r.kind = RecordedValue::Kind::TensorList;
      for (const auto& x : v) r.tensors.push_back(tensor(x));
      return r;
    }
    if (auto opt = elem->cast<c10::OptionalType>(); opt && opt->getElementType()->kind() == c10::TypeKind::TensorType) {
      r.kind = RecordedValue::Kind::OptionalTensorList;
      for (const auto& x : v) r.tensors.push_back(x.is_null() ? RecordedTensor{} : tensor(x));
      return r;
    }
    if (int_like) {
      c10::List<int64_t> l;
      for (const auto& x : v) l.push_back(integer(x));
      r.value = l;
    } else if (k == c10::TypeKind::FloatType) {
      c10::List<double> l;
      for (const auto& x : v) l.push_back(real(x));
      r.value = l;
    } else if (k == c10::TypeKind::BoolType) {
      c10::List<bool> l;
      for (const auto& x : v) l.push_back(boolean(x));
      r.value = l;
    } else {
      fail("list of " + type_text(elem) + " is not replayed");
    }
    return r;
  }

  InputCache& cache_;
  std::string arg_;
  int32_t n_ = 1;
};

std::string device_type(const std::string& device) { return device.substr(0, device.find(':')); }

at::Tensor place(const RecordedTensor& t, const ReplaySide& side,
                 std::unordered_map<const c10::TensorImpl*, at::Tensor>& placed) {
  if (!t.stored.defined()) return {};
  if (t.wrapped) {  // stays a CPU scalar of its own dtype on both sides, as the binding makes it
    at::Tensor w = t.stored.clone();
    w.unsafeGetTensorImpl()->set_wrapped_number(true);
    return w;
  }
  auto it = placed.find(t.stored.unsafeGetTensorImpl());
  if (it != placed.end()) return it->second;
  const c10::Device dev = device_type(t.device) == side.run_device_type ? side.device : c10::Device(c10::kCPU);
  at::Tensor x = t.stored;
  at::ScalarType dtype = t.dtype;
  if (at::isFloatingType(t.dtype)) {
    dtype = target_dtype(t.dtype, side.precision);
    if (side.precision && side.produced) {
      auto it = side.produced->find(t.file);
      if (it != side.produced->end() && at::isFloatingType(it->second)) dtype = it->second;
    }
    if (side.reference) {
      x = x.to(dtype);  // the target's rounding, then exact widening
      dtype = at::kDouble;
    }
  }
  at::Tensor out = x.to(at::TensorOptions().dtype(dtype).device(dev), /*non_blocking=*/false, /*copy=*/true);
  placed.emplace(t.stored.unsafeGetTensorImpl(), out);
  return out;
}

}  // namespace

const at::Tensor& InputCache::get(const std::string& file) {
  auto it = tensors_.find(file);
  if (it != tensors_.end()) return it->second;
  at::Tensor t;
  try {
    dump::NpyArray a = dump::NpyArray::open(report::resolve_inside(dir_, file));
    const auto st = from_dump_dtype(a.dtype());
    t = at::from_blob(const_cast<void*>(a.data()), at::IntArrayRef(a.shape()), at::TensorOptions().dtype(st)).clone();
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw ArgumentError(what.substr(0, what.find('\n')));
  }
  ++loads_;
  return tensors_.emplace(file, std::move(t)).first->second;
}

void InputCache::release(const std::string& file) {
  auto it = uses_.find(file);
  if (it == uses_.end() || --it->second <= 0) {
    tensors_.erase(file);
    if (it != uses_.end()) uses_.erase(it);
  }
}

RecordedArgs decode_args(const c10::FunctionSchema& schema, const nlohmann::json& args, InputCache& cache) {
  if (!args.is_array()) throw ArgumentError("'args' is not a list");
  const auto& params = schema.arguments();
  std::vector<const nlohmann::json*> given(params.size(), nullptr);
  for (const auto& entry : args) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("value"))
      throw ArgumentError("an 'args' entry is not {\"name\": ..., \"value\": ...}: " + brief(entry));
    const std::string name = entry["name"].get<std::string>();
    size_t i = 0;
    while (i < params.size() && params[i].name() != name) ++i;
    if (i == params.size()) throw ArgumentError("argument '" + name + "' is not in the schema " + schema.name());
    given[i] = &entry["value"];
  }
  RecordedArgs out;
  Decoder decoder(cache);
  for (size_t i = 0; i < params.size(); ++i) {
    const c10::Argument& p = params[i];
    if (given[i]) {
      out.values.push_back(decoder.value(p, *given[i]));
      continue;
    }
    RecordedValue r;
    if (p.default_value()) {
      r.value = *p.default_value();
      auto base = p.real_type();
      if (auto opt = base->cast<c10::OptionalType>()) base = opt->getElementType();
      if (base->kind() == c10::TypeKind::ScalarTypeType && r.value.isInt()) r.kind = RecordedValue::Kind::ScalarType;
    } else if (!p.real_type()->cast<c10::OptionalType>()) {
      throw ArgumentError("argument '" + p.name() + "' is not recorded and has no default");
    }
    out.values.push_back(std::move(r));
  }
  return out;
}

torch::jit::Stack make_stack(const RecordedArgs& args, const ReplaySide& side) {
  torch::jit::Stack stack;
  stack.reserve(args.values.size());
  std::unordered_map<const c10::TensorImpl*, at::Tensor> placed;
  for (const auto& v : args.values) {
    switch (v.kind) {
      case RecordedValue::Kind::Value: stack.push_back(v.value); break;
      case RecordedValue::Kind::Tensor: stack.emplace_back(place(v.tensors.front(), side, placed)); break;
      case RecordedValue::Kind::TensorList: {
        c10::List<at::Tensor> l;
        for (const auto& t : v.tensors) l.push_back(place(t, side, placed));
        stack.emplace_back(l);
        break;
      }
      case RecordedValue::Kind::OptionalTensorList: {
        c10::List<std::optional<at::Tensor>> l;
        for (const auto& t : v.tensors)
          l.push_back(t.stored.defined() ? std::optional<at::Tensor>(place(t, side, placed)) : std::nullopt);
        stack.emplace_back(l);
        break;
      }
      case RecordedValue::Kind::ScalarType: {
        const auto recorded = static_cast<at::ScalarType>(v.value.toInt());
        at::ScalarType t = recorded;
        if (at::isFloatingType(recorded)) t = side.reference ? at::kDouble : target_dtype(recorded, side.precision);
        stack.emplace_back(static_cast<int64_t>(t));
        break;
      }
      case RecordedValue::Kind::Device: {
        stack.emplace_back(device_type(v.value.toStringRef()) == side.run_device_type ? side.device
                                                                                     : c10::Device(c10::kCPU));
        break;
      }
    }
  }
  return stack;
}

at::ScalarType target_dtype(at::ScalarType recorded, const std::optional<at::ScalarType>& precision) {
  return at::isFloatingType(recorded) && precision ? *precision : recorded;
}

std::optional<at::ScalarType> parse_scalar_type(const std::string& name) {
  for (const auto& t : kScalarTypes)
    if (name == t.name) return t.type;
  return std::nullopt;
}

std::string scalar_type_name(at::ScalarType t) {
  for (const auto& n : kScalarTypes)
    if (n.type == t) return n.name;
  return c10::toString(t);
}

}  // namespace crosstrain::opcheck
