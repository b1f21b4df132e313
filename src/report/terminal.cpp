#include "report/terminal.h"

#include <unistd.h>

#include <cstdio>

namespace crosstrain::report {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (overlong forms, surrogates and code
// points past U+10FFFF are not), or 0.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) > 0x9F) || (c == 0xF0 && b(i + 1) < 0x90) ||
      (c == 0xF4 && b(i + 1) > 0x8F))
    return 0;
  return n;
}

void append_escape(std::string& out, const char* prefix, unsigned value) {
  static const char* hex = "0123456789abcdef";
  out += prefix;
  out += hex[(value >> 4) & 0xF];
  out += hex[value & 0xF];
}

void append_escape4(std::string& out, unsigned value) {
  append_escape(out, "\\u", value >> 8);
  append_escape(out, "", value & 0xFF);
}

// Characters that a terminal does not print but obeys in its layout: the line and paragraph
// separators (U+2028, U+2029: a new line inside a table row) and the bidirectional formatting
// characters (marks U+061C, U+200E, U+200F; embeddings and overrides U+202A-U+202E; isolates
// U+2066-U+2069), which reorder what follows them on the line.
bool is_layout_control(unsigned cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// The code point of the well-formed sequence of n bytes at s[i].
unsigned code_point(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(s[i + k])); };
  if (n == 2) return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
  if (n == 3) return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
}

}  // namespace

std::string terminal_safe(std::string_view text, bool keep_newline_and_tab) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x80) {
      if ((c == '\n' || c == '\t') && keep_newline_and_tab) out += static_cast<char>(c);
      else append_escape(out, "\\x", c);
      ++i;
    } else if (const size_t n = utf8_length(text, i); n == 0) {
      append_escape(out, "\\x", c);
      ++i;
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      append_escape(out, "\\u00", static_cast<unsigned char>(text[i + 1]));  // a C1 control
      i += 2;
    } else if (const unsigned cp = code_point(text, i, n); is_layout_control(cp)) {
      append_escape4(out, cp);  // "\u202e"
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

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
