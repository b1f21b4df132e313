#include "core/state_dict.h"

#include <stdexcept>

namespace crosstrain::core {

StateDict make_state_dict() { return StateDict(c10::StringType::get(), c10::AnyType::get()); }

bool state_has(const StateDict& d, const std::string& key) { return d.contains(c10::IValue(key)); }

const c10::IValue& state_value(const StateDict& d, const std::string& key, const std::string& where) {
  auto it = d.find(c10::IValue(key));
  if (it == d.end()) throw std::invalid_argument(where + ": missing key '" + key + "'");
  return it->value();
}

namespace {
[[noreturn]] void wrong_kind(const std::string& where, const std::string& key, const char* want,
                             const c10::IValue& v) {
  throw std::invalid_argument(where + ": '" + key + "' should be " + want + ", found " + v.tagKind());
}
}  // namespace

double ivalue_to_double(const c10::IValue& v, const std::string& where) {
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item<double>();
  throw std::invalid_argument(where + ": expected a number, found " + v.tagKind());
}

StateDict state_dict_at(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (!v.isGenericDict()) wrong_kind(where, key, "a dict", v);
  return v.toGenericDict();
}

double state_double(const StateDict& d, const std::string& key, const std::string& where) {
  return ivalue_to_double(state_value(d, key, where), where + " '" + key + "'");
}

int64_t state_int(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (v.isInt()) return v.toInt();
  if (v.isTensor() && v.toTensor().numel() == 1 && !v.toTensor().is_floating_point())
    return v.toTensor().item<int64_t>();
  wrong_kind(where, key, "an integer", v);
}

bool state_bool(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (v.isBool()) return v.toBool();
  wrong_kind(where, key, "a bool", v);
}

std::string state_string(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (v.isString()) return v.toStringRef();
  wrong_kind(where, key, "a string", v);
}

at::Tensor state_tensor(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (v.isTensor()) return v.toTensor();
  wrong_kind(where, key, "a tensor", v);
}

std::vector<c10::IValue> state_list(const StateDict& d, const std::string& key, const std::string& where) {
  const auto& v = state_value(d, key, where);
  if (v.isList()) return v.toListRef().vec();
  if (v.isTuple()) return v.toTupleRef().elements().vec();
  wrong_kind(where, key, "a list", v);
}

}  // namespace crosstrain::core
