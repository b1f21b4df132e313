#include "tools/migrate/line_endings.h"

namespace crosstrain::migrate {

LineEndings line_endings_of(std::string_view text) {
  size_t lf = 0, crlf = 0, cr = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++lf;
    else if (text[i] != '\r') continue;
    else if (i + 1 < text.size() && text[i + 1] == '\n') ++crlf, ++i;
    else ++cr;
  }
  LineEndings endings;
  endings.lone_cr = cr > 0;
  endings.newline = cr > lf && cr > crlf ? "\r" : crlf > lf ? "\r\n" : "\n";
  return endings;
}

size_t line_breaks(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) ++n;
  return n;
}

std::string with_lone_cr_as_lf(std::string_view text) {
  std::string out(text);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\r' && (i + 1 == out.size() || out[i + 1] != '\n')) out[i] = '\n';
  return out;
}

void restyle_line_breaks(RewritePlan& plan, std::string_view newline) {
  for (Change& change : plan.changes)
    for (SpanEdit& edit : change.edits) {
      if (edit.text.find('\n') == std::string::npos) continue;
      std::string out;
      for (size_t i = 0; i < edit.text.size(); ++i) {
        if (edit.text[i] == '\r' && i + 1 < edit.text.size() && edit.text[i + 1] == '\n') continue;
        if (edit.text[i] == '\n') out += newline;
        else out += edit.text[i];
      }
      edit.text = std::move(out);
    }
}

}  // namespace crosstrain::migrate
