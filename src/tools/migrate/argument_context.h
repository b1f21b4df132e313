#pragma once
// Why a string literal sits where it does: the device-ish role ("cuda" as a device, a device type,
// the type in torch.device(...), a collective backend) that decides whether and how it may be
// rewritten. Internal to tools/migrate; the rule table documents the positions in words.
#include "tools/migrate/python_syntax.h"

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace crosstrain::migrate {

// MapLocation is a Device that torch.load reads as a location tag: "cpu:0" is not a valid tag, so
// on device-agnostic an index there is dropped rather than kept.
// Comparison: an operand of a test (`== "cuda"`, `in`, startswith); Keyed: a dictionary key or
// value, a subscript, `choices=`. Both already name the device they mean and are left alone.
// Text: a string that is data, not a device (an attribute name given to getattr/hasattr/setattr/
// delattr, a path component, a printed or logged message, a class attribute whose name is not a
// device's, such as an Enum member's value): left alone and not flagged.
// None: any other position; a "cuda" there may or may not become a device elsewhere.
enum class ArgContext { None, Docstring, Comparison, Keyed, Text, Device, MapLocation, DeviceType, TorchDevice, Backend };

// The positions where a "cuda" string is a device (or device type) and may be rewritten.
inline bool is_device_position(ArgContext kind) {
  return kind == ArgContext::Device || kind == ArgContext::MapLocation || kind == ArgContext::DeviceType ||
         kind == ArgContext::TorchDevice;
}

struct ArgumentContext {
  ArgContext kind = ArgContext::None;
  TSNode call_arguments{};  // the argument_list, for positional arguments of a call
  // For the value of `name = ...` (kind None): the index in `ancestors` of that assignment, whose
  // plain identifier target may still be read as a device; 0 when there is none.
  size_t assignment = 0;
};

// Walks up from `node` (its ancestors, innermost last) through expressions that pass a value on
// (conditionals, parentheses, and/or, containers) to the argument, assignment or parameter it
// feeds. `is_torch` says whether a name is the file's torch module.
ArgumentContext classify_string_position(const PythonSyntax& syntax, TSNode node, const std::vector<TSNode>& ancestors,
                                         const std::function<bool(std::string_view)>& is_torch);

// "cuda" -> {true, ""}; "cuda:3" -> {true, "3"}; anything else -> {false, ""}.
std::pair<bool, std::string_view> parse_cuda_string(std::string_view value);

// Last name of a callee: `a.b.to` -> "to", `autocast` -> "autocast", otherwise "".
std::string_view last_segment(const PythonSyntax& syntax, TSNode node);

// Case-insensitive search for an ASCII lower-case needle.
bool contains_ci(std::string_view text, std::string_view needle);
// Whether `text` equals the ASCII lower-case `lower`, ignoring case.
bool equals_ignoring_case(std::string_view text, std::string_view lower);

}  // namespace crosstrain::migrate
