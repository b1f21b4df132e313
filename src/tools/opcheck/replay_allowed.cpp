#include "tools/opcheck/replay_allowed.h"

#include <array>
#include <string_view>

namespace crosstrain::opcheck {

namespace {

constexpr const char* kPrefix = "not replayed: touches files/process state: ";

// Names of aten's string arguments that are enum values or dimension names, never a path.
constexpr std::array<std::string_view, 32> kEnumStrings = {
    "reduce", "rounding_mode", "approximate", "mode", "norm", "driver", "interpolation", "UPLO", "ord", "side",
    "padding", "p", "pad_mode", "equation", "indexing", "padding_side", "activation", "algorithm", "dim", "dims",
    "names", "out_dim", "start_dim", "end_dim", "dim0", "dim1", "dim2", "outdim", "order", "reduction",
    "compute_mode", "layout"};

bool enum_string(std::string_view name) {
  for (auto n : kEnumStrings)
    if (n == name) return true;
  return false;
}

// The type an argument holds once optionals and lists are looked through.
c10::TypePtr element_type(c10::TypePtr t) {
  while (true) {
    if (auto o = t->castRaw<c10::OptionalType>()) t = o->getElementType();
    else if (auto l = t->castRaw<c10::ListType>()) t = l->getElementType();
    else return t;
  }
}

std::optional<std::string> refused_type(const c10::Argument& a) {
  const c10::TypePtr t = element_type(a.type());
  switch (t->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::SymFloatType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::SymBoolType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
    case c10::TypeKind::GeneratorType:
    case c10::TypeKind::ComplexType:
      return std::nullopt;
    case c10::TypeKind::StringType:
      if (enum_string(a.name())) return std::nullopt;
      return "its string argument '" + a.name() + "' is not an enum value (a file name, a message, a key)";
    default:
      return "its argument '" + a.name() + "' is a " + t->str() + ", not a tensor or a value";
  }
}

}  // namespace

std::optional<std::string> replay_refusal(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  if (name.rfind("aten::", 0) != 0)
    return std::string(kPrefix) + name + " is not an aten operator (only aten's compute-only operators are replayed)";
  const std::string_view base = std::string_view(name).substr(6);
  if (base.rfind("_cufft_", 0) == 0) return std::string(kPrefix) + name + " changes the cuFFT plan cache";
  for (const auto& a : schema.arguments())
    if (auto why = refused_type(a)) return std::string(kPrefix) + name + ": " + *why;
  for (const auto& r : schema.returns())
    if (auto why = refused_type(r)) return std::string(kPrefix) + name + ": " + *why;
  return std::nullopt;
}

}  // namespace crosstrain::opcheck
