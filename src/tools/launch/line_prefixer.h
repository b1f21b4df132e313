#pragma once
// Turns the bytes one worker writes to one stream into whole lines that each start with a prefix
// ("[rank1]: "), so the launcher can write them to its own stream without ever mixing a partial
// line of one worker into another's.
//
//   LinePrefixer out("[rank1]: ");
//   std::string ready = out.feed(bytes);   // only complete, prefixed lines; the rest waits
//   ready += out.finish();                 // at end of stream: the last unterminated line
//
// A line longer than max_line bytes is cut there (each piece a prefixed line), so a worker that
// never writes a newline cannot make the launcher hold unbounded memory.
#include <cstddef>
#include <string>
#include <string_view>

namespace crosstrain::launch {

class LinePrefixer {
 public:
  static constexpr size_t kDefaultMaxLine = 1 << 20;

  explicit LinePrefixer(std::string prefix, size_t max_line = kDefaultMaxLine);

  // Returns every line completed by `bytes`, each prefixed and ending in '\n'.
  std::string feed(std::string_view bytes);
  // Returns the pending partial line, prefixed and terminated, or "" when there is none.
  std::string finish();

  bool has_partial_line() const { return !pending_.empty(); }

 private:
  std::string prefix_;
  size_t max_line_;
  std::string pending_;  // bytes of the current line, not yet terminated
};

}  // namespace crosstrain::launch
