#include "report/json_scanner.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace crosstrain::report {

namespace {

// 1 for bytes that end the fast part of a string scan: quote, backslash, control characters, NUL.
struct StringStopTable {
  bool stop[256] = {};
  constexpr StringStopTable() {
    for (int c = 0; c < 0x20; ++c) stop[c] = true;
    stop[static_cast<unsigned char>('"')] = true;
    stop[static_cast<unsigned char>('\\')] = true;
  }
};
constexpr StringStopTable kStringStop;

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

JsonFormatError::JsonFormatError(const std::string& file, uint64_t offset, const std::string& what)
    : std::runtime_error(file + ": byte " + std::to_string(offset) + ": " + what), offset_(offset), reason_(what) {}

JsonScanner::JsonScanner(const char* data, size_t size, std::string file)
    : begin_(data), p_(data), end_(data + size), file_(std::move(file)) {}

void JsonScanner::fail(const std::string& what) const { fail_at(offset(), what); }
void JsonScanner::fail_at(uint64_t offset, const std::string& what) const {
  throw JsonFormatError(file_, offset, what);
}

void JsonScanner::skip_ws() {
  while (is_ws(*p_)) ++p_;
}

char JsonScanner::peek() {
  skip_ws();
  if (p_ >= end_) return '\0';
  return *p_;
}

bool JsonScanner::at_end() { return peek() == '\0' && p_ >= end_; }

void JsonScanner::expect(char c, const char* context) {
  skip_ws();
  if (p_ >= end_) fail(std::string("unexpected end of file, expected '") + c + "' " + context + " (truncated?)");
  if (*p_ != c) fail(std::string("expected '") + c + "' " + context);
  ++p_;
}

bool JsonScanner::consume(char c) {
  skip_ws();
  if (p_ < end_ && *p_ == c) {
    ++p_;
    return true;
  }
  return false;
}

bool JsonScanner::next_member(bool& first, char close) {
  skip_ws();
  if (p_ >= end_) fail("unexpected end of file inside an " + std::string(close == '}' ? "object" : "array") +
                       " (truncated?)");
  if (*p_ == close) {
    ++p_;
    return false;
  }
  if (!first) {
    if (*p_ != ',') fail(std::string("expected ',' or '") + close + "'");
    ++p_;
    skip_ws();
    if (p_ < end_ && *p_ == close) fail("trailing comma");
  }
  first = false;
  return true;
}

void JsonScanner::parse_escape(std::string& out) {
  // p_ is on the byte after the backslash.
  char c = *p_;
  switch (c) {
    case '"': out += '"'; break;
    case '\\': out += '\\'; break;
    case '/': out += '/'; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'u': {
      auto hex4 = [&](const char* q) -> int32_t {
        int32_t v = 0;
        for (int i = 0; i < 4; ++i) {
          char h = q[i];
          int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (d < 0) return -1;
          v = v * 16 + d;
        }
        return v;
      };
      if (end_ - p_ < 5) fail("truncated \\u escape");
      int32_t cp = hex4(p_ + 1);
      if (cp < 0) fail("bad \\u escape");
      p_ += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 7 && p_[1] == '\\' && p_[2] == 'u') {
        int32_t lo = hex4(p_ + 3);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p_ += 6;
        }
      }
      // Lone surrogates become U+FFFD rather than invalid UTF-8.
      if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
      append_utf8(out, static_cast<uint32_t>(cp));
      break;
    }
    default:
      if (p_ >= end_) fail("unexpected end of file inside a string (truncated?)");
      fail("bad escape in string");
  }
  ++p_;
}

