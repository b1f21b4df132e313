#pragma once
// Unified diff (the `diff -u` / `git diff` text format) between two texts, line by line, with
// Myers' O((N+M)D) algorithm: fast when the texts differ in few lines, as migrated files do.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crosstrain::migrate {

// One replacement of bytes [start, end) of `before` by `text` (an empty span inserts).
struct DiffEdit {
  uint32_t start;
  uint32_t end;
  std::string_view text;
};

// Empty string when the texts are equal. Labels become the `--- ` and `+++ ` lines.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& before_label,
                         const std::string& after_label, size_t context = 3);

// The same diff when `after` is `before` with `edits` applied (sorted, non-overlapping): the
// changed lines are known, so time and memory stay linear in the file size (Myers' search keeps
// O(D^2) state: tens of GB for a few MB with thousands of changed lines).
std::string unified_diff_of_edits(std::string_view before, std::string_view after, const std::vector<DiffEdit>& edits,
                                  const std::string& before_label, const std::string& after_label, size_t context = 3);

}  // namespace crosstrain::migrate
