#pragma once
// Which recorded operators `op-check --from-dump` may run: only those that compute on tensors.
// A dump is someone else's file: a record naming aten::from_file with a path would create or grow a
// file outside the dump if it were replayed. The rule is an allow-list by schema, so an operator
// added to a later libtorch is judged the same way:
//   - the operator is in the aten namespace (another namespace's operators may do anything);
//   - every argument is a tensor, a number, a bool, a dtype/device/layout/memory format, a
//     generator, or a list or optional of those; a string only where aten uses strings as enum
//     values (reduce, rounding_mode, approximate, equation, dimension names, ...): never a file name,
//     a message or a key;
//   - no storage, stream, future, remote reference, custom class or Any argument;
//   - not one of the few aten operators that change process state (the cuFFT plan cache).
//
//   if (auto why = replay_refusal(handle->schema())) throw NotReplayed(*why);
#include <ATen/core/function_schema.h>

#include <optional>
#include <string>

namespace crosstrain::opcheck {

// Why the operator is not replayed ("touches files/process state: ..."), or nothing when it may be.
std::optional<std::string> replay_refusal(const c10::FunctionSchema& schema);

}  // namespace crosstrain::opcheck