std::string_view JsonScanner::read_string() {
  skip_ws();
  if (p_ >= end_) fail("unexpected end of file, expected a string (truncated?)");
  if (*p_ != '"') fail("expected a string");
  const char* start = ++p_;
  while (!kStringStop.stop[static_cast<unsigned char>(*p_)]) ++p_;
  if (*p_ == '"') return std::string_view(start, static_cast<size_t>(p_++ - start));
  scratch_.assign(start, static_cast<size_t>(p_ - start));
  for (;;) {
    char c = *p_;
    if (c == '"') {
      ++p_;
      return scratch_;
    }
    if (c == '\\') {
      ++p_;
      parse_escape(scratch_);
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      if (p_ >= end_) fail("unexpected end of file inside a string (truncated?)");
      scratch_ += c;  // a raw control byte: kept (see the header)
      ++p_;
      continue;
    }
    const char* run = p_;
    while (!kStringStop.stop[static_cast<unsigned char>(*p_)]) ++p_;
    scratch_.append(run, static_cast<size_t>(p_ - run));
  }
}

void JsonScanner::skip_string() {
  // p_ on the opening quote.
  ++p_;
  for (;;) {
    while (!kStringStop.stop[static_cast<unsigned char>(*p_)]) ++p_;
    char c = *p_;
    if (c == '"') {
      ++p_;
      return;
    }
    if (c == '\\') {
      ++p_;
      if (*p_ == 'u') {
        for (int i = 1; i <= 4; ++i)
          if (!std::isxdigit(static_cast<unsigned char>(p_[i]))) fail("bad \\u escape");
        p_ += 5;
      } else if (std::strchr("\"\\/bfnrt", *p_) != nullptr && *p_ != '\0') {
        ++p_;
      } else {
        if (p_ >= end_) fail("unexpected end of file inside a string (truncated?)");
        fail("bad escape in string");
      }
      continue;
    }
    if (p_ >= end_) fail("unexpected end of file inside a string (truncated?)");
    ++p_;  // a raw control byte: kept (see the header)
  }
}

JsonNumber JsonScanner::read_number() {
  skip_ws();
  const char* start = p_;
  JsonNumber n;
  bool neg = false;
  if (*p_ == '-') neg = true, ++p_;
  if (!is_digit(*p_)) {
    if (p_ >= end_) fail("unexpected end of file, expected a number (truncated?)");
    fail("expected a number");
  }
  if (*p_ == '0' && is_digit(p_[1])) fail("leading zero in a number");
  uint64_t whole = 0;
  int digits = 0;
  while (is_digit(*p_)) {
    if (digits < 19) whole = whole * 10 + static_cast<uint64_t>(*p_ - '0');  // 19 digits fit uint64
    ++digits, ++p_;
  }
  bool simple = digits <= 18;
  double frac = 0;
  n.integral = true;
  if (*p_ == '.') {
    n.integral = false;
    ++p_;
    if (!is_digit(*p_)) fail("expected a digit after '.'");
    uint64_t f = 0;
    int fd = 0;
    while (is_digit(*p_)) {
      if (fd < 18) f = f * 10 + static_cast<uint64_t>(*p_ - '0'), ++fd;
      ++p_;
    }
    static const double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
                                    1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
    frac = static_cast<double>(f) / kPow10[fd];
  }
  if (*p_ == 'e' || *p_ == 'E') {
    n.integral = false;
    simple = false;
    ++p_;
    if (*p_ == '+' || *p_ == '-') ++p_;
    if (!is_digit(*p_)) fail("expected a digit in the exponent");
    while (is_digit(*p_)) ++p_;
  }
  if (simple) {
    n.whole = neg ? -static_cast<int64_t>(whole) : static_cast<int64_t>(whole);
    n.fraction = neg ? -frac : frac;
    n.value = static_cast<double>(n.whole) + n.fraction;
    // whole + fraction rounds twice; the value itself is the correctly rounded double of the text
    // (a statistic read back must equal what the writer printed).
    if (!n.integral) std::from_chars(start, p_, n.value);
  } else {
    double v = 0;
    auto res = std::from_chars(start, p_, v);
    if (res.ec != std::errc() || !std::isfinite(v)) fail_at(static_cast<uint64_t>(start - begin_), "number out of range");
    n.value = v;
    if (n.integral && digits == 19 && whole <= static_cast<uint64_t>(INT64_MAX)) {
      // A nanosecond timestamp (19 digits) stays exact, which the double above is not.
      n.whole = neg ? -static_cast<int64_t>(whole) : static_cast<int64_t>(whole);
      n.fraction = 0;
    } else if (std::fabs(v) < 9e18) {
      n.whole = static_cast<int64_t>(v);
      n.fraction = v - static_cast<double>(n.whole);
    }
  }
  return n;
}

