#pragma once
// Unified diff (the `diff -u` / `git diff` text format) between two texts, line by line, with
// Myers' O((N+M)D) algorithm: fast when the texts differ in few lines, as migrated files do.
#include <string>
#include <string_view>

namespace crosstrain::migrate {

// Empty string when the texts are equal. Labels become the `--- ` and `+++ ` lines.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& before_label,
                         const std::string& after_label, size_t context = 3);

}  // namespace crosstrain::migrate
