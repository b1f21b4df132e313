#include "report/terminal.h"

#include <unistd.h>

#include <cstdio>

namespace crosstrain::report {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressLine::ProgressLine() : ProgressLine(stderr_is_terminal()) {}
ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {}
ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace crosstrain::report
