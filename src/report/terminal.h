#pragma once
// Progress for long work: a single self-overwriting line on a terminal (stderr), nothing at all
// when stderr is not a terminal, so logs and pipes stay clean.
#include <chrono>
#include <string>
#include <string_view>

namespace crosstrain::report {

bool stderr_is_terminal();

// `text` from a file crosstrain did not write (a trace's names, a side file's code lines and file
// names, an error naming them) made safe to print on a terminal: a control character would be
// obeyed, not shown (ESC starts sequences that retitle the window, clear the screen or rewrite
// what was printed). C0 controls and DEL become \xNN, the C1 controls U+0080-U+009F (8-bit CSI
// and OSC) \u00NN, the characters that move or reorder what is printed after them (line and
// paragraph separators U+2028/U+2029; bidirectional marks, embeddings, overrides and isolates
// U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) \uNNNN, and bytes that are not UTF-8
// \xNN; newline and tab are kept when
// `keep_newline_and_tab` (a report's layout), escaped too otherwise (a table cell, one line).
// A backslash is kept as it is, so safe text passes through unchanged.
std::string terminal_safe(std::string_view text, bool keep_newline_and_tab = true);

class ProgressLine {
 public:
  // `enabled` defaults to whether stderr is a terminal.
  ProgressLine();
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Redraws at most ~10 times a second unless `force`.
  void update(const std::string& text, bool force = false);
  // Clears the line (call before printing anything else).
  void clear();
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace crosstrain::report
