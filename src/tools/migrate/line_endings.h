#pragma once
// Line endings as Python reads them: "\n", "\r\n" and a lone "\r" (old Mac files) all end a
// line, while the grammar only knows the first two. A file with lone CRs is parsed in a copy where
// each becomes "\n" (one byte for one, so every offset and line stays), and the lines a rewrite
// adds are written in the file's own style. Internal to tools/migrate.
#include "tools/migrate/change.h"

#include <string>
#include <string_view>

namespace crosstrain::migrate {

struct LineEndings {
  bool lone_cr = false;  // at least one "\r" not followed by "\n"
  std::string newline;   // the most frequent ending ("\n" on a tie or when there is none)
};
LineEndings line_endings_of(std::string_view text);

// The number of line breaks, as Python counts them ("\r\n" is one).
size_t line_breaks(std::string_view text);

// `text` with every lone "\r" turned into "\n"; the same length.
std::string with_lone_cr_as_lf(std::string_view text);

// Every line break an edit writes ("\n" or "\r\n") becomes `newline`.
void restyle_line_breaks(RewritePlan& plan, std::string_view newline);

}  // namespace crosstrain::migrate
