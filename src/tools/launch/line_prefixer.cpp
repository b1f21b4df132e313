#include "tools/launch/line_prefixer.h"

#include <utility>

namespace crosstrain::launch {

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line == 0 ? 1 : max_line) {}

std::string LinePrefixer::feed(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const size_t room = max_line_ - pending_.size();
    const size_t nl = bytes.find('\n');
    if (nl != std::string_view::npos && nl <= room) {
      out += prefix_;
      out += pending_;
      out.append(bytes.data(), nl + 1);
      pending_.clear();
      bytes.remove_prefix(nl + 1);
    } else if (bytes.size() < room) {
      pending_.append(bytes.data(), bytes.size());
      break;
    } else {  // the line reaches max_line without a newline: emit the piece as a line of its own
      pending_.append(bytes.data(), room);
      bytes.remove_prefix(room);
      out += prefix_;
      out += pending_;
      out += '\n';
      pending_.clear();
    }
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (pending_.empty()) return {};
  std::string out = prefix_ + pending_ + '\n';
  pending_.clear();
  return out;
}

}  // namespace crosstrain::launch
