#pragma once
// Large literal data in Python source (`WEIGHTS = [0.12, 0.5, ...]`, a table of strings): a 4 MB
// one-line list is a million tree nodes, seconds of parsing and hundreds of MB, and no rule ever
// matches inside it. elide_data_literals() returns a copy of the source in which the inside of
// every such bracket is blanked to `0` and spaces (newlines kept), so every byte offset and line
// number stays the same and the parser builds one node where there were a million.
// Internal to tools/migrate: PythonSyntax parses the copy and reads text from the original.
#include <cstddef>
#include <string>
#include <string_view>

namespace crosstrain::migrate {

// Brackets whose content is shorter than this are left as they are.
inline constexpr size_t kMinElidedLiteral = 4096;

// Data is numbers, True/False/None, plain string literals (no f-string) that do not mention
// "cuda" or "nccl" in any case, unary signs, commas, colons, comments and nested brackets of the
// same. Returns an empty string when nothing is elided, or when the tokens do not line up (an
// unterminated string or bracket): then the source is parsed as it is.
std::string elide_data_literals(std::string_view source, size_t min_length = kMinElidedLiteral);

}  // namespace crosstrain::migrate