JsonNumber JsonScanner::read_number_or_numeric_string() {
  if (peek() != '"') return read_number();
  uint64_t at = offset();
  std::string text(read_string());
  JsonScanner inner(text.c_str(), text.size(), file_);
  JsonNumber n;
  try {
    n = inner.read_number();
    if (!inner.at_end()) throw JsonFormatError(file_, at, "");
  } catch (const JsonFormatError&) {
    fail_at(at, "expected a number, got the string \"" + text.substr(0, 40) + "\"");
  }
  return n;
}

int64_t JsonScanner::read_int() {
  uint64_t at = offset();
  JsonNumber n = read_number();
  if (!n.integral && (n.fraction != 0 || std::fabs(n.value) >= 9e18)) fail_at(at, "expected an integer");
  if (std::fabs(n.value) >= 9e18) fail_at(at, "integer out of range");
  return n.whole;
}

void JsonScanner::read_literal(const char* word) {
  size_t len = std::strlen(word);
  if (static_cast<size_t>(end_ - p_) < len || std::memcmp(p_, word, len) != 0) {
    if (static_cast<size_t>(end_ - p_) < len && std::memcmp(p_, word, static_cast<size_t>(end_ - p_)) == 0)
      fail("unexpected end of file in a literal (truncated?)");
    fail(std::string("expected '") + word + "'");
  }
  p_ += len;
}

bool JsonScanner::read_bool() {
  if (peek() == 't') return read_literal("true"), true;
  if (*p_ == 'f') return read_literal("false"), false;
  fail("expected true or false");
}

void JsonScanner::read_null() {
  skip_ws();
  read_literal("null");
}

void JsonScanner::skip_number() { read_number(); }

void JsonScanner::skip_value() { skip_value_at(0); }

void JsonScanner::skip_value_at(int depth) {
  if (depth > kMaxJsonDepth) fail("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (the limit of crosstrain's readers)");
  char c = peek();
  switch (c) {
    case '"': skip_string(); return;
    case '{': {
      ++p_;
      bool first = true;
      while (next_member(first, '}')) {
        if (peek() != '"') fail(p_ >= end_ ? "unexpected end of file (truncated?)" : "expected an object key");
        skip_string();
        expect(':', "after an object key");
        skip_value_at(depth + 1);
      }
      return;
    }
    case '[': {
      ++p_;
      bool first = true;
      while (next_member(first, ']')) skip_value_at(depth + 1);
      return;
    }
    case 't': read_literal("true"); return;
    case 'f': read_literal("false"); return;
    case 'n': read_literal("null"); return;
    // Python's json module writes these for float nan/inf; tolerated where the value is skipped.
    case 'N': read_literal("NaN"); return;
    case 'I': read_literal("Infinity"); return;
    default:
      if (c == '-' && p_[1] == 'I') return read_literal("-Infinity");
      if (c == '-' || is_digit(c)) return skip_number();
      if (p_ >= end_) fail("unexpected end of file, expected a value (truncated?)");
      fail("expected a value");
  }
}

std::string_view JsonScanner::read_compact_value() {
  skip_ws();
  const char* start = p_;
  skip_value();
  compact_.clear();
  bool in_string = false;
  for (const char* q = start; q < p_; ++q) {
    char c = *q;
    if (in_string) {
      compact_ += c;
      if (c == '\\') compact_ += *++q;
      else if (c == '"') in_string = false;
    } else if (!is_ws(c)) {
      compact_ += c;
      if (c == '"') in_string = true;
    }
  }
  return compact_;
}

}  // namespace crosstrain::report
