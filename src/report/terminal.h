#pragma once
// Progress for long work: a single self-overwriting line on a terminal (stderr), nothing at all
// when stderr is not a terminal, so logs and pipes stay clean.
#include <chrono>
#include <string>

namespace crosstrain::report {

bool stderr_is_terminal();

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
